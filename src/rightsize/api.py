"""The Python API, mirroring the command line: `plan(spec)` and `estimate(spec)`.

A spec is a path to a YAML file, a dict of the same shape, or a parsed spec; the spec's
type picks its `Workload` (rightsize.search.workload), and every workload goes through the
one pipeline (rightsize.sizing.pipeline): search -> size -> settle -> uncertainty. The plan's
`demand` says what the chosen configuration asks of the infrastructure and `plan.sizing` is
the typed bill of materials (rightsize.sizing.plan.Sizing).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rightsize.errors import BadInput

if TYPE_CHECKING:
    from rightsize.spec.prices import UserPrices

AnySpec = Any  # any spec kind a Workload is registered for (rightsize.search.workload)
Calibration = dict[str, dict[str, float]]  # accelerator id -> Hardware field overrides


def __getattr__(name: str) -> Any:
    # PLANNERS (spec class -> planner(spec, calibration)) is kept for callers of the old
    # registry; the Workload registry in rightsize.search.workload is the one source.
    if name == "PLANNERS":
        from rightsize.search.workload import spec_types, workload_for

        return {t: (lambda spec, cal: workload_for(spec).search(cal)) for t in spec_types()}
    raise AttributeError(name)


def _is_resolved_fleet(spec: Any) -> bool:
    """A resolved fleet (its module is imported only once a fleet is read)."""
    fleet_load = sys.modules.get("rightsize.spec.fleet_load")
    return fleet_load is not None and isinstance(spec, fleet_load.ResolvedFleet)


def _names_a_fleet(spec: Any) -> bool:
    """Whether `spec` is a `kind: fleet` mapping or file (read cheaply: the fleet reader, and
    the fleet spec's models, load only for a fleet)."""
    data = spec
    if isinstance(spec, str | Path):
        from rightsize.spec.load import read_spec_yaml

        try:
            data = read_spec_yaml(spec)  # capped: a regular file, size, depth and aliases bounded
        except BadInput:
            return False  # load_spec reports it
    return isinstance(data, dict) and data.get("kind") == "fleet"


def _as_spec(spec: str | Path | dict[str, Any] | AnySpec) -> AnySpec:
    from rightsize.search.workload import is_spec
    from rightsize.spec.load import load_spec, parse_spec

    if is_spec(spec) or _is_resolved_fleet(spec):
        return spec
    if _names_a_fleet(spec):
        from rightsize.spec.fleet_load import as_fleet

        fleet = as_fleet(spec)
        if fleet is not None:
            return fleet
    if isinstance(spec, dict):
        return parse_spec(spec, Path.cwd())
    return load_spec(spec)


def _calibration(calibration: str | Path | Calibration | None) -> Calibration | None:
    """The calibration as overrides, each figure checked for range where it is applied."""
    from rightsize.search.calibrated import checked_calibration

    if calibration is None or isinstance(calibration, dict):
        return checked_calibration(calibration)
    from rightsize.profile.calibration_file import load_calibration

    return checked_calibration(load_calibration(Path(calibration)))


PricesArg = Any  # a YAML file path, a mapping of the spec's `prices:` shape, a UserPrices, or None


def _user_prices(prices: PricesArg) -> UserPrices | None:
    from rightsize.spec.prices import UserPrices, load_user_prices

    if prices is None or isinstance(prices, UserPrices):
        return prices
    if isinstance(prices, dict):
        return UserPrices.model_validate(prices)
    return load_user_prices(prices)


def _run(spec: AnySpec, calibration: str | Path | Calibration | None, prices: PricesArg = None) -> Any:
    """Plan under the prices in effect: `prices` (a `--prices FILE`) over the spec's `prices:` over the catalog."""
    from rightsize.catalog.prices import prices_in_effect, shipped_prices
    from rightsize.catalog.providers import restrict_providers
    from rightsize.catalog.user_prices import merge_user_prices

    table = restrict_providers(shipped_prices(), getattr(getattr(spec, "targets", None), "providers", None))
    spec_prices = getattr(spec, "prices", None)
    table = merge_user_prices(table, spec_prices, "spec prices:")
    given = _user_prices(prices)
    if given is not None:
        table = merge_user_prices(table, given, "--prices file")
    with prices_in_effect(table):
        result = _run_priced(spec, calibration)
    if isinstance(getattr(result, "assumptions", None), list):
        if table.user_notes:
            result.assumptions.append("User prices (source 'user'): " + "; ".join(table.user_notes) + ".")
        result.assumptions.extend(n[0].upper() + n[1:] + "." for n in getattr(spec, "_notes", ()))
    return result


def _run_priced(spec: AnySpec, calibration: str | Path | Calibration | None) -> Any:
    from rightsize.sizing.pipeline import run_pipeline

    cal = _calibration(calibration)
    if _is_resolved_fleet(spec):  # many workloads: each through this same pipeline, then the pool
        from rightsize.fleet import plan_fleet

        return plan_fleet(spec, lambda one: run_pipeline(one, cal, uncertainty=False))
    result = run_pipeline(spec, cal)
    if isinstance(getattr(result, "extra", None), dict) and hasattr(spec, "model_dump"):
        # The spec as planned travels with the plan (JSON `spec`), so a saved plan can be
        # exported to job files without the YAML it came from.
        result.extra["spec"] = spec.model_dump(mode="json")
    return result


def plan(
    spec: str | Path | dict[str, Any] | AnySpec,
    calibration: str | Path | Calibration | None = None,
    prices: PricesArg = None,
) -> Any:
    """Search hardware and layouts for the spec; the best plan with alternatives and its sizing.

    `prices` (a YAML file path, a mapping or `UserPrices`, the shape of the spec's `prices:`)
    is merged over the spec's own prices, which are merged over the catalog."""
    return _run(_as_spec(spec), calibration, prices)


def estimate(
    spec: str | Path | dict[str, Any] | AnySpec,
    calibration: str | Path | Calibration | None = None,
    prices: PricesArg = None,
) -> Any:
    """Evaluate one configuration: the spec must fix the accelerator (and, for training,
    the GPU count). Settings it leaves blank are chosen by search on that hardware."""
    from rightsize.spec.inference import InferenceSpec
    from rightsize.spec.training import TrainingSpec

    s = _as_spec(spec)
    if not hasattr(s, "targets"):  # a fleet: many workloads, each searched
        raise BadInput(
            "`estimate` evaluates one configuration, but this spec is a fleet of workloads.",
            "A fleet is planned as a whole: each workload is searched, then the shared pool is sized.",
            "Use `rightsize plan FLEET.yaml`, or `rightsize estimate` on one workload's spec.",
        )
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
    return _run(s, calibration, prices)
