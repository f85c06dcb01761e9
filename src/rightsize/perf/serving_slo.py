"""Judging a simulated serving run against SLOs, and stopping a run early once its verdict
is certain.

`meets` is the one definition of "a run meets its SLOs": each latency at the SLO percentile
(as `SimResult.percentile` computes it), then, when asked, the goodput (the fraction of
requests meeting every SLO at once). `simulate_meets` gives the same verdict as
`meets(simulate(...))` but stops the engine loop once more requests have missed than the
percentile (or the goodput) tolerates; the stop rule keeps one request in hand, so it never
stops a run that would pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rightsize.perf.serving_requests import check_requests, plan_requests
from rightsize.perf.serving_sim import (
    EngineModel,
    SimResult,
    _result,
    _run_engine,
)


@dataclass(frozen=True)
class SloCheck:
    """SLOs judged at one percentile, and optionally a goodput (the fraction of requests
    meeting every SLO at once), as `SimResult.percentile` and `SimResult.goodput` judge them."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    percentile: float = 95.0
    goodput: float | None = None


@dataclass(frozen=True)
class SloStop:
    """Per-run limits of `SloCheck`: the misses of each metric after which the verdict is
    certain. With linear interpolation the p-th percentile of n values exceeds the limit once
    the m values above it satisfy m >= n - floor((n - 1) p / 100)."""

    ttft_s: float
    e2e_s: float
    tpot_budget_s: list[float]  # (output - 1) x the TPOT limit; inf for one-token outputs
    ttft_misses: int
    e2e_misses: int
    tpot_misses: int
    any_misses: int

    @classmethod
    def of(cls, check: SloCheck, output: np.ndarray) -> SloStop:
        n = len(output)
        never = n + 1

        def misses(limit: float | None, count: int) -> int:
            if limit is None or count == 0:
                return never
            return count - math.floor((count - 1) * check.percentile / 100.0) + 1  # one spare: float safety

        multi = int(np.count_nonzero(output > 1))
        budget = np.full(n, math.inf)
        if check.tpot_s is not None:
            budget = np.where(output > 1, (output - 1) * check.tpot_s, math.inf)
        any_misses = never
        if check.goodput is not None:  # fails once fewer than goodput x n can still meet every SLO
            any_misses = math.floor(n * (1.0 - check.goodput)) + 2  # one spare: float safety
        return cls(
            ttft_s=math.inf if check.ttft_s is None else check.ttft_s,
            e2e_s=math.inf if check.e2e_s is None else check.e2e_s,
            tpot_budget_s=budget.tolist(),
            ttft_misses=misses(check.ttft_s, n),
            e2e_misses=misses(check.e2e_s, n),
            tpot_misses=misses(check.tpot_s, multi),
            any_misses=any_misses,
        )


def meets(result: SimResult, check: SloCheck) -> bool:
    """Whether a finished run meets every SLO of `check` (each at its percentile, then goodput)."""
    for limit, metric in ((check.ttft_s, "ttft_s"), (check.tpot_s, "tpot_s"), (check.e2e_s, "e2e_s")):
        if limit is not None and result.percentile(metric, check.percentile) > limit:
            return False
    if check.goodput is not None:
        return result.goodput(ttft_s=check.ttft_s, tpot_s=check.tpot_s, e2e_s=check.e2e_s) >= check.goodput
    return True


def simulate_meets(
    arrivals_s: np.ndarray,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    model: EngineModel,
    check: SloCheck,
    cached_prompt_fraction: float = 0.0,
) -> bool:
    """`meets(simulate(...), check)`, stopping the run as soon as enough requests have missed
    an SLO that the verdict cannot change (a capacity search spends half its runs above
    capacity, where queues, and misses, build early)."""
    arrivals, prompt, output = check_requests(
        arrivals_s, prompt_tokens, output_tokens, model, cached_prompt_fraction
    )
    order = np.argsort(arrivals, kind="stable")
    arr, pr, out = arrivals[order], prompt[order], output[order]
    kv_need, cached, steps = plan_requests(pr, out, model, cached_prompt_fraction)
    stop = SloStop.of(check, out)
    run = _run_engine(
        arr.tolist(), pr.tolist(), cached.tolist(), steps.tolist(), kv_need.tolist(), model, stop
    )
    if run is None:
        return False
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return meets(_result(arrivals, prompt, output, run, inverse), check)
