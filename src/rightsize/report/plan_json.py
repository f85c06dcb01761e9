"""Plans as versioned JSON-ready dictionaries. Every quantity carries its unit in its key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rightsize.constants import DAY_S, REPORT_SCHEMA_VERSION

if TYPE_CHECKING:
    from rightsize.search.candidates import Candidate
    from rightsize.search.train import TrainingPlan


SCHEMA_VERSION = REPORT_SCHEMA_VERSION


def candidate_dict(c: Candidate) -> dict[str, Any]:
    return {
        "accelerator": c.accelerator,
        "node": c.node,
        "gpus": c.gpus,
        "parallel": c.parallel,
        "step": c.step,
        "memory_per_gpu": c.memory,
        "mfu": c.mfu,
        "hfu": c.hfu,
        "tokens_per_s_per_gpu": c.tokens_per_s_per_gpu,
        "time_to_train_s": c.time_to_train_s,
        "time_to_train_days": c.time_to_train_s / DAY_S if c.time_to_train_s is not None else None,
        "gpu_hours": c.gpu_hours,
        "gpu_hours_billed": c.gpu_hours_billed,
        "cloud_cost_usd": c.cost_usd,
        "reliability": c.reliability,
    }


def plan_dict(plan: TrainingPlan) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "training_plan",
        "name": plan.name,
        "model": plan.model,
        "objective": plan.objective,
        "deadline_s": plan.deadline_s,
        "best": candidate_dict(plan.best),
        "runner_up_layout": (
            {**candidate_dict(plan.runner_up_layout[0]), "why_not": plan.runner_up_layout[1]}
            if plan.runner_up_layout
            else None
        ),
        "alternatives": [{**candidate_dict(c), "why_not": why} for c, why in plan.alternatives],
        "pareto": [candidate_dict(c) for c in plan.pareto],
        "rejected": [{"accelerator": r.accelerator, "reason": r.reason} for r in plan.rejected],
        "assumptions": plan.assumptions,
        "search": {"configs_evaluated": plan.configs_evaluated, "seconds": plan.search_seconds},
    }
