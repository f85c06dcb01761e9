"""A request set prepared once for many rates (`PreparedRequests`) runs exactly as
`simulate` and `simulate_meets` run it afresh: same per-request times bit for bit, same
verdicts, and a clear error on a model it was not planned for."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rightsize.errors import BadInput
from rightsize.perf.serving_sim import EngineModel, PreparedRequests, simulate
from rightsize.perf.serving_slo import SloCheck, SloStop, meets, simulate_meets
from rightsize.perf.traffic import arrival_times, sample_lengths

MODEL = EngineModel(
    iteration_base_s=12e-3,
    decode_per_seq_s=0.05e-3,
    decode_per_ctx_token_s=1e-7,
    prefill_per_token_s=0.06e-3,
    prefill_attn_per_token2_s=1e-10,
    max_batch=64,
    kv_capacity_tokens=200_000,
    first_token_lag_per_token_s=1e-6,
)


def _requests(n: int = 800) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    prompts = sample_lengths(n, rng, "lognormal", mean=600, std=500, min_=1, max_=4000)
    outputs = sample_lengths(n, rng, "lognormal", mean=200, std=200, min_=1, max_=2000)
    return arrival_times(n, 1.0, rng, "bursty", 2.0), prompts, outputs


@pytest.mark.parametrize("rate", [1.0, 6.0, 40.0])
def test_prepared_runs_equal_fresh_runs(rate: float) -> None:
    unit, prompts, outputs = _requests()
    req = PreparedRequests(unit, prompts, outputs, MODEL, 0.3)
    got = req.run_at(rate, MODEL)
    want = simulate(unit / rate, prompts, outputs, MODEL, 0.3)
    assert got is not None
    for f in ("start_s", "ttft_s", "e2e_s", "tpot_s"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
    assert (got.mean_batch, got.iterations, got.max_queue) == (
        want.mean_batch,
        want.iterations,
        want.max_queue,
    )
    check = SloCheck(ttft_s=0.5, tpot_s=0.03, percentile=95.0)
    stopped = req.run_at(rate, MODEL, SloStop.of(check, req.out_sorted))
    verdict = stopped is not None and meets(stopped, check)
    assert verdict == simulate_meets(unit / rate, prompts, outputs, MODEL, check, 0.3)


def test_verdicts_differ_across_rates() -> None:  # the comparison above sees passes and fails
    unit, prompts, outputs = _requests()
    req = PreparedRequests(unit, prompts, outputs, MODEL)
    check = SloCheck(ttft_s=0.5, tpot_s=0.03, percentile=95.0)
    stop = SloStop.of(check, req.out_sorted)
    verdicts = []
    for rate in (1.0, 40.0):
        res = req.run_at(rate, MODEL, stop)
        verdicts.append(res is not None and meets(res, check))
    assert verdicts == [True, False]


def test_a_model_it_was_not_planned_for_is_refused() -> None:
    unit, prompts, outputs = _requests(50)
    req = PreparedRequests(unit, prompts, outputs, MODEL)
    with pytest.raises(BadInput, match="not planned for"):
        req.run_at(1.0, dataclasses.replace(MODEL, block_tokens=32))
