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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np

from rightsize.perf import collectives as coll
from rightsize.perf import remat
from rightsize.perf.attention_kernels import with_supported_attention
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
from rightsize.perf.params import (
    active_lora_params,
    active_params,
    count_params,
    mla_up_proj_share,
    mlp_matrices,
    qk_head_dim,
    v_head_dim,
)
from rightsize.perf.workload import (
    OPTIMIZER_STATE_BYTES_PER_PARAM,
    OPTIMIZER_UPDATE_BYTES_PER_PARAM,
    ParallelConfigs,
    TrainWorkload,
)

# Share of the last micro-batch's backward under which gradient reduction can
# hide: buckets become ready progressively, so the first bucket starts after a
# fraction of the backward and the last one is always exposed.
DP_OVERLAP_FRACTION = 0.7
# Overlapped collectives still cost compute where they run on the compute units: NCCL runs
# each channel as one thread block on one SM, and data-parallel rings across nodes run 16 or
# more channels: while they run, those SMs (of 108 on A100, 132 on H100, 148 on B200) are not
# computing, so the kernels they overlap slow by about 16 / SMs of the hidden time. The count
# is the catalog's collective_compute_units (0 on Cloud TPU: ICI DMA engines and SparseCores).


def comm_compute_interference(hw: Hardware) -> float:
    """Share of overlapped collective time that still slows compute (units held by collectives)."""
    return min(1.0, hw.collective_compute_units / max(float(hw.sm_count), 1.0))


# Identical GPUs do not run at identical speed: power management and manufacturing spread
# give compute-bound kernels an average 8% (max 22%) performance variation across the
# GPUs of one cluster (Sinha et al., "Not All GPUs Are Created Equal", SC22, arXiv
# 2208.11035, V100 and MI60 clusters), i.e. a spread of about 8% / 6.6 = 1.2% (one sigma)
# over the thousands of GPUs measured. A synchronous step waits for its slowest GPU, whose
# compute is about sqrt(2 ln n) sigmas slower than the mean of n (extreme-value estimate).
GPU_SPEED_SIGMA = 0.012


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
    straggler: np.ndarray  # waiting for the slowest GPU of the synchronous step
    memory: TrainMemory
    model_flops: float  # per step, all GPUs (MFU counting: no recomputation)
    hardware_flops: np.ndarray  # per step, all GPUs, recomputation included
    gpus: np.ndarray
    peak_flops_per_s: float
    # Exposed cross-building gradient exchange (data-centre interconnect); None within one building.
    dci_comm: np.ndarray | None = None

    @cached_property
    def step_time(self) -> np.ndarray:
        t = (
            self.compute
            + self.tp_comm
            + self.cp_comm
            + self.ep_comm
            + self.pp_comm
            + self.dp_comm
            + self.bubble
            + self.optimizer
            + self.straggler
        )
        return t if self.dci_comm is None else t + self.dci_comm

    @cached_property
    def mfu(self) -> np.ndarray:
        return self.model_flops / (self.step_time * self.gpus * self.peak_flops_per_s)

    @cached_property
    def hfu(self) -> np.ndarray:
        return self.hardware_flops / (self.step_time * self.gpus * self.peak_flops_per_s)

    @classmethod
    def concat(cls, parts: Sequence[StepBreakdown]) -> StepBreakdown:
        """The evaluations of consecutive runs of configurations, as one."""
        joined: dict[str, Any] = {f.name: _concat([getattr(p, f.name) for p in parts]) for f in fields(cls)}
        joined["memory"] = TrainMemory.concat([p.memory for p in parts])
        return cls(**joined)

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
            "straggler_s": float(self.straggler[i]),
        } | ({"dci_comm_exposed_s": float(self.dci_comm[i])} if self.dci_comm is not None else {})


def _concat(values: list[Any]) -> Any:
    """Arrays joined; anything else (a scalar, the same for every run) kept."""
    return np.concatenate(values) if isinstance(values[0], np.ndarray) else values[0]


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
    """Extra forward FLOPs per token: the whole layer stack (full), attention scores and
    values (selective), or the GEMMs and attention core a named policy rebuilds (perf.remat:
    QKV, out-projection and MLP-up GEMMs by their parameter share)."""
    c = count_params(w.arch)
    n_layers = active_params(w.arch) - c.embedding - c.output
    d = 0.5 * (qk_head_dim(w.arch) + v_head_dim(w.arch))
    attention = 4.0 * w.arch.layers * w.arch.heads * d * w.seq_len
    code = remat.codes(recompute)
    r = remat.REBUILT
    attn_params = c.attention_per_layer * w.arch.layers
    mlp_params = max(n_layers - attn_params, 0.0)
    a, g = float(w.arch.heads), float(w.arch.kv_heads)
    qkv_share = (a + 2 * g) / (2 * a + 2 * g)
    mats = float(mlp_matrices(w.arch))
    up_share = (mats - 1.0) / mats
    named = (
        2.0
        * (
            r["qkv_gemm"][code] * qkv_share * attn_params
            + r["k_gemm"][code] * g / (2 * a + 2 * g) * attn_params
            + r["out_gemm"][code] * (1.0 - qkv_share) * attn_params
            + r["mlp_up_gemm"][code] * up_share * mlp_params
            + r["mlp_up_half_gemm"][code] * 0.5 * up_share * mlp_params
            + r["mlp_down_gemm"][code] * (1.0 - up_share) * mlp_params
            + r["mla_up_gemm"][code] * mla_up_proj_share(w.arch) * attn_params
        )
        + r["attention"][code] * attention
    )
    return np.where(r["tp_comm"][code] > 0, 2.0 * n_layers + attention, named)


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


def _layer_key(cfg: ParallelConfigs, variant: np.ndarray | None = None) -> np.ndarray:
    """One integer per distinct (tp, cp, ep, micro-batch, recompute, sequence-parallel):
    the only settings a layer's time depends on; and per hardware variant, when the
    configurations carry their own efficiencies (`step_time_variants`)."""
    key = cfg.tp.astype(np.int64)
    for arr, span in (
        (cfg.cp, 1 << 12),
        (cfg.ep, 1 << 12),
        (cfg.micro_batch, 1 << 12),
        (cfg.recompute, len(remat.POLICIES)),
    ):
        key = key * span + arr.astype(np.int64)
    key = key * 2 + cfg.sequence_parallel
    if variant is not None:
        key = key * (int(variant.max(initial=0)) + 1) + variant
    return key


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


def _unique_layer_costs(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, variant: np.ndarray | None = None
) -> _PerLayer:
    """Layer costs evaluated once per distinct layer shape, then gathered.

    A search evaluates millions of configurations but only a few hundred distinct
    layer shapes; this keeps the GEMM model off the per-configuration path.
    """
    _, first, inverse = np.unique(_layer_key(cfg, variant), return_index=True, return_inverse=True)
    sub = cfg.take(first)
    hw = hw.take(first)
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


def _zero3_per_microbatch(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    lc: _PerLayer,
    lps: np.ndarray,
    params: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(exposed, hidden) seconds of ZeRO-3 / FSDP traffic per micro-batch on one GPU.

    FSDP wraps each transformer layer as a unit (torchtitan, llm-foundry, Megatron-FSDP):
    every micro-batch all-gathers each unit's weights before its forward, again before
    its backward (weights are resharded after forward), and reduce-scatters its
    gradients after its backward. Prefetch runs one unit ahead, so a unit's gather hides
    only under its neighbour's compute: forward, max(0, AG - fwd) per unit is exposed;
    backward, max(0, AG + RS - bwd) (both share the links). The first gather and the last
    reduce-scatter have nothing to hide under. Each is a ring of dp x cp ranks with
    n - 1 latency steps (collectives.all_gather_s).
    """
    dense, expert, t_dense, t_expert = params
    dpc = cfg.dp * cfg.cp
    bw, lat = coll.group_link(dpc, cfg.tp, hw)
    units = np.maximum(lps, 1.0)
    gathered = stage_weight_bytes(w, cfg, dense, np.zeros_like(dense)) / units
    if w.precision == "fp8" and w.fp8_recipe == "tensorwise":
        # torchao's float8 all-gather (torchtitan enable_fsdp_float8_all_gather): each rank casts
        # its weight shard to fp8 before the gather, so the gathered bytes are halved.
        gathered = gathered / 2.0
    grads = 2.0 * t_dense / units  # 16-bit reduce-scatter (FSDP reduce_dtype, DeepSpeed fp16/bf16)
    ag = coll.all_gather_s(gathered, dpc, bw, lat)
    rs = coll.reduce_scatter_s(grads, dpc, bw, lat)
    if w.arch.is_moe:  # expert weights shard (and gather) over the dp / ep replicas of each expert
        ep_dp = np.maximum(np.floor(dpc / cfg.ep), 1.0)
        e_bw, e_lat = coll.group_link(ep_dp, cfg.tp * cfg.ep, hw)
        expert_bytes = expert * (w.base_weight_bytes if w.frozen_base else 2.0) / units
        ag = ag + coll.all_gather_s(expert_bytes, ep_dp, e_bw, e_lat)
        rs = rs + coll.reduce_scatter_s(2.0 * t_expert / units, ep_dp, e_bw, e_lat)
    fwd = lc.compute - lc.backward
    exposed_fwd = np.maximum(0.0, ag - fwd)
    exposed_bwd = np.maximum(0.0, ag + rs - lc.backward)
    exposed = units * (exposed_fwd + exposed_bwd) + ag + rs
    total = units * (2.0 * ag + rs)
    # With pipeline parallelism, FSDP keeps the stage's parameters unsharded across the
    # micro-batches (torchtitan sets reshard_after_forward=False under PP) and reduce-scatters
    # once, after the last micro-batch: one gather and one reduce-scatter per unit per step,
    # spread here over the m micro-batches.
    m = w.global_batch / (cfg.dp * cfg.micro_batch)
    pp_exposed = (units * (np.maximum(0.0, ag - fwd) + np.maximum(0.0, rs - lc.backward)) + ag + rs) / m
    pp_total = units * (ag + rs) / m
    exposed = np.where(cfg.pp > 1, pp_exposed, exposed)
    total = np.where(cfg.pp > 1, pp_total, total)
    return exposed, np.maximum(total - exposed, 0.0)


def train_step(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    variant: np.ndarray | None = None,
    dci: coll.DciLink | None = None,
) -> StepBreakdown:
    """Evaluate every configuration in `cfg` for workload `w` on hardware `hw` (in runs of
    EVAL_CHUNK_ROWS configurations).

    `variant` (one integer per configuration) is given when `hw` carries per-configuration
    efficiencies: configurations of one variant share them (`step_time_variants`). `dci`
    is given when some configurations span more than one building (`_dci_exposed`)."""
    w, hw = with_supported_attention(w, hw)  # the backend the stack runs for this head width
    parts = cfg.chunks()
    if len(parts) <= 1:
        return _train_step(w, cfg, hw, variant, dci)
    return StepBreakdown.concat(
        [_train_step(w, cfg.take(p), hw.take(p), None if variant is None else variant[p], dci) for p in parts]
    )


def _dci_exposed(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    dci: coll.DciLink,
    trainable: tuple[np.ndarray, np.ndarray],
    hide: np.ndarray,
) -> np.ndarray:
    """Data parallelism crosses buildings: whole replicas sit in each building, and the
    gradient all-reduce becomes hierarchical (`coll.dci_all_reduce_s`), its cross-building
    stage run bucket by bucket under what is left of the backward window (`hide`); the rest
    is exposed. One model's gradients: the per-GPU shard times tp x pp (experts x ep too)."""
    t_dense, t_expert = trainable
    model_parallel = cfg.gpus / (cfg.dp * cfg.cp)
    model_bytes = (t_dense + t_expert * cfg.ep) * w.grad_bytes * model_parallel
    dci_s = coll.dci_all_reduce_s(model_bytes, dci.buildings(cfg.gpus), dci)
    return np.maximum(dci_s - np.maximum(hide, 0.0), 0.0)


def _pipeline_sends(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, m: np.ndarray) -> np.ndarray:
    """Seconds per step of pipeline sends: one activation tensor per boundary per
    micro-batch (`m` per step), each way, exposed or slowing the compute they overlap."""
    pp_stride = cfg.tp * cfg.cp * cfg.dp
    pp_bw, pp_lat = coll.group_link(np.full(len(cfg), 2), pp_stride, hw)
    # Megatron's scatter/gather optimisation (Narayanan et al. 2021, section 4.1): each
    # TP rank sends 1/tp of the activation across the fabric, then the receiving
    # stage all-gathers it over the scale-up links.
    act = cfg.micro_batch * w.seq_len / cfg.cp * w.arch.hidden * ACT_BYTES
    tp_bw, tp_lat = coll.group_link(cfg.tp, np.ones_like(cfg.tp), hw)
    hop = coll.p2p_s(act / cfg.tp, pp_bw, pp_lat) + coll.all_gather_s(act, cfg.tp, tp_bw, tp_lat)
    hops = np.where(cfg.pp > 1, m * cfg.vpp + cfg.pp - 1.0, 0.0)
    # Interleaved 1F1B overlaps its sends and receives with the next chunk's compute
    # (Megatron-Core overlap_p2p_comm, on with virtual pipelining): only the warm-up and
    # cool-down hops wait. Without interleaving every send sits between two chunks.
    exposed_hops = np.where(cfg.vpp > 1, np.minimum(hops, 2.0 * (cfg.pp - 1.0)), hops)
    interference = comm_compute_interference(hw)
    return 2.0 * exposed_hops * hop + interference * 2.0 * (hops - exposed_hops) * hop


def _gradient_collectives(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, t_dense: np.ndarray, t_expert: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gradient all-reduce, gradient reduce-scatter, 16-bit parameter all-gather) seconds
    over the dp x cp ranks (experts over the dp / ep replicas of each expert).

    DDP: one gradient all-reduce, bucketed under the last backward. ZeRO-1/2: the gradients
    are reduce-scattered under the backward, but the updated 16-bit parameters are
    all-gathered after the optimizer step (DeepSpeed ZeRO-1/2, Megatron's distributed
    optimizer), which only a stack that overlaps the parameter gather with the next
    forward hides (param_gather_overlap)."""
    dpc = cfg.dp * cfg.cp
    dp_bw, dp_lat = coll.group_link(dpc, cfg.tp, hw)
    grad_sync = coll.all_reduce_s(t_dense * w.grad_bytes, dpc, dp_bw, dp_lat)
    grad_rs = coll.reduce_scatter_s(t_dense * w.grad_bytes, dpc, dp_bw, dp_lat)
    param_ag = coll.all_gather_s(t_dense * 2.0, dpc, dp_bw, dp_lat)
    if w.arch.is_moe:
        ep_dp = np.maximum(np.floor(dpc / cfg.ep), 1.0)
        dpe_bw, dpe_lat = coll.group_link(ep_dp, cfg.tp * cfg.ep, hw)
        grad_sync = grad_sync + coll.all_reduce_s(t_expert * w.grad_bytes, ep_dp, dpe_bw, dpe_lat)
        grad_rs = grad_rs + coll.reduce_scatter_s(t_expert * w.grad_bytes, ep_dp, dpe_bw, dpe_lat)
        param_ag = param_ag + coll.all_gather_s(t_expert * 2.0, ep_dp, dpe_bw, dpe_lat)
    return grad_sync, grad_rs, param_ag


def _train_step(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    variant: np.ndarray | None,
    dci: coll.DciLink | None = None,
) -> StepBreakdown:
    """One training step's breakdown over the configurations (vectorised).

    Longer than 80 lines for one reason: the step's parts (compute, each parallel dimension's
    exposed communication, bubble, optimizer, offload) share the per-stage layer costs and are
    combined in one pass over the arrays, so the breakdown adds up to the step by construction."""
    lc = _unique_layer_costs(w, cfg, hw, variant)
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

    pp_comm = _pipeline_sends(w, cfg, hw, m)
    interference = comm_compute_interference(hw)

    # Data-parallel gradient reduction (+ ZeRO weight gathers), over dp x cp ranks: context-
    # parallel ranks hold the same weights, so their gradients are reduced together
    # (Megatron's data_parallel_group_with_cp).
    dense, expert = stage_params(w, cfg)
    t_dense, t_expert = stage_trainable(w, cfg) if w.frozen_base else (dense, expert)
    dpc = cfg.dp * cfg.cp
    grad_sync, grad_rs, param_ag = _gradient_collectives(w, cfg, hw, t_dense, t_expert)
    window = DP_OVERLAP_FRACTION * lps * lc.backward
    z3 = cfg.zero_stage >= 3
    z12 = (cfg.zero_stage >= 1) & ~z3
    ag_hidden = np.where(
        z12, np.minimum(hw.param_gather_overlap * param_ag, lps * (lc.compute - lc.backward)), 0.0
    )
    reduce_s = np.where(z12, grad_rs, grad_sync)
    z12_exposed = np.where(z12, param_ag - ag_hidden, 0.0)
    z3_exposed, z3_hidden = _zero3_per_microbatch(w, cfg, hw, lc, lps, (dense, expert, t_dense, t_expert))
    hidden = np.where(z3, m * z3_hidden, np.minimum(reduce_s, window) + ag_hidden)
    exposed = np.where(z3, m * z3_exposed, reduce_s - np.minimum(reduce_s, window) + z12_exposed)
    dp_comm = exposed + interference * hidden
    # the cross-building stage runs under what the in-building reduction leaves of the window
    dci_comm = None if dci is None else _dci_exposed(w, cfg, dci, (t_dense, t_expert), window - reduce_s)

    # Optimizer update: memory-bound over the parameters this GPU owns. Under ZeRO the expert
    # states shard over each expert's dp / ep replicas, as perf.memory's state_memory counts them.
    zero = cfg.zero_stage >= 1
    owned = t_dense / np.where(zero, dpc, 1) + t_expert / np.where(zero, np.maximum(dpc / cfg.ep, 1.0), 1)
    optimizer = (
        owned * OPTIMIZER_UPDATE_BYTES_PER_PARAM[w.optimizer] / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)
    )
    if w.optimizer_offload:
        # The states this GPU owns cross the host link to the device for the update and back
        # (MaxText's optimizer_memory_host_offload), after the backward: nothing to hide under.
        optimizer = (
            optimizer + 2.0 * owned * OPTIMIZER_STATE_BYTES_PER_PARAM[w.optimizer] / hw.host_link_bytes_per_s
        )

    gpus = cfg.gpus.astype(np.float64)
    straggler = compute * GPU_SPEED_SIGMA * np.sqrt(2.0 * np.log(np.maximum(gpus, 1.0)))

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
        straggler=straggler,
        memory=mem,
        model_flops=model_flops,
        hardware_flops=hw_flops,
        gpus=cfg.gpus.astype(np.float64),
        peak_flops_per_s=hw.peak_flops_per_s,
        dci_comm=dci_comm,
    )


def step_time_variants(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, variants: Sequence[Mapping[str, float]]
) -> np.ndarray:
    """Step time of every configuration under each variant of the hardware's figures, shape
    (variants, configurations): the same model as `train_step(w, cfg, hw.with_overrides(**v))`
    for each variant v, evaluated in one vectorised pass over the configurations repeated
    once per variant (a sensitivity needs a dozen variants of a few hundred layouts, where
    one call per variant would cost its fixed overhead a dozen times)."""
    n, v = len(cfg), len(variants)
    if v == 0 or n == 0:
        return np.zeros((v, n))
    names = sorted({k for var in variants for k in var})
    per_row = {k: np.repeat([float(var.get(k, getattr(hw, k))) for var in variants], n) for k in names}
    tiled = cfg.take(np.tile(np.arange(n), v))
    st = train_step(w, tiled, hw.with_overrides(**per_row), variant=np.repeat(np.arange(v), n))
    return st.step_time.reshape(v, n)


def train_memory_only(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware) -> TrainMemory:
    """Memory per GPU of every configuration, without its step time: the search checks
    every layout against memory first and times only those that fit. The same figures as
    `train_step(w, cfg, hw).memory` (activations per distinct layer shape, then gathered)."""
    w, hw = with_supported_attention(w, hw)
    _, first, inverse = np.unique(_layer_key(cfg), return_index=True, return_inverse=True)
    kept, rebuilt = activation_per_token_layer_pair(w, cfg.take(first))
    return train_memory(w, cfg, hw, act_per_token=(kept[inverse], rebuilt[inverse]))
