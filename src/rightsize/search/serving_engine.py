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
from rightsize.perf.serving_specdec import SpeculativeReplica, tokens_per_step
from rightsize.perf.traffic import arrival_times, sample_lengths
from rightsize.spec.inference import InferenceSpec, LengthDist

# Draft-model cost per speculative step, relative to a target-model decode step
# (a draft ~1/10 the size of the target, run draft_tokens times, mostly memory-bound).
DRAFT_COST_PER_TOKEN = 0.05


def _lengths(d: LengthDist, n: int, rng: np.random.Generator) -> np.ndarray:
    return sample_lengths(n, rng, d.kind, mean=d.mean, std=d.std, min_=d.min, max_=d.max, values=d.values)


def _tokens_per_step(spec: InferenceSpec, rep: Replica | None = None) -> tuple[float, float]:
    """(mean tokens per decode step, relative cost of a step) under speculative decoding. A
    `SpeculativeReplica` times its own steps (relative cost 1); without one the draft costs
    DRAFT_COST_PER_TOKEN of a target step per drafted token."""
    sp = spec.engine.speculative
    if sp is None:
        return 1.0, 1.0
    expected = tokens_per_step(sp.draft_tokens, sp.acceptance_rate or 1.0, sp.acceptance_length)
    if isinstance(rep, SpeculativeReplica):
        return expected, 1.0
    return expected, 1.0 + DRAFT_COST_PER_TOKEN * sp.draft_tokens


def engine_model(rep: Replica, spec: InferenceSpec, batch: float, mean_ctx: float) -> EngineModel:
    """The replica's iteration-time model linearised at (batch, mean context)."""
    return EngineModels(rep, spec).linearised(batch, mean_ctx)


class EngineModels:
    """A replica's engine models at any operating point, with what does not depend on the
    operating point (prefill of a chunk, KV capacity, the pipeline lag) computed once."""

    def __init__(self, rep: Replica, spec: InferenceSpec) -> None:
        self.rep, self.spec = rep, spec
        self.tokens_per_step, self.step_cost = _tokens_per_step(spec, rep)
        chunk = float(spec.engine.chunk_tokens)
        self.chunk = chunk
        self.prefill_per_token_s = float(rep.prefill_s(chunk)) / chunk
        a = rep.arch
        self.attn2 = (
            a.layers
            * 4.0
            * a.head_dim
            * a.heads
            / rep.tp
            / (rep.hw.peak_16bit_flops_per_s * rep.hw.attention_fraction)
        )
        self.kv_cap = int(rep.kv_capacity_tokens)
        self.kv_capacity_tokens = rep.kv_capacity_tokens
        self.max_batch = spec.engine.max_batch or max(1, self.kv_cap // spec.engine.block_tokens)
        self.lag = float(rep.prefill_lag_s(chunk)) / chunk if isinstance(rep, PipelinedReplica) else 0.0
        self._step_at: dict[tuple[float, float], float] = {}
        self._at: dict[tuple[float, float], EngineModel] = {}
        self.overhead_s = float(rep.step_overhead_s(1.0))

    def linearised(self, batch: float, mean_ctx: float) -> EngineModel:
        lin = self.rep.linear_step_coefficients(batch, mean_ctx)
        eng = self.spec.engine
        return EngineModel(
            # at least the engine's fixed per-iteration overhead: a steep step (a speculative
            # verification over B (k + 1) rows) linearised at a large batch can extrapolate below it
            iteration_base_s=max(lin["iteration_base_s"], self.overhead_s) * self.step_cost,
            decode_per_seq_s=lin["decode_per_seq_s"] * self.step_cost,
            decode_per_ctx_token_s=lin["decode_per_ctx_token_s"],
            prefill_per_token_s=self.prefill_per_token_s,
            prefill_attn_per_token2_s=self.attn2,
            max_batch=int(self.max_batch),
            kv_capacity_tokens=self.kv_cap,
            block_tokens=int(eng.block_tokens),
            chunk_tokens=int(self.chunk) if eng.chunked_prefill else None,
            spec_tokens_per_step=self.tokens_per_step,
            first_token_lag_per_token_s=self.lag,
        )

    def at(self, wl: Workload, rate: float) -> EngineModel:
        """Linearised at the operating point of `rate`: Little's law with the analytic step."""
        ctx = wl.mean_prompt + wl.mean_output / 2
        cap = self.kv_capacity_tokens / (wl.mean_prompt + wl.mean_output)
        batch = 1.0
        for _ in range(4):  # the first step is at batch 1 whatever the rate
            key = (batch, ctx)  # the step is a pure function of its point: computed once per point
            if key not in self._step_at:  # (the batch often settles at 1 or at the KV cap)
                self._step_at[key] = float(self.rep.decode_step_s(batch, batch * ctx))
            batch = max(1.0, min(rate * wl.mean_output * self._step_at[key], cap))
        if (batch, ctx) not in self._at:  # a frozen model: rates that settle at one point share it
            self._at[batch, ctx] = self.linearised(batch, ctx)
        return self._at[batch, ctx]


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


def run(
    rep: Replica, spec: InferenceSpec, wl: Workload, rate: float, models: EngineModels | None = None
) -> SimResult:
    """One replica's simulated run at `rate` (`models`: the replica's, reused across rates)."""
    model = (models or EngineModels(rep, spec)).at(wl, rate)
    return simulate(
        wl.unit_arrivals / rate, wl.prompts, wl.outputs, model, spec.traffic.prefix_cache_hit_rate
    )


def passes(
    rep: Replica, spec: InferenceSpec, wl: Workload, rate: float, models: EngineModels | None = None
) -> bool:
    """Whether one replica meets every SLO at `rate` (the run stops once it cannot)."""
    model = (models or EngineModels(rep, spec)).at(wl, rate)
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
    """The replica's engine model at `rate` (see `EngineModels.at`)."""
    return EngineModels(rep, spec).at(wl, rate)


def slo_met(spec: InferenceSpec, res: SimResult) -> bool:
    return meets(res, slo_check(spec))
