"""The GPU count a published whole run implies, for a run whose count was not published.

A model card that gives GPU-hours without the GPU count (Llama 3 8B and 70B) is planned on
the count the search picks (`whole_run_cases.PLANNER_SCALE`): with neither deadline nor count,
the largest at which every GPU keeps 80% of its best per-GPU throughput (the knee of the
scaling curve, `search.train`). A team that spread the same run over more GPUs, to finish in
fewer days, paid for it in GPU-hours: each GPU holds a smaller share of the batch, so more of
its step is communication and pipeline bubble. When the published figure misses the plan by
more than the whole-run tolerance or falls outside its P10-P90, this check plans the same run
on fixed counts around the search's (a quarter of it to 16 times it, in powers of two) and
reports the GPU-hours at each, and the count at which the plan would spend the published
figure (log-linear between the two counts around it).

It explains an error; it changes no prediction. The row's error and range stay those of the
search's count, and the implied count is not fed back anywhere: picking the count that
matches a row would be fitting that row.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from rightsize.errors import RightsizeError
from rightsize.sizing.pipeline import run_pipeline
from rightsize.spec.load import parse_spec

# Counts tried, as multiples of the search's: 1/4 to 16x in powers of two.
SCALE_FACTORS = (0.25, 0.5, 2.0, 4.0, 8.0, 16.0)


def _gpu_hours_at(data: dict[str, Any], gpus: int) -> float | None:
    """The whole run's GPU-hours planned on exactly `gpus` (None: no layout fits)."""
    fixed = copy.deepcopy(data)
    fixed.setdefault("targets", {})["gpus"] = gpus
    try:
        plan = run_pipeline(parse_spec(fixed, Path(".")))
    except RightsizeError:
        return None
    return plan.best.gpu_hours


def _interpolate(points: list[tuple[int, float]], published: float) -> float | None:
    """The count between two neighbouring points whose GPU-hours bracket `published`, found
    log-linearly; None when no pair brackets it."""
    for (g0, h0), (g1, h1) in zip(points, points[1:], strict=False):
        if min(h0, h1) <= published <= max(h0, h1) and h0 != h1:
            t = (math.log(published) - math.log(h0)) / (math.log(h1) - math.log(h0))
            return math.exp(math.log(g0) + t * (math.log(g1) - math.log(g0)))
    return None


def implied_scale(
    data: dict[str, Any], chosen_gpus: int, chosen_gpu_hours: float, published: float
) -> dict[str, Any]:
    """GPU-hours of the run planned on counts around the search's, and the count whose plan
    spends the published figure (None when no count tried reaches it)."""
    points = [(chosen_gpus, chosen_gpu_hours)]
    for factor in SCALE_FACTORS:
        gpus = int(chosen_gpus * factor)
        if gpus < 1 or gpus == chosen_gpus:
            continue
        hours = _gpu_hours_at(data, gpus)
        if hours is not None:
            points.append((gpus, hours))
    points.sort()
    implied = _interpolate(points, published)
    return {
        "searched_gpus": chosen_gpus,
        "gpu_hours_by_gpus": {str(g): h for g, h in points},
        "implied_gpus": round(implied) if implied is not None else None,
    }
