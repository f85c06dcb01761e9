"""PyTorch's context parallelism as torchtitan runs it (`training.cp_comm: torch_allgather`):
`torch.distributed.tensor.experimental.context_parallel` with its default options, the ring
attention torchtitan's December 2024 long-sequence benchmarks used (torchtitan 9dec370,
`experimental.context_parallel_rotate_method` default 'allgather'; PyTorch
torch/distributed/tensor/experimental/_attention.py, `_ContextParallelOptions`: convert_to_f32
True, enable_load_balance True, rotate_method ALL_GATHER).

What it moves, per layer and micro-batch on one rank of a cp group (`rows` = b s / cp tokens):

- K and V after torchtitan's `repeat_kv` (models/llama/model.py at 9dec370 expands the kv
  heads to the query heads before `F.scaled_dot_product_attention`), so the exchanged blocks are
  `heads` wide, not `kv_heads`.
- Forward: one all-gather of the local K, V (`_AllGatherRotater`: "only one communication will
  be done"), issued before the first, diagonal block's SDPA. Under torchtitan's per-block
  `torch.compile(block, fullgraph=True)` (parallelize_llama.py at 9dec370) the ring is traced
  into the graph, and a functional collective traced there is waited for at once
  (torch/distributed/_functional_collectives.py, `_maybe_wrap_tensor`: "if _are_we_tracing():
  return wait_tensor(self)"); Inductor moves waits only with
  `reorder_for_compute_comm_overlap`, off by default and not set by torchtitan 9dec370 (it sets
  only `_micro_pipeline_tp`). So the all-gather is exposed whole, in the forward and again in
  the full-AC recompute.
- Backward: K, V all-gathered again the same way; the dK, dV of every step (cp of them, the
  first included) sent to the next rank in fp32 (`dkv_rotater` is ALL_TO_ALL through
  `ft_c.permute_tensor`, accum_dtype float32), each waited for at once under compile.
- Memory-bound work per step, in eager PyTorch ops (counted per element of the rank's queries,
  q = heads x head_dim / tp, and of its expanded K and V, kv = heads x (dqk + dv) / tp):
  forward, the K, V concatenated for the send (`torch.cat`, read and write 2 bytes) on the
  first cp - 1 steps, each block output converted to fp32 (read 2, write 4) and merged with the
  running output by `out - sigmoid(lse_b - lse) * (out - out_b)` (three passes over fp32:
  read 8 write 4, read 4 write 4, read 8 write 4), the result cast back (read 4, write 2) once;
  backward, the same K, V concatenation, the fp32 dK, dV accumulated into the half the step
  touched and re-concatenated (`_partial_update`: read 4 + 2 and write 4 over half, then read
  and write 4 over the whole), concatenated again for the send (read and write 4), dQ
  accumulated in fp32 (read 4 + 2, write 4), and the fp32 gradients zero-filled at the start
  and cast back at the end.
"""

from __future__ import annotations

import numpy as np

from rightsize.perf import collectives as coll
from rightsize.perf.hardware import Hardware
from rightsize.perf.params import qk_head_dim, v_head_dim
from rightsize.perf.workload import ParallelConfigs, TrainWorkload

BF16_BYTES = 2.0
FP32_BYTES = 4.0
# Forward, per query element: block output to fp32 (2 + 4) on every step, the three-pass merge
# (12 + 8 + 12) on every step but the first.
FWD_TO_FP32_BYTES = BF16_BYTES + FP32_BYTES
FWD_MERGE_BYTES = (2 * FP32_BYTES + FP32_BYTES) + (FP32_BYTES + FP32_BYTES) + (2 * FP32_BYTES + FP32_BYTES)
CAST_BACK_BYTES = FP32_BYTES + BF16_BYTES
# Per K/V element: the bf16 concatenation before each send (read and write).
KV_CAT_BYTES = 2 * BF16_BYTES
# Backward, per expanded K/V element and step: half-block accumulate (4 + 2 + 4 over half), the
# re-concatenation (4 + 4) and the fp32 concatenation for the send (4 + 4).
BWD_DKV_STEP_BYTES = 0.5 * (FP32_BYTES + BF16_BYTES + FP32_BYTES) + 2 * FP32_BYTES + 2 * FP32_BYTES
# Backward, per query element and step: dQ accumulated in fp32 (read 4 + 2, write 4).
BWD_DQ_STEP_BYTES = FP32_BYTES + BF16_BYTES + FP32_BYTES


def _widths(w: TrainWorkload, cfg: ParallelConfigs) -> tuple[np.ndarray, np.ndarray]:
    """(query, expanded K + V) elements per token on one tensor-parallel rank."""
    arch = w.arch
    heads = float(arch.heads) / cfg.tp
    return heads * float(v_head_dim(arch)), heads * float(qk_head_dim(arch) + v_head_dim(arch))


def torch_ring_exposed_s(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    rows: np.ndarray,
    attn: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) exposed communication seconds (see the module docstring): under
    torchtitan's per-block torch.compile every collective is waited for where it is issued, so
    the K, V all-gather is paid whole in the forward (and again in the full-AC recompute, which
    repeats the forward), and in the backward the all-gather plus cp fp32 dK, dV sends."""
    bw, lat = coll.group_link(cfg.cp, cfg.tp, hw)
    _, kv = _widths(w, cfg)
    kv_bytes = rows * kv * BF16_BYTES
    gather = coll.all_gather_s(kv_bytes * cfg.cp, cfg.cp, bw, lat)
    dkv = coll.p2p_s(rows * kv * FP32_BYTES, bw, lat)
    on = cfg.cp > 1
    return np.where(on, gather, 0.0), np.where(on, gather + cfg.cp * dkv, 0.0)


def torch_ring_traffic_s(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds of the eager merge and accumulation passes (module docstring)."""
    q, kv = _widths(w, cfg)
    n = cfg.cp.astype(np.float64)
    fwd = (n - 1.0) * KV_CAT_BYTES * kv + n * FWD_TO_FP32_BYTES * q + (n - 1.0) * FWD_MERGE_BYTES * q
    fwd = fwd + CAST_BACK_BYTES * q
    bwd = (n - 1.0) * KV_CAT_BYTES * kv + n * (BWD_DKV_STEP_BYTES * kv + BWD_DQ_STEP_BYTES * q)
    bwd = bwd + FP32_BYTES * (q + kv) + CAST_BACK_BYTES * (q + kv)  # zero-fill, cast back
    mem_bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    on = cfg.cp > 1
    return np.where(on, rows * fwd / mem_bw, 0.0), np.where(on, rows * bwd / mem_bw, 0.0)
