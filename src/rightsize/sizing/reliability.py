"""Job and service reliability as sized: the goodput physics (perf.reliability) applied
with the checkpoint written at the rate the sized storage provides, and what a replica
failure costs a service. Results are typed (`sizing.results`)."""

from __future__ import annotations

from dataclasses import replace

from rightsize.catalog.reliability import Reliability
from rightsize.constants import HOURS_PER_MONTH
from rightsize.perf.reliability import CHECKPOINT_BYTES_PER_PARAM, Goodput, checkpoint_bytes, goodput
from rightsize.sizing.results import JobReliability, ServiceReliability

__all__ = [
    "CHECKPOINT_BYTES_PER_PARAM",
    "HOURS_PER_MONTH",
    "Goodput",
    "checkpoint_bytes",
    "goodput",
    "job_reliability",
    "service_reliability",
]


def job_reliability(
    gpus: int, nodes: int, ckpt_bytes: float, rel: Reliability, write_bytes_per_s: float | None = None
) -> tuple[Goodput, JobReliability]:
    """Goodput of a training job, with the checkpoint written at the storage's provisioned
    rate when it is known (else the catalog's per-node client rate), and what it implies."""
    if write_bytes_per_s:
        rel = replace(rel, checkpoint_write_bytes_per_s_per_node=write_bytes_per_s / max(nodes, 1))
    gp = goodput(gpus, nodes, ckpt_bytes, rel)
    return gp, JobReliability(
        failure_rate_per_gpu_hour=rel.failure_rate_per_gpu_hour,
        failure_rate_source=rel.sources["failure_rate_per_gpu_hour"].source,
        cluster_mtbf_s=gp.mtbf_s,
        interruptions_per_day=86400.0 / gp.mtbf_s,
        checkpoint_bytes=gp.checkpoint_bytes,
        checkpoint_write_s=gp.checkpoint_write_s,
        checkpoint_interval_s=gp.checkpoint_interval_s,
        restart_s=gp.restart_s,
        lost_work_per_interruption_s=gp.checkpoint_interval_s / 2.0 + gp.restart_s,
        goodput_fraction=gp.goodput,
    )


def service_reliability(
    gpus: int, gpus_per_replica: int, replicas: int, rel: Reliability
) -> ServiceReliability:
    """A service loses a replica per GPU failure until it restarts; capacity lost is
    failures x restart time. One spare replica covers a failure when replicas > 1."""
    failures_per_month = gpus * rel.failure_rate_per_gpu_hour * HOURS_PER_MONTH
    replica_down_hours = failures_per_month * rel.restart_s / 3600.0
    capacity_lost = replica_down_hours / (max(replicas, 1) * HOURS_PER_MONTH)
    return ServiceReliability(
        failure_rate_per_gpu_hour=rel.failure_rate_per_gpu_hour,
        failure_rate_source=rel.sources["failure_rate_per_gpu_hour"].source,
        replica_failures_per_month=failures_per_month,
        replica_mtbf_s=3600.0 / (gpus_per_replica * rel.failure_rate_per_gpu_hour),
        restart_s=rel.restart_s,
        replica_down_hours_per_month=replica_down_hours,
        capacity_lost_fraction=capacity_lost,
        spare_replicas_recommended=1 if replicas > 1 else 0,
    )
