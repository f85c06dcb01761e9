"""The scale check of whole runs planned on the search's GPU count (validate.whole_run_scale):
the published figure's implied count, found on the plan's own GPU-hours curve."""

from __future__ import annotations

from pathlib import Path

import pytest

from rightsize.sizing.pipeline import run_pipeline
from rightsize.spec.load import parse_spec
from rightsize.validate.cases import read_cases
from rightsize.validate.whole_run_cases import whole_run_spec_data
from rightsize.validate.whole_run_scale import _interpolate, implied_scale

HOLDOUT = Path(__file__).parent.parent / "src" / "rightsize" / "validate" / "data" / "holdout_training.csv"


def test_interpolation_is_log_linear_between_the_bracketing_counts() -> None:
    points = [(1024, 1.0e6), (2048, 2.0e6), (4096, 8.0e6)]
    # 4M GPU-hours lies halfway (in logs) between 2M at 2,048 and 8M at 4,096 GPUs.
    assert _interpolate(points, 4.0e6) == pytest.approx(2048 * 2**0.5)
    assert _interpolate(points, 1.0e6) == pytest.approx(1024)
    assert _interpolate(points, 9.0e6) is None
    assert _interpolate(points, 0.5e6) is None


def _case(case_id: str):
    return next(c for c in read_cases(HOLDOUT) if c.id == case_id)


def test_the_search_count_is_the_knee_and_the_curve_brackets_the_card() -> None:
    """Llama 3 8B's card (1.3M H100-hours) is planned on the count the search picks; planned on
    more GPUs the same run costs more GPU-hours (smaller share of the batch per GPU), and the
    card's figure lies on that curve well above the search's count."""
    case = _case("llama-3-8b-gpu-hours")
    data = whole_run_spec_data(case)
    plan = run_pipeline(parse_spec(data, Path(".")))
    check = implied_scale(data, plan.best.gpus, plan.best.gpu_hours, case.published)
    curve = {int(g): h for g, h in check["gpu_hours_by_gpus"].items()}
    searched = check["searched_gpus"]
    assert curve[searched] == pytest.approx(plan.best.gpu_hours)
    # With no deadline the search scales out to the knee, where every GPU keeps 80% of its best
    # per-GPU throughput: no count tried spends much less than 80% of the search's GPU-hours.
    assert min(curve.values()) >= 0.78 * curve[searched]
    larger = sorted(g for g in curve if g > searched)
    assert all(curve[a] < curve[b] for a, b in zip(larger, larger[1:], strict=False))
    implied = check["implied_gpus"]
    assert implied is not None and implied > 4 * searched
    below = max(g for g in curve if g <= implied)
    above = min(g for g in curve if g >= implied)
    assert curve[below] <= case.published <= curve[above]


def test_the_plan_shows_the_days_against_gpu_hours_front_past_the_knee() -> None:
    """The plan's Pareto front spans the counts searched, not only the knee the search keeps:
    what finishing sooner costs in GPU-hours, with the chosen point the settled plan's."""
    data = whole_run_spec_data(_case("llama-3-8b-gpu-hours"))
    plan = run_pipeline(parse_spec(data, Path(".")))
    front = plan.pareto
    chosen = [c for c in front if c is plan.best]
    assert len(chosen) == 1 and chosen[0].gpu_hours == plan.sizing.run.gpu_hours
    counts = [c.gpus for c in front]
    assert max(counts) >= 8 * plan.best.gpus and min(counts) <= plan.best.gpus // 4
    ordered = sorted(front, key=lambda c: c.gpus)
    # more GPUs: fewer days, more GPU-hours (the front is ordered both ways)
    assert all(a.time_to_train_s > b.time_to_train_s for a, b in zip(ordered, ordered[1:], strict=False))
    assert all(a.gpu_hours < b.gpu_hours for a, b in zip(ordered, ordered[1:], strict=False))
