"""Memory per GPU for training, broken down, vectorised over configurations.

Model state (Rajbhandari et al. 2020, ZeRO): 16-bit weights, gradients (fp32 or
16-bit buffers), and optimizer state (fp32 master weights + moments), each
sharded over data-parallel ranks from ZeRO stage 3, 2 and 1 respectively, and
over tensor, pipeline and expert parallel ranks by construction.

Activations generalise Korthikanti et al. 2022 (eq. 1-5). Per layer and token,
in bytes, a GPT layer keeps 34 h + 5 a s: the QKV and MLP inputs, the norm
inputs and dropout masks (10 h, replicated over TP unless sequence parallelism
splits them), and Q, K, V, the attention output and the MLP's inner tensors
(24 h, split over TP), plus the s x s softmax terms (5 a s). Here each term
comes from the real shapes: grouped-query K and V are 2 g d each, a SwiGLU MLP
keeps gate and up (4 f) and its product (2 f), flash attention keeps only a
per-row log-sum-exp instead of the s x s terms. Selective recomputation drops
the s x s terms, full recomputation keeps only each layer's input (2 h, split
over TP under sequence parallelism). The first pipeline stage holds
min(pp, micro-batches) micro-batches in flight under 1F1B, times
1 + (pp - 1) / (pp vpp) for the interleaved schedule (Korthikanti section 4.2.3);
the last stage holds one, plus the logits; the heavier of the two is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from rightsize.constants import GiB
from rightsize.perf import remat
from rightsize.perf.hardware import Hardware
from rightsize.perf.layer import moe_load_factor
from rightsize.perf.params import ParamCounts, count_params, lora_counts, qk_head_dim, v_head_dim
from rightsize.perf.workload import (
    EVAL_CHUNK_ROWS,
    OPTIMIZER_STATE_BYTES_PER_PARAM,
    ParallelConfigs,
    TrainWorkload,
)

# CUDA context, cuBLAS/cuDNN workspaces and NCCL channel buffers: PyTorch reports
# 0.5-1 GiB of context and NCCL allocates up to ~1 GiB of buffers per communicator
# on 8-GPU nodes (NCCL_BUFFSIZE 4 MiB x channels x peers). Taken as 2.5 GiB.
FRAMEWORK_BYTES = 2.5 * GiB

# Fraction of HBM the caching allocator can actually fill before fragmentation
# causes out-of-memory errors (PyTorch memory snapshots typically show 5-10%
# reserved-but-unallocated at peak). Planning keeps 8% aside.
ALLOCATOR_USABLE_FRACTION = 0.92

# Bytes per logit at the loss's peak. Megatron's vocab-parallel cross entropy casts the
# 16-bit logits to fp32 once (the 16-bit copy is then freed), computes the softmax in
# place in that fp32 buffer, keeps it for backward and writes the gradient into it
# (megatron/core/tensor_parallel/cross_entropy.py): 4 bytes kept, plus the 16-bit
# logits alive while the cast runs: 6 at the peak (the old 2 + 4 + 4 counted a second
# fp32 copy that the fused loss never makes).
LOGITS_BYTES_PER_ENTRY = 6.0

# Host memory an offloading job may fill: the operating system, the data loader's workers
# and pinned staging buffers take the rest (planning keeps a fifth aside).
HOST_USABLE_FRACTION = 0.8

# ZeRO-3 / FSDP: unsharded units alive at once (the one computing, the one prefetched).
GATHERED_UNITS = 2.0
ZERO_STAGES = (0, 1, 2, 3)


@dataclass
class TrainMemory:
    """Bytes per GPU on the most loaded pipeline stage."""

    weights: np.ndarray
    gradients: np.ndarray
    optimizer: np.ndarray
    activations: np.ndarray
    logits: np.ndarray  # output-layer and loss buffers on the last stage
    framework: np.ndarray
    capacity: float
    # Host (CPU) memory per GPU that offloading fills: activations a remat policy offloads and
    # optimizer states kept on the host; not part of `total` (device memory).
    host: np.ndarray | None = None
    host_capacity: float = float("inf")  # the node's host memory per GPU
    usable_fraction: float = ALLOCATOR_USABLE_FRACTION  # of `capacity` tensors may fill (the stack's)

    @cached_property
    def total(self) -> np.ndarray:
        return (
            self.weights + self.gradients + self.optimizer + self.activations + self.logits + self.framework
        )

    @property
    def fits(self) -> np.ndarray:
        device = self.total <= self.capacity * self.usable_fraction
        if self.host is None:
            return device
        return device & (self.host <= self.host_capacity * HOST_USABLE_FRACTION)

    @classmethod
    def concat(cls, parts: list[TrainMemory]) -> TrainMemory:
        """The memory of consecutive runs of configurations, as one (same capacity)."""
        names = ("weights", "gradients", "optimizer", "activations", "logits", "framework")
        joined = {k: np.concatenate([getattr(p, k) for p in parts]) for k in names}
        hosts = [p.host for p in parts if p.host is not None]
        host: np.ndarray | None = np.concatenate(hosts) if len(hosts) == len(parts) else None
        return cls(
            **joined,
            capacity=parts[0].capacity,
            host=host,
            host_capacity=parts[0].host_capacity,
            usable_fraction=parts[0].usable_fraction,
        )

    def as_dict(self, i: int) -> dict[str, float]:
        return {
            "weights_bytes": float(self.weights[i]),
            "gradients_bytes": float(self.gradients[i]),
            "optimizer_bytes": float(self.optimizer[i]),
            "activations_bytes": float(self.activations[i]),
            "logits_bytes": float(self.logits[i]),
            "framework_bytes": float(self.framework[i]),
            "total_bytes": float(self.total[i]),
            "capacity_bytes": float(self.capacity),
        } | (
            {"host_offload_bytes": float(self.host[i])} if self.host is not None and self.host[i] > 0 else {}
        )


def _stage_split(c: ParamCounts, cfg: ParallelConfigs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(layer dense, embedding/output, routed expert) parameters on one GPU of the heaviest stage."""
    stage_layers = np.ceil(c.layers / (cfg.pp * cfg.vpp)) * cfg.vpp
    moe_fraction = c.moe_layers / c.layers
    dense_per_layer = c.attention_per_layer + c.norms_per_layer + c.router_per_layer * moe_fraction
    dense_layer_mlp = c.dense_mlp_per_layer * (1 - moe_fraction)
    shared = c.shared_experts_per_layer * moe_fraction
    dense = stage_layers * (dense_per_layer + dense_layer_mlp + shared) / cfg.tp
    expert = stage_layers * moe_fraction * c.routed_experts_per_layer / (cfg.tp * cfg.ep)
    emb = c.embedding / cfg.tp
    out = c.output / cfg.tp
    edge = np.where(cfg.pp == 1, emb + out, np.maximum(emb, out if c.output else emb))
    return dense, edge, expert


def stage_params(w: TrainWorkload, cfg: ParallelConfigs) -> tuple[np.ndarray, np.ndarray]:
    """(dense, expert) parameters held by one GPU of the heaviest pipeline stage.

    Layers are split evenly over pp stages; the first stage also holds the input
    embedding and the last the output projection (one stage holds both when pp = 1,
    or only one copy when the embeddings are tied).
    """
    dense, edge, expert = _stage_split(count_params(w.arch), cfg)
    return dense + edge, expert


def stage_trainable(w: TrainWorkload, cfg: ParallelConfigs) -> tuple[np.ndarray, np.ndarray]:
    """(dense, expert) trainable parameters on that GPU: all of them, or LoRA's adapters."""
    if not w.frozen_base:
        return stage_params(w, cfg)
    dense, _, expert = _stage_split(lora_counts(w.arch, w.lora_rank, w.lora_targets), cfg)
    return dense, expert


def stage_weight_bytes(
    w: TrainWorkload, cfg: ParallelConfigs, dense: np.ndarray, expert: np.ndarray
) -> np.ndarray:
    """Bytes of weights one GPU holds before ZeRO-3 sharding, from its (dense, expert) base
    parameters: 16-bit for full training; for LoRA the frozen base in its storage precision
    plus 16-bit adapters. QLoRA quantises only the transformer blocks' linears: embeddings,
    output layer and norms stay 16-bit."""
    if not w.frozen_base:
        if w.precision == "fp8" and w.fp8_recipe in ("auto", "delayed", "mxfp8"):
            # Transformer Engine's recipes as NeMo and Megatron-Bridge configure them
            # (bf16_with_fp8_current_scaling_mixed, bf16_with_fp8_delayed_scaling_mixed and
            # bf16_with_mxfp8_mixed all set fp8_param_gather=True) keep the block linears' working weights in fp8, one
            # byte each (the fp32 master copy is the optimizer's); embeddings, output layer and
            # norms stay 16-bit. torchao's float8 (tensorwise, rowwise) keeps 16-bit weights.
            norms, edge = _sixteen_bit_params(w, cfg)
            return (dense + expert) + (norms + edge)
        return 2.0 * (dense + expert)
    adapters = sum(stage_trainable(w, cfg))
    base = w.base_weight_bytes * (dense + expert)
    if w.method == "qlora":
        norms, edge = _sixteen_bit_params(w, cfg)
        base = base + (2.0 - w.base_weight_bytes) * (norms + edge)
    return base + 2.0 * adapters


def _sixteen_bit_params(w: TrainWorkload, cfg: ParallelConfigs) -> tuple[np.ndarray, np.ndarray]:
    """(norm, embedding + output) parameters of one GPU's stage: what no low-precision weight
    format quantises (only the transformer blocks' linears are)."""
    kept_16bit = replace(
        count_params(w.arch),
        attention_per_layer=0.0,
        dense_mlp_per_layer=0.0,
        routed_experts_per_layer=0.0,
        shared_experts_per_layer=0.0,
        router_per_layer=0.0,
    )
    norms, edge, _ = _stage_split(kept_16bit, cfg)
    return norms, edge


def activation_bytes_per_token_layer(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Bytes one layer keeps for backward per token of a micro-batch, on one GPU."""
    arch = w.arch
    h = float(arch.hidden)
    a, g = float(arch.heads), float(arch.kv_heads)
    dqk, dv = float(qk_head_dim(arch)), float(v_head_dim(arch))
    f = float(arch.ffn_hidden)
    t = cfg.tp.astype(np.float64)
    sp = cfg.sequence_parallel
    # Replicated over TP unless sequence-parallel: QKV input, MLP input, two norm
    # inputs, and two 1-byte dropout masks where dropout is used.
    # Under fp8 / nvfp4, Transformer Engine saves the quantised copy of each linear's input for
    # the weight-gradient GEMM (te.Linear save_for_backward of the fp8 input), not the 16-bit one.
    lin = w.gemm_elem_bytes if w.precision in ("fp8", "nvfp4") and not w.frozen_base else 2.0
    replicated_per_token = lin * h + lin * h + 2 * 2 * h + (2 * h if w.dropout else 0.0)
    replicated = np.where(sp, replicated_per_token / t, replicated_per_token)
    # Split over TP: Q, K, V and the attention output; the MLP's inner tensors. MLA also
    # keeps its query and key/value latents (inputs of the up-projections).
    attn = 2 * (a * dqk + g * dqk + g * dv) + 2 * a * dv
    if arch.is_mla:
        attn += 2 * ((arch.q_lora_rank or 0) + (arch.kv_lora_rank or 0) + (arch.qk_rope_head_dim or 0))
    # SwiGLU keeps gate and up outputs and their product; GELU its input and output.
    mlp_inner: float | np.ndarray = 2 * (2 * f) + lin * f if arch.mlp == "swiglu" else 2 * f + lin * f
    lora: float = 0.0
    if w.frozen_base:  # each adapter keeps its rank-r intermediate x A (16 bit) for B's gradient
        lora = 2.0 * w.lora_rank * sum(1 for n in ("q", "k", "v", "o") if n in w.lora_targets)
        mlp_adapters = sum(
            1 for n in ("gate", "up", "down") if n in w.lora_targets and (n != "gate" or arch.mlp == "swiglu")
        )
        lora += (
            2.0
            * w.lora_rank
            * mlp_adapters
            * (arch.experts_per_token + arch.shared_experts if arch.is_moe else 1)
        )
    if arch.is_moe:
        # The busiest GPU holds its load factor times the even share of routed tokens.
        load = moe_load_factor(w, cfg)
        f_e = float(arch.expert_ffn_hidden or arch.ffn_hidden)
        # As the dense MLP: SwiGLU keeps gate and up outputs (16 bit) and the down projection's
        # input (the linear's saved copy: fp8 under Transformer Engine's fp8 recipes, whose
        # grouped expert GEMMs save the quantised input like te.Linear); GELU its input and output.
        per = (4 * f_e + lin * f_e) if arch.mlp == "swiglu" else 2 * f_e + lin * f_e
        k = arch.experts_per_token
        # Per routed copy: the dispatched input (the up projection's saved input, `lin` bytes)
        # and the expert output (multiplied by the router probability in the combine, so kept
        # for its backward, 16 bit); k x load copies of h each. The shared experts' input is
        # the layer's MLP input, counted in `replicated`.
        mlp_inner = per * (k * load + arch.shared_experts) + (lin + 2.0) * h * k * load
    split = (attn + mlp_inner + lora) / t
    # The s x s terms: softmax output (2), dropout mask (1) and output (2) per score;
    # flash attention keeps a 4-byte log-sum-exp per query row and head instead.
    s_local = w.seq_len  # keys seen by each query (ring attention streams the rest)
    if w.flash_attention:
        scores = 4.0 * a / t + 0 * s_local
    else:
        # without dropout only the softmax output is kept (the values matmul reuses it)
        score_bytes = 5.0 if w.dropout else 2.0
        scores = score_bytes * a * s_local / t
    full_layer = replicated + split + scores
    no_scores = replicated + split + (4.0 * a / t if w.flash_attention else 0.0)
    code = remat.codes(cfg.recompute)
    stack = np.where(code == remat.CODES["selective"], no_scores, full_layer)
    per_tensor = remat_tensor_bytes_per_token(w, cfg)
    per_tensor["stack"] = stack
    kept = sum(remat.KEPT[n][code] * per_tensor[n] for n in remat.TENSORS)
    # Layer offload keeps the stack of the layers it does not offload: the policy's share of
    # the stage's layers rounded up to whole layers (remat.offloaded_layers), not the share.
    kept = kept + (remat.STACK_OFFLOADED[code] - stack_offloaded_share(w, cfg)) * stack
    # Megatron-Core's module recompute frees these stack tensors once their consumer has run:
    # each routed copy's expert activation output (the down projection's saved input, `lin`
    # bytes) and MLA's up-projected q, k, v (the attention kernel's saved inputs, 16 bit).
    dropped = {
        "moe_act": (lin * float(arch.expert_ffn_hidden or arch.ffn_hidden) * _mlp_copies_routed(w, cfg) / t)
        if arch.is_moe
        else np.zeros_like(t),
        "mla_qkv": 2 * (a * dqk + g * dqk + g * dv) / t if arch.is_mla else np.zeros_like(t),
    }
    return kept - sum(remat.DROPPED[n][code] * dropped[n] for n in remat.DROPPED_TENSORS)


def _mlp_copies_routed(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Routed expert copies per token on the busiest GPU (its load factor times top-k)."""
    return w.arch.experts_per_token * moe_load_factor(w, cfg)


def remat_tensor_bytes_per_token(w: TrainWorkload, cfg: ParallelConfigs) -> dict[str, np.ndarray]:
    """Bytes per token of one layer of each tensor a named remat policy may keep or offload
    (`perf.remat.TENSORS`, all but the Megatron stack), on one GPU: 16-bit, split over TP
    where the tensor is (heads, the MLP's inner width), or under sequence parallelism."""
    arch = w.arch
    h = float(arch.hidden)
    a, g = float(arch.heads), float(arch.kv_heads)
    dqk, dv = float(qk_head_dim(arch)), float(v_head_dim(arch))
    t = cfg.tp.astype(np.float64)
    sp = cfg.sequence_parallel
    hidden = np.where(sp, 2 * h / t, 2 * h)  # a [tokens, h] tensor: replicated over TP unless SP
    f = float(arch.expert_ffn_hidden or arch.ffn_hidden) if arch.is_moe else float(arch.ffn_hidden)
    width = (arch.experts_per_token * moe_load_factor(w, cfg) + arch.shared_experts) if arch.is_moe else 1.0
    up = (2 * 2 * f if arch.mlp == "swiglu" else 2 * f) * width / t
    return {
        "input": hidden,
        "qkv": 2 * (a * dqk + g * dqk + g * dv) / t,
        "out_proj": hidden,
        "mlp_up": up,
        "mlp_down": hidden,
        "context": (2 * a * dv + 4.0 * a) / t,
        "q_v": 2 * (a * dqk + g * dv) / t,
        "mlp_gate": 2 * f * width / t,
    }


def layers_per_stage(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Transformer layers on the first pipeline stage (all its virtual chunks)."""
    return np.ceil(w.arch.layers / (cfg.pp * cfg.vpp)) * cfg.vpp


def stack_offloaded_share(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Share of the layers whose whole stack a layer-offload policy moves to host memory
    (remat.offloaded_layers); 0 for every other policy. Layer offload runs only without
    pipeline parallelism (`activation_memory` rejects the rest), so its stage is the whole
    model: the share depends on the policy alone, as the step's per-layer cache requires."""
    layers = float(w.arch.layers)
    return remat.offloaded_layers(remat.codes(cfg.recompute), layers) / layers


def named_offloaded_bytes_per_token_layer(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Bytes per token of one layer that a named policy (MaxText's `*_offloaded`) moves to
    host memory from every layer; zero for the others."""
    code = remat.codes(cfg.recompute)
    per_tensor = remat_tensor_bytes_per_token(w, cfg)
    return sum(remat.OFFLOADED[n][code] * per_tensor[n] for n in per_tensor) + 0.0 * cfg.tp


def offloaded_stack_bytes_per_token(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Bytes per token one offloaded layer of a layer-offload policy moves to host memory:
    its whole stack (the layer with nothing recomputed); zero for the other policies."""
    offloads = remat.STACK_OFFLOADED[remat.codes(cfg.recompute)] > 0
    if not np.any(offloads):
        return np.zeros(len(cfg))
    return np.where(offloads, _full_layer_bytes(w, cfg), 0.0)


def offloaded_bytes_per_token_layer(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    """Bytes per token of one layer, averaged over the stage's layers, that the remat policy
    moves to host memory (zero for every policy that keeps its tensors on the device)."""
    named = named_offloaded_bytes_per_token_layer(w, cfg)
    if not np.any(remat.STACK_OFFLOADED[remat.codes(cfg.recompute)] > 0):
        return named
    return named + stack_offloaded_share(w, cfg) * offloaded_stack_bytes_per_token(w, cfg)


def activation_per_token_layer_pair(w: TrainWorkload, cfg: ParallelConfigs) -> tuple[np.ndarray, np.ndarray]:
    """(kept for backward, rebuilt during a fully recomputed layer's backward) bytes per token."""
    return activation_bytes_per_token_layer(w, cfg), _full_layer_bytes(w, cfg)


def train_memory(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    params: tuple[np.ndarray, np.ndarray] | None = None,
    act_per_token: tuple[np.ndarray, np.ndarray] | None = None,
) -> TrainMemory:
    """Memory per GPU. `params` and `act_per_token` may be passed in when the caller
    already computed them (the search evaluates them once per distinct layer shape)."""
    weights, gradients, optimizer = state_memory(w, cfg, params)
    activations, logits = activation_memory(w, cfg, act_per_token)
    host = host_offload_bytes(w, cfg, optimizer)
    if w.optimizer_offload:  # optimizer states live in host memory, not on the device
        optimizer = np.zeros_like(optimizer)
    return TrainMemory(
        weights=weights,
        gradients=gradients,
        optimizer=optimizer,
        activations=activations,
        logits=logits,
        framework=np.full(len(cfg), hw.framework_bytes),
        capacity=hw.hbm_bytes,
        host=host,
        host_capacity=hw.host_bytes_per_gpu or float("inf"),  # 0: unknown, not a limit
        usable_fraction=hw.usable_fraction,
    )


def host_offload_bytes(w: TrainWorkload, cfg: ParallelConfigs, optimizer: np.ndarray) -> np.ndarray:
    """Host bytes per GPU: the activations the remat policy offloads for every micro-batch in
    flight on the first stage (the stage that holds the most), and the optimizer states
    when they are offloaded (`optimizer`: their bytes on this GPU)."""
    offloaded = offloaded_bytes_per_token_layer(w, cfg)
    tokens_mb = cfg.micro_batch * w.seq_len / cfg.cp
    in_flight = np.minimum(cfg.pp, w.global_batch / (cfg.dp * cfg.micro_batch))
    interleave = np.where(cfg.vpp > 1, 1.0 + (cfg.pp - 1.0) / (cfg.pp * cfg.vpp), 1.0)
    acts = offloaded * tokens_mb * layers_per_stage(w, cfg) * in_flight * interleave
    return acts + (optimizer if w.optimizer_offload else 0.0)


def state_memory(
    w: TrainWorkload, cfg: ParallelConfigs, params: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, gradients, optimizer states) bytes per GPU: what the ZeRO stage shards;
    the micro-batch and recomputation do not change them."""
    dense, expert = params if params is not None else stage_params(w, cfg)
    # Megatron shards the distributed optimizer (and ZeRO-3 weights) over the data-parallel
    # group *with* context parallelism: CP ranks hold the same weights (parallel_state's
    # data_parallel_group_with_cp), so the shard count is dp x cp.
    dp, z = cfg.dp * cfg.cp, cfg.zero_stage
    expert_dp = np.maximum(dp / cfg.ep, 1.0)

    def sharded(d: np.ndarray, e: np.ndarray, stage: int) -> np.ndarray:
        """What this GPU keeps after ZeRO sharding over data-parallel ranks (experts shard
        over the dp / ep replicas of each expert)."""
        kept_ = d / np.where(z >= stage, dp, 1.0)
        if w.arch.is_moe:
            kept_ = kept_ + e / np.where(z >= stage, expert_dp, 1.0)
        return kept_

    # Weights: the bytes per parameter of each kind scale both shards alike.
    total_params = dense + expert
    weight_bytes = stage_weight_bytes(w, cfg, dense, expert)
    weights = weight_bytes * sharded(dense, expert, 3) / np.maximum(total_params, 1.0)
    if w.frozen_base:  # gradients and optimizer states exist only for the adapters
        t_dense, t_expert = stage_trainable(w, cfg)
    else:
        t_dense, t_expert = dense, expert
    # ZeRO-3 / FSDP keeps 16-bit sharded gradients (DeepSpeed stage 3; FSDP's bf16
    # reduce-scatter into the sharded fp32 parameter's gradient replaces the 16-bit weight
    # shard it does not keep): 16 bytes per parameter in all, Rajbhandari et al. 2020, Fig. 1.
    grad_bytes = np.where(z >= 3, 2.0, w.grad_bytes)
    gradients = grad_bytes * sharded(t_dense, t_expert, 2)
    optimizer = OPTIMIZER_STATE_BYTES_PER_PARAM[w.optimizer] * sharded(t_dense, t_expert, 1)
    # ZeRO-3 also holds the unsharded 16-bit weights of the layer being computed and of the
    # one being prefetched (FSDP's forward/backward prefetch of one unit).
    layers_stage = np.ceil(w.arch.layers / (cfg.pp * cfg.vpp)) * cfg.vpp
    unit = weight_bytes * dense / np.maximum(total_params, 1.0) / np.maximum(layers_stage, 1.0)
    # Under pipeline parallelism FSDP keeps the whole stage unsharded through the micro-batches
    # (and accumulates its 16-bit gradients unsharded until the one reduce-scatter).
    stage_16bit = unit * layers_stage
    weights = weights + np.where(z >= 3, np.where(cfg.pp > 1, stage_16bit, GATHERED_UNITS * unit), 0.0)
    if not w.frozen_base:  # (LoRA's adapters are too small to matter here)
        gradients = gradients + np.where((z >= 3) & (cfg.pp > 1), stage_16bit, 0.0)
    return weights, gradients, optimizer


def activation_memory(
    w: TrainWorkload, cfg: ParallelConfigs, act_per_token: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(activations, logits) bytes per GPU on the heavier of the first and last stages:
    what the micro-batch and recomputation set; the ZeRO stage does not change them."""
    kept, rebuilt_per_token = (
        act_per_token if act_per_token is not None else activation_per_token_layer_pair(w, cfg)
    )
    tokens_mb = cfg.micro_batch * w.seq_len / cfg.cp
    layers = layers_per_stage(w, cfg)
    num_micro = w.global_batch / (cfg.dp * cfg.micro_batch)
    in_flight = np.minimum(cfg.pp, num_micro)
    interleave = np.where(cfg.vpp > 1, 1.0 + (cfg.pp - 1.0) / (cfg.pp * cfg.vpp), 1.0)
    one_mb = kept * tokens_mb * layers
    # Full recomputation rebuilds one layer's whole activations during its backward.
    # (Named JAX policies rebuild a layer's tensors from its input the same way; a module
    # recompute keeps the stack and rebuilds only small module outputs.)
    rebuilds_layer = remat.KEPT["stack"][remat.codes(cfg.recompute)] == 0
    rebuilt = np.where(rebuilds_layer, rebuilt_per_token * tokens_mb, 0.0)
    first_stage = one_mb * in_flight * interleave + rebuilt
    # The last stage keeps one micro-batch in flight under 1F1B, plus the logits
    # [T, V/t]: see LOGITS_BYTES_PER_ENTRY.
    last_stage = one_mb * interleave + rebuilt
    logits_last = tokens_mb * w.arch.vocab / cfg.tp * LOGITS_BYTES_PER_ENTRY
    first_heavier = first_stage >= last_stage + logits_last
    activations = np.where(first_heavier, first_stage, last_stage)
    # Megatron-Core refuses layer offload (`cpu_offloading`) under pipeline parallelism
    # (transformer_config.py: "no support for Pipeline parallelism with CPU offloading"): such
    # a layout cannot run, so it cannot fit.
    # It also requires cpu_offloading_num_layers below the layer count: a policy that rounds up
    # to every layer of the stage cannot run either.
    code = remat.codes(cfg.recompute)
    offloads = remat.STACK_OFFLOADED[code] > 0
    every_layer = remat.offloaded_layers(code, float(w.arch.layers)) > w.arch.layers - 1
    activations = np.where(offloads & ((cfg.pp > 1) | every_layer), np.inf, activations)
    logits = np.where(first_heavier, 0.0, logits_last)
    return activations, logits


def _full_layer_bytes(w: TrainWorkload, cfg: ParallelConfigs) -> np.ndarray:
    none = ParallelConfigs(
        tp=cfg.tp,
        pp=cfg.pp,
        dp=cfg.dp,
        cp=cfg.cp,
        ep=cfg.ep,
        vpp=cfg.vpp,
        micro_batch=cfg.micro_batch,
        recompute=np.zeros_like(cfg.recompute),
        sequence_parallel=cfg.sequence_parallel,
        zero_stage=cfg.zero_stage,
    )
    return activation_bytes_per_token_layer(w, none)


def memory_grid(
    w: TrainWorkload,
    rows: ParallelConfigs,
    recompute: np.ndarray,
    zero: np.ndarray,
    framework_bytes: float = FRAMEWORK_BYTES,
) -> np.ndarray:
    """Bytes per GPU of every (row, recompute, ZeRO stage) layout, shape (rows, recompute,
    ZeRO): the `train_memory` total of each, from two evaluations a grid's edge long.

    The ZeRO stage changes only weights, gradients and optimizer states (`state_memory`);
    recomputation only activations and logits (`activation_memory`). So the total is the static part at
    each stage plus the activations under each recomputation: rows x (stages + modes)
    evaluations instead of rows x stages x modes (in runs of EVAL_CHUNK_ROWS evaluations).
    The sum's order differs from
    `TrainMemory.total`, so the two agree to rounding (about 1e-16 relative), not bit
    for bit: callers that cut on it leave a margin and let the exact total decide."""
    if len(rows) > EVAL_CHUNK_ROWS // max(zero.size, recompute.size, 1):
        step = max(EVAL_CHUNK_ROWS // max(zero.size, recompute.size, 1), 1)
        runs = [slice(a, a + step) for a in range(0, len(rows), step)]
        return np.concatenate([memory_grid(w, rows.take(r), recompute, zero, framework_bytes) for r in runs])
    n = len(rows)
    weights, gradients, optimizer = state_memory(
        w, replace(rows.take(np.repeat(np.arange(n), zero.size)), zero_stage=np.tile(zero, n))
    )
    if w.optimizer_offload:
        optimizer = np.zeros_like(optimizer)
    static = (weights + gradients + optimizer + framework_bytes).reshape(n, zero.size)
    activations, logits = activation_memory(
        w, replace(rows.take(np.repeat(np.arange(n), recompute.size)), recompute=np.tile(recompute, n))
    )
    return static[:, None, :] + (activations + logits).reshape(n, recompute.size)[:, :, None]
