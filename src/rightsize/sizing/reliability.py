"""Failures, checkpoints and goodput for a training run.

A cluster of n GPUs that each fail at rate lambda per hour has a mean time between
interruptions M = 1 / (n lambda). Saving a checkpoint blocks training for delta
seconds (its size over the nodes' aggregate write bandwidth). The first-order
optimal checkpoint interval is tau = sqrt(2 delta M) (Young 1974; Daly 2006, eq. 1).
Per unit of useful work the run pays delta / tau for saving and, per interruption,
the half interval of lost work plus the restart R:

    wall / useful = (1 + delta / tau) (1 + (tau / 2 + R) / M)

and goodput is its inverse.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from rightsize.catalog.reliability import Reliability

# Bytes per parameter in a training checkpoint: 16-bit weights (2) + fp32 master
# weights, Adam's first and second moments (12). BLOOM-176B's published checkpoint
# with optimizer states is 2.3 TB = 176e9 x ~13 bytes.
CHECKPOINT_BYTES_PER_PARAM = {"adamw": 14.0, "adam": 14.0, "sgd": 10.0}


@dataclass(frozen=True)
class Goodput:
    mtbf_s: float
    checkpoint_bytes: float
    checkpoint_write_s: float
    checkpoint_interval_s: float
    restart_s: float
    goodput: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def checkpoint_bytes(params: float, optimizer: str) -> float:
    return params * CHECKPOINT_BYTES_PER_PARAM[optimizer]


def goodput(gpus: int, nodes: int, ckpt_bytes: float, rel: Reliability) -> Goodput:
    mtbf_s = 3600.0 / (gpus * rel.failure_rate_per_gpu_hour)
    write_s = ckpt_bytes / (max(nodes, 1) * rel.checkpoint_write_bytes_per_s_per_node)
    interval_s = max(math.sqrt(2.0 * write_s * mtbf_s), write_s)
    slowdown = (1.0 + write_s / interval_s) * (1.0 + (interval_s / 2.0 + rel.restart_s) / mtbf_s)
    return Goodput(
        mtbf_s=mtbf_s,
        checkpoint_bytes=ckpt_bytes,
        checkpoint_write_s=write_s,
        checkpoint_interval_s=interval_s,
        restart_s=rel.restart_s,
        goodput=1.0 / slowdown,
    )


# Hours in an average month (8,766 h a year / 12).
HOURS_PER_MONTH = 730.5


def job_reliability(
    gpus: int, nodes: int, ckpt_bytes: float, rel: Reliability, write_bytes_per_s: float | None = None
) -> tuple[Goodput, dict[str, Any]]:
    """Goodput of a training job, with the checkpoint written at the storage's provisioned
    rate when it is known (else the catalog's per-node client rate), and what it implies."""
    if write_bytes_per_s:
        rel = replace(rel, checkpoint_write_bytes_per_s_per_node=write_bytes_per_s / max(nodes, 1))
    gp = goodput(gpus, nodes, ckpt_bytes, rel)
    interruptions_per_day = 86400.0 / gp.mtbf_s
    lost_per_interruption_s = gp.checkpoint_interval_s / 2.0 + gp.restart_s
    return gp, {
        "failure_rate_per_gpu_hour": rel.failure_rate_per_gpu_hour,
        "failure_rate_source": rel.sources["failure_rate_per_gpu_hour"].source,
        "cluster_mtbf_s": gp.mtbf_s,
        "interruptions_per_day": interruptions_per_day,
        "checkpoint_bytes": gp.checkpoint_bytes,
        "checkpoint_write_s": gp.checkpoint_write_s,
        "checkpoint_interval_s": gp.checkpoint_interval_s,
        "restart_s": gp.restart_s,
        "lost_work_per_interruption_s": lost_per_interruption_s,
        "goodput_fraction": gp.goodput,
    }


def service_reliability(gpus: int, gpus_per_replica: int, replicas: int, rel: Reliability) -> dict[str, Any]:
    """A service loses a replica per GPU failure until it restarts; capacity lost is
    failures x restart time. One spare replica covers a failure when replicas > 1."""
    failures_per_month = gpus * rel.failure_rate_per_gpu_hour * HOURS_PER_MONTH
    replica_down_hours = failures_per_month * rel.restart_s / 3600.0
    capacity_lost = replica_down_hours / (max(replicas, 1) * HOURS_PER_MONTH)
    return {
        "failure_rate_per_gpu_hour": rel.failure_rate_per_gpu_hour,
        "failure_rate_source": rel.sources["failure_rate_per_gpu_hour"].source,
        "replica_failures_per_month": failures_per_month,
        "replica_mtbf_s": 3600.0 / (gpus_per_replica * rel.failure_rate_per_gpu_hour),
        "restart_s": rel.restart_s,
        "replica_down_hours_per_month": replica_down_hours,
        "capacity_lost_fraction": capacity_lost,
        "spare_replicas_recommended": 1 if replicas > 1 else 0,
    }
