"""The fleet plan as versioned JSON-ready data (kind 'fleet_plan'); reports render from this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rightsize.fleet.demand import HOURS

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.fleet.plan import FleetPlan


def fleet_dict(plan: FleetPlan) -> dict[str, Any]:
    sol = plan.solution
    return {
        "kind": "fleet_plan",
        "name": plan.name,
        "start": plan.start,
        "horizon_months": plan.horizon_months,
        "policy": plan.policy.model_dump(),
        "workloads": [{**e, "dedicated_usd": plan.dedicated[e["name"]].cost_usd} for e in plan.entries],
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
        "solver": {
            "method": "mixed-integer linear program, HiGHS via scipy.optimize.milp",
            "status": sol.status,
            "variables": sol.variables,
            "integer_variables": sol.integers,
            "constraints": sol.rows,
            "mip_gap": sol.mip_gap,
            "seconds": sol.seconds,
            "grid": f"{plan.horizon_months} months x {HOURS} hours of a representative day",
        },
        "seconds": plan.seconds,
    }


def _overall(plan: FleetPlan) -> float | None:
    used = sum(m["reserved_used_gpu_hours"] for m in plan.timeline)
    total = sum(m["reserved_gpu_hours"] for m in plan.timeline)
    return used / total if total else None
