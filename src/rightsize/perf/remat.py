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

The last two are MaxText's `remat_policy: custom` as the Trillium recipes set it
(`decoder_layer_input`, `query_proj`, `key_proj`, `value_proj` and, for Llama 3.1 8B and 405B,
`out_proj` set to `offload`; benchmarks/maxtext_trillium_model_configs.py): even the scan
carry leaves the device, which is what lets Llama 3.1 405B train on 32 GB v6e chips.

torchtitan's op-level selective checkpointing (`activation_checkpoint.mode: selective`,
`selective_ac_option: op`; torchtitan's `_apply_ac_to_transformer_block`, Dec 2024) saves the
outputs of every other matmul of a block (the 1st, 3rd, 5th, 7th: wq, wv, w1, w2) and of the
attention kernel (output and log-sum-exp), and recomputes the rest (wk, wo, w3 and every
elementwise kernel); here `selective_op`:

| selective_op | q and v, attention output, MLP gate (w1), MLP output (w2) | k and out-projection GEMMs, half the MLP up GEMMs (w3), elementwise |

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
        "k_gemm out_gemm mlp_up_half_gemm elementwise",
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


def searched_policies(vendor: str, moe: bool = False, mla: bool = False) -> tuple[str, ...]:
    """The remat policies a planner tries on an accelerator of this vendor; on a PyTorch stack
    a mixture-of-experts model also tries Megatron-Core's module recompute of the expert
    activation, and an MLA model with it the up-projections (the pair DeepSeek-V3's recipes run)."""
    if vendor == "google":
        return SEARCHED_JAX
    extra: tuple[str, ...] = ("moe_act",) if moe else ()
    if moe and mla:
        extra += ("mla_up_proj_moe_act",)
    return SEARCHED + extra


def flags(which: str, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Per tensor (or part) name, a 0/1 array indexed by policy code: is it kept / offloaded /
    rebuilt under that policy. `flags('rebuilt', PARTS)['attention'][code]`."""
    return {n: np.array([1.0 if n in getattr(p, which) else 0.0 for p in POLICIES]) for n in names}


KEPT = flags("kept", TENSORS)
DROPPED = flags("dropped", DROPPED_TENSORS)
OFFLOADED = flags("offloaded", TENSORS)
REBUILT = flags("rebuilt", PARTS)


def codes(recompute: np.ndarray) -> np.ndarray:
    """Integer policy codes of a configuration array (stored as float64)."""
    return np.asarray(recompute, dtype=np.int64)
