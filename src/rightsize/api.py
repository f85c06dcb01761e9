"""The Python API, mirroring the command line: `plan(spec)` and `estimate(spec)`.

A spec is a path to a YAML file, a dict of the same shape, or a parsed spec
(`TrainingSpec` or `InferenceSpec`); the spec's `kind` picks the planner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.search.serving import ServingPlan, plan_serving
from rightsize.search.train import TrainingPlan, plan_training
from rightsize.spec import InferenceSpec, TrainingSpec, load_spec, parse_spec

AnySpec = TrainingSpec | InferenceSpec


def _as_spec(spec: str | Path | dict[str, Any] | AnySpec) -> AnySpec:
    if isinstance(spec, TrainingSpec | InferenceSpec):
        return spec
    if isinstance(spec, dict):
        return parse_spec(spec, Path.cwd())
    return load_spec(spec)


def plan(spec: str | Path | dict[str, Any] | AnySpec) -> TrainingPlan | ServingPlan:
    """Search hardware and layouts for the spec; the best plan with alternatives."""
    s = _as_spec(spec)
    if isinstance(s, InferenceSpec):
        return plan_serving(s)
    return plan_training(s)


def estimate(spec: str | Path | dict[str, Any] | AnySpec) -> TrainingPlan | ServingPlan:
    """Evaluate one configuration: the spec must fix the accelerator (and, for training,
    the GPU count). Settings it leaves blank are chosen by search on that hardware."""
    s = _as_spec(spec)
    accs = s.targets.accelerators or []
    if isinstance(s, InferenceSpec):
        if len(accs) != 1:
            raise BadInput(
                "`estimate` evaluates one engine configuration, but the spec leaves the accelerator open.",
                f"It needs exactly one accelerator (got {accs or 'all'}).",
                "Set `targets.accelerators: [h100-sxm]` (and `targets.tp`), or use `rightsize plan` to search.",
            )
        return plan_serving(s)
    if s.targets.gpus is None or len(accs) != 1:
        raise BadInput(
            "`estimate` evaluates one configuration, but the spec leaves the hardware open.",
            f"It needs exactly one accelerator and a GPU count (got accelerators={accs or 'all'}, "
            f"gpus={s.targets.gpus}).",
            "Set `targets.accelerators: [h100-sxm]` and `targets.gpus: 1024`, or use `rightsize plan` to search.",
        )
    return plan_training(s)
