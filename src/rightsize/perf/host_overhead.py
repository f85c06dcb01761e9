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

What else an eager layer issues, where the stack runs it:

- fp8: a Transformer Engine module in fp8 also casts its input, keeps the scaling factors for the
  backward and updates amax and scale; its host time is `te_fp8_module_factor` times the 16-bit
  module's (catalog/data/host_launch.yaml: TE issue #761, more than 2x on H100).
- Context parallelism over Transformer Engine's ring (`AttnFuncWithCP`, counted at v1.6rc2,
  attention.py): per ring step the forward waits on the previous receive (1), allocates the next
  buffer (1), posts the batched send/receive (3), slices the key/value half (2), runs the fused
  attention (1), waits and records the correction event (2), squeezes the statistics (1), merges
  the log-sum-exp (one scripted call, 1), and after the loop views and corrects that step's
  output (`flash_attn_fwd_out_correction`: subtract, exp, transpose, unsqueeze, multiply, add: 6,
  and the view: 1): 19; once per call the concatenated key/value buffer (3), the stream join
  and the cast of the statistics (2). The backward per step waits twice (2), slices the buffers
  (2), posts the send/receive (3), makes q, out and dout halves contiguous (4), runs the fused
  attention backward (1), accumulates dq (2) and dkv (unsqueeze, unsqueeze, cat, slice, add: 5):
  19; once per call the statistics' views (4), dq and the two buffers (3) and the first copy (1).
- Multi-latent attention (`MLASelfAttention`, the TE spec of gpt_layer_specs.py at 52d1d681,
  down projections unfused): the input norm as its own module (`TENorm`), the q and kv down
  projections (`TELinear`), the q and kv up projections with their norms
  (`TELayerNormColumnParallelLinear`), core attention and the out-projection: seven TE module
  calls where grouped-query attention makes three; and in `get_query_key_value_tensors` the
  split of the compressed kv (1), the views of q and kv (2), the unsqueeze of the positional
  key (1), the fused MLA rotary for q and for kv (2, counted with the attention's rotary pair),
  the three `contiguous` calls (3) and the output view (1): 8 beyond that pair. The backward
  adds the weight gradients of the five linears.
- Shared experts (`SharedExpertMLP`, DeepSeek-V3's one): fc1, the fused activation and fc2
  each layer forward, two TE modules and one op; two weight-gradient GEMMs backward.
- LoRA adapters (`frozen_base`): one adapter per adapted projection as Megatron fuses them (query,
  key and value share `linear_qkv`, gate and up share `linear_fc1`), each y + s * B(A(x)): two
  GEMMs, the scaling and the add forward (4), their backward nodes with the two weight-gradient
  GEMMs (6). This is the adapter algebra only, a lower bound for NeMo's adapter modules.
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

# Multi-latent attention and shared experts (module docstring).
MLA_TE_LINEARS = 5.0  # q and kv down projections, q and kv up projections, out-projection
MLA_OTHER_TE_MODULES = 2.0  # the input norm (TENorm) and core attention
MLA_EXTRA_OPS = 1.0 + 2.0 + 1.0 + 3.0 + 1.0
SHARED_EXPERT_TE_MODULES = 2.0
SHARED_EXPERT_OPS = 1.0

# Context parallelism over Transformer Engine's ring (module docstring).
CP_RING_FWD_OPS_PER_STEP = 1.0 + 1.0 + 3.0 + 2.0 + 1.0 + 2.0 + 1.0 + 1.0 + 6.0 + 1.0
CP_RING_FWD_FIXED_OPS = 3.0 + 2.0
CP_RING_BWD_OPS_PER_STEP = 2.0 + 2.0 + 3.0 + 4.0 + 1.0 + 2.0 + 5.0
CP_RING_BWD_FIXED_OPS = 4.0 + 3.0 + 1.0

# LoRA: adapter sites as Megatron fuses the projections, and the ops of y + s * B(A(x)).
LORA_SITES = (("q", "k", "v"), ("o",), ("gate", "up"), ("down",))
LORA_ATTENTION_SITES = 2
LORA_FWD_OPS_PER_ADAPTER = 4.0
LORA_BWD_OPS_PER_ADAPTER = 6.0

SCOPES = ("auto", "none", "moe_router+moe_preprocess", "attn+moe_router+moe_preprocess", "full_iteration")


def _modelled(w: TrainWorkload) -> bool:
    """Whether the stack's host side is modelled: 'auto' takes it as hidden, and a full-iteration
    graph issues the whole step at once."""
    if w.cuda_graph_scope not in SCOPES:
        raise ValueError(f"cuda_graph_scope {w.cuda_graph_scope!r} is not one of {SCOPES}")
    return w.cuda_graph_scope not in ("auto", "full_iteration")


def _te_module_ops(w: TrainWorkload) -> float:
    """Host operations one Transformer Engine module call weighs in this precision."""
    fp8 = host_launch_figures().te_fp8_module_factor if w.precision == "fp8" else 1.0
    return TE_MODULE_OPS * fp8


def _lora_sites(w: TrainWorkload) -> tuple[int, int]:
    """(attention, MLP) adapter sites of one layer: none for full training."""
    if not w.frozen_base:
        return 0, 0
    targets = set(w.lora_targets)
    hit = [any(name in targets for name in site) for site in LORA_SITES]
    return sum(hit[:LORA_ATTENTION_SITES]), sum(hit[LORA_ATTENTION_SITES:])


def _cp_ring_ops(w: TrainWorkload, cfg: ParallelConfigs) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) host operations Transformer Engine's context-parallel ring adds."""
    cp = cfg.cp.astype(np.float64)
    ring = (cp > 1) & (w.cp_comm == "p2p")
    fwd = np.where(ring, CP_RING_FWD_OPS_PER_STEP * cp + CP_RING_FWD_FIXED_OPS, 0.0)
    bwd = np.where(ring, CP_RING_BWD_OPS_PER_STEP * cp + CP_RING_BWD_FIXED_OPS, 0.0)
    return fwd, bwd


def _attention_ops(w: TrainWorkload, cfg: ParallelConfigs, graphed: list[str]) -> tuple[np.ndarray, ...]:
    """(modules, ring and adapters forward, ring and adapters backward) host operations of the
    attention block: the modules' backward is counted as a node per forward op, the ring's and
    the adapters' as counted (module docstring)."""
    arch = w.arch
    n = len(cfg)
    if "attn" in graphed:
        return np.full(n, GRAPH_LAUNCH_TE_MODULES * TE_MODULE_OPS), np.zeros(n), np.zeros(n)
    # the linears run in fp8; the core attention stays a 16-bit module (fp8 attention off)
    if arch.is_mla:
        ops = MLA_TE_LINEARS * _te_module_ops(w) + MLA_OTHER_TE_MODULES * TE_MODULE_OPS + MLA_EXTRA_OPS
        ops += ATTENTION_FIXED_OPS
    else:
        ops = (ATTENTION_TE_MODULES - 1.0) * _te_module_ops(w) + TE_MODULE_OPS + ATTENTION_FIXED_OPS
    if arch.rope_type == "yarn" and not arch.is_mla:
        ops += UNFUSED_ROPE_EXTRA_OPS
    if arch.qk_norm:
        ops += QK_NORM_OPS
    if arch.linear_bias:
        ops += OUT_BIAS_OPS
    ring_f, ring_b = _cp_ring_ops(w, cfg)
    sites = _lora_sites(w)[0]
    return (
        np.full(n, ops),
        ring_f + sites * LORA_FWD_OPS_PER_ADAPTER,
        ring_b + sites * LORA_BWD_OPS_PER_ADAPTER,
    )


def section_ops(w: TrainWorkload, cfg: ParallelConfigs, moe: bool) -> tuple[np.ndarray, ...]:
    """(experts, attention, router) operations the host issues per layer forward, and the
    backward's total, each over the configurations (module docstring)."""
    arch = w.arch
    n = len(cfg)
    graphed = w.cuda_graph_scope.split("+")
    te_ops = _te_module_ops(w)
    modules, extra_f, extra_b = _attention_ops(w, cfg, graphed)
    attention = modules + extra_f
    mlp_sites = _lora_sites(w)[1]
    if not (moe and arch.is_moe):
        # a dense MLP: two TE modules and the activation, issued with the attention block
        mlp = 2.0 * te_ops + ACTIVATION_OPS + 2.0
        zero = np.zeros(n)
        extra_f = extra_f + mlp_sites * LORA_FWD_OPS_PER_ADAPTER
        extra_b = extra_b + mlp_sites * LORA_BWD_OPS_PER_ADAPTER
        return zero, modules + mlp + extra_f, zero, 2.0 * (modules + mlp) + 5.0 + extra_b
    local = arch.experts / cfg.ep
    glu_clamp = arch.glu_clamp is not None and arch.mlp == "swiglu"
    experts = (
        EXPERT_FIXED_OPS
        + EXPERT_TE_MODULES * te_ops
        + (CLAMPED_ACTIVATION_OPS if glu_clamp else ACTIVATION_OPS)
        + EXPERT_GEMMS_PER_LOCAL_EXPERT * local
        + mlp_sites * LORA_FWD_OPS_PER_ADAPTER * local
    )
    experts = experts + arch.shared_experts * (SHARED_EXPERT_TE_MODULES * te_ops + SHARED_EXPERT_OPS)
    if arch.linear_bias:
        experts = experts + EXPERT_BIAS_FIXED_OPS + EXPERT_BIAS_OPS_PER_LOCAL_EXPERT * local
    if "moe_router" in graphed:
        router = np.full(n, GRAPH_LAUNCH_TE_MODULES * TE_MODULE_OPS + DTOH_OPS)
    else:
        router = np.full(n, ROUTER_OPS + PREPROCESS_OPS + DTOH_OPS)
    # backward: a node per forward op, plus the weight-gradient GEMMs (attention's three TE
    # modules unless graphed, the router, fc1 and fc2 per local expert); graphed scopes replay
    # their backward as one launch
    wgrad = EXPERT_GEMMS_PER_LOCAL_EXPERT * local + 1.0 + SHARED_EXPERT_TE_MODULES * arch.shared_experts
    attention_wgrad = MLA_TE_LINEARS if arch.is_mla else ATTENTION_TE_MODULES
    wgrad = wgrad + (0.0 if "attn" in graphed else attention_wgrad)
    lora_bwd = mlp_sites * (LORA_BWD_OPS_PER_ADAPTER - LORA_FWD_OPS_PER_ADAPTER) * local
    bwd = experts + modules + router - DTOH_OPS + wgrad + extra_b + lora_bwd
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
