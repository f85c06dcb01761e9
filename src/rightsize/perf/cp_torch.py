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
- Memory-bound work, as Inductor compiles the traced ring (counted per element of the rank's
  queries, q = heads x head_dim / tp, and of its expanded K and V, kv = heads x (dqk + dv) / tp).
  The eager code concatenates K, V for a send on every step, but `_AllGatherRotater` uses only
  the first: in the functional graph the later ones are dead and removed. Each step's pointwise
  merge (`out.to(float32)`, `out - sigmoid(lse_b - lse) * (out - out_b)`, `_partial_update`'s
  cat) fuses into one pass: read the fp32 running output (4) and the bf16 block output (2),
  write fp32 (4), on every step but the first (whose conversion fuses into the second's merge;
  the final cast back fuses into the last). Backward, per step: the received fp32 dK, dV (4)
  plus the step's bf16 gradient over the half it touches (2 x 1/2), written once as the next
  fp32 send buffer (4); dQ accumulated in fp32 (4 + 2, write 4); the zero-fills fuse into the
  first accumulation; once, the K, V concatenation (2 + 2) and the received dK, dV cast back
  (4 + 2). The eager sum (about 4x these in the forward) applies only without torch.compile.
"""

from __future__ import annotations

import numpy as np

from rightsize.perf import collectives as coll
from rightsize.perf.hardware import Hardware
from rightsize.perf.params import qk_head_dim, v_head_dim
from rightsize.perf.workload import ParallelConfigs, TrainWorkload

BF16_BYTES = 2.0
FP32_BYTES = 4.0
# Per K/V element, once per pass: the bf16 concatenation for the all-gather (read and write).
KV_CAT_BYTES = 2 * BF16_BYTES
# Forward, per query element and step after the first: the fused merge.
FWD_MERGE_STEP_BYTES = FP32_BYTES + BF16_BYTES + FP32_BYTES
# Backward, per expanded K/V element and step: received fp32 dK, dV, the step's bf16 gradient over
# half, written once as the next send buffer.
BWD_DKV_STEP_BYTES = FP32_BYTES + 0.5 * BF16_BYTES + FP32_BYTES
# Backward, per query element and step: dQ accumulated in fp32 (read 4 + 2, write 4).
BWD_DQ_STEP_BYTES = FP32_BYTES + BF16_BYTES + FP32_BYTES
# Backward, per K/V element, once: the received fp32 dK, dV cast back to bf16.
CAST_BACK_BYTES = FP32_BYTES + BF16_BYTES


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
    """(forward, backward) seconds of the ring's compiled merge and accumulation passes (module
    docstring)."""
    q, kv = _widths(w, cfg)
    n = cfg.cp.astype(np.float64)
    fwd = KV_CAT_BYTES * kv + (n - 1.0) * FWD_MERGE_STEP_BYTES * q
    bwd = KV_CAT_BYTES * kv + n * (BWD_DKV_STEP_BYTES * kv + BWD_DQ_STEP_BYTES * q) + CAST_BACK_BYTES * kv
    mem_bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    on = cfg.cp > 1
    return np.where(on, rows * fwd / mem_bw, 0.0), np.where(on, rows * bwd / mem_bw, 0.0)
