"""Where a replica's capacity search starts: a rough, cheap estimate of the answer from the
analytic step model. The search's answer does not depend on it (it is confirmed by runs at
a passing leaf and the failing one above it); a good start only saves runs.

- When even requests served alone (an idle replica) miss the TTFT at the SLO percentile,
  the trickle probably fails: start at 0 (leaf 0 is tried first).
- Otherwise the lower of two rates: where the TPOT reaches its SLO (Little's law over the
  decode step with prefill's share of the time), and where the TTFT does (a request's
  alone TTFT, the decode iteration it waits for and that its own prefill iteration
  carries, and the M/D/1 wait behind other prefills).
"""

from __future__ import annotations

import math

import numpy as np

from rightsize.search.serving_engine import EngineModels, Workload
from rightsize.spec.inference import InferenceSpec

# The mean-TPOT rate overshoots the rate at which the SLO percentile of TPOT reaches its
# limit (the tail sees longer contexts and more prefill interference than the mean): on
# the searches of benchmarks/bench_serving_plan.py the answer lay about 20 leaves (25%)
# below it; 0.8 took the fewest runs of 0.7-1.0.
TPOT_TAIL_FACTOR = 0.8


def start_rate(models: EngineModels, wl: Workload, spec: InferenceSpec) -> float | None:
    """A rough estimate of the replica's capacity in requests/s; 0 when the trickle probably
    fails; None without a TPOT or TTFT SLO (the search then starts from its top)."""
    ctx = wl.mean_prompt + wl.mean_output / 2
    alone = _alone_ttft_s(models, wl, spec.traffic.prefix_cache_hit_rate, ctx)
    ttft_limit, tpot_limit = spec.slo.ttft_s, spec.slo.tpot_s
    alone_tail = float(np.percentile(alone, spec.slo.percentile))
    if ttft_limit is not None and alone_tail > ttft_limit:
        return 0.0
    if ttft_limit is None and tpot_limit is None:
        return None
    cap = max(
        2.0, min(float(models.max_batch), models.kv_capacity_tokens / (wl.mean_prompt + wl.mean_output))
    )
    b = np.unique(np.round(np.geomspace(1.0, cap, 48)))
    step = np.asarray(models.rep.decode_step_s(b, b * ctx), dtype=np.float64) * models.step_cost
    out = max(wl.mean_output, 1.0)
    rates = []
    if tpot_limit is not None:
        uncached = wl.mean_prompt * (1.0 - spec.traffic.prefix_cache_hit_rate)
        ok = step <= tpot_limit * (1.0 - b * uncached * models.prefill_per_token_s / (out * tpot_limit))
        if not np.any(ok):
            return 0.0  # not even one sequence decodes within the TPOT: the trickle probably fails
        best = float(b[np.flatnonzero(ok)[-1]])
        rates.append(TPOT_TAIL_FACTOR * best / (out * tpot_limit) * models.tokens_per_step)
    if ttft_limit is not None:
        rate = b / (out * step) * models.tokens_per_step  # Little's law at iteration = step(B)
        mean_alone = float(alone.mean())
        rho = np.minimum(rate * mean_alone, 0.999)
        ttft = alone_tail + step + rho / (2.0 * (1.0 - rho)) * mean_alone
        ok = ttft <= ttft_limit
        rates.append(float(rate[np.flatnonzero(ok)[-1]]) if np.any(ok) else float(rate[0]))
    return min(rates)


def _alone_ttft_s(models: EngineModels, wl: Workload, cached_fraction: float, ctx: float) -> np.ndarray:
    """Each request's TTFT on an otherwise idle replica, as the simulator times it at batch
    1: its uncached prompt u in ceil(u / chunk) iterations of base + per token + attention
    pairs (P (P + 1) / 2 - C (C + 1) / 2 in all, C cached), plus the first-token lag."""
    m = models.linearised(1.0, ctx)  # = models.at(wl, trickle): the batch there is 1
    p = wl.prompts.astype(np.float64)
    c = np.minimum(np.floor(cached_fraction * wl.prompts), wl.prompts - 1).astype(np.float64)
    u = p - c
    chunk = float(m.chunk_tokens) if m.chunk_tokens is not None else math.inf
    iterations = np.ceil(u / chunk) if math.isfinite(chunk) else np.ones_like(u)
    pairs = (p * (p + 1) - c * (c + 1)) / 2
    return (
        iterations * m.iteration_base_s
        + m.prefill_per_token_s * u
        + m.prefill_attn_per_token2_s * pairs
        + m.first_token_lag_per_token_s * np.minimum(u, chunk)
    )
