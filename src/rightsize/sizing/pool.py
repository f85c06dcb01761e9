"""Recurring jobs on an elastic pool (weekly fine-tuning, evaluations).

Jobs arrive at lambda per week and each holds G GPUs for D hours, so on average
a = lambda D / 168 jobs run at once (Little's law). A dedicated pool of c job slots
(c G GPUs) is busy a / c of the time; the pool is the smallest c with a / c at most the
utilisation target, and at least one slot. When even one slot would sit mostly idle,
renting per job (elastic, billed by the GPU-hour) beats owning it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from rightsize.spec.infrastructure import Schedule

HOURS_PER_WEEK = 168.0
# Below this busy share a dedicated pool mostly pays for idle GPUs: rent per job instead.
ELASTIC_BELOW_UTILISATION = 0.5


@dataclass(frozen=True)
class PoolPlan:
    jobs_per_week: float
    job_hours: float
    gpus_per_job: int
    turnaround_hours: float | None
    meets_turnaround: bool
    concurrent_jobs_mean: float
    pool_job_slots: int
    pool_gpus: int
    pool_utilisation_fraction: float
    busy_gpu_hours_per_week: float
    recommendation: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def size_pool(schedule: Schedule, job_s: float, gpus_per_job: int, utilisation_target: float) -> PoolPlan:
    hours = job_s / 3600.0
    a = schedule.jobs_per_week * hours / HOURS_PER_WEEK
    slots = max(1, math.ceil(a / utilisation_target - 1e-9))
    util = a / slots
    turnaround_h = schedule.turnaround / 3600.0 if schedule.turnaround else None
    if util < ELASTIC_BELOW_UTILISATION:
        rec = (
            f"Elastic: a dedicated pool would be busy {util:.0%} of the time; rent {gpus_per_job} GPUs per job "
            f"({schedule.jobs_per_week * hours * gpus_per_job:.0f} GPU-hours a week)."
        )
    else:
        rec = f"Dedicated pool of {slots * gpus_per_job} GPUs, busy {util:.0%} of the time."
    return PoolPlan(
        jobs_per_week=schedule.jobs_per_week,
        job_hours=hours,
        gpus_per_job=gpus_per_job,
        turnaround_hours=turnaround_h,
        meets_turnaround=turnaround_h is None or hours <= turnaround_h,
        concurrent_jobs_mean=a,
        pool_job_slots=slots,
        pool_gpus=slots * gpus_per_job,
        pool_utilisation_fraction=util,
        busy_gpu_hours_per_week=schedule.jobs_per_week * hours * gpus_per_job,
        recommendation=rec,
    )
