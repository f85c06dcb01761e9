"""The `Workload` interface: one implementation per kind of work, so everything after the
ranking (sizing, uncertainty, advisor, checklists, rendering) is shared.

    spec -> Workload (demand) -> candidates -> evaluate (perf) -> rank -> Plan -> sizing
         -> uncertainty -> advise -> report

A workload knows the unit of work it reports (token, image, sample,
output token), how to search its candidates (vectorised, in its planner module) and how
to sample the uncertainty of its chosen configuration. `rightsize.sizing.pipeline` runs
the shared stages on what `search` returns; `rightsize.api.plan` is the public entry.

Every plan a workload returns satisfies `PlanResult`: a name, the chosen configuration
(`best`), its `demand`, and the fields the later stages fill (`sizing`, `uncertainty`,
`extra`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol, runtime_checkable

from rightsize.errors import BadInput
from rightsize.search.demand import Demand

Calibration = dict[str, dict[str, float]]  # accelerator id -> Hardware field overrides


@runtime_checkable
class PlanResult(Protocol):
    """What every planner returns and every later stage reads."""

    name: str
    best: Any
    assumptions: list[str]
    demand: Demand | None
    sizing: Any
    uncertainty: dict[str, Any] | None
    extra: dict[str, Any]


class Workload(ABC):
    """One kind of work. Subclasses set `kind` and `work_unit`, and implement
    `search`; `uncertainty` defaults to none."""

    kind: ClassVar[str]
    work_unit: ClassVar[str]

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    @property
    def unit(self) -> str:
        """The unit this plan reports its work in."""
        return self.work_unit

    @abstractmethod
    def search(self, calibration: Calibration | None) -> PlanResult:
        """Enumerate, evaluate and rank the candidates; the best with its Demand."""

    def uncertainty(self, plan: PlanResult, calibration: Calibration | None) -> dict[str, Any] | None:
        """P10/P50/P90 of the plan's key numbers (after sizing has set them)."""
        return None


class TrainingWorkload(Workload):
    """Pre-training and fine-tuning (full, LoRA, QLoRA) of language models."""

    kind = "training"
    work_unit = "token"

    def search(self, calibration: Calibration | None) -> PlanResult:
        from rightsize.search.train import plan_training

        return plan_training(self.spec, calibration)

    def uncertainty(self, plan: PlanResult, calibration: Calibration | None) -> dict[str, Any] | None:
        from rightsize.search.uncertainty import training_uncertainty

        return training_uncertainty(plan, self.spec, calibration=calibration)


class ServingWorkload(Workload):
    """LLM inference serving under latency SLOs."""

    kind = "serving"
    work_unit = "output_token"

    def search(self, calibration: Calibration | None) -> PlanResult:
        from rightsize.search.serving import plan_serving

        return plan_serving(self.spec, calibration)

    def uncertainty(self, plan: PlanResult, calibration: Calibration | None) -> dict[str, Any] | None:
        from rightsize.search.uncertainty import serving_uncertainty

        return serving_uncertainty(plan, self.spec, calibration=calibration)


class VisionWorkload(Workload):
    """Image classification training and real-time inference (ResNet, ViT)."""

    kind = "vision"
    work_unit = "image"

    def search(self, calibration: Calibration | None) -> PlanResult:
        from rightsize.search.vision import plan_vision

        return plan_vision(self.spec, calibration)

    def uncertainty(self, plan: PlanResult, calibration: Calibration | None) -> dict[str, Any] | None:
        from rightsize.search.uncertainty_steps import vision_uncertainty

        return vision_uncertainty(plan, self.spec, calibration)


class RecommendationWorkload(Workload):
    """Recommendation models (DLRM): training and online inference."""

    kind = "recommendation"
    work_unit = "sample"

    @property
    def unit(self) -> str:
        """Training counts samples; online inference counts queries."""
        return "query" if self.spec.mode == "inference" else "sample"

    def search(self, calibration: Calibration | None) -> PlanResult:
        from rightsize.search.recsys import plan_recsys

        return plan_recsys(self.spec, calibration)

    def uncertainty(self, plan: PlanResult, calibration: Calibration | None) -> dict[str, Any] | None:
        from rightsize.search.uncertainty_steps import recsys_uncertainty

        return recsys_uncertainty(plan, self.spec, calibration)


# spec kind (the spec's `kind` field) -> the workload that plans it. A new kind adds its line.
WORKLOADS: dict[str, type[Workload]] = {
    "training": TrainingWorkload,
    "inference": ServingWorkload,
    "vision": VisionWorkload,
    "recommendation": RecommendationWorkload,
}


def spec_types() -> tuple[type, ...]:
    """Every spec type a workload is registered for (imports every spec module)."""
    from rightsize.spec.load import SPEC_KINDS

    return tuple(SPEC_KINDS[k] for k in WORKLOADS)


def is_spec(obj: Any) -> bool:
    """Whether `obj` is a parsed spec of a kind some workload plans (imports nothing)."""
    from pydantic import BaseModel

    return isinstance(obj, BaseModel) and getattr(obj, "kind", None) in WORKLOADS


def workload_for(spec: Any) -> Workload:
    """The workload that plans this spec."""
    cls = WORKLOADS.get(getattr(spec, "kind", None)) if is_spec(spec) else None  # type: ignore[arg-type]
    if cls is None:
        raise BadInput(
            f"No workload plans a spec of type {type(spec).__name__}.",
            f"Workload kinds: {', '.join(c.kind for c in WORKLOADS.values())}.",
            "Give a training, serving, vision or recommendation spec.",
        )
    return cls(spec)
