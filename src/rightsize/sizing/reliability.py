"""Job and service reliability as sized: the goodput physics (perf.reliability) applied
with the checkpoint written at the rate the sized storage provides, and what a replica
failure costs a service. Results are typed (`sizing.results`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rightsize.catalog.reliability import Reliability
from rightsize.constants import HOURS_PER_MONTH
from rightsize.perf.checkpoint import CheckpointGoodput, checkpoint_goodput, describe, lost_to_completion_s
from rightsize.perf.reliability import (
    CHECKPOINT_BYTES_PER_PARAM,
    Goodput,
    checkpoint_bytes,
    daly_goodput,
    goodput,
)
from rightsize.sizing.results import JobReliability, ServiceReliability
from rightsize.sizing.spot import poisson_quantile

__all__ = [
    "CHECKPOINT_BYTES_PER_PARAM",
    "HOURS_PER_MONTH",
    "Goodput",
    "checkpoint_bytes",
    "daly_goodput",
    "goodput",
    "job_reliability",
    "service_reliability",
]


# Spare pool: a failed node is pulled from the job and swapped for a hot spare, then repaired
# or replaced (RMA) while the job runs on. Nodes out for repair at once, by Little's law:
# failures per hour x repair hours. Repair turnaround: estimate, 48 h (on-site parts and
# re-burn-in within a day or two; Kokolis et al. 2024, "Revisiting Reliability in Large-Scale
# ML Research Clusters", report node remediation over hours to days).
REPAIR_HOURS = 48.0
# Spares cover the nodes in repair at once with this probability (the exact Poisson quantile).
# The one spare policy: a single job's hot spares and a fleet's spare pools both read it.
SPARE_CONFIDENCE = 0.999
# When a restart plus half a checkpoint interval is this share of the MTBF or more, the
# first-order goodput model (perf.reliability) is optimistic and the job needs faster recovery.
RECOVERY_WARN_FRACTION = 0.2


@dataclass(frozen=True)
class ScaleReliability(JobReliability):
    """A job's reliability with what scale adds: the hot-spare pool that keeps the job at full
    size while failed nodes are repaired (failures per hour are interruptions_per_day / 24),
    the checkpoint write bandwidth, and a warning when recovery is slow against the MTBF."""

    repair_hours: float = REPAIR_HOURS
    spare_nodes: int = 0  # hot spares: the repair queue (failures per hour x repair hours), SPARE_CONFIDENCE
    checkpoint_write_bytes_per_s: float = 0.0
    warnings: tuple[str, ...] = ()
    # How the stack saves (perf.checkpoint): "async" pays `checkpoint_write_s` (staging and sync)
    # per checkpoint and writes to storage in the background; "sync" blocks for the whole write.
    checkpoint_mode: str = "sync"
    checkpoint_staging_s: float = 0.0
    checkpoint_background_s: float = 0.0
    checkpoint: str = ""  # the plan's one line: "checkpoint: async, 0.79 s blocking, ..."

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["warnings"] = list(self.warnings)
        return d


def spare_nodes(expected_down: float) -> int:
    """Hot spares covering the repair queue: the smallest k with P(Poisson(expected_down) <= k)
    >= SPARE_CONFIDENCE, where expected_down is failures per hour x repair hours (Little's law)."""
    return poisson_quantile(expected_down, SPARE_CONFIDENCE)


def _recovery_warnings(gp: Goodput) -> tuple[str, ...]:
    lost = gp.checkpoint_interval_s / 2.0 + lost_to_completion_s(gp) + gp.restart_s
    if lost < RECOVERY_WARN_FRACTION * gp.mtbf_s:
        return ()
    return (
        f"An interruption every {gp.mtbf_s / 60.0:.1f} min against {gp.restart_s / 60.0:.0f} min to restart "
        f"and {gp.checkpoint_interval_s:.0f} s between checkpoints leaves a goodput of {gp.goodput:.0%}. At this "
        "scale plan for in-memory (peer) checkpoints and restarts that swap in hot spares without "
        "rescheduling the job (minutes to seconds), or split the job into failure domains.",
    )


def job_reliability(
    gpus: int,
    nodes: int,
    ckpt_bytes: float,
    rel: Reliability,
    write_bytes_per_s: float | None = None,
    save: dict[str, float] | None = None,
) -> tuple[Goodput, JobReliability]:
    """Goodput of a training job, with the checkpoint written at the storage's provisioned
    rate when it is known (else the catalog's per-node client rate), synchronously or as the
    search planned the save (`save`: `async_save` and `host_link_bytes_per_s`, perf.checkpoint),
    under exponentially distributed failures (Daly's complete model), and what it implies:
    failures per hour, the hot-spare pool, the checkpoint write bandwidth."""
    save = save or {}
    gp: CheckpointGoodput = checkpoint_goodput(
        gpus,
        nodes,
        ckpt_bytes,
        rel,
        async_save=bool(save.get("async_save")),
        host_link_bytes_per_s=float(save.get("host_link_bytes_per_s") or 1.0),
        write_bytes_per_s=write_bytes_per_s,
    )
    per_hour = gpus * rel.failure_rate_per_gpu_hour
    write_s = gp.background_s or gp.checkpoint_write_s  # the write to storage, behind or not
    return gp, ScaleReliability(
        failure_rate_per_gpu_hour=rel.failure_rate_per_gpu_hour,
        failure_rate_source=rel.sources["failure_rate_per_gpu_hour"].source,
        cluster_mtbf_s=gp.mtbf_s,
        interruptions_per_day=86400.0 / gp.mtbf_s,
        checkpoint_bytes=gp.checkpoint_bytes,
        checkpoint_write_s=gp.checkpoint_write_s,
        checkpoint_interval_s=gp.checkpoint_interval_s,
        restart_s=gp.restart_s,
        lost_work_per_interruption_s=gp.lost_per_failure_s + gp.restart_s,
        goodput_fraction=gp.goodput,
        spare_nodes=spare_nodes(per_hour * REPAIR_HOURS),
        checkpoint_write_bytes_per_s=gp.checkpoint_bytes / write_s if write_s else 0.0,
        warnings=_recovery_warnings(gp),
        checkpoint_mode="async" if gp.is_async else "sync",
        checkpoint_staging_s=gp.staging_s,
        checkpoint_background_s=gp.background_s,
        checkpoint=describe(gp),
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
