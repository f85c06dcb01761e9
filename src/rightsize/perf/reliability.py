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
from dataclasses import asdict, dataclass

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
