"""Inference physics for one serving replica (tp GPUs): weights and KV-cache bytes,
memory left for the cache, prefill and decode step times, vectorised over batch and context.

Decode (one new token per running sequence) reads every linear weight once per step
and each sequence's KV cache; it does 2 FLOPs per active parameter per sequence plus
attention (4 d a FLOPs per cached token per sequence). On a GPU the two overlap, so the
step takes the larger of bytes / bandwidth and FLOPs / rate (roofline), plus the
tensor-parallel all-reduces (two per layer, latency-bound at small batch) and a fixed
per-step overhead. Prefill is the training forward pass: GEMMs from their shapes, with
causal attention over the prompt.

Mixture of experts: a decode step reads only the experts its batch activates. With B
tokens each routed to k of E experts (independently, uniformly), the expected number of
distinct experts a layer touches is E (1 - (1 - k/E)^B): k at batch 1, all E once the batch
is large. Experts are spread over the replica's tp GPUs (expert parallelism inside the
engine), so each GPU streams its share.

Multi-head latent attention caches one latent of kv_lora + d_rope per token per layer,
shared by all heads (so every TP rank holds all of it); decode attends in the latent space
(the up-projections absorbed into the query and output), about 2 a (2 kv_lora + d_rope)
FLOPs per cached token.

Weight-only quantisation (int8, int4 in gpt-fast and similar) stores fewer bytes but
computes in 16 bit: each weight is dequantised on the fly, costing CUDA-core
operations that do not fully hide under the memory stream. fp8 on Hopper and later,
and fp4 on Blackwell, run natively on tensor cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from rightsize.catalog import Accelerator, NodeType, get_accelerator
from rightsize.catalog.engines import EngineDefaults, get_engine
from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.perf import collectives as coll
from rightsize.perf import parallel_block
from rightsize.perf.engine_memory import engine_memory
from rightsize.perf.gemm import gemm_efficiency, gemm_time_s
from rightsize.perf.hardware import Hardware, power_capped
from rightsize.perf.kernels import timing as kernel_timing
from rightsize.perf.kernels.table import KernelTable
from rightsize.perf.kernels.timing import OpReport
from rightsize.perf.params import (
    active_params,
    attention_params_per_layer,
    count_params,
    kv_cache_elems_per_token_layer,
    mlp_matrices,
    qk_head_dim,
    v_head_dim,
)
from rightsize.perf.serving_kv_read import decode_kv_bw_ratio, decode_read_context
from rightsize.spec.model import ModelArch

BYTES_PER_ELEMENT = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "fp4": 0.5}

# Group-wise scales and zero points of 4-bit formats: a 16-bit scale and zero per group
# of 128 weights (GPTQ/AWQ/gpt-fast int4 groupsize 128) adds 4 / 128 bytes per weight.
INT4_GROUP_OVERHEAD_BYTES = 4.0 / 128.0

# 4-bit floating-point weights carry a one-byte block scale: NVFP4 an FP8 (E4M3) scale per
# 16 values (plus one FP32 scale per tensor, negligible), 0.5625 bytes per weight (NVIDIA,
# "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", 2025-06; Intel
# Neural Compressor NVFP4 format table: block 16, UE4M3 scale); AMD's MXFP4 (OCP Microscaling
# Formats v1.0, 2023-09) an E8M0 scale per 32 values. By vendor; other vendors' fp4 as NVFP4.
FP4_BLOCK_SCALE_BYTES = {"amd": 1.0 / 32.0}
NVFP4_BLOCK_SCALE_BYTES = 1.0 / 16.0

# CUDA-core operations to dequantise one weight-only-quantised weight to 16 bit
# (unpack, convert, scale, zero-point). Fitted once on gpt-fast's A100 int8 and int4
# rows against its bf16 row (the bandwidth term already explains bf16).
DEQUANT_OPS_PER_WEIGHT = {"int8": 5.0, "int4": 8.0}

# Fraction of the achievable streaming bandwidth that batch-1..small-batch decode
# GEMV kernels reach: gpt-fast's compiled Llama-2-7B decode streams 13.2 GB per token
# at 104.9 tokens/s = 1.39 TB/s on an A100 whose stream bandwidth is ~1.75 TB/s.
DECODE_STREAM_FRACTION = 0.80

# Fixed cost per decode step with CUDA graphs / compiled engines: sampling, scheduler,
# host-device sync. gpt-fast and TensorRT-LLM report ~0.1-0.5 ms.
DECODE_STEP_OVERHEAD_S = 2.0e-4

# Memory an engine keeps outside weights and KV cache: CUDA context, NCCL buffers,
# activation workspace for the largest prefill chunk; vLLM's default leaves 10% of
# HBM unused (gpu_memory_utilization 0.9). Engines named in the spec bring their own
# fraction and convention (catalog/data/engines.yaml); an engine whose reserved memory was
# measured (engines.yaml `memory`: TensorRT-LLM) has it by mechanism (perf.engine_memory),
# the others keep this flat 2 GiB (an estimate, not measured).
ENGINE_MEMORY_UTILISATION = 0.90
ENGINE_WORKSPACE_BYTES = 2.0 * GiB

# Largest message counted as a decode-sized all-reduce (`Hardware.decode_allreduce_bw_fraction`):
# [batch, hidden] 16-bit activations reach 4 MiB at batch 256 x hidden 8192; prefill chunks of
# thousands of tokens send tens of MiB, where the collective library's large-message bus
# bandwidth applies.
DECODE_ALLREDUCE_MAX_BYTES = 4.0 * 2**20

# Sampling reads the step's logits (batch x vocab, fp32) about three times: softmax
# (max and sum), top-k/top-p filtering and the draw. Memory-bound: bytes / bandwidth.
SAMPLING_PASSES = 3.0
LOGIT_BYTES = 4.0


@lru_cache(maxsize=256)
def _linear_params(arch: ModelArch) -> float:
    """All parameters but the input embedding (ModelArch is frozen: counted once per shape)."""
    c = count_params(arch)
    return c.total - c.embedding


def weight_only(acc: Accelerator, weight_precision: str) -> bool:
    """Whether weights are dequantised to 16 bit (no native tensor-core support)."""
    if weight_precision in ("int8", "int4"):
        return True
    return not acc.supports(weight_precision)


def compute_dtype(acc: Accelerator, weight_precision: str) -> str:
    if weight_precision in ("fp8", "fp4") and acc.supports(weight_precision):
        return weight_precision
    return "bf16" if acc.supports("bf16") else "fp16"


@dataclass(frozen=True)
class Replica:
    """One serving engine: a model on tp GPUs of one accelerator type.

    `engine` brings the engine's KV-memory convention and per-iteration overhead (vLLM's
    when none is named); `kernels`, when given, times each operation from a measured
    kernel table (`perf.kernels`), falling back to the analytic model per operation.
    """

    arch: ModelArch
    tp: int
    weight_precision: str
    kv_precision: str
    hw: Hardware
    dequant: bool
    engine: EngineDefaults | None = None
    kernels: KernelTable | None = None
    engine_version: str | None = (
        None  # the engine release (None: a current one); older ones differ per mechanism
    )

    @classmethod
    def build(
        cls,
        arch: ModelArch,
        acc: Accelerator,
        node: NodeType,
        tp: int,
        weight_precision: str,
        kv_precision: str,
        overrides: dict[str, float] | None = None,
        engine: str | None = None,
        kernels: KernelTable | None = None,
        engine_version: str | None = None,
        power_limit_w: float | None = None,
    ) -> Replica:
        """A replica of `arch` at tensor parallelism `tp` on boards capped at `power_limit_w`
        (None: the TDP; `perf.hardware.power_capped`); `overrides` replace catalog
        efficiencies (a calibration's fit for this accelerator); `engine` names the serving
        engine whose defaults apply, `engine_version` its release (older releases differ per
        mechanism: `catalog/data/engines.yaml` releases); `kernels` is a measured kernel table to
        time ops from."""
        if weight_precision not in BYTES_PER_ELEMENT or kv_precision not in BYTES_PER_ELEMENT:
            raise BadInput(
                f"Unknown precision {weight_precision!r} / {kv_precision!r}.",
                f"Known: {', '.join(BYTES_PER_ELEMENT)}.",
                "Use one of them for serving.weight_precision and serving.kv_precision.",
            )
        eng = get_engine(engine) if engine else None
        # An engine that runs int8 as W8A8 (SmoothQuant / compressed-tensors) multiplies on the
        # part's int8 tensor-core rate with nothing to dequantise; others dequantise to 16 bit.
        w8a8 = (
            weight_precision == "int8"
            and eng is not None
            and eng.int8_scheme == "w8a8"
            and acc.supports("int8")
        )
        dequant = False if w8a8 else weight_only(acc, weight_precision)
        hw = power_capped(
            Hardware.from_catalog(acc, node, "int8" if w8a8 else compute_dtype(acc, weight_precision)),
            power_limit_w,
        )
        if overrides:
            hw = hw.with_overrides(**overrides)
        return cls(
            arch, tp, weight_precision, kv_precision, hw, dequant, eng, kernels, engine_version or None
        )

    # --- bytes -----------------------------------------------------------------------------

    @property
    def linear_params(self) -> float:
        """Parameters in matrices read every decode step (all but the input embedding)."""
        return _linear_params(self.arch)

    @property
    def weight_bytes_per_element(self) -> float:
        """Bytes one quantised weight takes in memory, its share of the format's scales included
        (int4 group scales and zero points; fp4 block scales)."""
        wp = self.weight_precision
        if wp == "int4":
            return BYTES_PER_ELEMENT[wp] + INT4_GROUP_OVERHEAD_BYTES
        if wp == "fp4":
            vendor = get_accelerator(self.hw.accelerator_id).vendor
            return BYTES_PER_ELEMENT[wp] + FP4_BLOCK_SCALE_BYTES.get(vendor, NVFP4_BLOCK_SCALE_BYTES)
        return BYTES_PER_ELEMENT[wp]

    @property
    def weight_bytes_per_gpu(self) -> float:
        per_param = self.weight_bytes_per_element
        c = count_params(self.arch)
        embedding = c.embedding * 2.0  # lookup table stays 16 bit
        return (self.linear_params * per_param + embedding) / self.tp

    @property
    def kv_bytes_per_token(self) -> float:
        """K and V for every layer: 2 x layers x kv_heads x head_dim x bytes (whole replica),
        or MLA's latent: layers x (kv_lora + d_rope) x bytes."""
        a = self.arch
        return a.layers * kv_cache_elems_per_token_layer(a) * BYTES_PER_ELEMENT[self.kv_precision]

    @property
    def kv_shards(self) -> int:
        """GPUs the KV heads split over; beyond kv_heads, TP ranks hold replicas. MLA's latent
        serves every head, so each TP rank keeps all of it."""
        return 1 if self.arch.is_mla else min(self.tp, self.arch.kv_heads)

    def decode_weight_params(self, batch: np.ndarray | float) -> np.ndarray:
        """Linear parameters a decode step of `batch` sequences reads (whole replica): all of a
        dense model; for MoE the non-expert weights plus the distinct routed experts touched,
        E (1 - (1 - k / E)^B) per MoE layer."""
        b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
        a = self.arch
        if not a.is_moe:
            return np.full_like(b, self.linear_params)
        c = count_params(a)
        per_expert = c.routed_experts_per_layer / a.experts
        touched = a.experts * (1.0 - (1.0 - a.experts_per_token / a.experts) ** b)
        return self.linear_params - c.moe_layers * (c.routed_experts_per_layer - per_expert * touched)

    @property
    def kv_capacity_tokens(self) -> float:
        """Tokens of KV cache the replica can hold once weights and workspace are placed."""
        return self.kv_capacity_tokens_at()

    def engine_reserved_bytes(self, max_num_tokens: float | None = None) -> float:
        """Bytes per GPU the engine keeps besides weights and KV cache: by mechanism where the
        engine's were measured (`perf.engine_memory`, profiling pass over `max_num_tokens`,
        None: the engine's default), else the flat ENGINE_WORKSPACE_BYTES."""
        mem = self.engine.memory if self.engine is not None else None
        if mem is None:
            return ENGINE_WORKSPACE_BYTES
        return engine_memory(mem, self.arch, self.tp, self.hw.accelerator_id, max_num_tokens).total_bytes

    def kv_capacity_tokens_at(
        self, max_num_tokens: float | None = None, kv_memory_fraction: float | None = None
    ) -> float:
        """KV tokens the replica holds with the engine profiling `max_num_tokens` tokens and
        giving the cache `kv_memory_fraction` (None: the engine's defaults)."""
        hbm, weights = self.hw.hbm_bytes, self.weight_bytes_per_gpu
        eng = self.engine
        reserved = self.engine_reserved_bytes(max_num_tokens)
        fraction = kv_memory_fraction or (eng.value("kv_memory_fraction") if eng else None)
        if eng is None:
            free = hbm * (fraction or ENGINE_MEMORY_UTILISATION) - reserved - weights
        elif eng.kv_memory_basis == "free":  # TensorRT-LLM: a fraction of what weights leave
            free = (hbm - reserved - weights) * (fraction or 0.9)
        else:  # vLLM, SGLang: a fraction of all memory, weights included
            free = hbm * (fraction or 0.9) - reserved - weights
        per_gpu_token = self.kv_bytes_per_token / self.kv_shards
        return max(0.0, free) / per_gpu_token

    def memory_record(self) -> dict[str, float]:
        """Bytes per GPU as a plan records them (weights, KV pool, the engine's reservation)."""
        return {
            "weights_bytes_per_gpu": self.weight_bytes_per_gpu,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "kv_bytes_per_gpu": self.kv_capacity_tokens * self.kv_bytes_per_token / self.kv_shards,
            "engine_reserved_bytes_per_gpu": self.engine_reserved_bytes(),
        }

    @property
    def fits(self) -> bool:
        return self.kv_capacity_tokens > 0

    # --- time ------------------------------------------------------------------------------

    def _stream_bw(self) -> float:
        return self.hw.hbm_bytes_per_s * self.hw.memory_bw_fraction * DECODE_STREAM_FRACTION

    def tp_comm_s(self, tokens: np.ndarray | float) -> np.ndarray:
        """The forward's all-reduces of [tokens, hidden] 16-bit activations: two per layer, one for a
        parallel block (`perf.parallel_block`; vLLM's Falcon sums both branches first). Inside the scale-up
        domain a serving stack's decode-sized all-reduces run at the accelerator's
        `decode_allreduce_bw_fraction` of the link where the catalog gives one (ROCm/vLLM on
        MI300X reaches far less than RCCL's large-message bus bandwidth, issue 28)."""
        n = np.asarray(float(self.tp))
        bw, lat = coll.group_link(n, np.asarray(1.0), self.hw)
        nbytes = np.asarray(tokens, dtype=np.float64) * self.arch.hidden * 2.0
        hw = self.hw
        if hw.decode_allreduce_bw_fraction > 0 and self.tp <= hw.domain_gpus:
            small = np.minimum(bw, hw.scaleup_bytes_per_s * hw.decode_allreduce_bw_fraction)
            bw = np.where(nbytes <= DECODE_ALLREDUCE_MAX_BYTES, small, bw)
        per_layer = parallel_block.tp_exchanges(self.arch)[0]
        return per_layer * self.arch.layers * coll.all_reduce_s(nbytes, n, bw, lat)

    def step_overhead_s(
        self, batch: np.ndarray | float, gpu_s: np.ndarray | float | None = None
    ) -> np.ndarray:
        """What a step adds to its kernels: sampling over the batch's logits (GPU work), the
        platform runtime's fixed cost, and the engine's host time per iteration that is exposed.
        An engine release that overlaps its host work with the GPU (`EngineDefaults.overlaps_host`:
        TensorRT-LLM's PyTorch overlap scheduler, SGLang's zero-overhead scheduler) exposes only
        max(0, host - GPU step), given the step's GPU seconds `gpu_s`; without overlap, or with no
        GPU time to hide behind (`gpu_s` None), the whole host time is exposed."""
        b = np.asarray(batch, dtype=np.float64)
        sampling = SAMPLING_PASSES * LOGIT_BYTES * b * self.arch.vocab / self._stream_bw()
        if self.engine is None:
            host: np.ndarray | float = DECODE_STEP_OVERHEAD_S
        else:
            host = self.engine.iteration_host_s(self.engine_version)
            if gpu_s is not None and self.engine.overlaps_host(self.engine_version):
                host = np.maximum(0.0, host - (np.asarray(gpu_s, dtype=np.float64) + sampling))
        return host + self.hw.serving_step_overhead_s + sampling

    def decode_step_s(self, batch: np.ndarray | float, context_tokens: np.ndarray | float) -> np.ndarray:
        """Seconds for one decode step of `batch` sequences holding `context_tokens` in total."""
        return self.decode_step_detail(batch, context_tokens)[0]

    def decode_step_detail(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> tuple[np.ndarray, OpReport]:
        """Decode step time and which source timed each operation."""
        b = np.asarray(batch, dtype=np.float64)
        if self.kernels is not None and kernel_timing.supported(self) is None:
            t, report = kernel_timing.decode_step_s(self, self.kernels, b, np.asarray(context_tokens))
            overhead = self.step_overhead_s(b, t)
            report.seconds["engine_overhead_and_sampling"] = overhead  # what the tables do not time
            return t + overhead, report
        report = OpReport("analytic")
        report.note("decode_step", np.zeros(1, dtype=bool), self._why_analytic())
        return self._analytic_decode_s(b, np.asarray(context_tokens, dtype=np.float64)), report

    def _why_analytic(self) -> str:
        if self.kernels is None:
            return "no measured kernel table for this accelerator and engine"
        return kernel_timing.supported(self) or ""

    def _analytic_decode_s(self, b: np.ndarray, ctx: np.ndarray) -> np.ndarray:
        """Weights-and-GEMMs and attention are separate kernels, each bound by its own
        roofline (bytes / bandwidth or FLOPs / rate), so their times add: at large batch the
        GEMMs turn compute-bound while attention still streams the KV cache."""
        read = self.decode_weight_params(b)
        weights = read * self.weight_bytes_per_element / self.tp
        gemm_s = np.maximum(weights / self._stream_bw(), self._decode_gemm_compute_s(b))
        dequant_s: np.ndarray | float = 0.0
        if self.dequant and self.weight_precision in DEQUANT_OPS_PER_WEIGHT:
            ops = DEQUANT_OPS_PER_WEIGHT[self.weight_precision] * read / self.tp
            dequant_s = ops / self._cuda_core_ops_per_s()
        attn_s = self.analytic_decode_attention_s(b, ctx) * self.arch.layers
        gpu_s = gemm_s + dequant_s + attn_s + self.tp_comm_s(b)
        return gpu_s + self.step_overhead_s(b, gpu_s)

    def _decode_gemm_compute_s(self, b: np.ndarray) -> np.ndarray:
        """FLOP time of a decode step's GEMMs with `b` rows each. Dense GQA models: each
        projection at its own shape, so a batch smaller than the library's output tile
        (128 rows on NVIDIA, 256 on CDNA 3) pays for the whole tile (`gemm_efficiency`).
        MoE and MLA: all active parameters at the large-GEMM fraction."""
        a, hw, tp = self.arch, self.hw, float(self.tp)
        if a.is_moe or a.is_mla:
            flops = 2.0 * active_params(a) * b / tp
            return flops / (hw.peak_flops_per_s * hw.gemm_fraction)
        h, d, f = float(a.hidden), float(a.head_dim), float(a.ffn_hidden)
        # the four projections and the logits, (n, k) each, in one vectorised evaluation
        n = np.array(
            [(a.heads + 2 * a.kv_heads) * d / tp, h, (mlp_matrices(a) - 1) * f / tp, h, a.vocab / tp]
        )
        k = np.array([h, a.heads * d / tp, h, f / tp, h])
        bb = b[..., np.newaxis]
        t = 2.0 * bb * n * k / (hw.peak_flops_per_s * gemm_efficiency(bb, n, k, hw))
        per_layer = np.zeros_like(b) + t[..., 0] + t[..., 1] + t[..., 2] + t[..., 3]
        return a.layers * per_layer + t[..., 4]

    @property
    def decode_kv_loads(self) -> float:
        """Times each K/V head is read from HBM per decode step: 1, or on an engine release whose
        generation kernel loads a GQA group's K/V once per query head (TensorRT-LLM before XQA),
        1 + (group - 1) x the fraction of those extra loads that miss L2."""
        a = self.arch
        if self.engine is None or a.is_mla or a.kv_heads >= a.heads:
            return 1.0
        miss = self.engine.release_value("gqa_decode_kv_reread_fraction", self.engine_version)
        return 1.0 if miss is None else 1.0 + (a.heads / a.kv_heads - 1.0) * miss

    def release_decode_attention_extra_s(self, context_tokens: np.ndarray) -> np.ndarray | float:
        """One layer's extra decode-attention time of an older engine release (its K/V re-reads),
        added to measured generation-attention kernels of current releases."""
        loads = self.decode_kv_loads
        if loads == 1.0:
            return 0.0
        kv = np.asarray(context_tokens, dtype=np.float64) * self.kv_bytes_per_token / self.kv_shards
        return (loads - 1.0) * kv / self.arch.layers / self._stream_bw()

    def analytic_decode_attention_s(self, batch: np.ndarray, context_tokens: np.ndarray) -> np.ndarray:
        """One layer's decode attention: the batch's KV cache streamed once (or as many times as
        the engine release loads it, `decode_kv_loads`), or its FLOPs."""
        a = self.arch
        ctx = decode_read_context(self.engine, batch, context_tokens)  # whole blocks (JetStream)
        kv = ctx * self.kv_bytes_per_token / self.kv_shards / a.layers * self.decode_kv_loads
        if a.is_mla:  # absorbed MLA: scores over kv_lora + d_rope, values over kv_lora
            per_ctx = 2.0 * a.heads * (2.0 * (a.kv_lora_rank or 0) + (a.qk_rope_head_dim or 0))
        else:
            per_ctx = 4.0 * a.heads * a.head_dim
        flops = per_ctx * ctx / self.tp
        kv_bw = self._stream_bw() * decode_kv_bw_ratio(self.engine, self.hw.decode_kv_bw_ratio)
        return np.maximum(kv / kv_bw, flops / (self.hw.peak_16bit_flops_per_s * self.hw.attention_fraction))

    def analytic_gemm_s(self, m: np.ndarray | float, n: float, k: float) -> np.ndarray:
        """One projection GEMM (per rank): weight read or FLOPs, plus weight-only dequantisation."""
        eb = self.weight_bytes_per_element
        mm = np.asarray(m, dtype=np.float64)
        memory = (n * k * eb + 2.0 * mm * (n + k)) / self._stream_bw()
        compute = 2.0 * mm * n * k / (self.hw.peak_flops_per_s * self.hw.gemm_fraction)
        dequant = 0.0
        if self.dequant and self.weight_precision in DEQUANT_OPS_PER_WEIGHT:
            dequant = DEQUANT_OPS_PER_WEIGHT[self.weight_precision] * n * k / self._cuda_core_ops_per_s()
        return np.maximum(memory, compute) + dequant + self.hw.kernel_overhead_s

    def analytic_prefill_attention_s(
        self, tokens: np.ndarray, sequences: np.ndarray, past: np.ndarray | float = 0.0
    ) -> np.ndarray:
        """One layer's causal attention over `sequences` prompts of `tokens` (plus a cached prefix)."""
        a = self.arch
        d = 0.5 * float(qk_head_dim(a) + v_head_dim(a))
        flops = 4.0 * sequences * tokens * (tokens / 2.0 + past) * d * a.heads / self.tp
        return flops / (self.hw.peak_16bit_flops_per_s * self.hw.attention_fraction)

    def _cuda_core_ops_per_s(self) -> float:
        """Non-tensor-core throughput, from the catalog's fp32 peak (or 1/16 of 16-bit)."""
        return self.hw.peak_16bit_flops_per_s / 16.0 if self.hw.peak_16bit_flops_per_s else 1e13

    def prefill_s(
        self,
        tokens: np.ndarray | float,
        past_tokens: np.ndarray | float = 0.0,
        sequences: np.ndarray | float = 1.0,
    ) -> np.ndarray:
        """Seconds to prefill `sequences` prompts of `tokens` new tokens each (one sequence or a
        packed chunk when sequences is 1), each attending to `past_tokens` already cached.
        The GEMMs see sequences x tokens rows; attention grows with each prompt's own square."""
        return self.prefill_detail(tokens, past_tokens, sequences)[0]

    def prefill_detail(
        self,
        tokens: np.ndarray | float,
        past_tokens: np.ndarray | float = 0.0,
        sequences: np.ndarray | float = 1.0,
    ) -> tuple[np.ndarray, OpReport]:
        """Prefill time and which source timed each operation."""
        t = np.maximum(np.asarray(tokens, dtype=np.float64), 1.0)
        s = np.maximum(np.asarray(sequences, dtype=np.float64), 1.0)
        past = np.asarray(past_tokens, dtype=np.float64)
        if self.kernels is not None and kernel_timing.supported(self) is None and not np.any(past > 0):
            return kernel_timing.prefill_s(self, self.kernels, t, s)
        report = OpReport("analytic")
        why = self._why_analytic() if not np.any(past > 0) else "a cached prefix has no measured attention"
        report.note("prefill", np.zeros(1, dtype=bool), why)
        return self._analytic_prefill_s(t, past, s), report

    def _analytic_prefill_s(self, t: np.ndarray, past: np.ndarray, s: np.ndarray) -> np.ndarray:
        a, hw, tp = self.arch, self.hw, float(self.tp)
        m = t * s
        eb = BYTES_PER_ELEMENT[self.weight_precision] if not self.dequant else 2.0
        h = float(a.hidden)
        d = 0.5 * float(qk_head_dim(a) + v_head_dim(a))
        if a.is_mla:  # the projections as one GEMM of the same weight count (an approximation)
            per_layer = gemm_time_s(m, attention_params_per_layer(a) / h / tp, h, hw, eb)
        else:
            per_layer = gemm_time_s(m, (a.heads + 2 * a.kv_heads) * d / tp, h, hw, eb)
            per_layer = per_layer + gemm_time_s(m, h, a.heads * d / tp, hw, eb)
        mats = mlp_matrices(a)
        f = float(a.ffn_hidden)
        if a.is_moe:
            f = float(a.expert_ffn_hidden or a.ffn_hidden) * (a.experts_per_token + a.shared_experts)
        per_layer = (
            per_layer + gemm_time_s(m, (mats - 1) * f / tp, h, hw, eb) + gemm_time_s(m, h, f / tp, hw, eb)
        )
        # causal attention over each prompt (half its square) plus its cached prefix
        per_layer = per_layer + self.analytic_prefill_attention_s(t, s, past)
        logits = gemm_time_s(s, a.vocab / tp, h, hw, eb)  # only each prompt's last token's logits
        return a.layers * per_layer + logits + self.tp_comm_s(m)

    def linear_step_coefficients(self, batch: float, mean_context: float) -> dict[str, float]:
        """Decode step time linearised around an operating point (batch, mean context):
        step(B, C) ~= base + per_seq * B + per_ctx * C, exact at the point."""
        b0 = max(batch, 1.0)
        c0 = max(mean_context, 1.0) * b0
        eps_b, eps_c = max(1.0, 0.05 * b0), max(64.0, 0.05 * c0)
        # the point and its two neighbours in one vectorised call
        t = self.decode_step_s(np.array([b0, b0 + eps_b, b0]), np.array([c0, c0, c0 + eps_c]))
        t0 = float(t[0])
        per_seq = (float(t[1]) - t0) / eps_b
        per_ctx = (float(t[2]) - t0) / eps_c
        base = t0 - per_seq * b0 - per_ctx * c0
        return {
            "iteration_base_s": max(base, 0.0),
            "decode_per_seq_s": per_seq,
            "decode_per_ctx_token_s": per_ctx,
        }


def engine_max_batch(rep: Replica) -> float | None:
    """The engine's default cap on running sequences on this replica's GPU (None: memory only)."""
    eng = rep.engine
    if eng is None:
        return None
    cap = eng.max_num_seqs(rep.hw.hbm_bytes / GiB, rep.hw.accelerator_id)
    return cap if cap is not None else eng.value("max_batch_cap")


def max_concurrency(
    rep: Replica, prompt: float, output: float, block_tokens: int | None = None, max_batch: int | None = None
) -> int:
    """Sequences the engine runs at once: what its KV cache holds (each sequence reserving
    its whole prompt + output in blocks, or on average prompt + output / 2 when blocks are
    allocated as tokens are generated), capped by the engine's default limit and `max_batch`."""
    eng = rep.engine
    block = float(block_tokens or (eng.value("block_tokens") if eng else None) or 16)
    if eng is not None and eng.kv_reservation == "on_demand":
        live = prompt + output / 2.0 + block / 2.0
    else:
        live = np.ceil((prompt + output) / block) * block
    n = int(rep.kv_capacity_tokens // live)
    for cap in (engine_max_batch(rep), max_batch):
        if cap:
            n = min(n, int(cap))
    return n


def fixed_batch_metrics(
    rep: Replica, batch: int, prompt: int, output: int, cached_prompt: int = 0
) -> dict[str, float]:
    """`batch` streams started together: TTFT (prefill of all prompts, less the first
    `cached_prompt` tokens of each that the prefix cache already holds), mean TPOT and the
    engine's output tokens/s over the whole generation."""
    steps = np.arange(output, dtype=np.float64)
    decode = rep.decode_step_s(float(batch), batch * (prompt + steps))
    cached = float(min(max(cached_prompt, 0), max(prompt - 1, 0)))
    prefill = rep.prefill_s(float(prompt) - cached, past_tokens=cached, sequences=float(batch))
    ttft = float(prefill) + float(decode[0])
    total = ttft + float(decode[1:].sum())
    return {
        "ttft_s": ttft,
        "tpot_s": float(decode[1:].mean()) if output > 1 else 0.0,
        "output_tokens_per_s": batch * output / total,
    }


def prefill_per_prompt_s(rep: Replica, prompt: float, batch: float) -> float:
    """Prefill cost of one prompt when the engine packs prompts into its per-iteration token
    budget (max_num_batched_tokens): the GEMMs of a packed chunk read the weights once."""
    budget = rep.engine.value("max_num_batched_tokens") if rep.engine else None
    per_chunk = max(1.0, min(batch, np.floor((budget or prompt) / max(prompt, 1.0))))
    return float(rep.prefill_s(prompt, sequences=per_chunk)) / per_chunk


def offline_throughput(
    rep: Replica, prompt: float, output: float, block_tokens: int | None = None, max_batch: int | None = None
) -> dict[str, float]:
    """Steady-state output tokens/s when the engine keeps its KV cache full.

    B sequences run at once; each emits `output` tokens, one per decode step, and its
    prompt is prefilled once (chunked into the iterations). Per output token the engine
    spends step(B, B x mean context) / B of decode plus prefill(prompt) / output.
    """
    b = max_concurrency(rep, prompt, output, block_tokens, max_batch)
    if b < 1:
        return {"batch": 0.0, "output_tokens_per_s": 0.0}
    step = float(rep.decode_step_s(float(b), b * (prompt + output / 2.0)))
    per_token = step / b + prefill_per_prompt_s(rep, prompt, b) / output
    return {"batch": float(b), "output_tokens_per_s": 1.0 / per_token, "decode_step_s": step}
