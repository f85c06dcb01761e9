"""The Python API, mirroring the command line: `plan(spec)` and `estimate(spec)`.

A spec is a path to a YAML file, a dict of the same shape, or a parsed spec; the spec's
type picks the planner in `PLANNERS`. Every planner returns a plan whose `demand` says what
the chosen configuration asks of the infrastructure; `plan` then sizes that (nodes, fabric,
storage, power, reliability, cost, margins, growth) into `plan.sizing`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.search.recsys import plan_recsys
from rightsize.search.serving import ServingPlan, plan_serving
from rightsize.search.train import TrainingPlan, plan_training
from rightsize.search.vision import plan_vision
from rightsize.spec import InferenceSpec, TrainingSpec, load_spec, parse_spec
from rightsize.spec.recsys import RecsysSpec
from rightsize.spec.vision import VisionSpec

AnySpec = Any  # TrainingSpec | InferenceSpec | any spec kind registered in PLANNERS
Calibration = dict[str, dict[str, float]]  # accelerator id -> Hardware field overrides


def _plan_training(spec: TrainingSpec, calibration: Calibration | None) -> TrainingPlan:
    return plan_training(spec, calibration)


def _plan_serving(spec: InferenceSpec, calibration: Calibration | None) -> ServingPlan:
    return plan_serving(spec)


# spec class -> planner(spec, calibration). A new workload kind adds its entry here.
PLANNERS: dict[type, Callable[[Any, Calibration | None], Any]] = {
    TrainingSpec: _plan_training,
    InferenceSpec: _plan_serving,
    VisionSpec: plan_vision,
    RecsysSpec: plan_recsys,
}


def _as_spec(spec: str | Path | dict[str, Any] | AnySpec) -> AnySpec:
    from rightsize.spec.fleet_load import ResolvedFleet, as_fleet

    if isinstance(spec, (*PLANNERS, ResolvedFleet)):
        return spec
    fleet = as_fleet(spec)  # a `kind: fleet` file or mapping, else None
    if fleet is not None:
        return fleet
    if isinstance(spec, dict):
        return parse_spec(spec, Path.cwd())
    return load_spec(spec)


def _calibration(calibration: str | Path | Calibration | None) -> Calibration | None:
    if calibration is None or isinstance(calibration, dict):
        return calibration
    from rightsize.profile.calibration_file import load_calibration

    return load_calibration(Path(calibration))


def _run(spec: AnySpec, calibration: str | Path | Calibration | None, uncertainty: bool = True) -> Any:
    cal = _calibration(calibration)
    from rightsize.spec.fleet_load import ResolvedFleet

    if isinstance(spec, ResolvedFleet):  # many workloads: each through this same pipeline, then the pool
        from rightsize.fleet import plan_fleet

        return plan_fleet(spec, lambda one: _run(one, cal, uncertainty=False))
    result = PLANNERS[type(spec)](spec, cal)
    from rightsize.search.uncertainty import serving_uncertainty, training_uncertainty

    if not uncertainty:
        pass
    elif isinstance(result, TrainingPlan):
        result.uncertainty = training_uncertainty(result, spec, calibration=cal)
    elif isinstance(result, ServingPlan):
        result.uncertainty = serving_uncertainty(result, spec)
    demand = getattr(result, "demand", None)
    if demand is not None:
        from rightsize.sizing.plan import size

        extra = dict(getattr(result, "extra", None) or {})
        best = getattr(result, "best", None)
        if best is not None and hasattr(best, "replica_capacity_rps"):
            extra["replica_capacity_rps"] = best.replica_capacity_rps
        result.sizing = size(demand, spec.infrastructure, getattr(spec, "policy", None), extra)
    return result


def plan(
    spec: str | Path | dict[str, Any] | AnySpec, calibration: str | Path | Calibration | None = None
) -> Any:
    """Search hardware and layouts for the spec; the best plan with alternatives and its sizing."""
    return _run(_as_spec(spec), calibration)


def estimate(
    spec: str | Path | dict[str, Any] | AnySpec, calibration: str | Path | Calibration | None = None
) -> Any:
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
    elif isinstance(s, TrainingSpec) and (s.targets.gpus is None or len(accs) != 1):
        raise BadInput(
            "`estimate` evaluates one configuration, but the spec leaves the hardware open.",
            f"It needs exactly one accelerator and a GPU count (got accelerators={accs or 'all'}, "
            f"gpus={s.targets.gpus}).",
            "Set `targets.accelerators: [h100-sxm]` and `targets.gpus: 1024`, or use `rightsize plan` to search.",
        )
    return _run(s, calibration)
