"""The Python API, mirroring the command line: `plan(spec)` and `estimate(spec)`.

A spec is a path to a YAML file, a dict of the same shape, or a `TrainingSpec`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.search.train import TrainingPlan, plan_training
from rightsize.spec import TrainingSpec, load_spec, parse_spec


def _as_spec(spec: str | Path | dict[str, Any] | TrainingSpec) -> TrainingSpec:
    if isinstance(spec, TrainingSpec):
        return spec
    if isinstance(spec, dict):
        return parse_spec(spec, Path.cwd())
    return load_spec(spec)


def plan(spec: str | Path | dict[str, Any] | TrainingSpec) -> TrainingPlan:
    """Search hardware and parallel layouts for the spec; the best plan with alternatives."""
    return plan_training(_as_spec(spec))


def estimate(spec: str | Path | dict[str, Any] | TrainingSpec) -> TrainingPlan:
    """Evaluate one configuration: the spec must fix the accelerator and the GPU count.
    Parallel settings it leaves blank are chosen by search on that hardware."""
    s = _as_spec(spec)
    accs = s.targets.accelerators or []
    if s.targets.gpus is None or len(accs) != 1:
        raise BadInput(
            "`estimate` evaluates one configuration, but the spec leaves the hardware open.",
            f"It needs exactly one accelerator and a GPU count (got accelerators={accs or 'all'}, "
            f"gpus={s.targets.gpus}).",
            "Set `targets.accelerators: [h100-sxm]` and `targets.gpus: 1024`, or use `rightsize plan` to search.",
        )
    return plan_training(s)
