"""The one plan pipeline every workload goes through:

    spec -> Workload.search (demand, candidates, evaluate, rank) -> size -> settle the
    headline on the sizing -> uncertainty

`advise` and `report` read the result. Each quantity is owned by one stage: the search
owns the configuration and its step time, sizing owns the run time (failures and thermal
throttling included), the goodput, the checkpoint interval and the cost. `settle` writes
the sized values into the chosen configuration so that the headline, the bill of
materials and every report show one value; the uncertainty is then sampled around them.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from rightsize.constants import HOURS_PER_MONTH
from rightsize.search.constraints import margins_of
from rightsize.search.workload import Calibration, PlanResult, workload_for
from rightsize.sizing.plan import Sizing, size
from rightsize.sizing.results import JobReliability

SETTLED_NOTE = (
    "Time to train, goodput and cost of the chosen configuration are as sized (checkpoints written "
    "at the storage's provisioned rate, thermal throttling included); alternatives show the search's "
    "estimate (checkpoints at the catalog's per-node write rate)."
)


def run_pipeline(
    spec: Any, calibration: Calibration | None = None, *, uncertainty: bool = True
) -> PlanResult:
    """Search, size, settle and sample the uncertainty of one workload spec (a fleet skips the
    uncertainty of its workloads: `uncertainty=False`)."""
    workload = workload_for(spec)
    plan = workload.search(calibration)
    if calibration:
        plan.extra.setdefault("calibration_applied", sorted(calibration))
    if plan.demand is not None:
        extra = dict(plan.extra or {})
        best = plan.best
        if best is not None and hasattr(best, "replica_capacity_rps"):
            extra["replica_capacity_rps"] = best.replica_capacity_rps
        plan.sizing = size(plan.demand, spec.infrastructure, margins_of(spec), extra)
        settle(plan)
    if uncertainty:
        plan.uncertainty = workload.uncertainty(plan, calibration)
    return plan


def settle(plan: Any) -> None:
    """Make the chosen configuration carry the sized run time, GPU-hours, goodput,
    checkpoint figures and on-demand cost (training jobs; other kinds read the sizing)."""
    sizing: Sizing | None = getattr(plan, "sizing", None)
    best = getattr(plan, "best", None)
    if sizing is None or best is None:
        return
    if not hasattr(best, "time_to_train_s") or best.time_to_train_s is None:
        settle_service(plan)
        return
    run_s = sizing.run.run_s
    rel = sizing.reliability
    if run_s is None:
        settle_service(plan)
        return
    if not isinstance(rel, JobReliability):
        return
    od = sizing.cost.cloud.get("on_demand") if sizing.cost.cloud else None
    factor = run_s / best.time_to_train_s
    reliability = {
        "mtbf_s": rel.cluster_mtbf_s,
        "checkpoint_bytes": rel.checkpoint_bytes,
        "checkpoint_write_s": rel.checkpoint_write_s,
        "checkpoint_interval_s": rel.checkpoint_interval_s,
        "restart_s": rel.restart_s,
        "goodput": rel.goodput_fraction,
    }
    # The search's own estimate stays, under its own name, for comparisons with the
    # alternatives (which carry only estimates on that basis).
    plan.extra["search_estimate"] = {
        "time_to_train_s": best.time_to_train_s,
        "gpu_hours": best.gpu_hours,
        "cost_usd": best.cost_usd,
        "basis": "checkpoints at the catalog's per-node write rate; GPUs billed as used",
    }
    names = {f.name for f in fields(best)}
    update: dict[str, Any] = {
        "time_to_train_s": run_s,
        "gpu_hours": sizing.run.gpu_hours,
        "cost_usd": od.usd_per_run if od is not None else None,
    }
    if "gpu_hours_billed" in names:  # whole nodes x the sized run
        update["gpu_hours_billed"] = sizing.cost.gpu_hours_billed
    if "reliability" in names:
        update["reliability"] = reliability
    if "goodput" in names:
        update["goodput"] = rel.goodput_fraction
    plan.best = replace(best, **update)
    if getattr(plan, "pareto", None):  # the front's chosen point is the settled plan, one value
        plan.pareto = [plan.best if c is best else c for c in plan.pareto]
    runner = getattr(plan, "runner_up_layout", None)
    if runner is not None:
        # Same hardware and GPU count: the same nodes, storage, goodput and throttling.
        c, why = runner
        ttt = (c.time_to_train_s or 0.0) * factor
        settled_cost = plan.best.cost_usd
        plan.runner_up_layout = (
            replace(
                c,
                time_to_train_s=ttt,
                gpu_hours=(c.gpu_hours or 0.0) * factor,
                gpu_hours_billed=(c.gpu_hours_billed or 0.0) * factor
                if c.gpu_hours_billed is not None
                else None,
                cost_usd=settled_cost * ttt / run_s if settled_cost is not None else None,
                reliability=reliability,
            ),
            why,
        )
    if SETTLED_NOTE not in plan.assumptions:
        plan.assumptions.append(SETTLED_NOTE)


# Per-hour cost fields a service's chosen configuration may carry, and the per-unit figures
# derived from them (scaled with it).
_HOURLY = ("cost_usd_per_hour", "cost_usd")
_PER_UNIT = ("cost_usd_per_request",)
J_PER_KWH = 3.6e6


def settle_service(plan: Any) -> None:
    """A service's headline cost per hour is the bill of materials' on-demand month / 730 h:
    whole nodes billed and cloud storage included, so the two never disagree. Its cost per
    million output tokens and output tokens per joule are read from the sizing's cost and power
    records (the month's bill or energy over the month's work served at the average rate)."""
    sizing: Sizing | None = getattr(plan, "sizing", None)
    best = getattr(plan, "best", None)
    if sizing is None or best is None or sizing.run.run_s is not None or not sizing.cost.cloud:
        return
    od = sizing.cost.cloud.get("on_demand")
    if od is None or od.usd_per_month is None:
        return
    names = {f.name for f in fields(best)}
    key = next((k for k in _HOURLY if k in names and getattr(best, k) is not None), None)
    if key is None:
        return
    hourly = od.usd_per_month / HOURS_PER_MONTH
    ratio = hourly / getattr(best, key) if getattr(best, key) else 1.0
    update: dict[str, Any] = {key: hourly}
    for k in _PER_UNIT:
        if k in names and getattr(best, k) is not None:
            update[k] = getattr(best, k) * ratio
    if sizing.cost.work_unit == "output_token":
        if "cost_usd_per_m_output_tokens" in names:
            update["cost_usd_per_m_output_tokens"] = od.usd_per_million_units
        kwh = sizing.power.energy_per_million_units_kwh
        if "output_tokens_per_joule" in names and kwh:
            update["output_tokens_per_joule"] = 1e6 / (kwh * J_PER_KWH)
    plan.best = replace(best, **update)
