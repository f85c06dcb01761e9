"""Typed results of the sizing stages that were plain dicts: the run time and the
reliability of a job or a service.

Each quantity is computed once, by the stage that owns it, and read from these fields
everywhere else (the plan's headline, the bill of materials, the advisor, every report).
`as_dict()` is the JSON serialisation; its keys are the documented schema keys.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class RunTime:
    """Wall time of a job as sized: the failure-free run, with failures (goodput), and with
    thermal throttling on top. For a service only the monthly hours are set."""

    ideal_run_s: float | None = None
    with_failures_run_s: float | None = None
    run_s: float | None = None
    gpu_hours: float | None = None
    thermal_slowdown_fraction: float | None = None
    hours_per_month: float | None = None
    gpu_hours_per_month: float | None = None

    @property
    def run_days(self) -> float | None:
        return self.run_s / 86400.0 if self.run_s is not None else None

    def as_dict(self) -> dict[str, Any]:
        if self.run_s is None:
            return {"hours_per_month": self.hours_per_month, "gpu_hours_per_month": self.gpu_hours_per_month}
        return {
            "ideal_run_s": self.ideal_run_s,
            "with_failures_run_s": self.with_failures_run_s,
            "run_s": self.run_s,
            "gpu_hours": self.gpu_hours,
            "thermal_slowdown_fraction": self.thermal_slowdown_fraction,
        }


@dataclass(frozen=True)
class JobReliability:
    """Failures, checkpoints and goodput of a training job, with the checkpoint written at
    the rate the sized storage provides."""

    failure_rate_per_gpu_hour: float
    failure_rate_source: str
    cluster_mtbf_s: float
    interruptions_per_day: float
    checkpoint_bytes: float
    checkpoint_write_s: float
    checkpoint_interval_s: float
    restart_s: float
    lost_work_per_interruption_s: float
    goodput_fraction: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ServiceReliability:
    """Replica failures of a continuous service and the capacity they cost."""

    failure_rate_per_gpu_hour: float
    failure_rate_source: str
    replica_failures_per_month: float
    replica_mtbf_s: float
    restart_s: float
    replica_down_hours_per_month: float
    capacity_lost_fraction: float
    spare_replicas_recommended: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
