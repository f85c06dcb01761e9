"""A fleet against its plan: each workload's observed use of the pool against its slot, and the
rest of the horizon re-planned from what was observed.

The slot is what the fleet plan holds for a workload at every hour (`FleetPlan.holdings`: whole
GPUs per flavor, per month and hour of the day). What it used comes from the DCGM exporter's
engine-activity series of its pods, picked by a label selector made from the workload's name
(`$workload` in the template; default: pods named after it, as the exported JobSets and
Deployments are):

- GPUs held: how many GPUs report for it at each step (``count``, computed by Prometheus);
- GPU-hours held and busy: held GPUs, and their summed engine activity, times the step.

Observed over planned GPU-hours says how the workload's demand compares with the plan. The
re-plan starts the month after the window ends and runs to the end of the horizon, with each
workload's demand scaled by what was observed (a service's load, a recurring job's GPU-hours per
run); a one-off job still running keeps the share of its work the plan had not yet held, scaled
the same way. A workload with no series in the window is planned as it was, and said so.
"""

from __future__ import annotations

import calendar
import dataclasses
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rightsize.advise.findings import Finding
from rightsize.catalog.metric_names import metric_spec
from rightsize.errors import BadInput
from rightsize.monitor.prom import Source, Window, on_grid
from rightsize.monitor.queries import matcher

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.fleet.plan import FleetPlan
    from rightsize.spec.fleet_load import ResolvedFleet

PLACEHOLDER = "$workload"
DEFAULT_TEMPLATE = '{pod=~"$workload-.*"}'
FLAVORS = ("reserved", "on_demand", "spot")
OFF_PLAN = 0.25  # observed GPU-hours more than 25% above or below the slot: a finding
IDLE_ACTIVITY = 0.3  # held GPUs busy less than this on average: a finding


@dataclass
class WorkloadUse:
    """One workload over the window: its slot and what it held and used (GPU-hours, SI)."""

    name: str
    kind: str
    selector: str
    planned_gpu_hours: float
    planned_peak_gpus: int
    held_gpu_hours: float | None = None  # None: no series matched
    busy_gpu_hours: float | None = None
    peak_gpus: int | None = None
    demand_scale: float = 1.0  # what the re-plan multiplies its demand by
    work_left_fraction: float = 1.0  # a one-off job: share of its slot after the window

    @property
    def observed(self) -> bool:
        return self.held_gpu_hours is not None

    @property
    def use_ratio(self) -> float | None:
        """GPU-hours held over the slot's GPU-hours in the window."""
        if self.held_gpu_hours is None or self.planned_gpu_hours <= 0:
            return None
        return self.held_gpu_hours / self.planned_gpu_hours

    @property
    def activity(self) -> float | None:
        if not self.held_gpu_hours or self.busy_gpu_hours is None:
            return None
        return self.busy_gpu_hours / self.held_gpu_hours

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "selector": self.selector,
            "planned_gpu_hours": self.planned_gpu_hours,
            "planned_peak_gpus": self.planned_peak_gpus,
            "held_gpu_hours": self.held_gpu_hours,
            "busy_gpu_hours": self.busy_gpu_hours,
            "peak_gpus": self.peak_gpus,
            "use_ratio": self.use_ratio,
            "activity_fraction": self.activity,
            "demand_scale": self.demand_scale,
            "work_left_fraction": self.work_left_fraction,
        }


@dataclass
class FleetMonitorResult:
    """`rightsize monitor` on a fleet: per-workload use against the slot, findings, the re-plan."""

    name: str
    source: str
    window: Window
    template: str
    uses: list[WorkloadUse]
    findings: list[Finding]
    plan: FleetPlan
    replan: FleetPlan | None = None
    replan_from: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        from rightsize.constants import REPORT_SCHEMA_VERSION

        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "kind": "fleet_monitor",
            "name": self.name,
            "source": self.source,
            "window": {
                "start_s": self.window.start_s,
                "end_s": self.window.end_s,
                "step_s": self.window.step_s,
                "duration_s": self.window.duration_s,
            },
            "workload_selector": self.template,
            "workloads": [u.as_dict() for u in self.uses],
            "findings": [f.as_dict() for f in self.findings],
            "planned": _cost_summary(self.plan, self.replan_from),
            "replan": None
            if self.replan is None
            else {
                "from_month": self.replan_from,
                "horizon_months": self.replan.horizon_months,
                **_cost_summary(self.replan, None),
            },
            "notes": self.notes,
        }


def _cost_summary(plan: FleetPlan, from_month: str | None) -> dict[str, Any]:
    """Cost and peak GPUs of a fleet plan, over the months from `from_month` (None: all)."""
    months = [m for m in plan.timeline if from_month is None or m["month"] >= from_month]
    return {
        "months": len(months),
        "capacity_usd": float(sum(m["cost_usd"] for m in months)),
        "peak_gpus": max((int(m["demand_gpus"]) for m in months), default=0),
        "gpu_hours": float(sum(m["demand_gpu_hours"] for m in months)),
    }


def selector_for(template: str, name: str) -> str:
    """The label selector of workload `name`: `template` with `$workload` replaced by the name,
    escaped for a PromQL string and, inside `=~`, for a regular expression."""
    if PLACEHOLDER not in template:
        raise BadInput(
            f"--workload-selector {template!r} does not contain {PLACEHOLDER}.",
            "It picks each workload's series by its name; without the placeholder every workload would "
            "read the same series.",
            f"Write it like '{DEFAULT_TEMPLATE}' or '{{namespace=\"$workload\"}}'.",
        )

    def fill(m: re.Match[str]) -> str:
        op, text = m.group(1), m.group(2)
        literal = re.escape(name) if op in ("=~", "!~") else name  # a regex matcher: the name, literally
        return f'{op}"{text.replace(PLACEHOLDER, _promql_escape(literal))}"'

    out = re.sub(r'(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"', fill, template)
    if PLACEHOLDER in out:
        raise BadInput(
            f"--workload-selector {template!r}: {PLACEHOLDER} must stand inside a quoted label value.",
            fix=f"Write it like '{DEFAULT_TEMPLATE}'.",
        )
    matcher(out)  # braces checked as --selector is
    return out


def _promql_escape(text: str) -> str:
    """`text` inside a PromQL double-quoted string."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _month_and_hour(t_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Months since year 0 and UTC hour of each unix time."""
    months, hours = [], []
    for t in t_s.tolist():
        g = time.gmtime(t)
        months.append(g.tm_year * 12 + g.tm_mon - 1)
        hours.append(g.tm_hour)
    return np.asarray(months), np.asarray(hours)


def slot_gpus(plan: FleetPlan, name: str, t_s: np.ndarray, start_month: int) -> np.ndarray:
    """Whole GPUs the plan holds for `name` at each time (NaN outside the horizon)."""
    held = plan.holdings.gpus.get(name) if plan.holdings is not None else None
    months, hours = _month_and_hour(t_s)
    idx = months - start_month
    out = np.full(t_s.shape, np.nan)
    inside = (idx >= 0) & (idx < plan.horizon_months)
    if held is None:
        out[inside] = 0.0
        return out
    total = sum(held[k] for k in FLAVORS if k in held)
    out[inside] = np.asarray(total)[idx[inside], hours[inside]]
    return out


def _query(source: Source, expr: str, window: Window) -> np.ndarray:
    grid = window.grid()
    values = np.full(grid.shape, np.nan)
    for s in source.query_range(expr, window):
        v = on_grid(s, grid)
        got = np.isfinite(v)
        values[got] = v[got]
    return values


def observe(
    source: Source, window: Window, plan: FleetPlan, start_month: int, template: str
) -> list[WorkloadUse]:
    """Each workload's slot and use over the window; aggregation is done by Prometheus (one
    series per query, whatever the GPU count)."""
    known = source.metric_names()
    names = [n for n in metric_spec("gr_engine_active").distinct_names() if known is None or n in known]
    grid = window.grid()
    step_h = window.step_s / 3600.0
    uses = []
    for view in plan.views:
        sel = selector_for(template, view.name)
        slot = slot_gpus(plan, view.name, grid, start_month)
        use = WorkloadUse(
            view.name,
            view.kind,
            sel,
            float(np.nansum(slot) * step_h),
            int(np.nanmax(slot)) if np.isfinite(slot).any() else 0,
        )
        inner = matcher(sel)
        for name in names:
            entry = metric_spec("gr_engine_active").entry(name)
            held = _query(source, f"count({name}{{{inner}}})", window)
            if not np.isfinite(held).any():
                continue
            busy = _query(source, f"sum({name}{{{inner}}}) * {entry.to_si:.12g}", window)
            use.held_gpu_hours = float(np.nansum(held) * step_h)
            use.busy_gpu_hours = float(np.nansum(np.clip(busy, 0.0, None)) * step_h)
            use.peak_gpus = int(np.nanmax(held))
            break
        uses.append(use)
    return uses


def _work_left(plan: FleetPlan, name: str, first_month_left: int) -> float:
    """Share of a workload's slot GPU-hours in the months from `first_month_left` (plan-relative)."""
    held = plan.holdings.gpus.get(name) if plan.holdings is not None else None
    if held is None:
        return 1.0
    total = sum(held[k] for k in FLAVORS if k in held)
    days = _days(plan)
    by_month = np.asarray(total).sum(axis=1) * days
    whole = float(by_month.sum())
    return float(by_month[first_month_left:].sum() / whole) if whole > 0 else 1.0


def _days(plan: FleetPlan) -> np.ndarray:
    from rightsize.fleet.demand import Calendar
    from rightsize.spec.fleet import month_index

    return Calendar(month_index(plan.start), plan.horizon_months).days


def scales(uses: list[WorkloadUse], plan: FleetPlan, fleet: ResolvedFleet, from_month: int) -> None:
    """Each workload's demand scale for the re-plan from `from_month` (in place)."""
    entries = {e.name: e for e in fleet.entries}
    views = {v.name: v for v in plan.views}
    for u in uses:
        ratio = u.use_ratio
        if ratio is not None and math.isfinite(ratio) and ratio > 0:
            u.demand_scale = ratio
        e, v = entries.get(u.name), views.get(u.name)
        if e is None or v is None:
            continue
        w = e.workload
        one_off = v.is_job and w.batch is None and w.cadence in (None, "once") and v.jobs_per_week is None
        if one_off:
            u.work_left_fraction = _work_left(plan, u.name, from_month - fleet.start_month)
            u.demand_scale *= u.work_left_fraction


def findings(uses: list[WorkloadUse]) -> list[Finding]:
    out = []
    for u in uses:
        ratio = u.use_ratio
        ev = {
            "planned_gpu_hours": u.planned_gpu_hours,
            "held_gpu_hours": u.held_gpu_hours,
            "busy_gpu_hours": u.busy_gpu_hours,
        }
        if not u.observed:
            out.append(
                Finding(
                    "fleet-workload-not-seen",
                    "wrong-workload",
                    0.0,
                    f"{u.name}: no GPU series matched {u.selector} in the window",
                    ev,
                    "Check the selector (--workload-selector) or whether the workload ran; it is re-planned "
                    "as planned.",
                )
            )
            continue
        if ratio is not None and ratio > 1 + OFF_PLAN:
            out.append(
                Finding(
                    "fleet-workload-above-slot",
                    "under-provisioning",
                    min(1.0, ratio - 1.0),
                    f"{u.name} held {ratio:.2f}x the GPU-hours of its slot",
                    {**ev, "use_ratio": ratio},
                    "The re-plan scales its demand by what was observed; commit capacity for it or let it "
                    "burst within the caps.",
                )
            )
        elif ratio is not None and ratio < 1 - OFF_PLAN:
            out.append(
                Finding(
                    "fleet-workload-below-slot",
                    "over-provisioning",
                    min(1.0, 1.0 - ratio),
                    f"{u.name} held {ratio:.2f}x the GPU-hours of its slot",
                    {**ev, "use_ratio": ratio},
                    "The re-plan scales its demand down; release or lend the capacity it does not use.",
                )
            )
        act = u.activity
        if act is not None and act < IDLE_ACTIVITY:
            out.append(
                Finding(
                    "fleet-workload-idle-gpus",
                    "over-provisioning",
                    min(1.0, 1.0 - act) * 0.5,
                    f"{u.name}'s GPUs were busy {act:.0%} of the time they were held",
                    {**ev, "activity_fraction": act},
                    "Fewer, busier replicas (or shorter holds) would serve the same work.",
                )
            )
    return sorted(out, key=lambda f: -f.impact)


def replan_fleet(
    fleet: ResolvedFleet, uses: list[WorkloadUse], from_month: int, plan_fn: Callable[[Any], Any]
) -> tuple[Any, list[str]]:
    """The fleet from `from_month` to the end of its horizon, each workload's demand scaled; None
    when the window already ends in the horizon's last month."""
    from rightsize.spec.fleet import month_text

    end = fleet.start_month + fleet.horizon_months - 1
    notes: list[str] = []
    if from_month > end:
        return None, ["The window ends in the horizon's last month; nothing is left to re-plan."]
    scale = {u.name: u.demand_scale for u in uses}
    entries = []
    for e in fleet.entries:
        if e.end_month < from_month:
            notes.append(f"{e.name} ended before {month_text(from_month)}; not re-planned.")
            continue
        s = scale.get(e.name, 1.0)
        if s <= 1e-9:
            notes.append(f"{e.name}: its work is done by {month_text(from_month)}; not re-planned.")
            continue
        entries.append(dataclasses.replace(e, demand_scale=e.demand_scale * s))
    if not entries:
        return None, [*notes, "No workload is left to re-plan."]
    horizon = end - from_month + 1
    spec = fleet.spec.model_copy(update={"horizon_months": horizon, "start": month_text(from_month)})
    rest = dataclasses.replace(fleet, spec=spec, entries=tuple(entries), start_month=from_month)
    return plan_fn(rest), notes


def next_month(t_s: float) -> int:
    """Months since year 0 of the month after the one holding unix time `t_s`."""
    g = time.gmtime(t_s)
    return g.tm_year * 12 + g.tm_mon


def month_start_s(month: int) -> float:
    return float(calendar.timegm((month // 12, month % 12 + 1, 1, 0, 0, 0)))


def monitor_fleet(
    fleet: ResolvedFleet,
    plan: FleetPlan,
    source: Source,
    window: Window,
    template: str | None = None,
    plan_fn: Callable[[Any], Any] | None = None,
) -> FleetMonitorResult:
    """Each workload of `plan` (planned from `fleet`) against what `source` shows over `window`;
    re-planned from the month after the window with `plan_fn` (the API's `plan`)."""
    from rightsize.spec.fleet import month_text

    template = template or DEFAULT_TEMPLATE
    end_month = fleet.start_month + fleet.horizon_months - 1
    first, last = _month_and_hour(np.array([window.start_s, window.end_s]))[0].tolist()
    if last < fleet.start_month or first > end_month:
        raise BadInput(
            f"The window ({_utc(window.start_s)} to {_utc(window.end_s)}) is outside the fleet's horizon "
            f"({month_text(fleet.start_month)} to {month_text(end_month)}).",
            "A fleet is compared with its plan over months the plan covers.",
            "Move the window with --end (and --window), or plan the fleet for the months that ran.",
        )
    uses = observe(source, window, plan, fleet.start_month, template)
    from_month = next_month(window.end_s)
    scales(uses, plan, fleet, from_month)
    result = FleetMonitorResult(plan.name, source.where, window, template, uses, findings(uses), plan)
    if plan_fn is not None:
        result.replan, result.notes = replan_fleet(fleet, uses, from_month, plan_fn)
        result.replan_from = month_text(from_month) if result.replan is not None else None
    return result


def _utc(t_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t_s))
