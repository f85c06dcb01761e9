"""Time of one matrix multiply from its shape, vectorised over numpy arrays.

A GEMM C[m, n] = A[m, k] @ B[k, n] does 2mnk FLOPs. A GPU computes it in output
tiles of tile_m x tile_n, one tile per streaming multiprocessor at a time, so the
last "wave" of tiles leaves SMs idle (wave quantisation):

    wave_efficiency = tiles / (ceil(tiles / SMs) * SMs)

Libraries pick among tile shapes; we try the catalog tile and one half as wide
(which runs about 8% slower per tile) and keep the better. When there are fewer
tiles than SMs, libraries split K across SMs (split-K), bounded by K.
Each tile also pays a pipeline fill that costs about `K_FILL` elements of K:

    fill_efficiency = k / (k + K_FILL)

The compute time is bounded below by moving the operands through HBM once
(roofline), and every kernel pays a fixed launch-and-tail overhead.
"""

from __future__ import annotations

import numpy as np

from rightsize.perf.hardware import Hardware

# Pipeline fill and epilogue per output tile, in elements of the reduction
# dimension. Derived from CUTLASS's 3-4 stage software pipelines with 32-64
# element K-blocks: a tile spends roughly two K-blocks filling and draining.
K_FILL = 96.0

# A tile half as wide reuses operands less; CUTLASS profiler runs on A100/H100 show
# 128x128 tiles at ~92% of the throughput of 128x256 tiles on large problems.
SMALL_TILE_RELATIVE_THROUGHPUT = 0.92


def _wave_efficiency(m: np.ndarray, n: np.ndarray, k: np.ndarray, hw: Hardware, tile_n: float) -> np.ndarray:
    tiles = np.ceil(m / hw.tile_m) * np.ceil(n / tile_n)
    # split-K: when tiles cannot fill the GPU, split the reduction (at most k/256 ways).
    split = np.clip(np.floor(hw.sm_count / tiles), 1.0, np.maximum(1.0, np.floor(k / 256.0)))
    work = tiles * split
    waves = np.ceil(work / hw.sm_count)
    return work / (waves * hw.sm_count)


def gemm_efficiency(m: np.ndarray, n: np.ndarray, k: np.ndarray, hw: Hardware) -> np.ndarray:
    """Fraction of dense peak a GEMM of this shape reaches (compute side only)."""
    m, n, k = (np.asarray(x, dtype=np.float64) for x in (m, n, k))
    big = _wave_efficiency(m, n, k, hw, hw.tile_n)
    small = _wave_efficiency(m, n, k, hw, hw.tile_n / 2) * SMALL_TILE_RELATIVE_THROUGHPUT
    fill = k / (k + K_FILL)
    return hw.gemm_fraction * np.maximum(big, small) * fill


def gemm_time_s(
    m: np.ndarray | float,
    n: np.ndarray | float,
    k: np.ndarray | float,
    hw: Hardware,
    elem_bytes: float,
) -> np.ndarray:
    """Seconds for one GEMM of shape (m, n, k) with operands of `elem_bytes` each."""
    m, n, k = (np.asarray(x, dtype=np.float64) for x in (m, n, k))
    flops = 2.0 * m * n * k
    compute_s = flops / (hw.peak_flops_per_s * gemm_efficiency(m, n, k, hw))
    memory_s = elem_bytes * (m * k + k * n + m * n) / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)
    return np.maximum(compute_s, memory_s) + hw.kernel_overhead_s


def train_gemm_time_s(
    m: np.ndarray | float,
    n: np.ndarray | float,
    k: np.ndarray | float,
    hw: Hardware,
    elem_bytes: float,
    weight_grad: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of a linear layer: y = x W with x [m, k], W [k, n].

    Backward runs two GEMMs: the input gradient dx = dy W^T (m, k, n) and the
    weight gradient dW = x^T dy (k, n, m). A frozen weight (LoRA's base) skips the second.
    """
    fwd = gemm_time_s(m, n, k, hw, elem_bytes)
    bwd = gemm_time_s(m, k, n, hw, elem_bytes)
    if weight_grad:
        bwd = bwd + gemm_time_s(k, n, m, hw, elem_bytes)
    return fwd, bwd
