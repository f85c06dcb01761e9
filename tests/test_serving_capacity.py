"""The fast capacity search gives the reference bisection's answer, and a simulation stopped
early gives the verdict of the full run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rightsize.perf.serving_sim import EngineModel, simulate
from rightsize.perf.serving_slo import SloCheck, meets, simulate_meets
from rightsize.perf.traffic import arrival_times, sample_lengths
from rightsize.search.serving_capacity import capacity_rps, first_leaf, leaf_rate


def _reference(passes, lo: float, hi: float, steps: int) -> float:
    """The bisection the planner ran before: trickle check, then `steps` halvings."""
    if not passes(lo):
        return 0.0
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if passes(mid):
            lo = mid
        else:
            hi = mid
    return lo


@pytest.mark.parametrize("threshold", [0.0005, 0.001, 0.00100001, 0.02, 0.5, 0.93, 0.99, 1.0, 1.04, 2.0])
@pytest.mark.parametrize("hint", ["none", "guess", "start_high", "start_low", "start_zero", "known"])
def test_capacity_equals_reference_bisection(threshold: float, hint: str) -> None:
    """Whatever the hint (a cheap guess, a rough start rate, a leaf known to pass), the
    answer is the reference bisection's."""
    calls: list[float] = []

    def passes(rate: float) -> bool:
        calls.append(rate)
        return rate <= threshold

    want = _reference(lambda r: r <= threshold, 1e-3, 1.05, 9)
    kw: dict = {}
    if hint == "guess":
        kw["guess"] = lambda rate: rate <= threshold * 1.03
    elif hint.startswith("start"):
        kw["start_rate"] = {"start_high": threshold * 1.3, "start_low": threshold * 0.5, "start_zero": 0.0}[
            hint
        ]
    elif hint == "known":
        known = first_leaf(1e-3, 1.05, 9, lambda r: r >= 1e-3 * 3)
        if not passes(leaf_rate(1e-3, 1.05, 9, known)):
            return  # the caller would have pruned the option
        calls.clear()
        kw["known_pass"] = known
    assert capacity_rps(passes, 1e-3, 1.05, 9, **kw) == want
    assert len(set(calls)) == len(calls)  # no rate simulated twice


MODEL = EngineModel(
    iteration_base_s=12e-3,
    decode_per_seq_s=0.05e-3,
    decode_per_ctx_token_s=1e-7,
    prefill_per_token_s=0.06e-3,
    prefill_attn_per_token2_s=1e-10,
    max_batch=256,
    kv_capacity_tokens=400_000,
)


@pytest.mark.parametrize("rate", [2.0, 6.0, 8.0, 9.0, 12.0])
@pytest.mark.parametrize(
    "check",
    [
        SloCheck(ttft_s=0.5, tpot_s=0.03, percentile=95),
        SloCheck(e2e_s=8.0, percentile=99),
        SloCheck(ttft_s=1.0, tpot_s=0.025, e2e_s=10.0, percentile=90, goodput=0.9),
    ],
)
def test_stopped_run_gives_the_full_runs_verdict(rate: float, check: SloCheck) -> None:
    rng = np.random.default_rng(3)
    n = 1500
    arr = arrival_times(n, rate, rng)
    prompt = sample_lengths(n, rng, "lognormal", mean=1024, std=512, max_=8192)
    output = sample_lengths(n, rng, "lognormal", mean=256, std=128, max_=2048)
    full = meets(simulate(arr, prompt, output, MODEL, 0.2), check)
    assert simulate_meets(arr, prompt, output, MODEL, check, 0.2) == full
