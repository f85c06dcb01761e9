"""Terminal and JSON rendering of serving plans."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rightsize.constants import REPORT_SCHEMA_VERSION

if TYPE_CHECKING:
    from rightsize.search.serving import ServingCandidate, ServingPlan


SCHEMA_VERSION = REPORT_SCHEMA_VERSION


def serving_dict(plan: ServingPlan) -> dict[str, Any]:
    def cand(c: ServingCandidate) -> dict[str, Any]:
        return {**asdict(c), "gpus": c.gpus}

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "serving_plan",
        "name": plan.name,
        "model": plan.model,
        "scenario": plan.scenario,
        "objective": plan.objective,
        "best": cand(plan.best),
        "alternatives": [{**cand(c), "why_not": why} for c, why in plan.alternatives],
        "pareto": [cand(c) for c in plan.pareto],
        "rejected": [{"accelerator": a, "reason": r} for a, r in plan.rejected],
        "assumptions": plan.assumptions,
        "search": {"seconds": plan.seconds},
    }
