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

import numpy as np

from rightsize.catalog import Accelerator, NodeType
from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.perf import collectives as coll
from rightsize.perf.gemm import gemm_time_s
from rightsize.perf.hardware import Hardware
from rightsize.perf.params import (
    active_params,
    attention_params_per_layer,
    count_params,
    kv_cache_elems_per_token_layer,
    mlp_matrices,
    qk_head_dim,
    v_head_dim,
)
from rightsize.spec.model import ModelArch

BYTES_PER_ELEMENT = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "fp4": 0.5}

# Group-wise scales and zero points of 4-bit formats: a 16-bit scale and zero per group
# of 128 weights (GPTQ/AWQ/gpt-fast int4 groupsize 128) adds 4 / 128 bytes per weight.
INT4_GROUP_OVERHEAD_BYTES = 4.0 / 128.0

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
# HBM unused (gpu_memory_utilization 0.9).
ENGINE_MEMORY_UTILISATION = 0.90
ENGINE_WORKSPACE_BYTES = 2.0 * GiB


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
    """One serving engine: a model on tp GPUs of one accelerator type."""

    arch: ModelArch
    tp: int
    weight_precision: str
    kv_precision: str
    hw: Hardware
    dequant: bool

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
    ) -> Replica:
        """A replica of `arch` at tensor parallelism `tp`; `overrides` replace catalog
        efficiencies (a calibration's fit for this accelerator)."""
        if weight_precision not in BYTES_PER_ELEMENT or kv_precision not in BYTES_PER_ELEMENT:
            raise BadInput(
                f"Unknown precision {weight_precision!r} / {kv_precision!r}.",
                f"Known: {', '.join(BYTES_PER_ELEMENT)}.",
                "Use one of them for serving.weight_precision and serving.kv_precision.",
            )
        dequant = weight_only(acc, weight_precision)
        hw = Hardware.from_catalog(acc, node, compute_dtype(acc, weight_precision))
        if overrides:
            hw = hw.with_overrides(**overrides)
        return cls(arch, tp, weight_precision, kv_precision, hw, dequant)

    # --- bytes -----------------------------------------------------------------------------

    @property
    def linear_params(self) -> float:
        """Parameters in matrices read every decode step (all but the input embedding)."""
        return count_params(self.arch).total - count_params(self.arch).embedding

    @property
    def weight_bytes_per_gpu(self) -> float:
        per_param = BYTES_PER_ELEMENT[self.weight_precision]
        if self.weight_precision == "int4":
            per_param += INT4_GROUP_OVERHEAD_BYTES
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
        free = (
            self.hw.hbm_bytes * ENGINE_MEMORY_UTILISATION - ENGINE_WORKSPACE_BYTES - self.weight_bytes_per_gpu
        )
        per_gpu_token = self.kv_bytes_per_token / self.kv_shards
        return max(0.0, free) / per_gpu_token

    @property
    def fits(self) -> bool:
        return self.kv_capacity_tokens > 0

    # --- time ------------------------------------------------------------------------------

    def _stream_bw(self) -> float:
        return self.hw.hbm_bytes_per_s * self.hw.memory_bw_fraction * DECODE_STREAM_FRACTION

    def tp_comm_s(self, tokens: np.ndarray | float) -> np.ndarray:
        """Two all-reduces of [tokens, hidden] 16-bit activations per layer."""
        n = np.asarray(float(self.tp))
        bw, lat = coll.group_link(n, np.asarray(1.0), self.hw)
        nbytes = np.asarray(tokens, dtype=np.float64) * self.arch.hidden * 2.0
        return 2.0 * self.arch.layers * coll.all_reduce_s(nbytes, n, bw, lat)

    def decode_step_s(self, batch: np.ndarray | float, context_tokens: np.ndarray | float) -> np.ndarray:
        """Seconds for one decode step of `batch` sequences holding `context_tokens` in total."""
        b = np.asarray(batch, dtype=np.float64)
        ctx = np.asarray(context_tokens, dtype=np.float64)
        read = self.decode_weight_params(b)
        weights = read * BYTES_PER_ELEMENT[self.weight_precision] / self.tp
        if self.weight_precision == "int4":
            weights += read * INT4_GROUP_OVERHEAD_BYTES / self.tp
        kv = ctx * self.kv_bytes_per_token / self.kv_shards
        memory_s = (weights + kv) / self._stream_bw()
        a = self.arch
        gemm_flops = 2.0 * active_params(a) * b / self.tp
        if a.is_mla:  # absorbed MLA: scores over kv_lora + d_rope, values over kv_lora
            per_ctx = 2.0 * a.heads * (2.0 * (a.kv_lora_rank or 0) + (a.qk_rope_head_dim or 0))
        else:
            per_ctx = 4.0 * a.heads * a.head_dim
        attn_flops = per_ctx * ctx / self.tp
        compute_s = gemm_flops / (self.hw.peak_flops_per_s * self.hw.gemm_fraction) + attn_flops / (
            self.hw.peak_16bit_flops_per_s * self.hw.attention_fraction
        )
        dequant_s: np.ndarray | float = 0.0
        if self.dequant and self.weight_precision in DEQUANT_OPS_PER_WEIGHT:
            ops = DEQUANT_OPS_PER_WEIGHT[self.weight_precision] * read / self.tp
            dequant_s = ops / self._cuda_core_ops_per_s()
        return np.maximum(memory_s, compute_s) + dequant_s + self.tp_comm_s(b) + DECODE_STEP_OVERHEAD_S

    def _cuda_core_ops_per_s(self) -> float:
        """Non-tensor-core throughput, from the catalog's fp32 peak (or 1/16 of 16-bit)."""
        return self.hw.peak_16bit_flops_per_s / 16.0 if self.hw.peak_16bit_flops_per_s else 1e13

    def prefill_s(self, tokens: np.ndarray | float, past_tokens: np.ndarray | float = 0.0) -> np.ndarray:
        """Seconds to prefill `tokens` new prompt tokens (one sequence or a packed chunk)
        attending to `past_tokens` already cached, on this replica."""
        t = np.maximum(np.asarray(tokens, dtype=np.float64), 1.0)
        past = np.asarray(past_tokens, dtype=np.float64)
        a, hw, tp = self.arch, self.hw, float(self.tp)
        eb = BYTES_PER_ELEMENT[self.weight_precision] if not self.dequant else 2.0
        h = float(a.hidden)
        d = 0.5 * float(qk_head_dim(a) + v_head_dim(a))
        if a.is_mla:  # the projections as one GEMM of the same weight count (an approximation)
            per_layer = gemm_time_s(t, attention_params_per_layer(a) / h / tp, h, hw, eb)
        else:
            per_layer = gemm_time_s(t, (a.heads + 2 * a.kv_heads) * d / tp, h, hw, eb)
            per_layer = per_layer + gemm_time_s(t, h, a.heads * d / tp, hw, eb)
        mats = mlp_matrices(a)
        f = float(a.ffn_hidden)
        if a.is_moe:
            f = float(a.expert_ffn_hidden or a.ffn_hidden) * (a.experts_per_token + a.shared_experts)
        per_layer = (
            per_layer + gemm_time_s(t, (mats - 1) * f / tp, h, hw, eb) + gemm_time_s(t, h, f / tp, hw, eb)
        )
        # causal attention over the prompt (half the square) plus the cached prefix
        attn_flops = 4.0 * t * (t / 2.0 + past) * d * a.heads / tp
        per_layer = per_layer + attn_flops / (hw.peak_16bit_flops_per_s * hw.attention_fraction)
        logits = gemm_time_s(1.0, a.vocab / tp, h, hw, eb)  # only the last token's logits
        return a.layers * per_layer + logits + self.tp_comm_s(t)

    def linear_step_coefficients(self, batch: float, mean_context: float) -> dict[str, float]:
        """Decode step time linearised around an operating point (batch, mean context):
        step(B, C) ~= base + per_seq * B + per_ctx * C, exact at the point."""
        b0 = max(batch, 1.0)
        c0 = max(mean_context, 1.0) * b0
        eps_b, eps_c = max(1.0, 0.05 * b0), max(64.0, 0.05 * c0)
        t0 = float(self.decode_step_s(b0, c0))
        per_seq = (float(self.decode_step_s(b0 + eps_b, c0)) - t0) / eps_b
        per_ctx = (float(self.decode_step_s(b0, c0 + eps_c)) - t0) / eps_c
        base = t0 - per_seq * b0 - per_ctx * c0
        return {
            "iteration_base_s": max(base, 0.0),
            "decode_per_seq_s": per_seq,
            "decode_per_ctx_token_s": per_ctx,
        }


def max_concurrency(
    rep: Replica, prompt: float, output: float, block_tokens: int = 16, max_batch: int | None = None
) -> int:
    """Sequences the KV cache holds when each reserves its whole prompt + output in blocks."""
    per_seq = np.ceil((prompt + output) / block_tokens) * block_tokens
    n = int(rep.kv_capacity_tokens // per_seq)
    return min(n, max_batch) if max_batch else n


def fixed_batch_metrics(rep: Replica, batch: int, prompt: int, output: int) -> dict[str, float]:
    """`batch` streams started together: TTFT (prefill of all prompts), mean TPOT and the
    engine's output tokens/s over the whole generation."""
    steps = np.arange(output, dtype=np.float64)
    decode = rep.decode_step_s(float(batch), batch * (prompt + steps))
    ttft = float(rep.prefill_s(float(batch * prompt))) + float(decode[0])
    total = ttft + float(decode[1:].sum())
    return {
        "ttft_s": ttft,
        "tpot_s": float(decode[1:].mean()) if output > 1 else 0.0,
        "output_tokens_per_s": batch * output / total,
    }


def offline_throughput(
    rep: Replica, prompt: float, output: float, block_tokens: int = 16, max_batch: int | None = None
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
    per_token = step / b + float(rep.prefill_s(prompt)) / output
    return {"batch": float(b), "output_tokens_per_s": 1.0 / per_token, "decode_step_s": step}
