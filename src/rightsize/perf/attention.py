"""The attention core of one transformer layer (scores, softmax, values) for one micro-batch on
one GPU, vectorised: a fused flash-attention kernel's achieved fraction of peak by key length, head
dimension, named kernel and how many SMs its launch fills, or the unfused path (two batched GEMMs
and a memory-bound softmax). Context parallelism runs one kernel per ring step on s/cp keys."""

from __future__ import annotations

import numpy as np

from rightsize.perf.gemm import gemm_efficiency
from rightsize.perf.hardware import Hardware
from rightsize.perf.params import qk_head_dim, v_head_dim
from rightsize.perf.workload import ParallelConfigs, TrainWorkload

# FlashAttention-2's backward does 5 matrix multiplies to the forward's 2, and
# recomputes the scores: Dao 2023, section 3.1.2. Its time is ~2.5x the forward.
FLASH_BACKWARD_OVER_FORWARD = 2.5

# Bytes moved per attention-score element by an unfused softmax path (Megatron's
# fused scale-mask-softmax, then dropout): the scores GEMM writes 2, the softmax
# reads 2 and writes 2, dropout reads 2, writes 2 and a 1-byte mask, the values
# GEMM reads 2. Backward moves about twice that.
UNFUSED_SOFTMAX_BYTES_PER_SCORE = 13.0


# Head-dimension dependence of flash attention. Per score the kernel runs 4 x head dim matmul
# FLOPs forward (QK^T, PV) and 10 x head dim backward on the tensor cores, but one exponential
# forward and one backward (P = exp(S - lse) is recomputed) on the SMs' special-function units
# (MUFU.EX2), whose rate is far below the tensor cores': FlashAttention-3 (Shah et al., arXiv
# 2407.08608, sec. 3) gives H100 SXM5 989 TFLOPS of 16-bit matmul against 3.9 TFLOPS of special
# functions, so at head dim 64 the exponentials take as long as the matmuls. The fraction of peak
# therefore grows as d / (d + h), h = the head dims of matmul whose peak-rate time equals one
# score's exposed softmax work. FlashAttention-2 on A100 (Dao 2023, Fig. 4: head dim 64 at ~0.83
# of head dim 128, fwd+bwd) gives h = 32 = 312 TFLOPS / (4 x 2.44 T exponentials/s): the exposed
# per-score softmax work (two exponentials and the per-score bookkeeping, against 14 x d matmul
# FLOPs fwd+bwd) costs 4 peak-rate FLOPs per exponential of SFU time. SOFTMAX_FLOPS_PER_EXP is read
# off that A100 curve, not derived, and carries to every accelerator whose SFU rate the catalog
# gives (sfu_exp_per_s): h = 63 on H100; Blackwell doubles the tensor rate per SM and not the SFUs
# (h = 112 on B200, 125 on GB200); Blackwell Ultra doubles the SFUs (53 on B300, 58 on GB300).
SOFTMAX_FLOPS_PER_EXP = 4.0
# Without a catalogued SFU rate: the A100 curve.
HEAD_DIM_HALF = 32.0
# Catalog attention fractions are quoted for head dim 128 at 16k keys.
REFERENCE_HEAD_DIM = 128.0
REFERENCE_SEQ = 16384.0


def softmax_head_dim_half(hw: Hardware) -> float:
    """Head dims of peak-rate matmul per score that take as long as its softmax work on this
    accelerator's special-function units (HEAD_DIM_HALF where the SFU rate is not catalogued)."""
    if hw.sfu_exp_per_s <= 0.0 or hw.peak_16bit_flops_per_s <= 0.0:
        return HEAD_DIM_HALF
    return hw.peak_16bit_flops_per_s / (SOFTMAX_FLOPS_PER_EXP * hw.sfu_exp_per_s)


def attention_efficiency(
    keys: np.ndarray | float, head_dim: float, hw: Hardware, kernel: str = "auto"
) -> np.ndarray:
    """Fraction of 16-bit peak a causal flash-attention fwd+bwd reaches with query/key
    blocks of `keys` tokens and this head dim: the catalog plateau (attention_fraction, at
    head dim 128 and 16k keys) times keys / (keys + half) and d / (d + h), h the accelerator's
    softmax_head_dim_half, each normalised to the reference point (short blocks leave SMs idle
    and waste the diagonal tiles of the causal mask; narrow heads spend more of each tile
    waiting on the special-function units' exponentials)."""
    keys = np.asarray(keys, dtype=np.float64)
    plateau = hw.attention_fraction_for(kernel)
    half = hw.attention_seq_half_tokens
    seq = (keys / (keys + half)) / (REFERENCE_SEQ / (REFERENCE_SEQ + half))
    h = softmax_head_dim_half(hw)
    hd = (head_dim / (head_dim + h)) / (REFERENCE_HEAD_DIM / (REFERENCE_HEAD_DIM + h))
    return np.minimum(plateau * seq * hd, 0.95)


# Flash-attention kernels give each thread block (CTA) one head and one 128-row block of
# queries (forward; backward, 128 keys): FlashAttention-2 (Dao 2023, section 3.2) parallelises
# over batch x heads x row blocks; FA3 and cuDNN tile the same way on Hopper.
ATTENTION_BLOCK_ROWS = 128.0
# The FA3 paper's benchmarks (the catalog's source) run 16k tokens of hidden 2048: 16 heads of 128.
REFERENCE_HEADS = 16.0


def attention_wave_efficiency(
    b: np.ndarray, heads: np.ndarray, q_rows: np.ndarray, hw: Hardware
) -> np.ndarray:
    """Share of the SMs a flash-attention launch keeps busy: b x local heads x row blocks
    thread blocks over the SMs, the last wave partly idle. Long sequences fill every SM; few
    local heads (tensor parallelism over a small head count) with short chunks do not. The
    catalog fraction is measured at 16 heads x 16k tokens (2,048 blocks), so the share is
    taken relative to that launch's (1 there, and never above 1)."""
    sms = max(float(hw.sm_count), 1.0)

    def waves(tiles: np.ndarray) -> np.ndarray:
        return tiles / (np.ceil(tiles / sms) * sms)

    tiles = np.maximum(b * np.maximum(heads, 1.0) * np.ceil(q_rows / ATTENTION_BLOCK_ROWS), 1.0)
    reference = waves(np.asarray(REFERENCE_HEADS * np.ceil(REFERENCE_SEQ / ATTENTION_BLOCK_ROWS)))
    return np.minimum(waves(tiles) / reference, 1.0)


def attention_core_times(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(forward s, backward s, full-rate FLOPs) of scores + softmax + values for one layer."""
    arch = w.arch
    s = float(w.seq_len)
    b = cfg.micro_batch.astype(np.float64)
    q_rows = s / cfg.cp
    heads = arch.heads / cfg.tp
    # QK^T over the query/key width and PV over the value width (equal except under MLA)
    d = 0.5 * float(qk_head_dim(arch) + v_head_dim(arch))
    flops = 4.0 * b * q_rows * s * d * heads  # QK^T and PV, the whole square
    if w.flash_attention:
        eff = attention_efficiency(s / cfg.cp, d, hw, w.attention_kernel) * attention_wave_efficiency(
            b, heads, q_rows, hw
        )
        peak = hw.peak_16bit_flops_per_s * eff
        # Ring attention (cp > 1) runs one kernel per ring step on blocks of s/cp keys.
        fwd = 0.5 * flops / peak + cfg.cp * hw.kernel_overhead_s
        return fwd, FLASH_BACKWARD_OVER_FORWARD * fwd, flops
    # Unfused: two batched GEMMs with K = head_dim, and a memory-bound softmax.
    eff = gemm_efficiency(q_rows, s * b * heads, np.asarray(d), hw)
    gemm = flops / (hw.peak_16bit_flops_per_s * eff)
    scores = b * heads * q_rows * s
    softmax = UNFUSED_SOFTMAX_BYTES_PER_SCORE * scores / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)
    fwd = gemm + softmax + 4 * hw.kernel_overhead_s
    return fwd, 2.0 * fwd, flops
