"""What a training run costs beyond its steady-state steps: evaluation, planned
maintenance stops and the spreads of each part (``whole_run.yaml``), sourced. Formulas live in `rightsize.perf.whole_run`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from rightsize.catalog.loader import CatalogDataError, Sourced, read_data_file, require_mapping, sourced

_FILE = "whole_run.yaml"


@dataclass(frozen=True)
class WholeRunFactors:
    eval_interval_steps: float
    eval_iters: float
    eval_forward_share: float
    planned_interruptions_per_gpu_hour: float
    failures_low: float
    failures_high: float
    stragglers_high: float
    # Published runs' losses beyond the modelled lines, as fractions of the run, ascending.
    unplanned_losses: tuple[float, ...]
    # Runs shorter than the shortest published one carry the losses in proportion.
    unplanned_shortest_run_days: float
    sources: dict[str, Sourced]
    unplanned_sources: tuple[tuple[str, Sourced], ...] = ()


@cache
def whole_run_factors() -> WholeRunFactors:
    raw = read_data_file(_FILE)
    ev = require_mapping(raw, "evaluation", _FILE, "evaluation")
    sp = require_mapping(raw, "spread", _FILE, "spread")
    f: dict[str, Sourced] = {
        "eval_interval_steps": sourced(
            ev.get("interval_steps"), _FILE, "evaluation.interval_steps", minimum=1
        ),
        "eval_iters": sourced(ev.get("iters"), _FILE, "evaluation.iters", allow_zero=True),
        "eval_forward_share": sourced(
            ev.get("forward_share_of_step"), _FILE, "evaluation.forward_share_of_step", maximum=1.0
        ),
    }
    mt = require_mapping(raw, "maintenance", _FILE, "maintenance")
    f["planned_interruptions_per_gpu_hour"] = sourced(
        mt.get("planned_interruptions_per_gpu_hour"),
        _FILE,
        "maintenance.planned_interruptions_per_gpu_hour",
        allow_zero=True,
        maximum=1.0,
    )
    for k in ("failures_low", "failures_high", "stragglers_high"):
        f[k] = sourced(sp.get(k), _FILE, f"spread.{k}", maximum=10.0)
    f["unplanned_shortest_run_days"] = sourced(
        raw.get("unplanned_shortest_run_days"), _FILE, "unplanned_shortest_run_days", maximum=3650.0
    )
    runs = _unplanned_runs(raw.get("unplanned_losses"))
    return WholeRunFactors(
        **{k: v.value for k, v in f.items()},
        unplanned_losses=tuple(sorted(s.value for _, s in runs)),
        sources=f,
        unplanned_sources=runs,
    )


def _unplanned_runs(raw: Any) -> tuple[tuple[str, Sourced], ...]:
    """The published runs' losses beyond the modelled lines: (run, sourced fraction) each."""
    if not isinstance(raw, list) or not raw:
        raise CatalogDataError(_FILE, "unplanned_losses", "must be a non-empty list of published runs")
    out = []
    for i, item in enumerate(raw):
        key = f"unplanned_losses[{i}]"
        if not isinstance(item, dict) or not str(item.get("run") or "").strip():
            raise CatalogDataError(_FILE, key, "must name its run ('run:') and give value, source and as_of")
        figure = {k: v for k, v in item.items() if k != "run"}
        out.append((str(item["run"]), sourced(figure, _FILE, key, allow_zero=True, maximum=10.0)))
    return tuple(out)
