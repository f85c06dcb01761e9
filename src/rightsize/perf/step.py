"""One training step: pipeline schedule, data-parallel reduction, optimizer, and
the FLOPs behind MFU and HFU, vectorised over configurations.

Pipeline (Narayanan et al. 2021, section 2.2): with m micro-batches, pp stages
and vpp model chunks per stage, 1F1B takes (m + (pp - 1) / vpp) micro-batch
slots of the slowest stage; the (pp - 1) / vpp slots are the bubble. The last
stage also runs the output projection and the loss, so the slowest stage sets
the pace of the steady state. Each micro-batch crosses pp x vpp - 1 stage
boundaries forward and back: point-to-point sends of its [b s, h] activations.

Data parallel: gradients are reduced once per step, bucketed and overlapped
with the backward pass of the last micro-batch (PyTorch DDP, Megatron's
overlap-grad-reduce); what does not fit under it is exposed. ZeRO 1/2 replace
the all-reduce by a reduce-scatter of gradients and an all-gather of updated
16-bit weights (the same bytes as an all-reduce at equal precision); ZeRO 3
also all-gathers weights in every micro-batch's forward and backward, which
prefetching overlaps with that micro-batch's compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rightsize.perf import collectives as coll
from rightsize.perf.hardware import Hardware
from rightsize.perf.layer import ACT_BYTES, LayerTimes, layer_times, logits_times
from rightsize.perf.memory import (
    TrainMemory,
    activation_per_token_layer_pair,
    stage_params,
    stage_trainable,
    stage_weight_bytes,
    train_memory,
)
from rightsize.perf.params import active_lora_params, active_params, count_params, qk_head_dim, v_head_dim
from rightsize.perf.workload import OPTIMIZER_UPDATE_BYTES_PER_PARAM, ParallelConfigs, TrainWorkload

# Share of the last micro-batch's backward under which gradient reduction can
# hide: buckets become ready progressively, so the first bucket starts after a
# fraction of the backward and the last one is always exposed.
DP_OVERLAP_FRACTION = 0.7
COMM_COMPUTE_INTERFERENCE = 0.1


@dataclass
class StepBreakdown:
    """Seconds per optimizer step and what they are made of (arrays over configs)."""

    compute: np.ndarray  # forward + backward + recompute of all micro-batches, steady state
    tp_comm: np.ndarray
    cp_comm: np.ndarray
    ep_comm: np.ndarray
    pp_comm: np.ndarray
    dp_comm: np.ndarray  # exposed part
    bubble: np.ndarray
    optimizer: np.ndarray
    memory: TrainMemory
    model_flops: float  # per step, all GPUs (MFU counting: no recomputation)
    hardware_flops: np.ndarray  # per step, all GPUs, recomputation included
    gpus: np.ndarray
    peak_flops_per_s: float

    @cached_property
    def step_time(self) -> np.ndarray:
        return (
            self.compute
            + self.tp_comm
            + self.cp_comm
            + self.ep_comm
            + self.pp_comm
            + self.dp_comm
            + self.bubble
            + self.optimizer
        )

    @cached_property
    def mfu(self) -> np.ndarray:
        return self.model_flops / (self.step_time * self.gpus * self.peak_flops_per_s)

    @cached_property
    def hfu(self) -> np.ndarray:
        return self.hardware_flops / (self.step_time * self.gpus * self.peak_flops_per_s)

    def as_dict(self, i: int) -> dict[str, float]:
        return {
            "step_time_s": float(self.step_time[i]),
            "compute_s": float(self.compute[i]),
            "tp_comm_exposed_s": float(self.tp_comm[i]),
            "cp_comm_exposed_s": float(self.cp_comm[i]),
            "ep_comm_exposed_s": float(self.ep_comm[i]),
            "pp_comm_exposed_s": float(self.pp_comm[i]),
            "dp_comm_exposed_s": float(self.dp_comm[i]),
            "bubble_s": float(self.bubble[i]),
            "optimizer_s": float(self.optimizer[i]),
        }


def model_flops_per_token(w: TrainWorkload) -> float:
    """Training FLOPs per token without recomputation (PaLM, Chowdhery et al. 2022,
    appendix B): 6 per active non-embedding parameter plus the output projection,
    plus 12 l (a d) s for attention scores and values counted over the full square
    (d the mean of the query/key and value head widths, which differ under MLA).

    With a frozen base (LoRA, QLoRA) each base weight costs 4 FLOPs per token, the
    forward (2) and the input gradient (2), but no weight gradient; the adapters cost 6
    per active adapter parameter; attention has no weights, so its 12 stay."""
    c = count_params(w.arch)
    n = active_params(w.arch) - c.embedding - c.output + w.arch.vocab * w.arch.hidden
    d = 0.5 * (qk_head_dim(w.arch) + v_head_dim(w.arch))
    attention = 12.0 * w.arch.layers * w.arch.heads * d * w.seq_len
    if w.frozen_base:
        adapters = active_lora_params(w.arch, w.lora_rank, w.lora_targets)
        return 4.0 * n + 6.0 * adapters + attention
    return 6.0 * n + attention


def recompute_flops_per_token(w: TrainWorkload, recompute: np.ndarray) -> np.ndarray:
    """Extra forward FLOPs per token: the whole layer stack (full) or attention scores
    and values (selective)."""
    c = count_params(w.arch)
    n_layers = active_params(w.arch) - c.embedding - c.output
    d = 0.5 * (qk_head_dim(w.arch) + v_head_dim(w.arch))
    attention = 4.0 * w.arch.layers * w.arch.heads * d * w.seq_len
    return np.select([recompute == 2, recompute == 1], [2.0 * n_layers + attention, attention], 0.0)


def _stage_layer_times(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware) -> LayerTimes:
    """Average layer of a stage: MoE and dense layers mixed in the model's proportion."""
    arch = w.arch
    dense = layer_times(w, cfg, hw, moe=False)
    if not arch.is_moe:
        return dense
    moe = layer_times(w, cfg, hw, moe=True)
    frac = (arch.layers - arch.dense_layers) / arch.layers
    if frac >= 1.0:
        return moe
    mixed = {
        name: (1 - frac) * getattr(dense, name) + frac * getattr(moe, name)
        for name in dense.__dataclass_fields__
    }
    return LayerTimes(**mixed)


def _layer_key(cfg: ParallelConfigs) -> np.ndarray:
    """One integer per distinct (tp, cp, ep, micro-batch, recompute, sequence-parallel):
    the only settings a layer's time depends on."""
    key = cfg.tp.astype(np.int64)
    for arr, span in ((cfg.cp, 1 << 12), (cfg.ep, 1 << 12), (cfg.micro_batch, 1 << 12), (cfg.recompute, 4)):
        key = key * span + arr.astype(np.int64)
    return key * 2 + cfg.sequence_parallel


@dataclass
class _PerLayer:
    """What the step needs from one layer, per micro-batch (arrays over configurations)."""

    compute: np.ndarray  # forward + backward + recomputation
    backward: np.ndarray  # backward + recomputation: the window gradient reduction hides under
    tp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    logits: np.ndarray  # output layer forward + backward (last stage)
    act_kept: np.ndarray  # activation bytes per token kept for backward
    act_rebuilt: np.ndarray  # bytes per token rebuilt by full recomputation


def _unique_layer_costs(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware) -> _PerLayer:
    """Layer costs evaluated once per distinct layer shape, then gathered.

    A search evaluates millions of configurations but only a few hundred distinct
    layer shapes; this keeps the GEMM model off the per-configuration path.
    """
    _, first, inverse = np.unique(_layer_key(cfg), return_index=True, return_inverse=True)
    sub = cfg.take(first)
    lt = _stage_layer_times(w, sub, hw)
    lf, lb = logits_times(w, sub, hw)
    kept, rebuilt = activation_per_token_layer_pair(w, sub)
    costs = _PerLayer(
        compute=lt.compute_fwd + lt.compute_bwd + lt.recompute,
        backward=lt.compute_bwd + lt.recompute,
        tp=lt.tp_comm_fwd + lt.tp_comm_bwd,
        cp=lt.cp_comm_exposed_fwd + lt.cp_comm_exposed_bwd,
        ep=lt.ep_comm_fwd + lt.ep_comm_bwd,
        logits=lf + lb,
        act_kept=kept,
        act_rebuilt=rebuilt,
    )
    return _PerLayer(**{name: getattr(costs, name)[inverse] for name in costs.__dataclass_fields__})


def train_step(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware) -> StepBreakdown:
    """Evaluate every configuration in `cfg` for workload `w` on hardware `hw`."""
    lc = _unique_layer_costs(w, cfg, hw)
    # Layers per stage: the heaviest stage holds ceil(layers / pp) when they do not divide.
    # With vpp chunks per stage, each chunk holds ceil(layers / (pp vpp)).
    lps = np.ceil(w.arch.layers / (cfg.pp * cfg.vpp)) * cfg.vpp
    m = w.global_batch / (cfg.dp * cfg.micro_batch)  # micro-batches per step

    # Per micro-batch, per stage: compute and exposed communication.
    compute_mb = lps * lc.compute
    tp_mb, cp_mb, ep_mb = lps * lc.tp, lps * lc.cp, lps * lc.ep
    stage_mb = compute_mb + tp_mb + cp_mb + ep_mb
    last_stage_extra = lc.logits

    compute = m * (compute_mb + last_stage_extra)
    tp_comm, cp_comm, ep_comm = m * tp_mb, m * cp_mb, m * ep_mb
    bubble = (cfg.pp - 1.0) / cfg.vpp * (stage_mb + last_stage_extra / cfg.pp)

    # Pipeline sends: one activation tensor per boundary per micro-batch, each way.
    pp_stride = cfg.tp * cfg.cp * cfg.dp
    pp_bw, pp_lat = coll.group_link(np.full(len(cfg), 2), pp_stride, hw)
    # Megatron's scatter/gather optimisation (Narayanan et al. 2021, section 4.1): each
    # TP rank sends 1/tp of the activation across the fabric, then the receiving
    # stage all-gathers it over the scale-up links.
    act = cfg.micro_batch * w.seq_len / cfg.cp * w.arch.hidden * ACT_BYTES
    tp_bw, tp_lat = coll.group_link(cfg.tp, np.ones_like(cfg.tp), hw)
    hop = coll.p2p_s(act / cfg.tp, pp_bw, pp_lat) + coll.all_gather_s(act, cfg.tp, tp_bw, tp_lat)
    hops = np.where(cfg.pp > 1, m * cfg.vpp + cfg.pp - 1.0, 0.0)
    pp_comm = 2.0 * hops * hop

    # Data-parallel gradient reduction (+ ZeRO weight gathers).
    # Only trainable parameters have gradients: all of them, or LoRA's adapters.
    dense, expert = stage_params(w, cfg)
    t_dense, t_expert = stage_trainable(w, cfg) if w.frozen_base else (dense, expert)
    dp_bw, dp_lat = coll.group_link(cfg.dp, cfg.tp * cfg.cp, hw)
    grad_sync = coll.all_reduce_s(t_dense * w.grad_bytes, cfg.dp, dp_bw, dp_lat)
    if w.arch.is_moe:  # expert gradients reduce over the dp / ep replicas of each expert
        ep_dp = np.maximum(np.floor(cfg.dp / cfg.ep), 1.0)
        dpe_bw, dpe_lat = coll.group_link(ep_dp, cfg.tp * cfg.cp * cfg.ep, hw)
        grad_sync = grad_sync + coll.all_reduce_s(t_expert * w.grad_bytes, ep_dp, dpe_bw, dpe_lat)
    window = DP_OVERLAP_FRACTION * lps * lc.backward
    z3 = cfg.zero_stage >= 3
    # ZeRO-3 / FSDP: every micro-batch all-gathers the weights for forward and again
    # for backward, and reduce-scatters its gradients; prefetch overlaps that traffic
    # with the micro-batch's own compute.
    gathered = stage_weight_bytes(w, cfg, dense, np.zeros_like(dense))
    per_mb = 2.0 * coll.all_gather_s(gathered, cfg.dp, dp_bw, dp_lat) + coll.reduce_scatter_s(
        t_dense * w.grad_bytes, cfg.dp, dp_bw, dp_lat
    )
    if w.arch.is_moe:  # expert weights shard (and gather) over the dp / ep replicas of each expert
        expert_bytes = expert * (w.base_weight_bytes if w.frozen_base else 2.0)
        per_mb = per_mb + 2.0 * coll.all_gather_s(expert_bytes, ep_dp, dpe_bw, dpe_lat)
        per_mb = per_mb + coll.reduce_scatter_s(t_expert * w.grad_bytes, ep_dp, dpe_bw, dpe_lat)
    z3_hidden = np.minimum(per_mb, DP_OVERLAP_FRACTION * stage_mb)
    z3_exposed = per_mb - z3_hidden
    hidden = np.where(z3, m * z3_hidden, np.minimum(grad_sync, window))
    exposed = np.where(z3, m * z3_exposed, grad_sync - np.minimum(grad_sync, window))
    # Overlapped collectives still cost compute: NCCL runs its channels as thread
    # blocks on the SMs (up to 16-32 channels of 108-148 SMs), slowing the kernels
    # they overlap by about a tenth of the hidden time.
    dp_comm = exposed + COMM_COMPUTE_INTERFERENCE * hidden

    # Optimizer update: memory-bound over the parameters this GPU owns.
    owned = (t_dense + t_expert) / np.where(cfg.zero_stage >= 1, cfg.dp, 1)
    optimizer = (
        owned * OPTIMIZER_UPDATE_BYTES_PER_PARAM[w.optimizer] / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)
    )

    mem = train_memory(w, cfg, hw, params=(dense, expert), act_per_token=(lc.act_kept, lc.act_rebuilt))
    tokens = float(w.tokens_per_step)
    model_flops = model_flops_per_token(w) * tokens
    hw_flops = model_flops + recompute_flops_per_token(w, cfg.recompute) * tokens
    return StepBreakdown(
        compute=compute,
        tp_comm=tp_comm,
        cp_comm=cp_comm,
        ep_comm=ep_comm,
        pp_comm=pp_comm,
        dp_comm=dp_comm,
        bubble=bubble,
        optimizer=optimizer,
        memory=mem,
        model_flops=model_flops,
        hardware_flops=hw_flops,
        gpus=cfg.gpus.astype(np.float64),
        peak_flops_per_s=hw.peak_flops_per_s,
    )
