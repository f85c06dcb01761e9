"""Host launch time an eagerly run layer exposes, as Megatron-Core runs a MoE layer (issue 27).

Without a CUDA graph the host issues every operation (Python module call, PyTorch dispatch, CUDA
launch). While the host runs ahead of the device this costs nothing: the kernels queue. A
host<->device synchronisation empties the queue, and from there the device runs each kernel no
earlier than the host has issued it. For one in-order stream, with the ops after the
synchronisation in sections s = 1..n (host time H_s to issue, device time D_s to run), the
segment ends at

    T = max_k ( H_1 + ... + H_{k-1} + D_k + ... + D_n ),  k = 1 .. n + 1

(k = 1: the device is the bottleneck, only the first issue is exposed; k = n + 1: the host is).
The exposed host time is T - (D_1 + ... + D_n). Where no synchronisation interrupts, the host
stays ahead unless it is slower than the device over the whole stretch: max(0, H - D).

The synchronisation (Megatron-Core 52d1d681, the commit Megatron-Bridge 07eea52d pins for the
26.04 recipes): dropless MoE with expert parallelism needs the per-rank token counts on the host
for the all-to-all splits and for Transformer Engine's grouped GEMM `m_splits`:
`MoEAlltoAllTokenDispatcher` copies them device-to-host and waits at `before_ep_alltoall`
(`_maybe_dtoh_and_synchronize`, token_dispatcher.py), and HybridEP sizes its buffers from
`tokens_per_expert` (`_HybridEPManager.dispatch`, 'CPU sync') before `TEGroupedMLP.forward`'s
`tokens_per_expert.tolist()`. One per MoE layer forward; the backward reuses the host-side
splits (no synchronisation). Padding to capacity (`moe_pad_expert_input_to_capacity`) or a
full-iteration graph (`cuda_graph_impl='local'`, `full_iteration`, with a static expert
budget) removes it.

Sections after the synchronisation, in launch order, and the operations the host issues in each
(counted from Megatron-Core 52d1d681 and Transformer Engine f8a01cd5; a Transformer Engine module
call weighs TE_MODULE_OPS operations, the CPU time of a te.Linear forward over a torch Linear
forward in TransformerEngine issue #2053, 99.66 / 37.08 us on GB200):

1. experts, dispatch to combine: the token and probability all-to-alls (2), the sort by local
   expert (`sort_chunks_by_idxs`, fused: 1 each way), fc1 and fc2 (`TEGroupedMLP`, two TE
   modules, and one cuBLAS launch per local expert each, `general_grouped_gemm`), the activation
   (`weighted_bias_swiglu_impl`: 1; the clamped GLU's chunk, two clamps, cat and fused kernel: 5),
   the combine all-to-all (1), the unpermute (fused: 1) and the bias-dropout-add (2); with biased
   experts `_apply_bias`'s split pair (2), two kernels per local expert and the concatenation (1).
2. attention of the next layer: input norm and QKV (`TELayerNormLinear`), core attention
   (`TEDotProductAttention`) and out-projection (`TELinear`), three TE modules; the fused rotary
   on query and key (2; unfused YaRN: `_apply_rotary_pos_emb_bshd`'s six kernels each, 12);
   the query/key norms (2); the out-projection bias when not fused (1); the bias-dropout-add (2)
   and the pre-MLP norm (1). A Transformer Engine graph over `attn` issues it as one launch.
3. router and dispatch preprocessing up to the synchronisation: the gating GEMM (1), the fused
   top-k (2), forced load balancing's random scores (2), `preprocess`'s count reductions,
   all-gather and reshapes (10), the six device-to-host copies with their stream wait and event
   (8) and the first permutation (fused: 2). A graph over `moe_router` and `moe_preprocess`
   launches them at once; the copies are made outside it (`cuda_dtoh_point` moves to
   `before_ep_alltoall`).

Backward (autograd): one backward node per forward operation and the weight-gradient GEMM of
each linear (three attention TE modules, the router, fc1 and fc2 per local expert). Transformer
Engine graphs capture the backward of their scope too.
"""

from __future__ import annotations

import numpy as np

from rightsize.catalog.host_launch import host_launch_figures
from rightsize.perf.hardware import Hardware
from rightsize.perf.workload import ParallelConfigs, TrainWorkload

# te.Linear forward CPU time over a torch Linear forward on GB200 (TE issue #2053: 99.66 / 37.08 us)
TE_MODULE_OPS = 99.66 / 37.08

# Section 1: the expert path from the dispatch to the residual add.
EXPERT_FIXED_OPS = 2.0 + 2.0 + 1.0 + 1.0 + 2.0  # all-to-alls, sort pair, combine, unpermute, bias-dropout-add
EXPERT_TE_MODULES = 2.0  # fc1, fc2 (TEGroupedMLP)
EXPERT_GEMMS_PER_LOCAL_EXPERT = 2.0  # fc1 and fc2 cuBLAS launches
ACTIVATION_OPS = 1.0  # weighted_bias_swiglu_impl
CLAMPED_ACTIVATION_OPS = 5.0  # chunk, clamp, clamp, cat, fused GLU
EXPERT_BIAS_FIXED_OPS = 3.0  # the two splits and the concatenation
EXPERT_BIAS_OPS_PER_LOCAL_EXPERT = 2.0  # b * p, t + (b * p)

# Section 2: the attention block.
ATTENTION_TE_MODULES = 3.0  # TELayerNormLinear, TEDotProductAttention, TELinear
ATTENTION_FIXED_OPS = 2.0 + 2.0 + 1.0  # rotary on q and k, bias-dropout-add, pre-MLP norm
UNFUSED_ROPE_EXTRA_OPS = 12.0 - 2.0
QK_NORM_OPS = 2.0
OUT_BIAS_OPS = 1.0

# Section 3: router and dispatch preprocessing up to the synchronisation.
ROUTER_OPS = 1.0 + 2.0 + 2.0  # gating GEMM, fused top-k, forced-balance scores
PREPROCESS_OPS = 10.0 + 2.0  # count reductions / all-gather / reshapes, first permutation
DTOH_OPS = 8.0  # stream wait, six copies, event
GRAPH_LAUNCH_TE_MODULES = 1.0  # a Transformer Engine graphed callable: one module call

SCOPES = ("auto", "none", "moe_router+moe_preprocess", "attn+moe_router+moe_preprocess", "full_iteration")


def _modelled(w: TrainWorkload) -> bool:
    """Whether the stack's host side is modelled: 'auto' takes it as hidden, and a full-iteration
    graph issues the whole step at once."""
    if w.cuda_graph_scope not in SCOPES:
        raise ValueError(f"cuda_graph_scope {w.cuda_graph_scope!r} is not one of {SCOPES}")
    return w.cuda_graph_scope not in ("auto", "full_iteration")


def section_ops(w: TrainWorkload, cfg: ParallelConfigs, moe: bool) -> tuple[np.ndarray, ...]:
    """(experts, attention, router) operations the host issues per layer forward, and the
    backward's total, each over the configurations (module docstring)."""
    arch = w.arch
    n = len(cfg)
    graphed = w.cuda_graph_scope.split("+")
    if "attn" in graphed:
        attention = np.full(n, GRAPH_LAUNCH_TE_MODULES * TE_MODULE_OPS)
    else:
        attention_ops = ATTENTION_TE_MODULES * TE_MODULE_OPS + ATTENTION_FIXED_OPS
        if arch.rope_type == "yarn" and not arch.is_mla:
            attention_ops += UNFUSED_ROPE_EXTRA_OPS
        if arch.qk_norm:
            attention_ops += QK_NORM_OPS
        if arch.linear_bias:
            attention_ops += OUT_BIAS_OPS
        attention = np.full(n, attention_ops)
    if not (moe and arch.is_moe):
        # a dense MLP: two TE modules and the activation, issued with the attention block
        mlp = 2.0 * TE_MODULE_OPS + ACTIVATION_OPS + 2.0
        zero = np.zeros(n)
        fwd = attention + mlp
        return zero, fwd, zero, 2.0 * fwd + 5.0
    local = arch.experts / cfg.ep
    glu_clamp = arch.glu_clamp is not None and arch.mlp == "swiglu"
    experts = (
        EXPERT_FIXED_OPS
        + EXPERT_TE_MODULES * TE_MODULE_OPS
        + (CLAMPED_ACTIVATION_OPS if glu_clamp else ACTIVATION_OPS)
        + EXPERT_GEMMS_PER_LOCAL_EXPERT * local
    )
    if arch.linear_bias:
        experts = experts + EXPERT_BIAS_FIXED_OPS + EXPERT_BIAS_OPS_PER_LOCAL_EXPERT * local
    if "moe_router" in graphed:
        router = np.full(n, GRAPH_LAUNCH_TE_MODULES * TE_MODULE_OPS + DTOH_OPS)
    else:
        router = np.full(n, ROUTER_OPS + PREPROCESS_OPS + DTOH_OPS)
    # backward: a node per forward op, plus the weight-gradient GEMMs (attention's three TE
    # modules unless graphed, the router, fc1 and fc2 per local expert); graphed scopes replay
    # their backward as one launch
    wgrad = EXPERT_GEMMS_PER_LOCAL_EXPERT * local + 1.0
    wgrad = wgrad + (0.0 if "attn" in graphed else ATTENTION_TE_MODULES)
    bwd = experts + attention + router - DTOH_OPS + wgrad
    return experts, attention, router, bwd


def exposed_host_s(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    moe: bool,
    device: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) host seconds per layer per micro-batch that the device waits for.

    `device` is (the expert path's forward seconds, the whole layer's forward, its backward) on
    the device. A MoE layer's forward is one synchronised segment (experts, then the
    next layer's attention, then the router; the module docstring's formula); the backward, and
    a dense layer, are exposed only where the host is slower than the device over the stretch."""
    zero = np.zeros(len(cfg))
    if not _modelled(w):
        return zero, zero
    per_op = host_launch_figures().per_op_s_for(hw.accelerator_id)
    experts, attention, router, bwd = section_ops(w, cfg, moe)
    d_experts, d_total, d_bwd = device
    d_rest = d_total - d_experts
    h_bwd = bwd * per_op
    exposed_b = np.maximum(h_bwd - d_bwd, 0.0)
    if not (moe and w.arch.is_moe):
        h_fwd = (experts + attention + router) * per_op
        return np.maximum(h_fwd - d_total, 0.0), exposed_b
    h_e, h_a, h_r = experts * per_op, attention * per_op, router * per_op
    # the router's device work is small beside the GEMMs: all the rest runs with the attention
    end = np.maximum.reduce([per_op + d_total, h_e + d_rest, h_e + h_a, h_e + h_a + h_r])
    exposed_f = np.where(cfg.ep > 1, end - d_total, np.maximum(h_e + h_a + h_r - d_total, 0.0))
    return exposed_f, exposed_b
