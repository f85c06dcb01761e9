"""What the serving search simulates: the sampled requests (`Workload`), the engine model
of a replica at an operating point, one run and its SLO verdict. Shared by the aggregated
search (`search.serving`) and the disaggregated one (`search.serving_disagg`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rightsize.perf.inference import Replica
from rightsize.perf.serving_multinode import PipelinedReplica
from rightsize.perf.serving_sim import EngineModel, SimResult, simulate
from rightsize.perf.serving_slo import SloCheck, meets, simulate_meets
from rightsize.perf.traffic import arrival_times, sample_lengths
from rightsize.spec.inference import InferenceSpec, LengthDist

# Draft-model cost per speculative step, relative to a target-model decode step
# (a draft ~1/10 the size of the target, run draft_tokens times, mostly memory-bound).
DRAFT_COST_PER_TOKEN = 0.05


def _lengths(d: LengthDist, n: int, rng: np.random.Generator) -> np.ndarray:
    return sample_lengths(n, rng, d.kind, mean=d.mean, std=d.std, min_=d.min, max_=d.max, values=d.values)


def _tokens_per_step(spec: InferenceSpec) -> tuple[float, float]:
    """(mean tokens per decode step, relative cost of a step) under speculative decoding."""
    sp = spec.engine.speculative
    if sp is None:
        return 1.0, 1.0
    k, a = sp.draft_tokens, sp.acceptance_rate
    expected = (1.0 - a ** (k + 1)) / (1.0 - a) if a < 1.0 else k + 1.0
    return expected, 1.0 + DRAFT_COST_PER_TOKEN * k


def engine_model(rep: Replica, spec: InferenceSpec, batch: float, mean_ctx: float) -> EngineModel:
    tokens_per_step, step_cost = _tokens_per_step(spec)
    lin = rep.linear_step_coefficients(batch, mean_ctx)
    chunk = float(spec.engine.chunk_tokens)
    prefill_chunk = float(rep.prefill_s(chunk))
    a = rep.arch
    attn2 = (
        a.layers
        * 4.0
        * a.head_dim
        * a.heads
        / rep.tp
        / (rep.hw.peak_16bit_flops_per_s * rep.hw.attention_fraction)
    )
    kv_cap = int(rep.kv_capacity_tokens)
    max_batch = spec.engine.max_batch or max(1, kv_cap // spec.engine.block_tokens)
    return EngineModel(
        iteration_base_s=lin["iteration_base_s"] * step_cost,
        decode_per_seq_s=lin["decode_per_seq_s"] * step_cost,
        decode_per_ctx_token_s=lin["decode_per_ctx_token_s"],
        prefill_per_token_s=prefill_chunk / chunk,
        prefill_attn_per_token2_s=attn2,
        max_batch=int(max_batch),
        kv_capacity_tokens=kv_cap,
        block_tokens=int(spec.engine.block_tokens),
        chunk_tokens=int(chunk) if spec.engine.chunked_prefill else None,
        spec_tokens_per_step=tokens_per_step,
        first_token_lag_per_token_s=(
            float(rep.prefill_lag_s(chunk)) / chunk if isinstance(rep, PipelinedReplica) else 0.0
        ),
    )


@dataclass
class Workload:
    prompts: np.ndarray
    outputs: np.ndarray
    unit_arrivals: np.ndarray  # arrivals at rate 1/s; scale by 1/rate
    mean_prompt: float
    mean_output: float


def workload(spec: InferenceSpec, n: int) -> Workload:
    rng = np.random.default_rng(spec.seed)
    tr = spec.traffic
    prompts = _lengths(tr.prompt_tokens, n, rng)
    outputs = _lengths(tr.output_tokens, n, rng)
    unit = arrival_times(n, 1.0, rng, tr.arrival, tr.burst_cv)
    return Workload(prompts, outputs, unit, float(prompts.mean()), float(outputs.mean()))


def run(rep: Replica, spec: InferenceSpec, wl: Workload, rate: float) -> SimResult:
    model = model_at(rep, spec, wl, rate)
    return simulate(
        wl.unit_arrivals / rate, wl.prompts, wl.outputs, model, spec.traffic.prefix_cache_hit_rate
    )


def passes(rep: Replica, spec: InferenceSpec, wl: Workload, rate: float) -> bool:
    """Whether one replica meets every SLO at `rate` (the run stops once it cannot)."""
    model = model_at(rep, spec, wl, rate)
    return simulate_meets(
        wl.unit_arrivals / rate,
        wl.prompts,
        wl.outputs,
        model,
        slo_check(spec),
        spec.traffic.prefix_cache_hit_rate,
    )


def slo_check(spec: InferenceSpec) -> SloCheck:
    slo = spec.slo
    return SloCheck(slo.ttft_s, slo.tpot_s, slo.e2e_s, slo.percentile, slo.goodput)


def model_at(rep: Replica, spec: InferenceSpec, wl: Workload, rate: float) -> EngineModel:
    # operating point for the linearised step: Little's law with an analytic step time
    batch = 1.0
    for _ in range(4):
        step = float(rep.decode_step_s(batch, batch * (wl.mean_prompt + wl.mean_output / 2)))
        batch = max(
            1.0, min(rate * wl.mean_output * step, rep.kv_capacity_tokens / (wl.mean_prompt + wl.mean_output))
        )
    return engine_model(rep, spec, batch, wl.mean_prompt + wl.mean_output / 2)


def slo_met(spec: InferenceSpec, res: SimResult) -> bool:
    return meets(res, slo_check(spec))
