"""Layer costs of the fine-grained MoE architectures' own features, as Megatron-Core runs them.

GPT-OSS (openai/gpt-oss-120b config.json) adds to a Qwen-style MoE layer: biased linears and
experts, a clamped SwiGLU, alternating 128-token sliding-window layers, learned attention sinks
and YaRN rotary scaling. Each costs (or saves) what the pinned stack's code does with it: the
Megatron-LM commit Megatron-Bridge pins for its 26.04-era performance recipes (3rdparty submodule
52d1d681, 2026-05-30) with Transformer Engine f8a01cd5 and cuDNN 9.13.1+. The 26.04 table itself
ran the NeMo 26.04 container: Megatron-Bridge 0.4.0, Megatron-Core 0.17.0rc0 (its submodule
d7288711, 2026-04-09), Transformer Engine 2.14, cuDNN 9.20 (Megatron-Bridge
docs/releases/software-versions.md); every code path cited below (`_apply_bias`,
`weighted_bias_quick_geglu_impl`'s clamp and cat, `sort_chunks_by_idxs`, `before_ep_alltoall`,
`_HybridEPManager`) reads the same at d7288711, and TE 2.14 (71bbefb) selects cuDNN's
F16_arbitrary_seqlen backend for the learnable softmax with a (127, 0) window, since nothing in
the GPT-OSS runs sets NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 (`get_attention_backend` drops
FusedAttention for sinks only when deterministic). Every figure below is bytes over achievable
HBM bandwidth or work skipped by a kernel, never a factor fitted to a row.

Attention checked against cuDNN's own published timings (tests/test_gptoss_cudnn_published.py):
NVIDIA/cudnn-frontend's training SDPA benchmark (cuDNN 9.22, GB200 and GB300, commit fb682ce7)
runs exactly one GPT-OSS windowed layer per micro-batch of 4 (256 batch x head tiles of 4,096
rows, head dim 64, window 128): GB200 0.210 ms forward, 0.465 ms backward, where this module's
window model gives 0.76x and 0.86x of that; GB300 0.202 / 0.442 ms, modelled at 0.52x / 0.59x (the
catalog's doubled Blackwell Ultra SFU rate does not show in the band kernel). Both gaps together
are under 3% of a modelled GPT-OSS layer: the attention, sinks and windows included, is not the
missing ~20 us per token per GPU of the 26.04 Blackwell rows.

- Sliding window (Megatron `window_size`, `window_attn_skip_freq`): Transformer Engine runs it in
  cuDNN's fused attention (TE `get_attention_backend`: FusedAttention supports a (left, 0) window
  with a causal mask, and learnable softmax from cuDNN 9.13.1, `fused_attn.cpp`), which skips the
  key tiles outside the band: a windowed layer visits the diagonal tile and the ceil(W / tile) tiles
  before it, not the causal triangle; short key ranges also run less efficiently
  (`attention_efficiency`'s keys / (keys + half)).
- Attention sinks: one extra logit per softmax row in the same cuDNN kernel, and the sink
  gradient a per-head reduction of statistics it already keeps: no pass over the scores.
- Clamped SwiGLU (`activation_func_clamp_value`): `weighted_bias_quick_geglu_impl`
  (megatron/core/fusions/fused_bias_geglu.py) splits the fc1 output, clamps each half and
  concatenates them in eager PyTorch before the fused activation: per fc1-output element, read 2
  and write 2 bytes for the clamps and again for the concatenation (8); backward, the clamp masks
  read the gradient and the input and write the gradient (6), and the split's gradient is
  concatenated (4). Under `moe_act` recomputation the clamps run again with the activation.
- Expert output bias: the experts' fc2 is built with skip_bias_add, and `TEGroupedMLP._apply_bias`
  (megatron/core/transformer/moe/experts.py) adds `bias * prob` per local expert in a Python loop
  and concatenates: the product written (2), the sum read 4 and written 2, the concatenation read
  and written (4): 12 bytes per routed element in 16 bit (router probabilities in the logits'
  dtype: no moe_router_dtype in the recipe); backward, the bias and probability gradients each a
  product and a reduction over the same elements (12). Three kernels per local expert forward
  (product, sum, and its share of the concatenation) and four backward.
- Attention output bias: GPT-OSS runs with bias_dropout_fusion off (TEGroupedMLP asserts it off
  with biased experts), so the out-projection's bias is added in its own pass (read 2, write 2
  per element of the hidden state) and its gradient is a reduction (read 2).
- Query/key norm (Qwen3; Megatron `qk_layernorm`, a TENorm on each head's queries and keys in
  `SelfAttention.get_query_key_value_tensors`): an RMSNorm reads and writes each query and key
  element (4 bytes) forward and reads the gradient and the input and writes the gradient (6)
  backward.
- YaRN rotary: Megatron-Bridge turns rope fusion off for any position embedding but plain 'rope'
  (`validate_rope_fusion_compatibility`, src/megatron/bridge/utils/fusions.py), so queries and keys
  go through `_apply_rotary_pos_emb_bshd` (megatron/core/models/common/embeddings/rope_utils.py):
  t * cos (4 bytes per element), the rotated half's negation (2) and concatenation (4), times sin
  (4), the sum (6) and the closing concatenation (4): 24 bytes forward where a fused kernel moves
  4, and about 20 backward where it moves 8.

Expert GEMMs (no term here; perf.layer's `_moe_mlp_times` times them): `TEGroupedMLP` runs fc1 and
fc2 through Transformer Engine's `GroupedLinear`, whose `nvte_multi_tensor_gemm` at f8a01cd5 issues
one cuBLASLt GEMM per local expert, round-robin over 4 compute streams (`multi_stream_cublas_gemm`,
transformer_engine/common/gemm/cublaslt_gemm.cu; the CUTLASS grouped kernel is opt-in and
Hopper-only, `NVTE_USE_CUTLASS_GROUPED_GEMM`). perf.layer times each local expert as its own GEMM
on its routed rows, so each pays its own tile rounding, wave tail, K fill and launch: GPT-OSS at
EP8 on B200 (16 experts of ~4.1k rows) costs 1.21x one GEMM over the concatenated rows, 1.06x on
H100, 1.02x at EP64 (2 experts of ~33k rows). Serialising the experts ignores the streams' overlap
of one expert's tail with the next one's first wave, so this errs slow, not fast. A shape-based
grouped-GEMM penalty on top was tested against training_more.csv (issue 27) and refuted: the rows
that validate (DeepSeek-V3 B200 EP8: ~1k rows per expert, fc2 K 2048; Qwen3-235B: fc2 K 1536) have
smaller expert GEMMs than GPT-OSS (~4.1k-33k rows, K 2880), and slowing every expert GEMM 1.5x
leaves GPT-OSS on Blackwell +14..33% while those rows go to -10%. Published kernel timings say the
same (tests/test_moe_grouped_gemm_published.py): TE PR #2045 measured the multi-stream path on
H100 (TE 2.7, CUDA 12.9) at Qwen3-30B-A3B's expert shapes, 628 and 554 TFLOP/s for 8 x 4,096 and
16 x 2,048 rows of width 768, hidden 2048, where the serial model takes 1.26-1.55x the time: it
errs slow at narrow widths. The four streams (TE v2.14 `get_num_compute_streams()` = 4) timed as
concurrent rounds of four experts meet those figures within 8%, but move every training_more.csv
MoE row faster (median 14.3% -> 19.5%, GPT-OSS B300 +62% -> +68%): not adopted while the rows'
missing cost is unknown. Where it is not (issue 27, 2026-11-26, nothing fitted): not the 16-bit
expert GEMMs, since the model's MXFP8 GPT-OSS steps (H100: FP8) run 1.09-1.19x faster than its
BF16 ones where Megatron-Bridge issue #3389 (26.04) measured about 1.05x, so the missing time
does not shrink with the GEMMs' precision; not per micro-batch host work alone, since the 25.11
table's GPT-OSS rows at 8,192 tokens (GB300 micro-batch 2, GB200 micro-batch 1) read +42%, as
the 4,096-token rows do.

And by dispatcher (Megatron-Core token_dispatcher.py), over perf.layer's one permutation before the
dispatch and one unpermutation after the combine (read h and write k h, and back):

- alltoall: with more than one local expert, `dispatch_postprocess` sorts the received copies by
  local expert (`sort_chunks_by_idxs`, "Permutation 2") and `combine_preprocess` unsorts them: read
  and write k h twice more, forward and again backward.
- deepep: `_DeepepManager.get_permuted_hidden_states_by_experts` permutes the received tokens into
  expert order and `get_restored_hidden_states_by_experts` unpermutes them: the same passes.
- hybridep: `_HybridEPManager.dispatch` permutes the received tokens in its own blocks
  (`num_blocks_permute`) and `combine` unpermutes them, each a pass like perf.layer's pair; only
  `moe_permute_fusion_into_hybridep` (default False, unset by the recipes) folds them into the
  communication kernel. Nothing beyond perf.layer's pair: as 'auto'.

Small kernels and latency-bound collectives (issue 27): each device kernel costs at least the
accelerator's `kernel_overhead_s` (launch and tail) however little it moves, and perf.layer times
only the GEMMs, the elementwise passes and the token all-to-alls. The MoE layer's other kernels on
the main stream, counted from Megatron-Core 0.13.0 (router.py, token_dispatcher.py, moe_utils.py;
the host-side operations of perf.host_overhead, less the views, the gating GEMM and the copies that
`cuda_dtoh_stream` runs beside the main stream): forward, the router's fused top-k and the forced
balance's random scores (4, perf.host_overhead's ROUTER_OPS less the gating GEMM), the fused
permutation (2) and unpermutation (1); with expert parallelism, `preprocess`'s count reductions
and the local-expert slice (6: `routing_map.sum`, the input-split sum, the `.contiguous()` slice,
the per-rank, per-TP and per-local-expert sums); under the alltoall dispatcher with several local
experts the sort pair (2). Backward, one kernel per differentiable forward kernel: the fused
top-k, the permutation pair's inverse, the unpermutation's and the sort pair's (4 + 2). The
alltoall dispatcher also runs, beside the token all-to-alls perf.layer times, the all-gather of
the per-expert counts over the EP group (`gather_from_sequence_parallel_region`) and the routing
probabilities' all-to-all, forward, and that all-to-all's gradient backward: a few bytes each, so
each costs its collective's latency steps (perf.collectives).
"""

from __future__ import annotations

import numpy as np

from rightsize.perf import collectives as coll
from rightsize.perf.hardware import Hardware
from rightsize.perf.host_overhead import ROUTER_OPS
from rightsize.perf.workload import ParallelConfigs, TrainWorkload

ACT_BYTES = 2.0

# Key tile of the fused attention kernels (FlashAttention-2's 128-row blocks, Dao 2023 sec. 3.2;
# cuDNN and FA3 tile the same way): a window's work is counted in whole tiles.
ATTENTION_KEY_TILE = 128.0

# Clamped GLU (fused_bias_geglu.weighted_bias_quick_geglu_impl): bytes per fc1-output element.
CLAMP_FWD_BYTES = 8.0
CLAMP_BWD_BYTES = 10.0
# Expert output bias in TEGroupedMLP._apply_bias: bytes per routed element of the hidden state.
EXPERT_BIAS_FWD_BYTES = 12.0
EXPERT_BIAS_BWD_BYTES = 12.0
EXPERT_BIAS_KERNELS_FWD = 3.0  # per local expert
EXPERT_BIAS_KERNELS_BWD = 4.0
# Out-projection bias outside a fused bias-dropout-add: per hidden element.
OUT_BIAS_FWD_BYTES = 4.0
OUT_BIAS_BWD_BYTES = 2.0
# Unfused rotary embedding over the query and key elements, over what a fused kernel moves
# (perf.layer counts 4 forward and 8 backward per element).
UNFUSED_ROPE_EXTRA_FWD_BYTES = 24.0 - 4.0
UNFUSED_ROPE_EXTRA_BWD_BYTES = 20.0 - 8.0
# Small kernels of a MoE layer that no other term times (module docstring), per micro-batch.
ROUTER_KERNELS_FWD = ROUTER_OPS - 1.0  # fused top-k (2), forced-balance scores (2); not the GEMM
PERMUTE_KERNELS_FWD = 2.0 + 1.0  # fused permutation, unpermutation
PREPROCESS_KERNELS_FWD = 6.0  # count reductions and the local-expert slice (expert parallelism)
SORT_KERNELS = 2.0  # alltoall dispatcher's sort and unsort by local expert, each way
MOE_KERNELS_BWD = 1.0 + 2.0 + 1.0  # fused top-k, permutation pair, unpermutation
# Query/key RMSNorm: per query and key element.
QK_NORM_FWD_BYTES = 4.0
QK_NORM_BWD_BYTES = 6.0


def windowed_layer_share(w: TrainWorkload) -> float:
    """Share of the layers that attend through the sliding window (0 without one): all but every
    `full_attention_every`-th (Megatron's `is_layer_window_attention`: layer n, counted from 1,
    attends fully when n % skip_freq == 0)."""
    arch = w.arch
    if arch.sliding_window is None or arch.sliding_window >= w.seq_len:
        return 0.0
    full = arch.layers // arch.full_attention_every
    return (arch.layers - full) / arch.layers


def attention_time_factor(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware) -> np.ndarray:
    """Attention core time of the average layer over the time of a full causal layer.

    A windowed layer's query tile visits the key tiles its band touches, ceil(W / tile) + 1,
    where a causal one visits (n + 1) / 2 of its n = s / tile on average; its kernel also runs
    at the short-key efficiency keys / (keys + half) against the causal layer's (perf.attention)."""
    share = windowed_layer_share(w)
    window = w.arch.sliding_window
    if share == 0.0 or window is None:
        return np.ones(len(cfg))
    s = w.seq_len / cfg.cp
    tiles = np.maximum(np.ceil(s / ATTENTION_KEY_TILE), 1.0)
    causal_tiles = (tiles + 1.0) / 2.0
    window_tiles = np.minimum(np.ceil(float(window) / ATTENTION_KEY_TILE) + 1.0, causal_tiles)
    half = hw.attention_seq_half_tokens
    window_keys, causal_keys = window_tiles * ATTENTION_KEY_TILE, causal_tiles * ATTENTION_KEY_TILE
    efficiency_ratio = (window_keys / (window_keys + half)) / (causal_keys / (causal_keys + half))
    window_time = window_tiles / causal_tiles / efficiency_ratio
    return (1.0 - share) + share * np.minimum(window_time, 1.0)


def _routed_rows(w: TrainWorkload, cfg: ParallelConfigs, load: np.ndarray) -> np.ndarray:
    """Routed token copies the busiest GPU's experts process per micro-batch."""
    rows = cfg.micro_batch * w.seq_len / cfg.cp
    return rows * w.arch.experts_per_token * load


def dispatcher_bytes_per_token(w: TrainWorkload, cfg: ParallelConfigs, load: np.ndarray) -> np.ndarray:
    """Forward bytes per token that the named dispatcher moves beyond perf.layer's permutation
    pair: the second sort and unsort of the alltoall dispatcher (with more than one local expert)
    and DeepEP's post-dispatch permutation pair; backward moves the same again (a sort's gradient
    is the inverse sort)."""
    arch = w.arch
    zero = np.zeros(len(cfg))
    if not arch.is_moe or w.moe_dispatcher not in ("alltoall", "deepep"):
        return zero
    routed = arch.experts_per_token * load
    local_many = (
        arch.experts / cfg.ep > 1 if w.moe_dispatcher == "alltoall" else np.ones(len(cfg), dtype=bool)
    )
    # sort and unsort: each reads and writes the routed copies (k h, 16 bit); received tokens are
    # whole on each TP rank (expert tensor parallelism 1)
    return np.where((cfg.ep > 1) & local_many, 2.0 * 2.0 * ACT_BYTES * routed * float(arch.hidden), 0.0)


def feature_elementwise_s(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, moe: bool, load: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(forward, backward, repeated under `moe_act`) seconds per layer per micro-batch of the
    memory passes and kernels the architecture's features add, and of a MoE layer's small kernels
    and metadata collectives (module docstring); zero for an architecture without them. `load` is
    the busiest GPU's routed load factor (perf.layer)."""
    arch = w.arch
    zero = np.zeros(len(cfg))
    mem_bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    rows = cfg.micro_batch * w.seq_len / cfg.cp
    h = float(arch.hidden)
    fwd_bytes, bwd_bytes, act_bytes = zero.copy(), zero.copy(), zero.copy()
    kernels_f, kernels_b = zero.copy(), zero.copy()
    qk = float(arch.heads + arch.kv_heads) * arch.head_dim / cfg.tp
    if arch.rope_type == "yarn" and not arch.is_mla:
        fwd_bytes = fwd_bytes + rows * qk * UNFUSED_ROPE_EXTRA_FWD_BYTES
        bwd_bytes = bwd_bytes + rows * qk * UNFUSED_ROPE_EXTRA_BWD_BYTES
    if arch.qk_norm and not arch.is_mla:
        fwd_bytes = fwd_bytes + rows * qk * QK_NORM_FWD_BYTES
        bwd_bytes = bwd_bytes + rows * qk * QK_NORM_BWD_BYTES
    if arch.linear_bias:
        hidden = np.where(cfg.sequence_parallel, rows * h / cfg.tp, rows * h)
        fwd_bytes = fwd_bytes + hidden * OUT_BIAS_FWD_BYTES
        bwd_bytes = bwd_bytes + hidden * OUT_BIAS_BWD_BYTES
    if moe and arch.is_moe:
        routed = _routed_rows(w, cfg, load)
        f_e = float(arch.expert_ffn_hidden or arch.ffn_hidden)
        if arch.glu_clamp is not None and arch.mlp == "swiglu":
            fc1_out = routed * 2.0 * f_e / cfg.tp
            fwd_bytes = fwd_bytes + fc1_out * CLAMP_FWD_BYTES
            bwd_bytes = bwd_bytes + fc1_out * CLAMP_BWD_BYTES
            act_bytes = act_bytes + fc1_out * CLAMP_FWD_BYTES
        if arch.linear_bias:
            out = routed * h
            fwd_bytes = fwd_bytes + out * EXPERT_BIAS_FWD_BYTES
            bwd_bytes = bwd_bytes + out * EXPERT_BIAS_BWD_BYTES
            local = arch.experts / cfg.ep
            kernels_f = kernels_f + EXPERT_BIAS_KERNELS_FWD * local
            kernels_b = kernels_b + EXPERT_BIAS_KERNELS_BWD * local
    if moe:
        extra = rows * dispatcher_bytes_per_token(w, cfg, load)
        fwd_bytes, bwd_bytes = fwd_bytes + extra, bwd_bytes + extra
    fwd = fwd_bytes / mem_bw + kernels_f * hw.kernel_overhead_s
    bwd = bwd_bytes / mem_bw + kernels_b * hw.kernel_overhead_s
    if moe:
        small_f, small_b = moe_small_kernels_s(w, cfg, hw)
        fwd, bwd = fwd + small_f, bwd + small_b
    return fwd, bwd, act_bytes / mem_bw


def moe_small_kernels_s(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware
) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) seconds per MoE layer per micro-batch of the small router, permutation
    and dispatch-preprocessing kernels and the latency-bound metadata collectives (module
    docstring); zero for a dense layer."""
    zero = np.zeros(len(cfg))
    if not w.arch.is_moe:
        return zero, zero
    ep_on = cfg.ep > 1
    alltoall = w.moe_dispatcher == "alltoall"
    sort = np.where(ep_on & (w.arch.experts / cfg.ep > 1), SORT_KERNELS, 0.0) if alltoall else zero
    kernels_f = ROUTER_KERNELS_FWD + PERMUTE_KERNELS_FWD + np.where(ep_on, PREPROCESS_KERNELS_FWD, 0.0) + sort
    kernels_b = MOE_KERNELS_BWD + sort
    fwd = kernels_f * hw.kernel_overhead_s
    bwd = kernels_b * hw.kernel_overhead_s
    if alltoall:
        grp = cfg.tp * cfg.cp
        rows = cfg.micro_batch * w.seq_len / cfg.cp
        counts_bytes = 8.0 * w.arch.experts * cfg.ep  # int64 per expert, gathered from every EP rank
        probs_bytes = ACT_BYTES * rows * w.arch.experts_per_token  # in the logits' 16 bit
        bw, lat = coll.group_link(cfg.ep, grp, hw)
        gather = coll.all_gather_s(counts_bytes, cfg.ep, bw, lat)
        probs = coll.all_to_all_group_s(probs_bytes, cfg.ep, grp, hw)
        fwd, bwd = fwd + np.where(ep_on, gather + probs, 0.0), bwd + np.where(ep_on, probs, 0.0)
    # the torus-domain accelerators run compiled stacks (XLA on TPU, Neuron on Trainium), which
    # fuse these operations into their programs: Megatron-Core's kernel counts do not apply
    eager = np.asarray(hw.torus_dims) == 0
    return np.where(eager, fwd, 0.0), np.where(eager, bwd, 0.0)
