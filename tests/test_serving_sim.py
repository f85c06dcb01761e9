"""The serving simulator and traffic generators: hand-derived iteration times, scheduling
rules (batch and KV limits, FCFS), an exact match with a step-by-step reference, queueing
laws (Little, overload, burstiness) and the samplers' moments."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rightsize.errors import BadInput
from rightsize.perf.serving_scenarios import closed_loop_fixed_batch, offline_max_throughput
from rightsize.perf.serving_sim import EngineModel, SimResult, iterations_to_reach, simulate
from rightsize.perf.traffic import arrival_times, lognormal_params, sample_lengths

# Round numbers so hand computations are easy to read.
BASE, PER_SEQ, PER_CTX, PER_TOK, ATTN2 = 0.010, 0.001, 1e-6, 1e-4, 1e-8
SIMPLE = EngineModel(
    iteration_base_s=BASE,
    decode_per_seq_s=PER_SEQ,
    decode_per_ctx_token_s=PER_CTX,
    prefill_per_token_s=PER_TOK,
    prefill_attn_per_token2_s=ATTN2,
    max_batch=64,
    kv_capacity_tokens=1_000_000,
    chunk_tokens=None,
)
# A Llama-70B-on-H100-TP4-like replica (the benchmark's), for the queueing tests.
LLAMA70B = EngineModel(
    iteration_base_s=12e-3,
    decode_per_seq_s=0.05e-3,
    decode_per_ctx_token_s=1e-7,
    prefill_per_token_s=0.06e-3,
    prefill_attn_per_token2_s=1e-10,
    max_batch=256,
    kv_capacity_tokens=400_000,
)


def _sim(
    arr: list[float], prompt: list[int], output: list[int], model: EngineModel = SIMPLE, **kw: float
) -> SimResult:
    return simulate(np.asarray(arr, float), np.asarray(prompt), np.asarray(output), model, **kw)


def _pairs(lo: int, hi: int) -> int:
    """Causal attention pairs of prompt positions lo+1..hi: sum of j."""
    return sum(range(lo + 1, hi + 1))


# --- hand-computed single requests ----------------------------------------------------------


def test_single_request_ttft_and_tpot_by_hand() -> None:
    # Prefill of 100 tokens alone in one iteration; then 2 decode steps with contexts 101, 102.
    r = _sim([0.0], [100], [3])
    ttft = BASE + PER_TOK * 100 + ATTN2 * 100 * 101 / 2
    step1 = BASE + PER_SEQ + PER_CTX * 101
    step2 = BASE + PER_SEQ + PER_CTX * 102
    assert r.ttft_s[0] == pytest.approx(ttft, rel=1e-12)
    assert r.e2e_s[0] == pytest.approx(ttft + step1 + step2, rel=1e-12)
    assert r.tpot_s[0] == pytest.approx(BASE + PER_SEQ + PER_CTX * 101.5, rel=1e-12)
    assert r.start_s[0] == 0.0 and r.iterations == 3


def test_arrival_time_offsets_everything() -> None:
    a, b = _sim([0.0], [100], [3]), _sim([5.0], [100], [3])
    assert b.ttft_s[0] == pytest.approx(a.ttft_s[0], rel=1e-12)
    assert b.start_s[0] == 5.0


def test_one_token_output_has_nan_tpot_and_meets_tpot_slo() -> None:
    r = _sim([0.0, 0.0], [10, 10], [1, 2])
    assert math.isnan(r.tpot_s[0]) and r.e2e_s[0] == r.ttft_s[0]
    assert r.goodput(tpot_s=0.0) == 0.5  # the 1-token request counts as TPOT 0, the other does not
    assert r.percentile("tpot_s", 50) == pytest.approx(r.tpot_s[1])


def test_chunked_prefill_spreads_a_prompt_over_iterations_with_the_same_attention_work() -> None:
    # 5000 tokens at 2048 per iteration: 3 iterations; the causal pairs total 5000*5001/2 however chunked.
    r = _sim([0.0], [5000], [2], dataclasses.replace(SIMPLE, chunk_tokens=2048))
    assert r.ttft_s[0] == pytest.approx(3 * BASE + PER_TOK * 5000 + ATTN2 * 5000 * 5001 / 2, rel=1e-12)
    assert r.iterations == 4


def test_cached_prefix_skips_prefill_compute_but_not_context() -> None:
    # Half of 100 cached: prefill positions 51..100, attending to the cached half too.
    r = _sim([0.0], [100], [2], cached_prompt_fraction=0.5)
    assert r.ttft_s[0] == pytest.approx(BASE + PER_TOK * 50 + ATTN2 * _pairs(50, 100), rel=1e-12)
    assert r.e2e_s[0] - r.ttft_s[0] == pytest.approx(BASE + PER_SEQ + PER_CTX * 101, rel=1e-12)
    # Fully cached: the last token is still recomputed (as vLLM does).
    full = _sim([0.0], [100], [2], cached_prompt_fraction=1.0)
    assert full.ttft_s[0] == pytest.approx(BASE + PER_TOK + ATTN2 * 100, rel=1e-12)


def test_speculative_decoding_takes_fewer_steps_over_faster_growing_contexts() -> None:
    # 7 outputs, 2 tokens per step: first token + ceil(6 / 2) = 3 steps, contexts 101, 103, 105.
    r = _sim([0.0], [100], [7], dataclasses.replace(SIMPLE, spec_tokens_per_step=2.0))
    decode = 3 * (BASE + PER_SEQ) + PER_CTX * (101 + 103 + 105)
    assert r.e2e_s[0] - r.ttft_s[0] == pytest.approx(decode, rel=1e-12)
    assert r.tpot_s[0] == pytest.approx(decode / 6, rel=1e-12)


# --- batching and scheduling rules ----------------------------------------------------------


def test_identical_requests_together_share_ttft_and_tpot() -> None:
    b = 8
    r = _sim([0.0] * b, [100] * b, [5] * b)
    ttft = BASE + PER_TOK * 100 * b + ATTN2 * b * 100 * 101 / 2
    assert np.allclose(r.ttft_s, ttft, rtol=1e-12)
    tpot = BASE + PER_SEQ * b + PER_CTX * b * (101 + 102 + 103 + 104) / 4
    assert np.allclose(r.tpot_s, tpot, rtol=1e-12)
    assert r.mean_decode_batch == pytest.approx(b * 4 / 5)  # 4 decode iterations of 8 in 5 total


def test_max_batch_one_serialises_requests() -> None:
    b = 5
    r = _sim([0.0] * b, [100] * b, [3] * b, dataclasses.replace(SIMPLE, max_batch=1))
    alone = _sim([0.0], [100], [3])
    k = np.arange(b)
    np.testing.assert_allclose(r.ttft_s, alone.ttft_s[0] + k * alone.e2e_s[0], rtol=1e-12)
    np.testing.assert_allclose(r.start_s, k * alone.e2e_s[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(r.tpot_s, alone.tpot_s[0], rtol=1e-12)
    assert r.max_queue == b and r.mean_batch == pytest.approx(1.0)


def _max_concurrent(r: SimResult) -> int:
    """Most requests admitted at once, from the per-request admission and completion times."""
    # arrival + e2e can round a hair past the admission it enabled; nudge ends earlier.
    times = np.concatenate([r.start_s, r.arrival_s + r.e2e_s - 1e-9])
    deltas = np.concatenate([np.ones(len(r.start_s)), -np.ones(len(r.start_s))])
    order = np.lexsort((deltas, times))  # at equal times, leave before entering
    return int(np.cumsum(deltas[order]).max())


def test_kv_capacity_limits_concurrency() -> None:
    # 20 + 12 = 32 tokens = 2 blocks of 16 each; 70 tokens hold two such requests, not three.
    model = dataclasses.replace(SIMPLE, kv_capacity_tokens=70)
    rng = np.random.default_rng(1)
    r = _sim(sorted(rng.uniform(0, 0.5, 30)), [20] * 30, [12] * 30, model)
    assert _max_concurrent(r) == 2
    assert _max_concurrent(_sim(sorted(rng.uniform(0, 0.5, 30)), [20] * 30, [12] * 30)) > 2


def test_request_larger_than_kv_is_rejected() -> None:
    with pytest.raises(BadInput, match="KV"):
        _sim([0.0], [100], [100], dataclasses.replace(SIMPLE, kv_capacity_tokens=128))


def test_unsorted_arrivals_give_the_same_per_request_results() -> None:
    rng = np.random.default_rng(2)
    arr, p, o = rng.uniform(0, 2, 50), rng.integers(1, 300, 50), rng.integers(1, 40, 50)
    perm = rng.permutation(50)
    a, b = _sim(arr, p, o), _sim(arr[perm], p[perm], o[perm])
    np.testing.assert_array_equal(a.e2e_s[perm], b.e2e_s)
    np.testing.assert_array_equal(a.ttft_s[perm], b.ttft_s)


def test_same_inputs_same_outputs() -> None:
    rng = np.random.default_rng(3)
    arr = arrival_times(2000, 8.0, rng)
    p = sample_lengths(2000, rng, "lognormal", mean=1024, std=512, max_=8192)
    o = sample_lengths(2000, rng, "lognormal", mean=256, std=128, max_=2048)
    a, b = simulate(arr, p, o, LLAMA70B), simulate(arr, p, o, LLAMA70B)
    for field in ("start_s", "ttft_s", "tpot_s", "e2e_s"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert (a.duration_s, a.mean_batch, a.max_queue, a.iterations) == (
        b.duration_s,
        b.mean_batch,
        b.max_queue,
        b.iterations,
    )


# --- exact match with a step-by-step reference ----------------------------------------------


def _reference(
    arr: np.ndarray, prompt: np.ndarray, output: np.ndarray, m: EngineModel, cached_fraction: float
):
    """One iteration at a time, every sequence's context and every attention pair summed
    explicitly. Arrivals must be sorted. Returns (start, first token, done) times and the
    number of iterations."""
    n = len(arr)
    start, first, done = [math.nan] * n, [math.nan] * n, [math.nan] * n
    need = [math.ceil((p + o) / m.block_tokens) * m.block_tokens for p, o in zip(prompt, output, strict=True)]
    steps = [max(0, math.ceil((o - 1) / m.spec_tokens_per_step - 1e-9)) for o in output]
    pos = [min(math.floor(cached_fraction * p), p - 1) for p in prompt]
    taken = [0] * n  # decode steps done
    running: list[int] = []  # admission order
    decoding: set[int] = set()
    kv_free, admitted, t, iterations = m.kv_capacity_tokens, 0, float(arr[0]), 0
    while any(math.isnan(d) for d in done):
        while (
            admitted < n and arr[admitted] <= t and len(running) < m.max_batch and need[admitted] <= kv_free
        ):
            kv_free -= need[admitted]
            start[admitted] = t
            running.append(admitted)
            admitted += 1
        if not running:
            t = float(arr[admitted])
            continue
        budget = m.chunk_tokens if m.chunk_tokens is not None else 10**18
        pre_tokens = pairs = 0
        prefilled: list[int] = []
        for i in running:
            if i in decoding or budget == 0:
                continue
            c = min(prompt[i] - pos[i], budget)
            pairs += sum(range(pos[i] + 1, pos[i] + c + 1))
            pos[i] += c
            pre_tokens += c
            budget -= c
            if pos[i] == prompt[i]:
                prefilled.append(i)
        dec = sorted(decoding)
        ctx = sum(prompt[i] + 1 + taken[i] * m.spec_tokens_per_step for i in dec)
        t += (
            m.iteration_base_s
            + m.decode_per_seq_s * len(dec)
            + m.decode_per_ctx_token_s * ctx
            + m.prefill_per_token_s * pre_tokens
            + m.prefill_attn_per_token2_s * pairs
        )
        iterations += 1
        for i in dec:
            taken[i] += 1
            if taken[i] == steps[i]:
                done[i] = t
                decoding.discard(i)
                running.remove(i)
                kv_free += need[i]
        for i in prefilled:
            first[i] = t
            pos[i] = prompt[i] + 1  # marks prefill over
            if steps[i] == 0:
                done[i] = t
                running.remove(i)
                kv_free += need[i]
            else:
                decoding.add(i)
    return np.array(start), np.array(first), np.array(done), iterations


@pytest.mark.parametrize(
    ("changes", "cached"),
    [
        ({}, 0.0),  # whole prompts, roomy KV
        ({"chunk_tokens": 256, "max_batch": 12}, 0.0),  # chunking across iterations, batch-bound
        ({"chunk_tokens": 128, "kv_capacity_tokens": 2400}, 0.3),  # KV-bound, prefix cache
        ({"chunk_tokens": 512, "spec_tokens_per_step": 1.7, "max_batch": 20}, 0.0),  # speculative
    ],
)
def test_jumping_matches_step_by_step_reference(changes: dict[str, object], cached: float) -> None:
    model = dataclasses.replace(SIMPLE, **changes)  # type: ignore[arg-type]
    rng = np.random.default_rng(4)
    n = 200
    arr = np.sort(rng.exponential(0.08, n).cumsum())
    prompt = rng.integers(1, 600, n)
    output = rng.integers(1, 80, n)
    start, first, done, iterations = _reference(arr, prompt, output, model, cached)
    r = simulate(arr, prompt, output, model, cached_prompt_fraction=cached)
    np.testing.assert_allclose(r.start_s, start, rtol=1e-9)
    np.testing.assert_allclose(r.ttft_s, first - arr, rtol=1e-9)
    np.testing.assert_allclose(r.e2e_s, done - arr, rtol=1e-9)
    assert r.iterations == iterations and r.max_queue > 0


def test_iterations_to_reach_is_the_smallest_crossing() -> None:
    rng = np.random.default_rng(5)
    for _ in range(300):
        a, b, delta = rng.uniform(1e-3, 0.1), rng.choice([0.0, rng.uniform(0, 1e-3)]), rng.uniform(0, 50)
        k = iterations_to_reach(delta, a, b)
        elapsed = np.cumsum(a + b * np.arange(k + 1))
        assert elapsed[k - 1] >= delta
        assert k == 1 or elapsed[k - 2] < delta


# --- queueing behaviour ---------------------------------------------------------------------


def _llama_load(n: int, rate: float, seed: int, arrival: str = "poisson", cv: float = 1.0):
    rng = np.random.default_rng(seed)
    arr = arrival_times(n, rate, rng, arrival, cv)
    p = sample_lengths(n, rng, "lognormal", mean=1024, std=512, max_=8192)
    o = sample_lengths(n, rng, "lognormal", mean=256, std=128, max_=2048)
    return arr, p, o


@pytest.fixture(scope="module")
def capacity_rps() -> float:
    """The replica's request capacity: offline throughput over the mean output (256)."""
    return offline_max_throughput(2000, 1024, 256, LLAMA70B) / 256


def test_littles_law_in_steady_state(capacity_rps: float) -> None:
    rate = 0.6 * capacity_rps
    arr, p, o = _llama_load(20_000, rate, seed=6)
    r = simulate(arr, p, o, LLAMA70B)
    done = arr + r.e2e_s
    probes = np.linspace(arr[2000], arr[-2000], 20_000)  # away from the empty start and the drain
    in_system = np.searchsorted(arr, probes, side="right") - np.searchsorted(
        np.sort(done), probes, side="right"
    )
    assert in_system.mean() == pytest.approx(rate * r.e2e_s.mean(), rel=0.04)
    # The simulator's own time-integral of the batch is exactly the sum of admitted times.
    assert r.mean_batch * r.duration_s == pytest.approx(float(np.sum(done - r.start_s)), rel=1e-9)


def test_queue_is_stable_below_capacity_and_grows_above(capacity_rps: float) -> None:
    n = 6000
    below = simulate(*_llama_load(n, 0.5 * capacity_rps, seed=7), LLAMA70B)
    above = simulate(*_llama_load(n, 1.3 * capacity_rps, seed=7), LLAMA70B)
    half = n // 2

    def p95(r: SimResult, sl: slice) -> float:
        return float(np.percentile(r.ttft_s[sl], 95))

    assert p95(below, slice(half, None)) < 2 * p95(below, slice(None, half))
    assert below.max_queue < 30 and below.percentile("ttft_s", 95) < 1.0
    # The wait grows linearly with the request index: the second half waits about twice as long.
    assert p95(above, slice(half, None)) > 1.7 * p95(above, slice(None, half))
    assert above.max_queue > 500 and above.percentile("ttft_s", 95) > 30 * below.percentile("ttft_s", 95)
    # Overloaded, the replica runs at its capacity and the batch is full.
    assert above.mean_batch > 0.9 * LLAMA70B.max_batch


def test_bursty_arrivals_raise_tail_ttft(capacity_rps: float) -> None:
    rate = 0.6 * capacity_rps
    poisson = simulate(*_llama_load(8000, rate, seed=8), LLAMA70B)
    bursty = simulate(*_llama_load(8000, rate, seed=8, arrival="bursty", cv=3.0), LLAMA70B)
    assert bursty.percentile("ttft_s", 95) > 2 * poisson.percentile("ttft_s", 95)


def test_closed_loop_and_offline_helpers() -> None:
    ttft, tpot, tps = closed_loop_fixed_batch(1, 100, 3, SIMPLE)
    alone = _sim([0.0], [100], [3])
    assert (ttft, tpot) == pytest.approx((alone.ttft_s[0], alone.tpot_s[0]), rel=1e-12)
    assert tps == pytest.approx(3 / alone.e2e_s[0], rel=1e-12)
    # Larger batches: higher TPOT, more tokens/s; offline fills the batch and beats batch 1.
    t8, t64 = (
        closed_loop_fixed_batch(8, 1024, 256, LLAMA70B),
        closed_loop_fixed_batch(64, 1024, 256, LLAMA70B),
    )
    assert t64[1] > t8[1] and t64[2] > t8[2]
    assert offline_max_throughput(1000, 1024, 256, LLAMA70B) > t64[2]
    assert math.isnan(closed_loop_fixed_batch(2, 10, 1, SIMPLE)[1])


def test_goodput_counts_requests_meeting_every_slo() -> None:
    r = _sim([0.0, 0.0, 1.0], [100, 100, 100], [3, 3, 3])
    assert r.goodput() == 1.0
    assert r.goodput(ttft_s=float(r.ttft_s.min())) == pytest.approx(1 / 3)  # only the lone request
    assert r.goodput(ttft_s=1.0, e2e_s=0.0) == 0.0


# --- traffic generators ---------------------------------------------------------------------


def test_poisson_and_gamma_gaps_have_the_requested_rate_and_cv() -> None:
    rng = np.random.default_rng(9)
    for arrival, cv in (("poisson", 1.0), ("bursty", 3.0), ("bursty", 0.5)):
        t = arrival_times(200_000, 4.0, rng, arrival, burst_cv=cv)
        gaps = np.diff(t, prepend=0.0)
        assert np.all(gaps >= 0)
        assert gaps.mean() == pytest.approx(0.25, rel=0.03)
        assert gaps.std() / gaps.mean() == pytest.approx(cv, rel=0.05)
    even = arrival_times(5, 2.0, rng, "bursty", burst_cv=0.0)
    np.testing.assert_allclose(even, [0.5, 1.0, 1.5, 2.0, 2.5])


def test_length_samplers_hit_their_moments() -> None:
    rng = np.random.default_rng(10)
    n = 100_000
    assert np.all(sample_lengths(10, rng, "fixed", mean=7) == 7)
    normal = sample_lengths(n, rng, "normal", mean=500, std=100)
    assert normal.mean() == pytest.approx(500, rel=0.01) and normal.std() == pytest.approx(100, rel=0.02)
    logn = sample_lengths(n, rng, "lognormal", mean=1024, std=512)
    assert logn.mean() == pytest.approx(1024, rel=0.01) and logn.std() == pytest.approx(512, rel=0.03)
    values = [10, 20, 30, 100]
    emp = sample_lengths(n, rng, "empirical", values=values)
    assert set(np.unique(emp)) <= set(values) and emp.mean() == pytest.approx(40, rel=0.02)
    clipped = sample_lengths(n, rng, "normal", mean=50, std=100, min_=1, max_=120)
    assert clipped.min() == 1 and clipped.max() == 120 and clipped.dtype == np.int64
    mu, sigma = lognormal_params(1024, 512)
    assert math.exp(mu + sigma**2 / 2) == pytest.approx(1024)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda rng: sample_lengths(3, rng, "zipf", mean=3), "Unknown length"),
        (lambda rng: sample_lengths(3, rng, "normal", mean=3), "std"),
        (lambda rng: sample_lengths(3, rng, "empirical"), "values"),
        (lambda rng: arrival_times(3, 0.0, rng), "rate"),
        (lambda rng: arrival_times(3, 1.0, rng, "weird"), "Unknown arrival"),
    ],
)
def test_bad_traffic_arguments_say_what_is_wrong(call, match: str) -> None:
    with pytest.raises(BadInput, match=match):
        call(np.random.default_rng(0))


def test_bad_engine_model_is_rejected() -> None:
    with pytest.raises(BadInput, match="iteration_base_s"):
        dataclasses.replace(SIMPLE, iteration_base_s=0.0)
    with pytest.raises(BadInput, match="spec_tokens_per_step"):
        dataclasses.replace(SIMPLE, spec_tokens_per_step=0.5)
