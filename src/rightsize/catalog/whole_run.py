"""What a training run costs beyond its steady-state steps: evaluation, planned
maintenance stops and the spreads of each part (``whole_run.yaml``), sourced. Formulas live in `rightsize.perf.whole_run`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from rightsize.catalog.loader import Sourced, read_data_file, require_mapping, sourced

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
    fail_slow_high: float
    unplanned_high: float
    sources: dict[str, Sourced]


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
    for k in ("failures_low", "failures_high", "stragglers_high", "fail_slow_high", "unplanned_high"):
        f[k] = sourced(sp.get(k), _FILE, f"spread.{k}", maximum=10.0)
    return WholeRunFactors(**{k: v.value for k, v in f.items()}, sources=f)
