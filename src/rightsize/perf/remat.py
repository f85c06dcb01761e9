"""Activation recomputation (remat) policies by name: what each keeps in accelerator memory,
what it moves to host memory, and which forward work it repeats during the backward pass.

Megatron-LM names two policies (Korthikanti et al. 2022): `selective` recomputes only the
attention core (scores, softmax, values) and `full` keeps each layer's input and repeats the
whole layer. MaxText (JAX) names its policies after the tensors `jax.checkpoint` may keep
(`MaxText/layers/models.py`, `MaxText/configs/base.yml`, google/maxtext at e64f6813, Oct
2024): a scanned layer always keeps its input (the scan carry) and each policy saves some
of the named matmul outputs (`query_proj`, `key_proj`, `value_proj`, `out_proj`, `mlpwi`,
`mlpwo`); everything else the backward needs is rebuilt from the layer input:

| policy | kept on device (besides the layer input) | rebuilt in backward |
| --- | --- | --- |
| minimal (`checkpoint_dots_with_no_batch_dims`) | q, k, v, out_proj, MLP up (wi), MLP down (wo) | attention core, norms/activation |
| minimal_flash | as minimal, plus the attention output (`context`) | norms/activation |
| save_dot_except_mlpwi | q, k, v, out_proj, wo | attention core, MLP up GEMMs, elementwise |
| save_dot_except_mlp | q, k, v, out_proj | attention core, MLP up GEMMs, elementwise |
| save_qkv_proj | q, k, v | attention core, out-projection, MLP up, elementwise |
| save_out_proj | out_proj | QKV, attention core, MLP up, elementwise |
| qkv_proj_offloaded | nothing: q, k, v go to pinned host memory | as save_qkv_proj |
| minimal_offloaded | nothing: minimal's tensors go to pinned host memory | as minimal |
| input_qkv_offloaded | nothing: the layer input and q, k, v go to host memory | as save_qkv_proj |
| input_qkv_out_offloaded | nothing: the layer input, q, k, v and out_proj go to host | as save_dot_except_mlp |
| input_offloaded | nothing: the layer input goes to host memory | everything, as full |
| save_qkv_context | q, k, v and the attention output (`context`) | out-projection, MLP up, elementwise |

`input_qkv_offloaded` and `input_qkv_out_offloaded` are MaxText's `remat_policy: custom` as the
Trillium recipes set it
(`decoder_layer_input`, `query_proj`, `key_proj`, `value_proj` and, for Llama 3.1 8B and 405B,
`out_proj` set to `offload`; benchmarks/maxtext_trillium_model_configs.py): even the scan
carry leaves the device, which is what lets Llama 3.1 405B train on 32 GB v6e chips.
`input_offloaded` and `save_qkv_context` are the Ironwood (TPU7x) recipes' `custom` policies
(AI-Hypercomputer/tpu-recipes training/ironwood, run_recipe.sh): Llama 3.1 405B FP8 sets only `decoder_layer_input=offload`, so every other named
tensor is rebuilt (full recomputation, the scan carry in host memory); Llama 3.1 70B (BF16 and
FP8, 8K) sets `decoder_layer_input`, `query_proj`, `key_proj`, `value_proj` and `context` to
`device`. In MaxText's custom policy every tensor left unnamed is `remat` (configs/types.py,
RematAndOffload: `decoder_layer_input` defaults to `device`, the others to `remat`); keeping
`context` with q, k and v spares the attention kernel's rerun, as `minimal_flash` does.

torchtitan's op-level selective checkpointing (`activation_checkpoint.mode: selective`,
`selective_ac_option: op`; torchtitan's `_apply_ac_to_transformer_block`, Dec 2024) saves the
outputs of every other matmul of a block (the 1st, 3rd, 5th, 7th: wq, wv, w1, w2) and of the
attention kernel (output and log-sum-exp), and recomputes the rest (wk, wo, w3 and every
elementwise kernel); here `selective_op`:

| selective_op | q and v, attention output, MLP gate (w1), MLP output (w2) | k and out-projection GEMMs, half the MLP up GEMMs (w3), elementwise, the sequence-parallel all-gathers |

Under tensor parallelism with sequence parallelism the policy also repeats the two all-gathers
that feed the attention and MLP input projections (`tp_gather`): torchtitan's `_save_list`
(torchtitan/models/llama3/parallelize_llama.py at 820504e, Jun 2025) names
`_c10d_functional.reduce_scatter_tensor` but not `all_gather_into_tensor`, so the gathered
input, which the weight gradients of wq, wv and w1 need, is PREFER_RECOMPUTE and is gathered
again in the backward; torch.compile's partitioner recomputes a collective exactly when an
activation-checkpoint policy marks it so (torch/_functorch/partitioners.py,
`force_save_collectives`: "the partitioner is not allowed to recompute collectives unless they
come from a user-annotated AC region"). torchtitan PR #1672 (Sep 2025, "Save _to_copy and a2a
in selective AC policy") measured the same for the MoE all-to-alls it then added to the list
(DeepSeek-V3 16B, 708 -> 803 tokens/s).

Megatron-Core recomputes by module as well (`--recompute-granularity selective
--recompute-modules ...`, megatron/core/transformer/transformer_config.py, `recompute_modules`:
core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts; Megatron-Bridge's
DeepSeek-V3 recipes set `mla_up_proj` and `moe_act`, scripts/performance/configs/deepseek/
deepseek_workload_base_configs.py, v0.4.0). Such a policy keeps the whole Megatron stack but
the module outputs it frees after their consumer has run (`CheckpointWithoutOutput`) and
rebuilds them before that consumer's backward:

| moe_act | the stack less each routed copy's activation output (the expert down-projection's saved input) | the experts' activation (elementwise) |
| mla_up_proj_moe_act | as moe_act, less MLA's up-projected q, k, v (the attention kernel's saved inputs) | as moe_act, plus the q and kv up-projection GEMMs |

The MLP down-projection's output is never needed by the backward (the layer's output is
the next layer's kept input), so no policy rebuilds it; the out-projection's output is
(it forms the residual that feeds the second norm). Offloaded tensors cross the host link
once each way per micro-batch: device to host in the forward, back in the backward.

Megatron-Core also offloads whole layers (`cpu_offloading`, `cpu_offloading_num_layers`:
megatron/core/transformer/transformer_config.py; Megatron-Bridge's GB200/GB300 Llama 3 70B
pre-training recipes set 20 to 40 of the 80 layers, src/megatron/bridge/perf_recipes/llama/
gb200/llama3.py and gb300/llama3.py at 067f987d, Aug 2026): the first k layers of the stack
move their whole saved stack to host memory in the forward and fetch it back for their
backward; the other layers keep theirs; nothing is recomputed (Megatron-Core refuses
`cpu_offloading` with recomputation or with pipeline parallelism). Here `layer_offload_<n>of8`
offloads k = ceil(n/8 x layers) whole layers (at most layers - 1, as Megatron-Core requires;
the NeMo export writes the same k), so the device keeps L - k layers' stacks, and the copies
run on Transformer Engine's offload stream on the schedule perf.offload_time models (each copy
due L - k layers after it starts, one stream for all), over the accelerator's host link
(NVLink-C2C on Grace-Blackwell parts, PCIe elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Tensors a layer may keep for its backward, per token (their bytes come from the model's
# shapes in perf.memory). "stack" is the Megatron / PyTorch set a layer keeps with no
# recomputation (inputs of every GEMM, norm inputs, the MLP's inner tensors, the attention
# output and its log-sum-exp); the others are JAX's named checkpoints.
TENSORS = ("input", "stack", "qkv", "out_proj", "mlp_up", "mlp_down", "context", "q_v", "mlp_gate")
# Tensors of the stack a Megatron-Core module recompute frees (subtracted from "stack").
DROPPED_TENSORS = ("moe_act", "mla_qkv")
# Forward work a policy repeats in the backward pass.
PARTS = (
    "qkv_gemm",
    "k_gemm",
    "out_gemm",
    "mlp_up_gemm",
    "mlp_up_half_gemm",
    "mlp_down_gemm",
    "attention",
    "elementwise",
    "tp_comm",
    "moe_act",
    "mla_up_gemm",
    "tp_gather",
)


@dataclass(frozen=True)
class Policy:
    """One remat policy: tensors kept on device, tensors offloaded to host, work repeated."""

    name: str
    kept: frozenset[str]
    offloaded: frozenset[str]
    rebuilt: frozenset[str]
    framework: str  # who names it this way (for reports)
    dropped: frozenset[str] = frozenset()  # stack tensors a module recompute frees
    # Megatron-Core layer offload: the fraction of the stage's layers whose whole stack goes
    # to host memory (kept: the rest); 0 for every other policy.
    stack_offloaded_fraction: float = 0.0


def _p(name: str, kept: str, offloaded: str, rebuilt: str, framework: str, dropped: str = "") -> Policy:
    return Policy(
        name,
        frozenset(kept.split()),
        frozenset(offloaded.split()),
        frozenset(rebuilt.split()),
        framework,
        frozenset(dropped.split()),
    )


_JAX_MINIMAL_REBUILT = "attention elementwise"
_JAX_QKV_REBUILT = "attention out_gemm mlp_up_gemm elementwise"

# The order fixes each policy's integer code (ParallelConfigs.recompute): append only.
POLICIES: tuple[Policy, ...] = (
    _p("none", "stack", "", "", "any"),
    _p("selective", "stack", "", "attention", "Megatron-LM"),
    _p("full", "input", "", " ".join(PARTS), "Megatron-LM, MaxText, torchtitan"),
    _p("minimal", "input qkv out_proj mlp_up mlp_down", "", _JAX_MINIMAL_REBUILT, "MaxText"),
    _p(
        "save_dot_except_mlpwi",
        "input qkv out_proj mlp_down",
        "",
        "attention mlp_up_gemm elementwise",
        "MaxText",
    ),
    _p("save_dot_except_mlp", "input qkv out_proj", "", "attention mlp_up_gemm elementwise", "MaxText"),
    _p("save_qkv_proj", "input qkv", "", _JAX_QKV_REBUILT, "MaxText"),
    _p("save_out_proj", "input out_proj", "", "qkv_gemm attention mlp_up_gemm elementwise", "MaxText"),
    _p("qkv_proj_offloaded", "input", "qkv", _JAX_QKV_REBUILT, "MaxText"),
    _p("minimal_offloaded", "input", "qkv out_proj mlp_up mlp_down", _JAX_MINIMAL_REBUILT, "MaxText"),
    _p("minimal_flash", "input qkv out_proj mlp_up mlp_down context", "", "elementwise", "MaxText"),
    _p(
        "selective_op",
        "input q_v context mlp_gate mlp_down",
        "",
        "k_gemm out_gemm mlp_up_half_gemm elementwise tp_gather",
        "torchtitan",
    ),
    _p("input_qkv_offloaded", "", "input qkv", _JAX_QKV_REBUILT, "MaxText (custom)"),
    _p(
        "input_qkv_out_offloaded",
        "",
        "input qkv out_proj",
        "attention mlp_up_gemm elementwise",
        "MaxText (custom)",
    ),
    _p("moe_act", "stack", "", "moe_act", "Megatron-Core", dropped="moe_act"),
    _p(
        "mla_up_proj_moe_act",
        "stack",
        "",
        "moe_act mla_up_gemm",
        "Megatron-Core",
        dropped="moe_act mla_qkv",
    ),
)
# Layer offload in eighths of the stage's layers (Megatron-Core allows at most layers - 1).
LAYER_OFFLOAD_EIGHTHS: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7)
POLICIES += tuple(
    Policy(
        f"layer_offload_{n}of8", frozenset(), frozenset(), frozenset(), "Megatron-Core", frozenset(), n / 8.0
    )
    for n in LAYER_OFFLOAD_EIGHTHS
)
LAYER_OFFLOAD: tuple[str, ...] = tuple(f"layer_offload_{n}of8" for n in LAYER_OFFLOAD_EIGHTHS)
# MaxText remat_policy=custom as the Ironwood recipes set it (tensors named neither 'device' nor
# 'offload' default to 'remat', MaxText configs/types.py RematAndOffload); appended after the
# layer-offload policies so that every earlier code keeps its value.
POLICIES += (
    _p("input_offloaded", "", "input", " ".join(PARTS), "MaxText (custom)"),
    _p("save_qkv_context", "input qkv context", "", "out_gemm mlp_up_gemm elementwise", "MaxText (custom)"),
)
CODES: dict[str, int] = {p.name: i for i, p in enumerate(POLICIES)}
# Megatron-Core's `--recompute-modules` for the module-recompute policies (exports).
MEGATRON_MODULES: dict[str, tuple[str, ...]] = {
    "moe_act": ("moe_act",),
    "mla_up_proj_moe_act": ("mla_up_proj", "moe_act"),
}
NAMES: tuple[str, ...] = tuple(p.name for p in POLICIES)
# Policies the search tries when the user fixes none: the three every PyTorch stack offers;
# on Cloud TPU, where the stack is JAX (MaxText), MaxText's own names from most memory to
# least (base.yml lists them fastest to slowest; 'none' keeps everything), the host-offloading
# ones included.
SEARCHED: tuple[str, ...] = ("none", "selective", "full")
SEARCHED_JAX: tuple[str, ...] = (
    "none",
    "minimal",
    "save_dot_except_mlp",
    "save_qkv_proj",
    "qkv_proj_offloaded",
    "minimal_offloaded",
    "input_qkv_offloaded",
    "input_qkv_out_offloaded",
    "full",
)


# A host link at least this fast (per direction) is a coherent CPU-GPU link (NVLink-C2C on
# Grace Hopper / Grace Blackwell, 450 GB/s per direction), where the planner tries layer
# offload; PCIe Gen5 x16 (64 GB/s) is not, and offloading whole layers over it is rarely
# cheaper than recomputing them, so the search does not spend its time there.
COHERENT_HOST_LINK_BYTES_PER_S = 200e9


def searched_policies(
    vendor: str,
    moe: bool = False,
    mla: bool = False,
    host_link_bytes_per_s: float = 0.0,
    offload: bool = False,
) -> tuple[str, ...]:
    """The remat policies a planner tries on an accelerator of this vendor; on a PyTorch stack
    a mixture-of-experts model also tries Megatron-Core's module recompute of the expert
    activation, and an MLA model with it the up-projections (the pair DeepSeek-V3's recipes run);
    on a coherent host link (`COHERENT_HOST_LINK_BYTES_PER_S`) Megatron-Core's layer offload,
    fewest layers first, when `offload` is asked for.

    The search does not try layer offload unless asked (`offload`, default off), because asking
    makes the Blackwell rows worse, re-measured on 2026-11-26 (offload2) with the copies timed
    per offloaded layer on Transformer Engine's own schedule (perf.offload_time, replayed in
    tests/test_layer_offload_schedule.py) and the offloaded share rounded to whole layers:
    `rightsize validate --all` tokens/s median 9.5% -> 10.9%; Blackwell (all sets) median 9.2%
    -> 9.5%; GB300 Llama 3 70B FP8 -21.8% -> +2.0%, but GB200 70B FP8 -6.9%/-5.7% ->
    +21.4%/+23.0%, GB200 405B FP8 128 GPUs -2.3% -> +28.2%, held-out GB200 70B -12.7% ->
    +13.7%, Qwen3 30B GB300 +20.0% -> +21.2%; the family table's Blackwell training median 6.9%
    -> 9.0%, worst 21.8% -> 28.2%. The copies are not what is missing: TE offloads layer i when
    layer i+1 starts and waits for it only at layer L-k+i, on one stream, so Megatron-Bridge's
    GB200 recipes (40 of 80 layers for 70B, each stack 3.8 GB copying in 1.45 layer forwards at
    NVLink-C2C's 225 GB/s; 95 of 126 for 405B TP2 in the 25.09 perf_matrix, about one forward) hide
    every copy, as the older TE handler (a window of L/k layers per copy) does too: no TE
    version copies a whole stack behind one layer's forward. Nor is memory: the recipe's
    40-layer GB200 layout reads 171.5 GiB against 170.2 usable, 11.7 GiB of it the loss's
    logits at perf.memory's 6 bytes per entry, where the recipes' TE fused cross entropy
    (cross_entropy_fusion_impl "te"; TE 2.7-2.12 write the gradient into the bf16 logits, 2
    bytes) would leave it fitting; the step time is the same at 40 or 50 layers, all hidden.
    What the offload rows expose is the GB200 step itself: in the same Megatron-Bridge tables
    GB200 reads 6 to 26 points faster, against its published figure, than GB300 does on the
    paired row (70B MXFP8 +16.6% vs +0.8%, 405B FP8 -0.4% vs -13.5%, DeepSeek-V3 +12.6% vs
    +6.6%, Qwen3 30B +33.8% vs +20.0%), and full recompute's cost had been hiding it on the
    FSDP rows. Until that is found, the planner keeps recompute, and a spec names
    `parallel.recompute: layer_offload_Nof8` to plan (and export, NeMo) the offload. Re-run
    with offload searched on 2026-11-26 (bwstep): the same figures (family Blackwell training
    median 6.9% -> 9.0%, worst 21.8% -> 28.2%). The likeliest missing part is on the host: the
    GB200 / GB300 GPUs are driven by Grace CPUs, on which a PyTorch Linear forward costs 37.1 us
    of CPU against 13.5 us on an H100 DGX's Xeon 8480C (Transformer Engine issue #2053, 2025-08:
    TE Linear 99.7 us of CPU for 99.7 us of GPU on GB200, host-bound), and the GB300 recipes
    run twice the micro-batch of GB200's (Qwen3 30B 8 vs 4, DeepSeek-V3 and Qwen3 235B 2 vs 1),
    halving that cost per token; GB200 runs Qwen3 30B slower than B200 at the same layout
    (26,032 against 26,859 tokens/s/GPU) despite the higher peak."""
    if vendor == "google":
        return SEARCHED_JAX
    extra: tuple[str, ...] = ("moe_act",) if moe else ()
    if moe and mla:
        extra += ("mla_up_proj_moe_act",)
    if offload and host_link_bytes_per_s >= COHERENT_HOST_LINK_BYTES_PER_S:
        extra += LAYER_OFFLOAD
    return SEARCHED + extra


def flags(which: str, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Per tensor (or part) name, a 0/1 array indexed by policy code: is it kept / offloaded /
    rebuilt under that policy. `flags('rebuilt', PARTS)['attention'][code]`."""
    return {n: np.array([1.0 if n in getattr(p, which) else 0.0 for p in POLICIES]) for n in names}


KEPT = flags("kept", TENSORS)
DROPPED = flags("dropped", DROPPED_TENSORS)
OFFLOADED = flags("offloaded", TENSORS)
# Layer offload: the stack is kept by the layers not offloaded and offloaded by the rest.
STACK_OFFLOADED = np.array([p.stack_offloaded_fraction for p in POLICIES])
KEPT["stack"] = np.where(STACK_OFFLOADED > 0, 1.0 - STACK_OFFLOADED, KEPT["stack"])
OFFLOADED["stack"] = STACK_OFFLOADED


def offloaded_layers(code: np.ndarray, layers: np.ndarray | float) -> np.ndarray:
    """Layers a layer-offload policy offloads on a stage of `layers` layers, per configuration:
    ceil(fraction x layers) (Megatron-Core's `cpu_offloading_num_layers`, as exported), 0 for
    every other policy. May reach `layers`, which Megatron-Core refuses (perf.memory rejects it)."""
    frac = STACK_OFFLOADED[code]
    return np.where(frac > 0, np.ceil(frac * layers - 1e-9), 0.0)


def layer_offload_count(code: int, layers: int) -> int:
    """Layers Megatron-Core's `cpu_offloading_num_layers` names for a layer-offload policy on a
    stage of `layers` layers (`offloaded_layers`): at least the named share is offloaded; 0 for
    every other policy. Raises ValueError where that reaches every layer (Megatron-Core
    requires at most layers - 1)."""
    k = int(offloaded_layers(np.array([code]), float(layers))[0])
    if k == 0:
        return 0
    if k > layers - 1:
        raise ValueError(
            f"{POLICIES[code].name} offloads {k} of {layers} layers; Megatron-Core offloads at most "
            f"{layers - 1} (cpu_offloading_num_layers < num_layers)"
        )
    return k


REBUILT = flags("rebuilt", PARTS)


def codes(recompute: np.ndarray) -> np.ndarray:
    """Integer policy codes of a configuration array (stored as float64)."""
    return np.asarray(recompute, dtype=np.int64)
