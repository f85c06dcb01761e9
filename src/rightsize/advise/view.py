"""One read-only view over any plan kind, so the rules and checklists need not know
which planner made it: the chosen configuration, the sizing sections as dicts, the demand,
the uncertainty, the catalog entries of the chosen hardware, and the step of a job broken
into compute, exposed communication, pipeline bubble, optimizer and input wait (`StepView`)
whichever workload it is."""

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


# Exposed-communication parts of a step, by key, with the word a finding uses for each.
COMM_KEYS = {
    "tp_comm_exposed_s": "tensor-parallel",
    "cp_comm_exposed_s": "context-parallel",
    "ep_comm_exposed_s": "expert-parallel",
    "pp_comm_exposed_s": "pipeline",
    "dp_comm_exposed_s": "data-parallel",
    "all_to_all_s": "embedding all-to-all",
}


@dataclass(frozen=True)
class StepView:
    """One training step of any workload, in seconds: the parts add up to `total_s`."""

    total_s: float
    compute_s: float  # math and memory-bound kernels (forward, backward, recompute, lookups)
    exposed_comm_s: dict[str, float]  # COMM_KEYS key -> seconds not hidden under compute
    bubble_s: float = 0.0
    optimizer_s: float = 0.0
    input_wait_s: float = 0.0
    memory_bound_s: float = 0.0  # the part of compute_s in memory-bound kernels (norms, activations)

    @property
    def exposed_comm_total_s(self) -> float:
        return sum(self.exposed_comm_s.values())


def step_view(kind: str, best: Any) -> StepView | None:
    """The step of a training job, from whichever breakdown its planner reports."""
    st = getattr(best, "step", None)
    if not isinstance(st, dict):
        return None
    if kind == "training" and st.get("step_time_s"):
        return StepView(
            total_s=st["step_time_s"],
            compute_s=st.get("compute_s", 0.0),
            exposed_comm_s={k: st.get(k, 0.0) for k in COMM_KEYS if k in st},
            bubble_s=st.get("bubble_s", 0.0),
            optimizer_s=st.get("optimizer_s", 0.0),
        )
    if kind == "vision" and st.get("step_s") and getattr(best, "time_to_train_s", None) is not None:
        compute = sum(st.get(k, 0.0) for k in ("gemm_s", "attention_s", "memory_bound_s", "overhead_s"))
        return StepView(
            total_s=st["step_s"],
            compute_s=compute,
            exposed_comm_s={"dp_comm_exposed_s": st.get("allreduce_exposed_s", 0.0)},
            optimizer_s=st.get("optimizer_s", 0.0),
            input_wait_s=st.get("input_wait_s", 0.0),
            memory_bound_s=st.get("memory_bound_s", 0.0),
        )
    if kind == "recommendation" and st.get("step_s") and getattr(best, "time_to_train_s", None) is not None:
        compute = sum(v for k, v in st.items() if k.startswith("lookup_")) + st.get("dense_s", 0.0)
        compute += st.get("access_latency_s", 0.0)
        return StepView(
            total_s=st["step_s"],
            compute_s=compute,
            exposed_comm_s={
                "all_to_all_s": st.get("all_to_all_s", 0.0),
                "dp_comm_exposed_s": st.get("allreduce_exposed_s", 0.0),
            },
        )
    return None


@dataclass
class PlanView:
    plan: Any
    kind: str  # "training" (LLM) | "serving" (LLM) | "vision" | "recommendation" | "other"
    sizing: dict[str, Any]
    demand: Any
    uncertainty: dict[str, Any] | None
    acc: Accelerator | None
    node: NodeType | None
    step: StepView | None = None

    @property
    def is_job(self) -> bool:
        """A run with an end (training, fine-tuning); else a continuous service."""
        if self.demand is not None:
            return getattr(self.demand, "run_s", None) is not None
        return self.kind == "training" or getattr(self.best, "time_to_train_s", None) is not None

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


# Plan classes of the workloads (rightsize.search.*), by name, so telling them apart does not
# import every planner.
_PLAN_KINDS = {
    "TrainingPlan": "training",
    "ServingPlan": "serving",
    "VisionPlan": "vision",
    "RecsysPlan": "recommendation",
}


def plan_kind(plan: Any) -> str:
    """Which workload made the plan: training, serving, vision, recommendation or other."""
    for cls in type(plan).__mro__:
        if cls.__module__.startswith("rightsize.search.") and cls.__name__ in _PLAN_KINDS:
            return _PLAN_KINDS[cls.__name__]
    return "other"


def view(plan: Any) -> PlanView:
    kind = plan_kind(plan)
    best = getattr(plan, "best", None)
    return PlanView(
        plan=plan,
        kind=kind,
        sizing=sizing_dict(plan),
        demand=getattr(plan, "demand", None),
        uncertainty=getattr(plan, "uncertainty", None),
        acc=_lookup(get_accelerator, getattr(best, "accelerator", None)),
        node=_lookup(get_node, getattr(best, "node", None)),
        step=step_view(kind, best),
    )
