"""Demand over time: each workload as GPUs on a grid of months x 24 hours of a representative day.

A service is fixed load: its own plan's replicas scaled by the hour's share of the daily peak and by
traffic growth since it started, rounded up to whole replicas (at least one). A job is work to place:
GPU-hours in a period (a one-off run's whole window, a recurring job's month, a batch job's day),
in the hours it may run, at most its gang of GPUs at once (recurring and batch jobs may run several
copies). A job that may not wait (`deferrable: false`) becomes fixed load too: a run from its start
at its full gang, recurring runs spread evenly. Grid values are average GPUs in use during that hour
of that month's days; a month's GPU-hours are the value x its days.
"""

from __future__ import annotations

import calendar
import math
from dataclasses import dataclass, field

import numpy as np

from rightsize.catalog.tpu_slices import book_slices
from rightsize.errors import BadInput
from rightsize.fleet.workload_view import WorkloadView
from rightsize.spec.fleet import RUNS_PER_MONTH, BatchJob, FleetWorkload

HOURS = 24
DIURNAL_PEAK_HOUR = 14  # a smooth day peaks mid-afternoon (local time) when only peak/average is given


@dataclass(frozen=True)
class Calendar:
    start_month: int  # months since year 0
    months: int

    @property
    def days(self) -> np.ndarray:
        out = []
        for i in range(self.months):
            m = self.start_month + i
            out.append(calendar.monthrange(m // 12, m % 12 + 1)[1])
        return np.array(out, dtype=float)

    def index(self, month: int) -> int:
        return month - self.start_month


@dataclass
class WorkloadDemand:
    """One workload's demand on the grid; `fixed` is load that must be served where it stands."""

    name: str
    pool: str  # accelerator id of the pool it runs in
    kind: str
    gang_gpus: int  # GPUs it takes at once (a job's gang; a service replica's GPUs)
    priority: int
    deferrable: bool
    preemptible: bool
    spot_factor: float | None  # wall-time factor on spot; None: no spot
    fixed: np.ndarray  # [months, 24] GPUs that must be served as they stand
    allowed: np.ndarray  # [months, 24] bool: where placed work may run
    max_gpus: float  # most GPUs of placed work in one slot
    flat_in_day: bool  # placed work runs the same GPUs every hour of a day (cannot pause daily)
    periods: list[tuple[list[int], float]] = field(default_factory=list)  # (month indices, GPU-hours)
    notes: list[str] = field(default_factory=list)
    solo_gpus: int = 0  # what it needs alone at its peak (a batch job: to finish in its window)
    turnaround: tuple[float, float] | None = None  # (longest a run may take, one run on its gang), s
    runs_per_month: float | None = None  # a recurring job's runs (each its own day on a capacity block)
    unit_note: str | None = None  # why its unit is not its plan's chips (a TPU count with no slice shape)

    @property
    def placed(self) -> bool:
        return bool(self.periods)


def booked_gang(accelerator: str, chips: int) -> tuple[int, str | None]:
    """A gang or replica as the capacity it holds: on TPU the whole slices it books, of shapes
    that exist (`catalog.tpu_slices.book_slices`, the rule the single plan's bill uses), with
    the reason where that is more than its chips; elsewhere its chips as they are."""
    booking = book_slices(accelerator, chips)
    return (chips, None) if booking is None else (booking.chips, booking.note)


def daily_shape(hourly: list[float] | None, peak_to_average: float | None) -> np.ndarray:
    """24 factors with the peak at 1: given hourly factors, or a smooth day with that peak/average."""
    if hourly is not None:
        f = np.asarray(hourly, dtype=float)
        return f / f.max()
    ratio = max(1.0, peak_to_average or 1.0)
    theta = 2 * np.pi * (np.arange(HOURS) - DIURNAL_PEAK_HOUR) / HOURS
    if ratio <= 2.0:  # 1 + a cos: peak 1 + a, mean 1
        f = 1.0 + (ratio - 1.0) * np.cos(theta)
        return f / f.max()
    lo, hi = 1.0, 200.0  # ((1 + cos) / 2)^p, p found so that max / mean = ratio
    base = (1.0 + np.cos(theta)) / 2.0
    for _ in range(60):
        p = (lo + hi) / 2.0
        if 1.0 / float(np.mean(base**p)) < ratio:
            lo = p
        else:
            hi = p
    return base ** ((lo + hi) / 2.0)


def _window(cal: Calendar, first: int, last: int) -> np.ndarray:
    """Months of the calendar from `first` to `last` (either may lie outside it: a re-plan's
    calendar starts after a workload began)."""
    active = np.zeros(cal.months, dtype=bool)
    lo, hi = max(cal.index(first), 0), cal.index(last) + 1
    if hi > lo:
        active[lo:hi] = True
    return active


def service_demand(
    view: WorkloadView, w: FleetWorkload, cal: Calendar, first: int, last: int, scale: float = 1.0
) -> np.ndarray:
    """GPUs a service needs each hour: its plan's replicas x the hour's load / the plan's design load
    (x `scale`: the load observed against the load planned, when re-planned from a monitor)."""
    shape = daily_shape(
        w.load.hourly if w.load else None,
        (w.load.peak_to_average if w.load else None) or view.peak_to_average,
    )
    g = w.growth_per_year if w.growth_per_year is not None else view.growth_per_year
    months_in = np.arange(cal.months) - cal.index(first)
    growth = (1.0 + g) ** (np.maximum(months_in, 0) / 12.0)
    replicas = view.replicas or max(1, view.gpus // max(view.gpus_per_replica or 1, 1))
    per, _ = booked_gang(view.accelerator, view.gpus_per_replica or max(1, view.gpus // replicas))
    need = np.maximum(1.0, np.ceil(scale * replicas * growth[:, None] * shape[None, :] - 1e-9))
    return need * per * _window(cal, first, last)[:, None]


def _runs_per_month(view: WorkloadView, w: FleetWorkload) -> float | None:
    if w.cadence is not None:
        return RUNS_PER_MONTH[w.cadence]
    if w.batch is not None:
        return RUNS_PER_MONTH["daily"]
    if view.jobs_per_week is not None:
        return view.jobs_per_week * 52.0 / 12.0
    return None


def batch_gpu_hours(view: WorkloadView, batch: BatchJob) -> float:
    """GPU-hours of one batch run: its volume at the plan's throughput per GPU."""
    if view.output_tokens_per_s <= 0:
        raise BadInput(
            f"Workload '{view.name}' has a batch volume but its plan reports no token throughput.",
            f"batch: applies to inference specs (scenario offline); this one is {view.kind}.",
            "Point `spec:` at a `kind: inference` spec with serving.scenario: offline, or remove `batch:`.",
        )
    tokens = (
        batch.output_tokens
        if batch.output_tokens is not None
        else (batch.requests or 0.0) * view.mean_output_tokens
    )
    return tokens / view.output_tokens_per_s * view.gpus / 3600.0


def job_demand(
    view: WorkloadView,
    w: FleetWorkload,
    cal: Calendar,
    first: int,
    last: int,
    deferrable: bool,
    preemptible: bool,
    scale: float = 1.0,
) -> WorkloadDemand:
    """A job's work to place (or, when it may not wait, its fixed load); `scale` multiplies its
    GPU-hours (a monitor's re-plan: observed against planned, or the share of the work left).

    Longer than 80 lines for one reason: a batch window, recurring runs and a one-off run each
    fill the same periods, gang size and notes, and read more plainly side by side."""
    days = cal.days
    active = _window(cal, first, last)
    allowed = np.repeat(active[:, None], HOURS, axis=1)
    gang = view.gpus_per_replica or view.gpus if view.kind == "batch_inference" else view.gpus
    gang, unit_note = booked_gang(view.accelerator, gang)
    runs = _runs_per_month(view, w)
    periods: list[tuple[list[int], float]] = []
    notes: list[str] = []
    solo = view.gpus
    if w.batch is not None:
        hours = w.batch.hours()
        mask = np.zeros(HOURS, dtype=bool)
        mask[hours] = True
        allowed &= mask[None, :]
        per_run = batch_gpu_hours(view, w.batch) * scale
        runs_day = (runs or RUNS_PER_MONTH["daily"]) * 12.0 / 365.0  # type: ignore[operator]
        per_day = per_run * runs_day
        solo = gang * math.ceil(per_day / len(hours) / gang - 1e-9)
        max_gpus = float(gang * math.ceil(per_day / gang))
        periods = [([int(i)], float(per_day * days[i])) for i in np.flatnonzero(active)]
        flat = False
    elif runs is not None:
        if view.run_s is None:
            raise BadInput(
                f"Workload '{view.name}' has a cadence but its plan has no run time.",
                "Only jobs recur.",
                "Remove `cadence:`.",
            )
        run_h = view.run_s / 3600.0 * scale
        max_gpus = float(gang * max(1, math.ceil(runs * 12.0 / 365.0 * run_h / 24.0)))
        periods = [
            ([int(i)], float(runs * days[i] * 12.0 / 365.0 * gang * run_h)) for i in np.flatnonzero(active)
        ]
        flat = not preemptible
    else:
        if view.run_s is None:
            raise BadInput(
                f"Workload '{view.name}' is a {view.kind} without a run time.",
                "A one-off job needs a plan with a run length (train_tokens, or samples and epochs).",
                "Give the spec its amount of work, or mark it as a service.",
            )
        run_h = view.run_s / 3600.0 * scale
        max_gpus = float(gang)
        periods = [([int(i) for i in np.flatnonzero(active)], gang * run_h)]
        flat = True  # one long run holds its gang through the day; preemption moves it between days
    d = WorkloadDemand(
        view.name,
        view.accelerator,
        view.kind,
        gang,
        w.priority,
        deferrable,
        preemptible,
        view.spot_slowdown_factor if preemptible else None,
        np.zeros((cal.months, HOURS)),
        allowed,
        max_gpus,
        flat,
        periods,
        notes,
        solo,
    )
    d.unit_note = unit_note
    if periods and (runs is not None or w.batch is not None):
        d.runs_per_month = float(runs if runs is not None else RUNS_PER_MONTH["daily"])  # type: ignore[arg-type]
    turnaround = w.turnaround or view.turnaround_s
    if turnaround and view.run_s and w.batch is None:
        # However the pool places the GPU-hours, one run lasts its own wall time on its gang.
        d.turnaround = (float(turnaround), float(view.run_s))
    if not deferrable:
        _fix_in_place(d, days)
    return d


def _fix_in_place(d: WorkloadDemand, days: np.ndarray) -> None:
    """A job that may not wait runs as it comes: from the start of its window, as fast as it can."""
    for months, gpu_hours in d.periods:
        left = gpu_hours
        for i in months:
            if left <= 0:
                break
            hours = np.flatnonzero(d.allowed[i])
            capacity = d.max_gpus * len(hours) * days[i]
            share = min(1.0, left / capacity) if capacity > 0 else 0.0
            d.fixed[i, hours] += d.max_gpus * share
            left -= capacity * share
        if left > 1e-6:
            d.notes.append(f"{left:,.0f} GPU-hours do not fit its window even at full speed")
    d.periods = []
