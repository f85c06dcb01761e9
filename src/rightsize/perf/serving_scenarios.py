"""Two fixed scenarios run through the serving simulator (`perf.serving_sim`): one wave of
identical concurrent streams (latency-vs-batch tables) and offline batch inference where
the engine fills its batch and KV memory (throughput benchmarks)."""

from __future__ import annotations

import math

import numpy as np

from rightsize.errors import BadInput
from rightsize.perf.serving_sim import EngineModel, simulate


def closed_loop_fixed_batch(
    batch: int, prompt: int, output: int, model: EngineModel
) -> tuple[float, float, float]:
    """(mean TTFT s, mean TPOT s, output tokens/s) for `batch` identical requests that all
    arrive at t = 0 and run to completion: one wave of fixed concurrent streams, the
    setting of latency-vs-batch tables (vLLM `benchmark_latency`, TensorRT-LLM's
    throughput tables). With chunked prefill the prompts trickle in over several
    iterations, so TTFT is a mean; a batch beyond max_batch or KV capacity queues. TPOT is
    NaN for one-token outputs.
    """
    if batch < 1:
        raise BadInput(f"batch = {batch}.", "At least one stream is needed.", "Pass batch >= 1.")
    res = simulate(np.zeros(batch), np.full(batch, prompt), np.full(batch, output), model)
    tpot = float(np.mean(res.tpot_s)) if output > 1 else math.nan
    return float(np.mean(res.ttft_s)), tpot, res.output_tokens_per_s


def offline_max_throughput(n: int, prompt: int, output: int, model: EngineModel) -> float:
    """Output tokens/s when `n` identical requests all arrive at t = 0 and the engine fills
    its batch and KV memory (offline batch inference; vLLM `benchmark_throughput`)."""
    if n < 1:
        raise BadInput(f"n = {n}.", "At least one request is needed.", "Pass n >= 1.")
    return simulate(np.zeros(n), np.full(n, prompt), np.full(n, output), model).output_tokens_per_s
