"""The fleet plan as versioned JSON-ready data (kind 'fleet_plan'); reports render from this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rightsize.fleet.demand import HOURS
from rightsize.fleet.findings import _usd as money

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.fleet.plan import FleetPlan


def fleet_dict(plan: FleetPlan) -> dict[str, Any]:
    return {
        "kind": "fleet_plan",
        "name": plan.name,
        "start": plan.start,
        "horizon_months": plan.horizon_months,
        "policy": plan.policy.model_dump(),
        "workloads": [{**e, "dedicated_usd": plan.dedicated_one_usd(e["name"])} for e in plan.entries],
        "pools": {acc: pr.as_dict() for acc, pr in plan.pools.items()},
        "timeline": plan.timeline,
        "hourly_profile": plan.hourly_profile,
        "utilisation": {
            "by_hour_fraction": plan.utilisation_by_hour,
            "by_month_fraction": [m["reserved_utilisation_fraction"] for m in plan.timeline],
            "overall_fraction": _overall(plan),
        },
        "cost": plan.cost(),
        "purchases": plan.purchases,
        "deadlines": plan.deadlines,
        "shared": plan.shared,
        "quotas": plan.quotas,
        "findings": [f.as_dict() for f in plan.findings],
        "assumptions": plan.assumptions,
        "solver": solver_dict(plan),
        "seconds": plan.seconds,
        "solo_plans": plan.solo_plans,
        "holdings": _holdings(plan),
    }


def _holdings(plan: FleetPlan) -> dict[str, Any]:
    """Which workload holds which capacity, whole GPUs, every hour of every month's typical day."""
    from rightsize.fleet.demand import Calendar
    from rightsize.fleet.gangs import hourly_holders
    from rightsize.spec.fleet import month_index, month_text

    h = plan.holdings
    if h is None:
        return {}
    cal = Calendar(month_index(plan.start), plan.horizon_months)
    return {
        "what": "whole GPUs each workload holds at each hour of each month's typical day, by flavor "
        "(reserved: the committed pool; on_demand; spot): a job holds whole copies of its gang on the "
        "days it runs, a service whole replicas",
        "unit_gpus": h.unit,
        "nodes_per_unit": h.nodes_per_unit,
        "burst_caps_gpus": h.caps,
        "over_caps": [{**o, "month": month_text(cal.start_month + o["month"])} for o in h.over_caps],
        "by_month": hourly_holders(h, cal),
    }


BOUND_TEXT = {
    "linear": "the linear relaxation (phase 1: gang counts and nodes in fractions), a lower bound on every "
    "plan's cost; it lets a big gang be held in fractions within the burst caps, so it can sit far below "
    "every whole-gang plan: the gap is at most what a better plan could save, not a measured loss",
    "integer": "HiGHS's bound on the whole integer program (whole gangs, whole nodes): no plan costs less",
}


def solver_dict(plan: FleetPlan) -> dict[str, Any]:
    """How the programs were solved: status, gap reached and allowed, limits; never a silent limit."""
    sol = plan.solution
    ded = list(plan.dedicated.values())
    gaps = [s.mip_gap for s in ded if s.mip_gap is not None]
    stopped = [n for n, s in plan.dedicated.items() if s.stopped_at_time_limit]
    o = plan.policy.solver
    return {
        "method": "mixed-integer linear program, HiGHS via scipy.optimize.milp",
        "status": sol.status,
        "optimal_within_gap": not sol.stopped_at_time_limit
        and (sol.mip_gap is None or sol.mip_gap <= o.mip_gap + 1e-12),
        "gap_against": BOUND_TEXT.get(sol.bound_from, BOUND_TEXT["linear"]),
        "bound_from": sol.bound_from,
        "gap_usd": sol.gap_usd,
        "stopped_at_time_limit": sol.stopped_at_time_limit,
        "variables": sol.variables,
        "integer_variables": sol.integers,
        "constraints": sol.rows,
        "mip_gap": sol.mip_gap,
        "mip_gap_limit": o.mip_gap,
        "time_limit_s": o.time_limit_s,
        "random_seed": o.random_seed,
        "threads_per_solve": 1,
        "seconds": sol.seconds,
        "grid": f"{plan.horizon_months} months x {HOURS} hours of a representative day",
        "dedicated": {
            "solves": len(ded),
            "worst_mip_gap": max(gaps) if gaps else None,
            "stopped_at_time_limit": stopped,
        },
    }


def solver_headline(s: dict[str, Any]) -> str:
    """One line for the headline: optimal within the gap, or stopped at the time limit with its gap."""
    gap = s.get("mip_gap")
    gap_text = "gap unknown" if gap is None else f"gap {gap:.2%}"
    if s["stopped_at_time_limit"] and s.get("status", "").startswith("time limit reached before any pooled"):
        text = (
            f"STOPPED at the {s['time_limit_s']:,.0f} s time limit before any pooled plan: the workloads' "
            "dedicated plans combined, not pooled (gap unknown); raise policy.solver.time_limit_s to pool them"
        )
    elif s["stopped_at_time_limit"]:
        text = (
            f"STOPPED at the {s['time_limit_s']:,.0f} s time limit, {gap_text} (asked {s['mip_gap_limit']:.2%}); "
            "raise policy.solver.time_limit_s for a closer plan"
        )
    elif s["optimal_within_gap"]:
        text = f"within its gap ({gap_text}, limit {s['mip_gap_limit']:.2%}) in {s['seconds']:.2f} s"
    else:
        usd = s.get("gap_usd")
        most = "" if usd is None else f": a better plan would save at most {money(usd)}"
        against = "the whole-gang" if s.get("bound_from") == "integer" else "the linear (fractional-gang)"
        text = (
            f"{gap_text} from {against} bound (asked {s['mip_gap_limit']:.2%}{most}) in {s['seconds']:.2f} s"
        )
    late = s["dedicated"]["stopped_at_time_limit"]
    if late:
        text += f"; {len(late)} dedicated solve(s) stopped at the time limit"
    return text


def _overall(plan: FleetPlan) -> float | None:
    used = sum(m["reserved_used_gpu_hours"] for m in plan.timeline)
    total = sum(m["reserved_gpu_hours"] for m in plan.timeline)
    return used / total if total else None
