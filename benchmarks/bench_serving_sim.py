"""Serving simulator speed: 100,000 requests through one replica on one core.

Workload: Poisson arrivals, lognormal prompt (mean 1024, std 512) and output (mean 256,
std 128) lengths, on a Llama-70B-on-H100-TP4-like EngineModel. The rate, 7 requests/s, is
about 80 % of this replica's capacity (8.6 requests/s offline), so the batch is large and
queues form in bursts.

Run: `python benchmarks/bench_serving_sim.py` (prints JSON). The simulator is a pure
Python event loop with numpy set-up, single-threaded: this measures one core.
"""

from __future__ import annotations

import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from rightsize.perf.serving_sim import EngineModel, simulate  # noqa: E402
from rightsize.perf.traffic import arrival_times, sample_lengths  # noqa: E402

LLAMA70B_H100_TP4 = EngineModel(
    iteration_base_s=12e-3,
    decode_per_seq_s=0.05e-3,
    decode_per_ctx_token_s=1e-7,
    prefill_per_token_s=0.06e-3,
    prefill_attn_per_token2_s=1e-10,
    max_batch=256,
    kv_capacity_tokens=400_000,
)


def workload(n: int, rate_per_s: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrivals and lengths for the benchmark (prompt + output capped to fit KV)."""
    rng = np.random.default_rng(seed)
    arrivals = arrival_times(n, rate_per_s, rng)
    prompt = sample_lengths(n, rng, "lognormal", mean=1024, std=512, max_=16_384)
    output = sample_lengths(n, rng, "lognormal", mean=256, std=128, max_=4_096)
    return arrivals, prompt, output


def bench(n: int = 100_000, rate_per_s: float = 7.0, repeats: int = 3) -> dict[str, float]:
    """Best-of-`repeats` wall time of `simulate` for n requests, and what it simulated."""
    arrivals, prompt, output = workload(n, rate_per_s)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = simulate(arrivals, prompt, output, LLAMA70B_H100_TP4)
        best = min(best, time.perf_counter() - t0)
    return {
        "requests": float(n),
        "rate_per_s": rate_per_s,
        "seconds": best,
        "requests_per_s": n / best,
        "iterations": float(res.iterations),
        "iterations_per_s": res.iterations / best,
        "simulated_s": res.duration_s,
        "mean_batch": res.mean_batch,
        "max_queue": float(res.max_queue),
        "ttft_p50_s": res.percentile("ttft_s", 50),
        "ttft_p99_s": res.percentile("ttft_s", 99),
        "tpot_p50_s": res.percentile("tpot_s", 50),
        "tpot_p99_s": res.percentile("tpot_s", 99),
        "output_tokens_per_s": res.output_tokens_per_s,
    }


if __name__ == "__main__":
    print(json.dumps(bench(), indent=2))
