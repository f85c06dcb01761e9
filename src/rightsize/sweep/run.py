"""Run a sweep: every scenario planned by the same pure function, here in this process or on a
Dask cluster (`dask.distributed`: a local cluster of processes, or a scheduler's address for many
machines). The planner is deterministic (the fleet's solver is seeded), so a scenario gives the
same figures on any engine; results come back in scenario order.

A scenario that is infeasible or refused is a row with its error, not the end of the sweep.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput, RightsizeError
from rightsize.spec.sweep import SweepSpec
from rightsize.sweep.scenarios import ScenarioSpec, check, expand

ENGINES = ("local", "dask")


@dataclass
class SweepResult:
    name: str
    base: str
    engine: str
    rows: list[dict[str, Any]]
    seconds: float
    workers: int = 1
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        from rightsize.constants import REPORT_SCHEMA_VERSION

        ok = [r for r in self.rows if r["status"] == "ok"]
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "kind": "sweep",
            "name": self.name,
            "base": self.base,
            "engine": self.engine,
            "workers": self.workers,
            "scenarios": len(self.rows),
            "planned": len(ok),
            "failed": len(self.rows) - len(ok),
            "seconds": self.seconds,
            "summary": summary(ok),
            "rows": self.rows,
            "notes": self.notes,
        }


def _get(d: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(d, dict):
            d = d.get(part)
        elif isinstance(d, list) and part.isdigit() and int(part) < len(d):
            d = d[int(part)]
        else:
            return None
    return d


HEADLINE = {  # plan kind -> (figure, dotted path in its JSON)
    "fleet_plan": [
        ("pooled_usd", "cost.pooled_usd"),
        ("dedicated_usd", "cost.dedicated_usd"),
        ("saving_fraction", "cost.saving_fraction"),
    ],
    "training_plan": [
        ("accelerator", "best.accelerator"),
        ("gpus", "best.gpus"),
        ("time_to_train_days", "best.time_to_train_days"),
        ("gpu_hours", "best.gpu_hours"),
        ("cloud_cost_usd", "best.cloud_cost_usd"),
    ],
    "serving_plan": [
        ("accelerator", "best.accelerator"),
        ("gpus", "best.gpus"),
        ("replicas", "best.replicas"),
        ("cost_usd_per_hour", "best.cost_usd_per_hour"),
        ("cost_usd_per_m_output_tokens", "best.cost_usd_per_m_output_tokens"),
    ],
}


def plan_scenario(data: dict[str, Any], base_dir: str, source: str, report: list[str]) -> dict[str, Any]:
    """Plan one scenario's spec; its headline figures (and the `report` paths), or its error.
    Pure: what it returns depends on its arguments only (a Dask task, or a local call)."""
    from rightsize.api import plan
    from rightsize.report.render import result_dict
    from rightsize.spec.fleet_load import is_fleet_data, parse_fleet
    from rightsize.spec.load import parse_spec

    t0 = time.perf_counter()
    try:
        spec = (
            parse_fleet(data, Path(base_dir), source)
            if is_fleet_data(data)
            else parse_spec(data, Path(base_dir), source)
        )
        d = result_dict(plan(spec))
    except RightsizeError as exc:
        return {"status": "infeasible" if exc.exit_code == 1 else "refused", "error": exc.message()}
    kind = str(d.get("kind"))
    figures: dict[str, Any] = {name: _get(d, path) for name, path in HEADLINE.get(kind, [])}
    if kind == "fleet_plan":
        figures["peak_gpus"] = max((int(m["demand_gpus"]) for m in d.get("timeline", [])), default=0)
        figures["solver_status"] = _get(d, "solver.status")
    for path in report:
        figures[path] = _get(d, path)
    return {"status": "ok", "plan_kind": kind, "figures": figures, "seconds": time.perf_counter() - t0}


def summary(ok: list[dict[str, Any]]) -> dict[str, Any]:
    """Per numeric figure over the planned scenarios: min, P10, P50, P90, max."""
    import numpy as np

    out: dict[str, Any] = {}
    names = dict.fromkeys(k for r in ok for k in r["figures"])
    for name in names:
        vals = [r["figures"].get(name) for r in ok]
        nums = np.array(
            [
                float(v)
                for v in vals
                if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            ]
        )
        if nums.size:
            p10, p50, p90 = np.percentile(nums, [10, 50, 90])
            out[name] = {
                "min": float(nums.min()),
                "p10": float(p10),
                "p50": float(p50),
                "p90": float(p90),
                "max": float(nums.max()),
            }
    return out


def load_sweep(path: str | Path) -> tuple[SweepSpec, Path, dict[str, Any]]:
    """The sweep spec, the base spec's folder and its mapping (read as every spec is: capped,
    inside the sweep file's folder unless RIGHTSIZE_ALLOW_OUTSIDE=1)."""
    from pydantic import ValidationError

    from rightsize.spec.fleet_load import outside_allowed
    from rightsize.spec.load import read_spec_yaml, validation_error

    path = Path(path).expanduser().resolve()
    raw = read_spec_yaml(path)
    try:
        spec = SweepSpec.model_validate(raw)
    except ValidationError as exc:
        raise validation_error(exc, SweepSpec, str(path)) from None
    base = (path.parent / spec.base).resolve()
    if not outside_allowed(None) and path.parent not in base.parents:
        raise BadInput(
            f"The sweep's base {spec.base!r} is outside the sweep file's folder.",
            "A sweep reads only specs beside it or below it, like a fleet.",
            "Move the base spec into the sweep file's folder, or set RIGHTSIZE_ALLOW_OUTSIDE=1.",
        )
    data = read_spec_yaml(base)
    if not isinstance(data, dict):
        raise BadInput(
            f"The sweep's base {spec.base} is not a spec mapping.", fix="Point base: at a spec file."
        )
    if data.get("kind") == "sweep":
        raise BadInput("A sweep's base is itself a sweep.", fix="Point base: at a workload or fleet spec.")
    return spec, base, data


def run_sweep(
    path: str | Path,
    engine: str = "local",
    address: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Plan every scenario of the sweep file at `path` on `engine` ('local', or 'dask': the
    scheduler at `address`, or a local cluster of `workers` processes when none is given)."""
    spec, base, data = load_sweep(path)
    scenarios = expand(spec, data)
    check(scenarios, base.parent, str(base))
    t0 = time.perf_counter()
    args = [(sc.data, str(base.parent), str(base), list(spec.report)) for sc in scenarios]
    if engine == "local":
        outs = []
        for i, a in enumerate(args):
            outs.append(plan_scenario(*a))
            if progress:
                progress(i + 1, len(args))
        used = 1
    elif engine == "dask":
        outs, used = _on_dask(args, address, workers, progress)
    else:
        raise BadInput(f"Unknown sweep engine {engine!r}.", fix=f"Use one of {', '.join(ENGINES)}.")
    rows = [_row(sc, out) for sc, out in zip(scenarios, outs, strict=True)]
    return SweepResult(spec.name or Path(path).stem, str(base), engine, rows, time.perf_counter() - t0, used)


def _row(sc: ScenarioSpec, out: dict[str, Any]) -> dict[str, Any]:
    return {"scenario": sc.name, "overrides": sc.overrides, **out}


def _on_dask(
    args: list[tuple[Any, ...]],
    address: str | None,
    workers: int | None,
    progress: Callable[[int, int], None] | None,
) -> tuple[list[dict[str, Any]], int]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise BadInput(
            "--engine dask needs Dask's distributed scheduler, which is not installed.",
            fix="pip install 'rightsize[distributed]' (dask[distributed]), or use --engine local.",
        ) from None
    cluster = None
    if address is None:
        cluster = LocalCluster(
            n_workers=workers or 2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="30s")
        except (OSError, TimeoutError) as exc:
            raise BadInput(
                f"Cannot reach the Dask scheduler at {address}: {exc}.",
                fix="Check the address (tcp://host:8786) and that the scheduler runs.",
            ) from None
    try:
        used = len(client.scheduler_info().get("workers", {}))
        futures = [client.submit(plan_scenario, *a, pure=True) for a in args]
        if progress:
            for i, _ in enumerate(as_completed(futures)):
                progress(i + 1, len(futures))
        return list(client.gather(futures)), used
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
