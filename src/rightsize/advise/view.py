"""One read-only view over any plan kind, so the rules and checklists need not know
which planner made it: the chosen configuration, the sizing sections as dicts, the demand,
the uncertainty and the catalog entries of the chosen hardware."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rightsize.catalog import Accelerator, NodeType, get_accelerator, get_node
from rightsize.errors import RightsizeError


def sizing_dict(plan: Any) -> dict[str, Any]:
    """`plan.sizing` as a dict of sections ({} when the plan has not been sized)."""
    s = getattr(plan, "sizing", None)
    if s is None:
        return {}
    if hasattr(s, "as_dict"):
        s = s.as_dict()
    elif hasattr(s, "to_dict"):
        s = s.to_dict()
    return dict(s) if isinstance(s, dict) else {}


@dataclass
class PlanView:
    plan: Any
    kind: str  # "training" | "serving" | "other"
    sizing: dict[str, Any]
    demand: Any
    uncertainty: dict[str, Any] | None
    acc: Accelerator | None
    node: NodeType | None

    @property
    def best(self) -> Any:
        return getattr(self.plan, "best", None)

    def section(self, name: str) -> dict[str, Any]:
        v = self.sizing.get(name)
        return v if isinstance(v, dict) else {}

    @property
    def spans_nodes(self) -> bool:
        b = self.best
        gpn = self.node.gpus_per_node if self.node else 8
        return b is not None and int(getattr(b, "gpus", 0)) > gpn


def _lookup(fn: Any, key: Any) -> Any:
    if not key:
        return None
    try:
        return fn(key)
    except (RightsizeError, KeyError):
        return None


def view(plan: Any) -> PlanView:
    from rightsize.search.serving import ServingPlan
    from rightsize.search.train import TrainingPlan

    kind = (
        "training"
        if isinstance(plan, TrainingPlan)
        else "serving"
        if isinstance(plan, ServingPlan)
        else "other"
    )
    best = getattr(plan, "best", None)
    return PlanView(
        plan=plan,
        kind=kind,
        sizing=sizing_dict(plan),
        demand=getattr(plan, "demand", None),
        uncertainty=getattr(plan, "uncertainty", None),
        acc=_lookup(get_accelerator, getattr(best, "accelerator", None)),
        node=_lookup(get_node, getattr(best, "node", None)),
    )
