"""Monte Carlo ranges: ordered percentiles, reproducible, consistent with the plan, and the
first-order expansion agrees with re-evaluating the real model."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rightsize.search.serving import ServingPlan, plan_serving
from rightsize.search.train import TrainingPlan, plan_training, workload_from_spec
from rightsize.search.uncertainty import (
    EFFICIENCY_RANGES,
    _train_hardware,
    coverage,
    parallel_row,
    serving_uncertainty,
    training_uncertainty,
)
from rightsize.spec import load_spec, parse_spec
from rightsize.spec.inference import InferenceSpec
from rightsize.spec.training import TrainingSpec

EX = Path(__file__).resolve().parent.parent / "examples"

TRAIN = {
    "model": "llama3-8b",
    "training": {"seq_len": 4096, "global_batch": 512, "train_tokens": "1T"},
    "targets": {"accelerators": ["h100-sxm"], "gpus": 256, "deadline": "60d"},
}
SERVE = {
    "kind": "inference",
    "model": "llama3-8b",
    "traffic": {"rate": 4, "prompt_tokens": 512, "output_tokens": 128},
    "slo": {"ttft": "1s", "tpot": "50ms"},
    "targets": {"accelerators": ["h100-sxm"], "tp": 1},
}


@pytest.fixture(scope="module")
def training() -> tuple[TrainingPlan, TrainingSpec]:
    spec = parse_spec(TRAIN, Path("."))
    assert isinstance(spec, TrainingSpec)
    return plan_training(spec), spec


@pytest.fixture(scope="module")
def serving() -> tuple[ServingPlan, InferenceSpec]:
    spec = parse_spec(SERVE, Path("."))
    assert isinstance(spec, InferenceSpec)
    return plan_serving(spec), spec


def _ordered(m: dict[str, float]) -> bool:
    q = m["quantiles"]
    return m["p10"] <= m["p50"] <= m["p90"] and all(a <= b for a, b in zip(q, q[1:], strict=False))


def test_training_percentiles(training: tuple[TrainingPlan, TrainingSpec]) -> None:
    plan, spec = training
    u = training_uncertainty(plan, spec)
    m = u["metrics"]
    assert {"step_time_s", "time_to_train_s", "gpu_hours", "cost_usd"} <= set(m)
    for v in m.values():
        assert _ordered(v)
    # every run quantity scales with the step: the same relative spread
    rel = [m[k]["p90"] / m[k]["base"] for k in ("step_time_s", "time_to_train_s", "gpu_hours")]
    assert rel == pytest.approx([rel[0]] * 3)
    # the ranges are skewed slow: the plan sits near the fast end, P90 is slower than the plan
    assert m["time_to_train_s"]["p90"] > plan.best.time_to_train_s
    assert m["time_to_train_s"]["quantiles"][0] <= plan.best.time_to_train_s * 1.05
    assert 0.0 <= u["deadline"]["probability_met"] <= 1.0
    assert len(u["ranges"]) == len(EFFICIENCY_RANGES) and all(r["source"] for r in u["ranges"])


def test_reproducible_and_measured_spread_widens(training: tuple[TrainingPlan, TrainingSpec]) -> None:
    plan, spec = training
    a = training_uncertainty(plan, spec, samples=500)
    b = training_uncertainty(plan, spec, samples=500)
    assert a["metrics"] == b["metrics"]
    # 0.4: above the H100 family's own error sigma (issue 28), so the measured spread dominates
    wide = training_uncertainty(plan, spec, samples=500, measured_sigma=0.4)
    width = lambda u: u["metrics"]["step_time_s"]["p90"] - u["metrics"]["step_time_s"]["p10"]  # noqa: E731
    assert width(wide) > 1.5 * width(a)


def test_first_order_matches_the_model(training: tuple[TrainingPlan, TrainingSpec]) -> None:
    """exp(sum e_f ln m_f) against train_step re-run with the efficiencies scaled."""
    from rightsize.perf.step import train_step

    plan, spec = training
    u = training_uncertainty(plan, spec, samples=200)
    w = workload_from_spec(spec)
    cfg = parallel_row(plan.best.parallel)
    hw = _train_hardware(plan, spec, None)
    base = float(train_step(w, cfg, hw).step_time[0])
    assert base == pytest.approx(plan.best.step_time_s, rel=1e-9)
    for mult in (
        {"gemm_fraction": 0.85, "scaleout_bw_fraction": 0.75},
        {"gemm_fraction": 1.05, "memory_bw_fraction": 0.9},
    ):
        exact = float(
            train_step(
                w, cfg, hw.with_overrides(**{f: getattr(hw, f) * m for f, m in mult.items()})
            ).step_time[0]
        )
        approx = base * math.exp(sum(u["elasticities"][f] * math.log(m) for f, m in mult.items()))
        assert approx == pytest.approx(exact, rel=0.03)


def test_serving_percentiles(serving: tuple[ServingPlan, InferenceSpec]) -> None:
    plan, spec = serving
    u = serving_uncertainty(plan, spec)
    m = u["metrics"]
    for v in m.values():
        assert _ordered(v)
    reps = np.array(m["replicas"]["quantiles"])
    assert np.all(reps >= 1) and np.all(reps == np.round(reps))
    assert 0.0 <= u["replicas"]["probability_sufficient"] <= 1.0
    assert any(k.startswith("latency_tpot") for k in m)
    # decode is memory-bound: its time follows the HBM efficiency, not the GEMM one
    assert u["elasticities"]["decode"]["memory_bw_fraction"] < -0.5
    assert 0.0 < u["prefill_share_of_gpu_time"] < 1.0


def test_fixed_batch_serving() -> None:
    spec = load_spec(EX / "llama2-7b-batch1.yaml")
    assert isinstance(spec, InferenceSpec)
    plan = plan_serving(spec)
    u = serving_uncertainty(plan, spec, samples=300)
    assert "replicas" not in u and _ordered(u["metrics"]["latency_tpot_p50_s"])


def test_coverage() -> None:
    m = {"quantiles": list(np.linspace(10.0, 30.0, 21))}
    assert coverage(m, 5.0) == 0.0 and coverage(m, 40.0) == 1.0
    assert coverage(m, 20.0) == pytest.approx(0.5)
