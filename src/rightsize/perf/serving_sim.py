"""Discrete-event simulation of one serving replica with continuous batching.

The engine is modelled at iteration level, as vLLM, SGLang and TensorRT-LLM schedule:
every iteration runs one decode step for each running sequence plus some prefill work,
and its duration comes from the analytic `EngineModel` (coefficients owned by the
inference performance model). The simulator adds what the analytic model cannot see:
queueing, batch formation, KV-cache admission and the interference of prefill with
decode.

Scheduling (FCFS, first-come first-served, no preemption)
-------------------------------------------------------
At the start of every iteration the scheduler admits waiting requests in arrival
order while the batch holds fewer than `max_batch` sequences and the request's KV
blocks fit in free capacity. A request reserves its whole lifetime's KV at admission,
ceil((prompt + output) / block) blocks. Real engines allocate blocks as tokens are
generated and preempt (recompute or swap) sequences when memory runs out; reserving up
front is the conservative limit of that policy and keeps the model free of preemption
cascades (vLLM's own admission watermark serves the same purpose). The head of the
queue blocks those behind it (no skipping ahead), as in vLLM's FCFS policy.

Each iteration:
- decodes every sequence that has emitted its first token and has output left;
- prefills admitted prompts in admission order: with chunked prefill, at most
  `chunk_tokens` prompt tokens per iteration (a prompt may span several iterations);
  without it, every newly admitted prompt whole. Prefill and decode share the iteration
  (Sarathi-Serve / vLLM v1 style mixed batches);
- lasts base + per_seq x decode batch + per_ctx x sum(decode contexts)
  + prefill x prefill tokens + attn2 x sum(attention pairs of the prefill chunks).

A chunk covering prompt positions [a, a + c) is causal attention over a context that
grows with each token, so its attention pairs are sum_{j=a+1}^{a+c} j = c (2a + c + 1) / 2.
The total over a prompt is P (P + 1) / 2 however it is chunked. A request's first
token appears at the end of the iteration that completes its prefill (plus, on a
pipelined replica, the lag of its last chunk crossing the stages in turn, which shifts
all its tokens); cached prompt
tokens (prefix cache) skip prefill (always recomputing at least the last prompt token,
as vLLM does) but their KV is still reserved.

A decode step that produces tokens for a sequence with prompt P, at its j-th decode
step (j = 1, 2, ...), reads a context of P + 1 + (j - 1) s tokens, where s =
`spec_tokens_per_step` (1 without speculative decoding). A request with O output tokens
needs ceil((O - 1) / s) decode steps after the first token (s is a mean: this is the
fluid limit of speculative decoding, deterministic by design).

Why it is fast
--------------
Between events (an admission, a prefill iteration, a completion) the decode batch is
fixed and every iteration's duration grows by the same amount (each of the n sequences'
contexts grows by s tokens), so iteration j after time t lasts A + j B with
B = per_ctx x s x n. k iterations take k A + B k (k - 1) / 2; the simulator jumps
straight to the next completion (the smallest finishing step in a heap) or to the first
iteration boundary after the next arrival (a quadratic in k). Iterations with prefill
are taken one at a time. Work is O(requests x log) plus one step per prefill
iteration, independent of output lengths.

Metrics (as vLLM's `benchmark_serving` defines them)
---------------------------------------------------
- TTFT: arrival to first token (includes queueing).
- TPOT: (e2e - TTFT) / (output - 1), time per output token after the first. NaN for
  one-token outputs, which percentiles skip; `goodput` treats them as meeting any TPOT
  SLO (vLLM counts their TPOT as 0 for goodput).
- e2e: arrival to last token.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rightsize.errors import BadInput
from rightsize.perf.serving_requests import check_requests, plan_requests

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.perf.serving_slo import SloStop

_NO_CHUNK_LIMIT = 1 << 62  # "prefill everything admitted" as a token budget
_NONE_COMPLETED: list[int] = []  # a decode-only iteration completes no prefill (never appended to)


@dataclass(frozen=True)
class EngineModel:
    """Per-replica iteration-time model, seconds. One iteration runs one decode step for every
    running sequence plus (chunked) prefill of scheduled prompt tokens."""

    iteration_base_s: float  # fixed per iteration: weight read time + launch/scheduler overhead
    decode_per_seq_s: float  # per sequence in the decode batch (its compute, sampling)
    decode_per_ctx_token_s: float  # per token of KV cache read by the decode batch (sum of contexts)
    prefill_per_token_s: float  # per prompt token prefilled (GEMM compute)
    prefill_attn_per_token2_s: (
        float  # per (prompt token x context token) attention work in prefill (quadratic term)
    )
    max_batch: int  # max concurrent sequences
    kv_capacity_tokens: int  # KV cache capacity in tokens
    block_tokens: int = 16  # paged KV blocks: a sequence holds ceil(tokens / block) blocks
    chunk_tokens: int | None = (
        2048  # chunked prefill budget per iteration; None = prefill whole prompts in the iteration they are admitted
    )
    # Latency a request's first token (and every later one) lags the iteration that finished
    # its prefill, per token of its last prefill chunk: a pipelined replica's iteration time
    # is its throughput, while a prompt crosses the stages in turn (perf.serving_multinode).
    first_token_lag_per_token_s: float = 0.0
    spec_tokens_per_step: float = 1.0  # mean tokens produced per decode step per sequence (speculative decoding: 1 + accepted drafts); per-step cost is the caller's business

    def __post_init__(self) -> None:
        if not self.iteration_base_s > 0:
            raise BadInput(
                f"EngineModel.iteration_base_s = {self.iteration_base_s}.",
                "Every iteration costs time (at least the weight read); zero would let time stand still.",
                "Pass a positive base time.",
            )
        for name in (
            "decode_per_seq_s",
            "decode_per_ctx_token_s",
            "prefill_per_token_s",
            "prefill_attn_per_token2_s",
            "first_token_lag_per_token_s",
        ):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise BadInput(
                    f"EngineModel.{name} = {value}.", "Costs are finite and >= 0.", "Fix the coefficient."
                )
        for name in ("max_batch", "kv_capacity_tokens", "block_tokens"):
            if getattr(self, name) < 1:
                raise BadInput(
                    f"EngineModel.{name} = {getattr(self, name)}.", "It must be >= 1.", "Fix the value."
                )
        if self.chunk_tokens is not None and self.chunk_tokens < 1:
            raise BadInput(
                f"EngineModel.chunk_tokens = {self.chunk_tokens}.",
                "A prefill chunk holds at least one token.",
                "Pass chunk_tokens >= 1, or None to prefill whole prompts.",
            )
        if not self.spec_tokens_per_step >= 1:
            raise BadInput(
                f"EngineModel.spec_tokens_per_step = {self.spec_tokens_per_step}.",
                "A decode step produces at least one token (1 + accepted draft tokens).",
                "Pass a value >= 1.",
            )


@dataclass(frozen=True, eq=False)
class SimResult:
    """Per-request times (arrays in the caller's request order) and replica aggregates.

    `mean_batch` is the time-weighted mean number of admitted sequences (prefilling or
    decoding) over [first arrival, last completion]; `mean_decode_batch` is the mean
    decode batch per iteration; `max_queue` the most requests the scheduler found
    waiting (arrived, not admitted) at the start of an iteration.
    """

    arrival_s: np.ndarray
    start_s: np.ndarray  # admission time (absolute, seconds)
    ttft_s: np.ndarray
    tpot_s: np.ndarray  # NaN where output == 1
    e2e_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    duration_s: float  # last completion - first arrival
    output_tokens_per_s: float
    input_tokens_per_s: float
    mean_batch: float
    mean_decode_batch: float
    max_queue: int
    iterations: int

    @property
    def queue_s(self) -> np.ndarray:
        """Time each request waited before admission."""
        return self.start_s - self.arrival_s

    def percentile(self, metric: str, p: float) -> float:
        """The p-th percentile (0-100) of `ttft_s`, `tpot_s`, `e2e_s` or `queue_s`, NaNs skipped."""
        if metric not in ("ttft_s", "tpot_s", "e2e_s", "queue_s"):
            raise BadInput(
                f"Unknown metric {metric!r}.",
                "Percentiles exist for per-request times.",
                "Use ttft_s, tpot_s, e2e_s or queue_s.",
            )
        values = getattr(self, metric)
        if np.all(np.isnan(values)):
            return math.nan
        return float(np.nanpercentile(values, p))

    def goodput(
        self, ttft_s: float | None = None, tpot_s: float | None = None, e2e_s: float | None = None
    ) -> float:
        """Fraction of requests that meet every given SLO (vLLM's goodput, as a fraction;
        multiply by len(requests) / duration_s for requests per second). A one-token
        output's TPOT counts as 0."""
        ok = np.ones(self.ttft_s.shape, dtype=bool)
        if ttft_s is not None:
            ok &= self.ttft_s <= ttft_s
        if tpot_s is not None:
            ok &= np.nan_to_num(self.tpot_s, nan=0.0) <= tpot_s
        if e2e_s is not None:
            ok &= self.e2e_s <= e2e_s
        return float(ok.mean()) if ok.size else math.nan


def simulate(
    arrivals_s: np.ndarray,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    model: EngineModel,
    cached_prompt_fraction: float = 0.0,
) -> SimResult:
    """Serve the requests on one replica; see the module docstring for the rules.

    Deterministic: the same inputs give bit-identical outputs. Arrivals need not be
    sorted (ties keep their input order).
    """
    arrivals, prompt, output = check_requests(
        arrivals_s, prompt_tokens, output_tokens, model, cached_prompt_fraction
    )
    order = np.argsort(arrivals, kind="stable")
    arr, pr, out = arrivals[order], prompt[order], output[order]
    kv_need, cached, steps = plan_requests(pr, out, model, cached_prompt_fraction)
    run = _run_engine(arr.tolist(), pr.tolist(), cached.tolist(), steps.tolist(), kv_need.tolist(), model)
    assert run is not None  # no stop rule: the run serves every request
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return _result(arrivals, prompt, output, run, inverse)


class PreparedRequests:
    """One request set made ready for many runs on one replica at different rates (a capacity
    search): validated, ordered by arrival and planned once. `run_at(rate, model, stop)` is
    `simulate` (or, with a stop rule, the run `perf.serving_slo.simulate_meets` judges) of
    the arrivals `unit_arrivals_s / rate`, bit for bit. Every run's `model` must share the
    first one's block size, KV capacity and tokens per step (what the planning reads)."""

    def __init__(
        self,
        unit_arrivals_s: np.ndarray,
        prompt_tokens: np.ndarray,
        output_tokens: np.ndarray,
        model: EngineModel,
        cached_prompt_fraction: float = 0.0,
    ) -> None:
        arrivals, prompt, output = check_requests(
            unit_arrivals_s, prompt_tokens, output_tokens, model, cached_prompt_fraction
        )
        self.unit, self.prompt, self.output = arrivals, prompt, output
        self.order = np.argsort(arrivals, kind="stable")
        pr, self.out_sorted = prompt[self.order], output[self.order]
        kv_need, cached, steps = plan_requests(pr, self.out_sorted, model, cached_prompt_fraction)
        self.lists = (pr.tolist(), cached.tolist(), steps.tolist(), kv_need.tolist())
        self.inverse = np.empty_like(self.order)
        self.inverse[self.order] = np.arange(len(self.order))
        self.key = (model.block_tokens, model.kv_capacity_tokens, model.spec_tokens_per_step)

    def run_at(self, rate: float, model: EngineModel, stop: SloStop | None = None) -> SimResult | None:
        """The run at arrivals `unit / rate` (None when `stop` stops it)."""
        if (model.block_tokens, model.kv_capacity_tokens, model.spec_tokens_per_step) != self.key:
            raise BadInput(
                "A prepared request set was run on a model it was not planned for.",
                "KV reservations and decode steps depend on the block size, KV capacity and tokens per step.",
                "Prepare the requests again for this model.",
            )
        arrivals = self.unit / rate
        pr, cached, steps, kv_need = self.lists
        run = _run_engine(arrivals[self.order].tolist(), pr, cached, steps, kv_need, model, stop)
        if run is None:
            return None
        return _result(arrivals, self.prompt, self.output, run, self.inverse)


@dataclass
class _Run:
    """Raw output of the engine loop, in arrival order."""

    start_s: list[float]
    first_token_s: list[float]
    done_s: list[float]
    busy_seq_s: float  # integral of admitted sequences over time
    decode_seq_iterations: int  # sum over iterations of the decode batch
    max_queue: int
    iterations: int


def _run_engine(
    arr: list[float],
    prompt: list[int],
    cached: list[int],
    steps: list[int],
    kv_need: list[int],
    m: EngineModel,
    stop: SloStop | None = None,
) -> _Run | None:
    """The event loop. Longer than 80 lines for one reason: it is one function on plain
    Python scalars and lists on purpose, the hot path (a few events per request), where
    attribute lookups, numpy scalars and calls would cost more than the work itself.

    Decode bookkeeping: `it` counts iterations; a sequence that enters decode after
    iteration e (its `entry`) with S steps finishes after iteration e + S, and in
    iteration `it` reads a context of P + 1 + (it - e) s. So the batch's total context
    is base_sum + n_dec x it x s with base_sum = sum(P + 1 - e s), updated only when a
    sequence enters or leaves decode. Heap keys are finish x n + request.

    With a `stop` rule it returns None as soon as more requests have missed an SLO than the
    rule allows (the verdict is then certain), instead of serving the rest.
    """
    n = len(arr)
    base, per_seq, per_ctx = m.iteration_base_s, m.decode_per_seq_s, m.decode_per_ctx_token_s
    per_tok, attn2, s = m.prefill_per_token_s, m.prefill_attn_per_token2_s, m.spec_tokens_per_step
    max_batch = m.max_batch
    chunk = _NO_CHUNK_LIMIT if m.chunk_tokens is None else m.chunk_tokens
    kv_free = m.kv_capacity_tokens
    lag_per_token = m.first_token_lag_per_token_s
    if lag_per_token:
        lag = (lag_per_token * np.minimum(np.subtract(prompt, cached), chunk)).tolist()
    else:
        lag = [0.0] * n

    arr = [*arr, math.inf]  # a sentinel arrival: the scheduler's scans need no bounds check
    start = [0.0] * n
    first = [0.0] * n
    done = [0.0] * n
    pos = list(cached)  # next prompt position to prefill
    entry = [0] * n
    heap: list[int] = []
    prefilling: deque[int] = deque()
    heappush, heappop = heapq.heappush, heapq.heappop
    sqrt, ceil = math.sqrt, math.ceil

    t = arr[0]
    it = 0
    arrived = admitted = finished = 0
    running = n_dec = 0
    base_sum = 0.0
    busy = 0.0
    dec_iters = 0
    max_queue = 0
    watch = stop is not None
    ttft_lim = e2e_lim = math.inf
    tpot_budget: list[float] = []
    ttft_left = e2e_left = tpot_left = any_left = n + 1
    missed = [False] * n
    watch_e2e = False  # an e2e SLO to watch (inf compares false anyway: skip the work)
    if stop is not None:
        ttft_lim, e2e_lim, tpot_budget = stop.ttft_s, stop.e2e_s, stop.tpot_budget_s
        ttft_left, e2e_left, tpot_left, any_left = (
            stop.ttft_misses,
            stop.e2e_misses,
            stop.tpot_misses,
            stop.any_misses,
        )
        watch_e2e = math.isfinite(e2e_lim)

    while finished < n:
        # 1. Schedule: count arrivals up to now, admit FCFS while batch slots and KV allow.
        while arr[arrived] <= t:  # arr ends in an infinite sentinel
            arrived += 1
        if arrived - admitted > max_queue:
            max_queue = arrived - admitted
        while admitted < arrived and running < max_batch and kv_need[admitted] <= kv_free:
            kv_free -= kv_need[admitted]
            start[admitted] = t
            prefilling.append(admitted)
            running += 1
            admitted += 1
        if running == 0:  # idle: the queue is empty (every request fits alone); wait for the next
            t = arr[arrived]
            continue

        if prefilling:
            # 2a. One iteration with prefill: spend the chunk budget in admission order.
            i = prefilling[0]
            a = pos[i]
            c = prompt[i] - a
            if c <= chunk and len(prefilling) == 1:  # the common case, one whole prompt
                prefilling.popleft()
                completed: list[int] = [i]
                pre_tokens = c
                pairs = c * (2 * a + c + 1) // 2
            else:
                pre_tokens, pairs, completed = _prefill_chunks(prefilling, pos, prompt, chunk)
            dt = (
                base
                + per_seq * n_dec
                + per_ctx * (base_sum + n_dec * it * s)
                + per_tok * pre_tokens
                + attn2 * pairs
            )
            k = 1
        else:
            # 2b. Decode only: jump k iterations to the next completion or the first
            # boundary at or after the next arrival that could be admitted.
            completed = _NONE_COMPLETED
            a_s = base + per_seq * n_dec + per_ctx * (base_sum + n_dec * it * s)
            b_s = per_ctx * s * n_dec
            k = heap[0] // n - it
            dt = k * a_s + 0.5 * b_s * k * (k - 1)
            if admitted == arrived and running < max_batch and arr[arrived] - t < dt:  # (sentinel: never)
                # iterations_to_reach(arr[arrived] - t, a_s, b_s), inlined (the hottest call)
                delta = arr[arrived] - t
                if delta <= 0:
                    k = 1
                else:
                    lin = a_s - 0.5 * b_s
                    denom = lin + sqrt(lin * lin + 2.0 * b_s * delta)
                    k = ceil(2.0 * delta / denom) if denom > 0 else 1
                    if k < 1:
                        k = 1
                    half_b = 0.5 * b_s
                    while k * a_s + half_b * k * (k - 1) < delta:
                        k += 1
                    while k > 1 and (k - 1) * a_s + half_b * (k - 1) * (k - 2) >= delta:
                        k -= 1
                dt = k * a_s + 0.5 * b_s * k * (k - 1)

        t += dt
        busy += running * dt
        dec_iters += n_dec * k
        it += k

        # 3. Sequences whose last decode step was this iteration leave and free their KV.
        limit = (it + 1) * n
        while heap and heap[0] < limit:
            i = heappop(heap) % n
            d = t + lag[i]
            done[i] = d
            if watch and (d - first[i] > tpot_budget[i] or watch_e2e and d - arr[i] > e2e_lim):  # a miss
                if d - arr[i] > e2e_lim:
                    e2e_left -= 1
                if d - first[i] > tpot_budget[i]:
                    tpot_left -= 1
                if not missed[i]:
                    missed[i] = True
                    any_left -= 1
                if e2e_left <= 0 or tpot_left <= 0 or any_left <= 0:
                    return None
            kv_free += kv_need[i]
            running -= 1
            n_dec -= 1
            base_sum -= prompt[i] + 1 - entry[i] * s
            finished += 1
        # 4. Prompts finished this iteration emit their first token and join decode.
        for i in completed:
            f = t + lag[i]
            first[i] = f
            if watch and f - arr[i] > ttft_lim:
                ttft_left -= 1
                missed[i] = True
                any_left -= 1
                if ttft_left <= 0 or any_left <= 0:
                    return None
            st = steps[i]
            if st == 0:
                done[i] = f
                if watch and f - arr[i] > e2e_lim:
                    e2e_left -= 1
                    if not missed[i]:
                        missed[i] = True
                        any_left -= 1
                    if e2e_left <= 0 or any_left <= 0:
                        return None
                kv_free += kv_need[i]
                running -= 1
                finished += 1
            else:
                entry[i] = it
                heappush(heap, (it + st) * n + i)
                base_sum += prompt[i] + 1 - it * s
                n_dec += 1
        if n_dec == 0:
            base_sum = 0.0  # drop rounding drift (only non-integer s has any)

    return _Run(start, first, done, busy, dec_iters, max_queue, it)


def _prefill_chunks(
    prefilling: deque[int], pos: list[int], prompt: list[int], chunk: int
) -> tuple[int, int, list[int]]:
    """One prefill iteration's work: spend the chunk budget on the admitted prompts in
    admission order (a prompt may span iterations). Returns (prompt tokens, attention
    pairs, the requests whose prefill completed); advances `pos` and `prefilling`."""
    budget = chunk
    pre_tokens = 0
    pairs = 0
    completed: list[int] = []
    while prefilling and budget:
        i = prefilling[0]
        a = pos[i]
        c = prompt[i] - a
        if c > budget:
            c = budget
            pos[i] = a + c
        else:
            prefilling.popleft()
            completed.append(i)
        budget -= c
        pre_tokens += c
        pairs += c * (2 * a + c + 1) // 2
    return pre_tokens, pairs, completed


def iterations_to_reach(delta_s: float, first_s: float, growth_s: float) -> int:
    """Smallest k >= 1 with k A + B k (k - 1) / 2 >= delta: the number of iterations, the
    first lasting A and each later one B longer, until the elapsed time reaches delta.

    Solves B/2 k^2 + (A - B/2) k - delta = 0 in the cancellation-free form
    k = 2 delta / ((A - B/2) + sqrt((A - B/2)^2 + 2 B delta)), then corrects the rounding
    by checking the neighbours exactly.
    """
    if delta_s <= 0:
        return 1
    lin = first_s - 0.5 * growth_s
    root = math.sqrt(lin * lin + 2.0 * growth_s * delta_s)
    denom = lin + root
    k = max(1, math.ceil(2.0 * delta_s / denom)) if denom > 0 else 1
    while k * first_s + 0.5 * growth_s * k * (k - 1) < delta_s:
        k += 1
    while k > 1 and (k - 1) * first_s + 0.5 * growth_s * (k - 1) * (k - 2) >= delta_s:
        k -= 1
    return k


def _result(
    arrivals: np.ndarray, prompt: np.ndarray, output: np.ndarray, run: _Run, inverse: np.ndarray
) -> SimResult:
    """Per-request metrics in the caller's order, and the aggregates."""
    return result_from_times(
        arrivals,
        np.asarray(run.start_s)[inverse],
        np.asarray(run.first_token_s)[inverse],
        np.asarray(run.done_s)[inverse],
        prompt,
        output,
        busy_seq_s=run.busy_seq_s,
        mean_decode_batch=run.decode_seq_iterations / max(run.iterations, 1),
        max_queue=run.max_queue,
        iterations=run.iterations,
    )


def result_from_times(
    arrivals: np.ndarray,
    start: np.ndarray,
    first: np.ndarray,
    done: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    *,
    busy_seq_s: float,
    mean_decode_batch: float,
    max_queue: int,
    iterations: int,
) -> SimResult:
    """A `SimResult` from per-request times (arrival, admission, first token, last token):
    TTFT, TPOT over the tokens after the first, e2e and the throughputs; `busy_seq_s` is the
    integral of admitted sequences over time (the mean batch times the duration)."""
    ttft = first - arrivals
    e2e = done - arrivals
    multi = output > 1
    tpot = np.full(len(arrivals), np.nan)
    tpot[multi] = (e2e[multi] - ttft[multi]) / (output[multi] - 1)
    duration = float(done.max() - arrivals.min())
    return SimResult(
        arrival_s=arrivals,
        start_s=start,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        prompt_tokens=prompt,
        output_tokens=output,
        duration_s=duration,
        output_tokens_per_s=float(output.sum()) / duration,
        input_tokens_per_s=float(prompt.sum()) / duration,
        mean_batch=busy_seq_s / duration,
        mean_decode_batch=mean_decode_batch,
        max_queue=max_queue,
        iterations=iterations,
    )
