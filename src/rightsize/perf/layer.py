"""Time of one transformer layer for one micro-batch on one GPU, vectorised.

Shapes per GPU: a micro-batch of b sequences of s tokens, split s/cp over context
parallelism, so the GEMMs see T = b s / cp token rows. Tensor parallelism (t)
splits heads and the MLP's inner dimension (Megatron-LM column/row parallel
linears, Shoeybi et al. 2019), so the GEMM shapes per GPU are:

  QKV      [T, h] x [h, (a + 2g) d / t]           (grouped-query: g key/value heads)
  out-proj [T, a d / t] x [a d / t, h]
  MLP up   [T, h] x [h, m_up f / t]               (m_up = 2 for SwiGLU: gate and up)
  MLP down [T, f / t] x [f / t, h]
  MoE      the same MLP per expert, T k cp_factor / E rows per local expert
  attention scores and values: 2 x 2 b (s/cp) s d (a/t) FLOPs, causal-masked
           kernels (flash attention) skip the upper triangle: half of it.

Backward is two GEMMs per linear (input and weight gradients), so about twice the
forward. LoRA and QLoRA (frozen base) skip the base weights' gradient GEMM but still
compute input gradients through them, and add each adapter's two skinny GEMMs forward
(x A, then (x A) B) and their gradients backward; QLoRA also dequantises every NF4
weight to 16 bit before each forward and backward use (read 0.5 + write 2 bytes each).

Multi-head latent attention replaces QKV by its down- and up-projections (the down-
projections are replicated over TP ranks, the up-projections split by heads), and the
attention core runs over query/key width d_nope + d_rope and value width d_v.

Mixture of experts: the busiest expert sets the step, so expert GEMMs and the dispatch
and combine all-to-alls (forward, and their gradients backward: 4 per layer) carry
`moe_load_factor` times the even share of routed tokens. What an architecture's own features add
(sliding windows, biased experts, a clamped GLU, unfused YaRN rotary) and the token dispatcher's
extra sorts are `perf.moe_step`'s. Memory-bound kernels (norms, residual adds, activations, unfused
softmax) cost bytes moved / achievable HBM bandwidth. Tensor-parallel layers
communicate activations twice per layer each way (a parallel block once forward, perf.parallel_block):
all-reduce, or all-gather + reduce-scatter under sequence parallelism
(Korthikanti et al. 2022, section 4.2.2) — the same bytes on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rightsize.perf import collectives as coll
from rightsize.perf import host_overhead, moe_step, parallel_block, remat
from rightsize.perf.attention import attention_core_times
from rightsize.perf.cp_torch import torch_ring_exposed_s, torch_ring_traffic_s
from rightsize.perf.gemm import train_gemm_time_s
from rightsize.perf.hardware import Hardware
from rightsize.perf.lora_fp8_weights import frozen_fp8_transpose_s
from rightsize.perf.lowp_casts import (
    CAST_BYTES_PER_ELEMENT,
    cast_bytes_per_element,
    rowwise_backward_bytes_per_element,
    tp_gather_bytes_per_element,
)
from rightsize.perf.lowp_casts import (
    FP8_CAST_BYTES_PER_ELEMENT as FP8_CAST_BYTES_PER_ELEMENT,  # re-exported (tests read it here)
)
from rightsize.perf.params import (
    NF4_BYTES_PER_PARAM,
    attention_linears,
    count_params,
    mla_up_proj_share,
    mlp_linears,
    mlp_matrices,
    qk_head_dim,
    v_head_dim,
)
from rightsize.perf.workload import ParallelConfigs, TrainWorkload

ACT_BYTES = 2.0  # activations travel and are stored in 16 bit

# Memory-bound kernels per layer in forward (2 norms, 2 residual adds, the
# activation, rotary or bias adds, and dropout where present); backward doubles.
ELEMENTWISE_KERNELS_PER_LAYER_FWD = 7.0


@dataclass
class LayerTimes:
    """Seconds per layer per micro-batch, each an array over configurations."""

    gemm_fwd: np.ndarray
    gemm_bwd: np.ndarray
    attn_fwd: np.ndarray
    attn_bwd: np.ndarray
    elementwise_fwd: np.ndarray
    elementwise_bwd: np.ndarray
    tp_comm_fwd: np.ndarray  # exposed (not overlapped)
    tp_comm_bwd: np.ndarray
    cp_comm_exposed_fwd: np.ndarray
    cp_comm_exposed_bwd: np.ndarray
    ep_comm_fwd: np.ndarray
    ep_comm_bwd: np.ndarray
    recompute: np.ndarray  # extra forward work under selective or full recomputation

    @property
    def compute_fwd(self) -> np.ndarray:
        return self.gemm_fwd + self.attn_fwd + self.elementwise_fwd

    @property
    def compute_bwd(self) -> np.ndarray:
        return self.gemm_bwd + self.attn_bwd + self.elementwise_bwd

    @property
    def comm_fwd(self) -> np.ndarray:
        return self.tp_comm_fwd + self.cp_comm_exposed_fwd + self.ep_comm_fwd

    @property
    def comm_bwd(self) -> np.ndarray:
        return self.tp_comm_bwd + self.cp_comm_exposed_bwd + self.ep_comm_bwd


# Bytes moved per weight when QLoRA dequantises NF4 to a 16-bit buffer: read 0.5 (plus
# the block constants), write 2. The GEMM then reads the 16-bit copy as usual.
DEQUANT_BYTES_PER_WEIGHT = NF4_BYTES_PER_PARAM + 2.0

# Column-parallel linears split their output over TP ranks, row-parallel ones their input;
# MLA's down-projections (q_a, kv_a) are replicated (Megatron-Core's MLA layout).
_ROW_PARALLEL = {"o", "down"}


def _mlp_times(
    rows: np.ndarray,
    h: float,
    f: float,
    t: np.ndarray,
    mats: int,
    hw: Hardware,
    eb: float,
    wgrad: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    up_f, up_b = train_gemm_time_s(rows, (mats - 1) * f / t, h, hw, eb, wgrad)
    dn_f, dn_b = train_gemm_time_s(rows, h, f / t, hw, eb, wgrad)
    return up_f + dn_f, up_b + dn_b


def moe_load_factor(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Routed tokens the busiest GPU's experts process, over the even share.

    At least the capacity factor (the provisioned or padded load). Under expert parallelism
    the busiest of ep GPUs also sees the statistical excess of routing: a GPU receives on
    average T k routed tokens (T its own tokens per micro-batch), with a spread of about
    sqrt(T k) when routing is balanced in expectation, and the maximum of ep such loads is
    about sqrt(2 ln ep) spreads above the mean.
    """
    arch = w.arch
    rows = cfg.micro_batch * w.seq_len / cfg.cp
    routed = np.maximum(rows * max(arch.experts_per_token, 1), 1.0)
    stat = 1.0 + np.sqrt(2.0 * np.log(np.maximum(cfg.ep, 1.0)) / routed)
    return np.maximum(w.moe_capacity_factor, stat)


def moe_dispatch_bytes(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Bytes one GPU sends in one all-to-all (dispatch or combine) of one MoE layer per
    micro-batch: its tokens x top-k x hidden x 2 bytes, split over TP ranks under sequence
    parallelism, times the busiest GPU's load factor."""
    rows = cfg.micro_batch * w.seq_len / cfg.cp
    nbytes = rows * w.arch.experts_per_token * w.arch.hidden * ACT_BYTES
    nbytes = np.where(cfg.sequence_parallel, nbytes / cfg.tp, nbytes)
    return nbytes * moe_load_factor(w, cfg)


def _attention_tp_layout(
    arch_linears: dict[str, list[tuple[int, int]]], mla: bool
) -> list[tuple[str, int, int, str]]:
    """(target name, d_in, d_out, split) per attention matrix; split is 'in', 'out' or 'none'."""
    out = []
    for name, shapes in arch_linears.items():
        for i, (d_in, d_out) in enumerate(shapes):
            down = mla and (name == "k" or (name == "q" and len(shapes) == 2 and i == 0))
            split = "none" if down else "in" if name in _ROW_PARALLEL else "out"
            out.append((name, d_in, d_out, split))
    return out


def _local(d_in: float, d_out: float, split: str, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, n) of a linear's GEMM on one TP rank."""
    k = d_in / t if split == "in" else d_in + 0.0 * t
    n = d_out / t if split == "out" else d_out + 0.0 * t
    return k, n


def _attention_linear_times(
    w: TrainWorkload, rows: np.ndarray, t: np.ndarray, hw: Hardware, eb: float
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of the attention's projections on one GPU."""
    arch = w.arch
    wgrad = not w.frozen_base
    h = float(arch.hidden)
    if not arch.is_mla:  # fused QKV, then the output projection
        a, g, d = float(arch.heads), float(arch.kv_heads), float(arch.head_dim)
        qkv_f, qkv_b = train_gemm_time_s(rows, (a + 2 * g) * d / t, h, hw, eb, wgrad)
        out_f, out_b = train_gemm_time_s(rows, h, a * d / t, hw, eb, wgrad)
        return qkv_f + out_f, qkv_b + out_b
    fwd, bwd = np.zeros_like(rows), np.zeros_like(rows)
    for _, d_in, d_out, split in _attention_tp_layout(attention_linears(arch), True):
        k, n = _local(d_in, d_out, split, t)
        f, b = train_gemm_time_s(rows, n, k, hw, eb, wgrad)
        fwd, bwd = fwd + f, bwd + b
    return fwd, bwd


def _adapter_times(
    rows: np.ndarray, d_in: np.ndarray, d_out: np.ndarray, r: float, hw: Hardware
) -> tuple[np.ndarray, np.ndarray]:
    """One LoRA adapter on [rows, d_in] -> [rows, d_out]: x A then (x A) B, in 16 bit, trained."""
    a_f, a_b = train_gemm_time_s(rows, r, d_in, hw, ACT_BYTES)
    b_f, b_b = train_gemm_time_s(rows, d_out, r, hw, ACT_BYTES)
    return a_f + b_f, a_b + b_b


def lora_layer_times(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, moe: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of one layer's adapters on one GPU (zero for full training).

    An adapter follows its base matrix's TP split: column-parallel bases split B's output,
    row-parallel ones A's input; MoE adapters run per local expert on its routed rows.
    """
    rows = cfg.micro_batch * w.seq_len / cfg.cp
    fwd, bwd = np.zeros_like(rows), np.zeros_like(rows)
    if not w.frozen_base:
        return fwd, bwd
    arch, t, r = w.arch, cfg.tp, float(w.lora_rank)
    targets = set(w.lora_targets)
    for name, d_in, d_out, split in _attention_tp_layout(attention_linears(arch), arch.is_mla):
        if name in targets:
            f, b = _adapter_times(rows, *_local(d_in, d_out, split, t), r, hw)
            fwd, bwd = fwd + f, bwd + b
    if moe:
        f_e = arch.expert_ffn_hidden or arch.ffn_hidden
        expert_rows = rows * arch.experts_per_token * cfg.ep / arch.experts * moe_load_factor(w, cfg)
        groups: list[tuple[np.ndarray, np.ndarray]] = [
            (expert_rows, np.asarray(arch.experts / cfg.ep, dtype=np.float64)),
            (rows, np.asarray(float(arch.shared_experts))),
        ]
    else:
        f_e, groups = arch.ffn_hidden, [(rows, np.asarray(1.0))]
    for name, (d_in, d_out) in mlp_linears(arch, f_e).items():
        if name not in targets:
            continue
        k, n = _local(d_in, d_out, "in" if name in _ROW_PARALLEL else "out", t)
        for group_rows, count in groups:
            # `count` is an array over configurations when it depends on ep (local experts)
            if np.any(count):
                f, b = _adapter_times(group_rows, k, n, r, hw)
                fwd, bwd = fwd + count * f, bwd + count * b
    return fwd, bwd


def dequant_layer_s(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, moe: bool) -> np.ndarray:
    """QLoRA: seconds to dequantise one layer's local NF4 weights to 16 bit (once per use)."""
    if w.method != "qlora":
        return np.zeros(len(cfg))
    c = count_params(w.arch)
    if moe:
        local = (c.attention_per_layer + c.shared_experts_per_layer) / cfg.tp
        local = local + c.routed_experts_per_layer / (cfg.tp * cfg.ep)
    else:
        local = (c.attention_per_layer + c.dense_mlp_per_layer) / cfg.tp
    return local * DEQUANT_BYTES_PER_WEIGHT / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)


def elementwise_bytes_per_token(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Forward bytes moved by memory-bound kernels per token of one layer on one GPU."""
    arch = w.arch
    h = float(arch.hidden)
    f = float(arch.expert_ffn_hidden or arch.ffn_hidden) if arch.is_moe else float(arch.ffn_hidden)
    # Norms (read + write h, twice), residual adds (read 2h, write h, twice), and a
    # dropout mask per residual where dropout is used. Replicated on every TP rank
    # unless sequence parallelism splits the tokens.
    per_token = ACT_BYTES * (2 * 2 * h + 2 * 3 * h) + (2 * h if w.dropout else 0.0)
    hidden_bytes = np.where(cfg.sequence_parallel, per_token / cfg.tp, per_token)
    # Activation: GELU reads and writes f; SwiGLU reads gate and up, writes f.
    act_elems = 3.0 * f if arch.mlp == "swiglu" else 2.0 * f
    if arch.is_moe:
        act_elems *= arch.experts_per_token + arch.shared_experts
    act_bytes = ACT_BYTES * act_elems / cfg.tp
    if arch.is_moe:
        # Token permutation around the all-to-alls (Megatron-Core's MoEAlltoAllTokenDispatcher,
        # fused or not: `permute` gathers each token's k routed copies into expert order before
        # the dispatch, `unpermute` scatters the k expert outputs back and sums them with the
        # router probabilities after the combine): read h and write k h, then read k h and write h.
        routed = arch.experts_per_token * moe_load_factor(w, cfg)
        permute = ACT_BYTES * 2.0 * h * (1.0 + routed)
        act_bytes = act_bytes + np.where(cfg.sequence_parallel, permute / cfg.tp, permute)
    # Rotary embedding on queries and keys: read and write each (2 + 2 bytes per element).
    rope_bytes = 0.0 if arch.is_mla else 4.0 * (arch.heads + arch.kv_heads) * arch.head_dim / cfg.tp
    cast_bytes: float | np.ndarray = 0.0
    if w.precision in CAST_BYTES_PER_ELEMENT:
        cast_bytes = cast_bytes_per_element(w)[0] * fp8_forward_operand_elements(w, cfg)
    return hidden_bytes + act_bytes + rope_bytes + cast_bytes


def fp8_forward_operand_elements(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray | float:
    """Elements per token of one layer's four forward GEMM inputs that a low precision quantises:
    QKV and MLP-up read h, out-projection a d / t, MLP-down f / t (see
    FP8_CAST_BYTES_PER_ELEMENT). A MoE token's routed copies are each quantised where they arrive
    (Megatron-Core dispatches in 16 bit, moe_dispatch_fwd_dtype 'bf16'; token_dispatcher.py:
    "recv_tokens dies after FC1 quantizes it"), shared experts read it once; each copy's
    down-projection input is its own: `_mlp_copies` of f / t."""
    arch = w.arch
    h = float(arch.hidden)
    f = float(arch.expert_ffn_hidden or arch.ffn_hidden) if arch.is_moe else float(arch.ffn_hidden)
    copies = _mlp_copies(w, cfg)  # (a token quantised before an fp8 dispatch: once)
    up_in = 1.0 if w.fp8_dispatch else copies - max(arch.shared_experts - 1, 0)
    mlp_in = up_in * h + copies * f / cfg.tp
    return h + arch.heads * arch.head_dim / cfg.tp + mlp_in


def _moe_act_bytes_per_token(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray | float:
    """Forward bytes per token of the routed experts' activation kernel (SwiGLU reads gate and
    up, writes f; GELU reads and writes f), as in `elementwise_bytes_per_token`: what
    Megatron-Core's `moe_act` recompute runs again. 0 for a dense layer."""
    arch = w.arch
    if not arch.is_moe:
        return 0.0
    f_e = float(arch.expert_ffn_hidden or arch.ffn_hidden)
    elems = 3.0 * f_e if arch.mlp == "swiglu" else 2.0 * f_e
    return ACT_BYTES * elems * arch.experts_per_token * moe_load_factor(w, cfg) / cfg.tp


def _mlp_copies(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray | float:
    """MLP GEMM operand copies per token: 1 for a dense MLP; a MoE layer's routed copies at the
    busiest GPU's load plus its shared experts."""
    arch = w.arch
    if not arch.is_moe:
        return 1.0
    return arch.experts_per_token * moe_load_factor(w, cfg) + arch.shared_experts


def fp8_backward_cast_bytes_per_token(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray | float:
    """Backward: the output gradient of each of the four GEMMs is quantised to fp8 (and
    transposed for the weight gradient) before its two backward GEMMs.

    Known, left as found (2026-11-26): `layer_times` takes the backward's element-wise time as
    twice the forward's, which also doubles the forward's quantising casts that the backward
    does not redo. Counting them once moved every fp8 row faster (tokens/s median 8.0% ->
    10.5%, --more 14.3% -> 18.7%, --stacks 5.9% -> 10.5%). Published cast timings (TE PR #101,
    2023: 0.39 of H100 peak; ROCm TE PR #598: MXFP8 0.65 of B200's; pytorch#133242: torchao
    0.625) with the count made single gave public tokens/s 1.9% -> 4.1%, held-out 7.7% -> 6.4%,
    --more 14.3% -> 16.0%: not adopted (a 2023 TE kernel for 2025 stacks; a public regression)."""
    if w.precision not in CAST_BYTES_PER_ELEMENT:
        return 0.0
    arch = w.arch
    h = float(arch.hidden)
    f = float(arch.expert_ffn_hidden or arch.ffn_hidden) if arch.is_moe else float(arch.ffn_hidden)
    qkv_out = (arch.heads + 2 * arch.kv_heads) * arch.head_dim
    up_out = (mlp_matrices(arch) - 1) * f
    # out-projection and QKV output gradients once; the MLP's (down: h, up: up_out / t) per copy
    mlp_out = _mlp_copies(w, cfg) * (h + up_out / cfg.tp)
    grads = cast_bytes_per_element(w)[1] * (h + qkv_out / cfg.tp + mlp_out)
    return grads + rowwise_backward_bytes_per_element(w) * fp8_forward_operand_elements(w, cfg)


# Overlapped collectives still slow the GEMMs they hide under (NCCL/userbuffer thread blocks
# on the SMs); the same tenth as the data-parallel overlap in perf.step.
TP_OVERLAP_INTERFERENCE = 0.1


def _tp_exposed(
    comm: np.ndarray, gemm: np.ndarray, t: np.ndarray, hw: Hardware, overlap: bool | None = None
) -> np.ndarray:
    """Exposed tensor-parallel time when the stack pipelines it with the GEMMs: split into
    t chunks, all but the first hide under the neighbouring GEMM's chunks (Transformer
    Engine userbuffers), for the share `tp_comm_overlap` of the accelerator's usual stack;
    a stack that runs them in line (`overlap` False: torchtitan's vanilla TP) hides none."""
    share = hw.tp_comm_overlap if overlap is None or overlap else 0.0
    hidden = share * (t - 1.0) / np.maximum(t, 1.0) * np.minimum(comm, gemm)
    return comm - hidden + TP_OVERLAP_INTERFERENCE * hidden


def _moe_mlp_times(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, rows: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of a mixture-of-experts layer's MLPs on one GPU: its
    local experts at the busiest GPU's load, the shared experts, and the router."""
    arch, eb, wgrad = w.arch, w.gemm_elem_bytes, not w.frozen_base
    h, mats = float(arch.hidden), mlp_matrices(arch)
    f_e = float(arch.expert_ffn_hidden or arch.ffn_hidden)
    k = float(arch.experts_per_token)
    local_experts = arch.experts / cfg.ep
    # Each GPU receives, on average, its share of the EP group's routed tokens; the
    # busiest one (which the others wait for) its load factor times that.
    rows_per_expert = rows * k * cfg.ep / arch.experts * moe_load_factor(w, cfg)
    e_f, e_b = _mlp_times(rows_per_expert, h, f_e, t, mats, hw, eb, wgrad)
    mlp_f, mlp_b = e_f * local_experts, e_b * local_experts
    if arch.shared_experts:
        s_f, s_b = _mlp_times(rows, h, f_e * arch.shared_experts, t, mats, hw, eb, wgrad)
        mlp_f, mlp_b = mlp_f + s_f, mlp_b + s_b
    r_f, r_b = train_gemm_time_s(rows, float(arch.experts), h, hw, eb)
    return mlp_f + r_f, mlp_b + r_b


def _cp_ring_exposed(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    rows: np.ndarray,
    attn: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) exposed seconds of context parallelism, by implementation
    (`training.cp_comm`; Transformer Engine's cp_comm_type names them):

    - p2p (ring attention, Liu et al. 2023; TE's default): each of the cp - 1 ring steps sends
      one K/V block while the previous block's attention runs; a step is exposed only by
      what its send exceeds one block's compute (attention / cp, the causal work balanced by
      the 2 cp zig-zag chunking); backward sends K, V and returns dK, dV (twice the bytes).
    - all_gather (TE's all_gather variant, Llama 3's context parallelism, PyTorch's
      allgather rotation): K and V are all-gathered before the attention and dK, dV
      reduce-scattered after its backward, not overlapped (TE PR #1060: "the KV all-gather
      communication is exposed, but the overheads should be small with GQA/MQA").
    - a2a (DeepSpeed-Ulysses, Jacobs et al. 2023): all-to-alls turn the sequence split into a
      head split before the attention (Q, K, V) and back after it (the output); backward the
      same four on the gradients; not overlapped.
    - torch_allgather: PyTorch's context_parallel as torchtitan runs it (`perf.cp_torch`).
    """
    arch = w.arch
    cp_bw, cp_lat = coll.group_link(cfg.cp, cfg.tp, hw)
    dqk, dv = float(qk_head_dim(arch)), float(v_head_dim(arch))
    kv_bytes = rows * float(arch.kv_heads) * (dqk + dv) / cfg.tp * ACT_BYTES
    attn_f, attn_b = attn
    on = cfg.cp > 1
    if w.cp_comm == "torch_allgather":  # PyTorch's context_parallel, as torchtitan runs it
        return torch_ring_exposed_s(w, cfg, hw, rows, attn)
    if w.cp_comm == "all_gather":
        gather = coll.all_gather_s(kv_bytes * cfg.cp, cfg.cp, cp_bw, cp_lat)
        return np.where(on, gather, 0.0), np.where(on, 2.0 * gather, 0.0)  # gather again + reduce-scatter
    if w.cp_comm == "a2a":
        q_bytes = rows * float(arch.heads) * dqk / cfg.tp * ACT_BYTES
        o_bytes = rows * float(arch.heads) * dv / cfg.tp * ACT_BYTES
        a2a = coll.all_to_all_group_s(q_bytes + kv_bytes + o_bytes, cfg.cp, cfg.tp, hw)
        return np.where(on, a2a, 0.0), np.where(on, a2a, 0.0)
    cp_steps = cfg.cp - 1.0
    step_f = coll.p2p_s(kv_bytes, cp_bw, cp_lat)
    step_b = 2.0 * step_f  # K, V forward and dK, dV back
    cp_f_exp = np.where(on, cp_steps * np.maximum(0.0, step_f - attn_f / cfg.cp), 0.0)
    cp_b_exp = np.where(on, cp_steps * np.maximum(0.0, step_b - attn_b / cfg.cp), 0.0)
    return cp_f_exp, cp_b_exp


def cp_causal_imbalance(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Attention work of the busiest context-parallel rank over the average under a causal
    mask. Zig-zag (load-balanced) chunking gives each rank chunks i and 2 cp - 1 - i, equal
    work (Megatron / TE, torchtitan's head-tail balancer, Llama 3). Contiguous chunks give
    rank r the r + 1 lower-triangle blocks of its queries: the last rank does cp of an average
    (cp + 1) / 2, and every ring step waits for it."""
    if w.cp_load_balance:
        return np.ones_like(cfg.cp)
    return 2.0 * cfg.cp / (cfg.cp + 1.0)


def _recompute_s(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    parts: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    full: np.ndarray,
) -> np.ndarray:
    """Forward seconds the remat policy repeats in the backward (`perf.remat`): the whole
    layer under 'full'; under a named policy the GEMMs, attention core and elementwise
    kernels it does not keep the outputs of. A projection's share of its group's time is
    taken by FLOPs (QKV: (a + 2g) / (2a + 2g) of the attention projections; MLP up:
    (m - 1) / m of the MLP for m matrices; MLA's up-projections: `mla_up_proj_share`), and the
    experts' activation kernel under Megatron-Core's `moe_act`, and the sequence-parallel
    all-gathers under torchtitan's `selective_op` (`perf.remat`)."""
    attn_proj_f, mlp_f, attn_f, ew_f, moe_act_f, gather_f = parts
    arch = w.arch
    code = remat.codes(cfg.recompute)
    a, g = float(arch.heads), float(arch.kv_heads)
    qkv_share = (a + 2 * g) / (2 * a + 2 * g)
    mats = float(mlp_matrices(arch))
    up_share = (mats - 1.0) / mats
    r = remat.REBUILT
    k_share = g / (2 * a + 2 * g)
    named = (
        r["qkv_gemm"][code] * qkv_share * attn_proj_f
        + r["k_gemm"][code] * k_share * attn_proj_f
        + r["out_gemm"][code] * (1.0 - qkv_share) * attn_proj_f
        + r["mlp_up_gemm"][code] * up_share * mlp_f
        + r["mlp_up_half_gemm"][code] * 0.5 * up_share * mlp_f
        + r["mlp_down_gemm"][code] * (1.0 - up_share) * mlp_f
        + r["attention"][code] * attn_f
        + r["elementwise"][code] * ew_f
        + r["moe_act"][code] * moe_act_f
        + r["mla_up_gemm"][code] * mla_up_proj_share(arch) * attn_proj_f
        + r["tp_gather"][code] * gather_f
    )
    return np.where(r["tp_comm"][code] > 0, full, named)


def _tp_collectives_s(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, rows: np.ndarray) -> np.ndarray:
    """Seconds of one tensor-parallel exchange: an all-reduce (or AG + RS pair) of the [T, h]
    activations, of which a layer runs `perf.parallel_block`'s count per direction; under sequence
    parallelism torchao's tensorwise TP gathers in float8 (perf.lowp_casts), the RS staying 16 bit."""
    tp_bw, tp_lat = coll.group_link(cfg.tp, np.ones_like(cfg.tp), hw)
    act = rows * float(w.arch.hidden) * ACT_BYTES
    low = act * tp_gather_bytes_per_element(w) / ACT_BYTES
    saved = coll.all_gather_s(act, cfg.tp, tp_bw, tp_lat) - coll.all_gather_s(low, cfg.tp, tp_bw, tp_lat)
    return coll.all_reduce_s(act, cfg.tp, tp_bw, tp_lat) - np.where(cfg.sequence_parallel, saved, 0.0)


def layer_times(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, moe: bool) -> LayerTimes:
    """Times of one dense (moe=False) or mixture-of-experts layer."""
    arch = w.arch
    eb = w.gemm_elem_bytes
    t = cfg.tp.astype(np.float64)
    b = cfg.micro_batch.astype(np.float64)
    rows = b * w.seq_len / cfg.cp
    h = float(arch.hidden)

    attn_proj_f, attn_proj_b = _attention_linear_times(w, rows, t, hw, eb)
    if moe:
        mlp_f, mlp_b = _moe_mlp_times(w, cfg, hw, rows, t)
    else:
        mlp_f, mlp_b = _mlp_times(
            rows, h, float(arch.ffn_hidden), t, mlp_matrices(arch), hw, eb, not w.frozen_base
        )
    lora_f, lora_b = lora_layer_times(w, cfg, hw, moe)

    attn_f, attn_b, _ = attention_core_times(w, cfg, hw)
    # causal imbalance over cp ranks; sliding-window layers' skipped key tiles (perf.moe_step)
    imbalance = cp_causal_imbalance(w, cfg) * moe_step.attention_time_factor(w, cfg, hw)
    attn_f, attn_b = attn_f * imbalance, attn_b * imbalance
    mem_bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    ew_f = rows * elementwise_bytes_per_token(w, cfg) / mem_bw
    ew_f = ew_f + ELEMENTWISE_KERNELS_PER_LAYER_FWD * hw.kernel_overhead_s
    ew_b = 2.0 * ew_f + rows * fp8_backward_cast_bytes_per_token(w, cfg) / mem_bw
    # biases, clamped GLU and unfused rotary scaling the architecture adds (perf.moe_step)
    feat_f, feat_b, feat_act = moe_step.feature_elementwise_s(w, cfg, hw, moe, moe_load_factor(w, cfg))
    ew_f, ew_b = ew_f + feat_f, ew_b + feat_b
    dequant = dequant_layer_s(w, cfg, hw, moe)  # QLoRA: once before forward, once before backward
    ew_f, ew_b = ew_f + dequant, ew_b + dequant + frozen_fp8_transpose_s(w, cfg, hw, moe)  # LoRA fp8
    if w.cp_comm == "torch_allgather":  # the ring's eager fp32 merges and accumulations
        merge_f, merge_b = torch_ring_traffic_s(w, cfg, hw, rows)
        ew_f, ew_b = ew_f + merge_f, ew_b + merge_b

    tp_f, tp_b = parallel_block.tp_collectives_s(arch, _tp_collectives_s(w, cfg, hw, rows))

    cp_f_exp, cp_b_exp = _cp_ring_exposed(w, cfg, hw, rows, (attn_f, attn_b))

    # Expert parallel: dispatch and combine all-to-alls of the routed tokens.
    if moe:
        nbytes, grp, k = moe_dispatch_bytes(w, cfg), cfg.tp * cfg.cp, arch.experts_per_token
        ep_b = 2.0 * coll.moe_dispatch_s(nbytes, cfg.ep, grp, hw, k)  # gradients travel in 16 bit
        wire = nbytes * w.moe_dispatch_bytes_per_element / ACT_BYTES  # the forward dispatch's
        ep_f = 0.5 * ep_b + coll.moe_dispatch_s(wire, cfg.ep, grp, hw, k)
    else:
        ep_f = ep_b = np.zeros_like(tp_f)

    gemm_f = attn_proj_f + mlp_f + lora_f
    gemm_b = attn_proj_b + mlp_b + lora_b
    tp_f = _tp_exposed(tp_f, attn_proj_f + mlp_f, cfg.tp, hw, w.tp_comm_overlap)
    tp_b = _tp_exposed(tp_b, attn_proj_b + mlp_b, cfg.tp, hw, w.tp_comm_overlap)
    full = gemm_f + attn_f + ew_f + tp_f + cp_f_exp + ep_f
    moe_act_f = rows * _moe_act_bytes_per_token(w, cfg) / mem_bw + feat_act
    # The forward's two sequence-parallel all-gathers: their bytes' share of its exposed TP time.
    gather_elem = tp_gather_bytes_per_element(w)
    gather_f = np.where(cfg.sequence_parallel, gather_elem / (gather_elem + ACT_BYTES) * tp_f, 0.0)
    recompute = _recompute_s(w, cfg, (attn_proj_f, mlp_f, attn_f, ew_f, moe_act_f, gather_f), full)
    from rightsize.perf.offload_time import offload_exposed_s  # it imports perf.memory, which imports this

    offload_f, offload_b = offload_exposed_s(w, cfg, hw, (gemm_f + attn_f + ew_f, gemm_b + attn_b + ew_b))
    dev = (mlp_f + ep_f if moe else 0.0 * full, full, gemm_b + attn_b + ew_b + tp_b + cp_b_exp + ep_b)
    host_f, host_b = host_overhead.exposed_host_s(w, cfg, hw, moe, dev)  # eager stacks' launches
    ew_f, ew_b = ew_f + offload_f + host_f, ew_b + offload_b + host_b
    return LayerTimes(
        gemm_fwd=gemm_f,
        gemm_bwd=gemm_b,
        attn_fwd=attn_f,
        attn_bwd=attn_b,
        elementwise_fwd=ew_f,
        elementwise_bwd=ew_b,
        tp_comm_fwd=tp_f,
        tp_comm_bwd=tp_b,
        cp_comm_exposed_fwd=cp_f_exp,
        cp_comm_exposed_bwd=cp_b_exp,
        ep_comm_fwd=ep_f,
        ep_comm_bwd=ep_b,
        recompute=recompute,
    )


def logits_times(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of the output projection and the vocab-parallel
    cross-entropy (Megatron computes it in fp32: read logits 2 bytes, write fp32
    4, softmax read/write 8) on the last pipeline stage.

    Low-precision training keeps the output projection in 16 bit: Transformer Engine's fp8
    covers the transformer layers' linears (Megatron's output layer is a plain
    ColumnParallelLinear), and torchao's float8 conversion skips the output layer by default
    (torchtitan's float8 converter filters out `output`)."""
    rows = cfg.micro_batch * w.seq_len / cfg.cp
    v_local = w.arch.vocab / cfg.tp
    f, b = train_gemm_time_s(
        rows, v_local, float(w.arch.hidden), hw.sixteen_bit(), ACT_BYTES, weight_grad=not w.frozen_base
    )
    ce = rows * v_local * 14.0 / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)
    return f + ce, b + ce
