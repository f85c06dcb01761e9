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
class WholeRunLine:
    """One part of a job's whole-run time: what it is, its seconds and GPU-hours, and where
    its figure comes from. The lines of a `WholeRun` add up to its total."""

    part: str
    time_s: float
    gpu_hours: float
    basis: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class WholeRun:
    """A job's wall time by part: steady-state steps, the spec's phases (ramps, context
    extension), evaluation and data-loader stalls, checkpoint stalls, failures
    with their restarts and lost work, thermal throttling. `total_s` is the run's time."""

    lines: tuple[WholeRunLine, ...]
    gpus: int
    notes: tuple[str, ...] = ()

    @property
    def total_s(self) -> float:
        return sum(line.time_s for line in self.lines)

    @property
    def gpu_hours(self) -> float:
        return sum(line.gpu_hours for line in self.lines)

    def as_dict(self) -> dict[str, Any]:
        total = self.total_s
        return {
            "total_s": total,
            "gpu_hours": self.gpu_hours,
            "lines": [
                {**line.as_dict(), "share_fraction": line.time_s / total if total else 0.0}
                for line in self.lines
            ],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class RunTime:
    """Wall time of a job as sized: the steady-state steps at the main settings
    (`ideal_run_s`), the whole run before thermal throttling (`with_failures_run_s`: phases,
    stalls, stragglers, checkpoints and failures), and the whole run (`run_s`, broken down
    in `whole_run`). For a service only the monthly hours are set."""

    ideal_run_s: float | None = None
    with_failures_run_s: float | None = None
    run_s: float | None = None
    gpu_hours: float | None = None
    thermal_slowdown_fraction: float | None = None
    hours_per_month: float | None = None
    gpu_hours_per_month: float | None = None
    whole_run: WholeRun | None = None  # the run's time by part; its total is run_s

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
            "whole_run": self.whole_run.as_dict() if self.whole_run is not None else None,
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
