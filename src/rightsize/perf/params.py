"""Parameter counts from a model's shape.

Counts follow the weight matrices a decoder-only transformer really holds:
QKV with grouped-query attention (a query heads, g key/value heads of size d),
the output projection, a GELU MLP (two matrices) or a SwiGLU MLP (three),
norms, and for mixture-of-experts layers the routed experts, shared experts and
the router. Biases are ignored (under 0.1% of any preset).

Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434, section 2.1; V3 config.json)
replaces Q, K, V by low-rank paths: queries h -> q_lora -> a (d_nope + d_rope) (or a
plain h -> a (d_nope + d_rope) without q_lora), keys and values h -> kv_lora + d_rope
(the cached latent and one shared rotary key), then kv_lora -> a (d_nope + d_v); the
output projection is a d_v -> h. The latents carry an RMSNorm each.

Fine-tuning with LoRA (Hu et al. 2021) adds, to each targeted matrix W [d_in, d_out],
A [d_in, r] and B [r, d_out]: r (d_in + d_out) trainable parameters. Routed and
shared experts get their own adapters; the router and the embeddings none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rightsize.spec.model import ModelArch

# QLoRA (Dettmers et al. 2023, arXiv:2305.14314, section 3): NF4 weights (4 bits) with an
# 8-bit absmax constant per block of 64, whose fp32 second-level constants cover 256
# blocks (double quantisation): 4 + 8/64 + 32/(64 x 256) = 4.127 bits per parameter.
NF4_BYTES_PER_PARAM = (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0)) / 8.0

ALL_LINEAR = ("q", "k", "v", "o", "gate", "up", "down")


def mlp_matrices(arch: ModelArch) -> int:
    """Weight matrices in one MLP: 2 for GELU (up, down), 3 for SwiGLU (gate, up, down)."""
    return 3 if arch.mlp == "swiglu" else 2


@dataclass(frozen=True)
class ParamCounts:
    """Parameters by where they live; `layer_*` are per transformer layer."""

    attention_per_layer: float
    dense_mlp_per_layer: float  # a dense layer's MLP (also the dense_layers of an MoE model)
    routed_experts_per_layer: float  # all routed experts of one MoE layer
    shared_experts_per_layer: float
    router_per_layer: float
    norms_per_layer: float
    embedding: float
    output: float  # 0 when tied to the embedding
    layers: int
    moe_layers: int

    @property
    def dense_layer(self) -> float:
        return self.attention_per_layer + self.dense_mlp_per_layer + self.norms_per_layer

    @property
    def moe_layer(self) -> float:
        return (
            self.attention_per_layer
            + self.routed_experts_per_layer
            + self.shared_experts_per_layer
            + self.router_per_layer
            + self.norms_per_layer
        )

    @property
    def transformer(self) -> float:
        dense = self.layers - self.moe_layers
        return dense * self.dense_layer + self.moe_layers * self.moe_layer

    @property
    def total(self) -> float:
        return self.transformer + self.embedding + self.output


def qk_head_dim(arch: ModelArch) -> int:
    """Per-head width of queries and keys: head_dim, plus the rotary part under MLA."""
    return arch.head_dim + (arch.qk_rope_head_dim or 0) if arch.is_mla else arch.head_dim


def v_head_dim(arch: ModelArch) -> int:
    """Per-head width of values (and of the attention output)."""
    return (arch.v_head_dim or arch.head_dim) if arch.is_mla else arch.head_dim


def attention_linears(arch: ModelArch) -> dict[str, list[tuple[int, int]]]:
    """The attention's weight matrices as (d_in, d_out), grouped by the LoRA target that names them.

    GQA: q [h, a d], k and v [h, g d], o [a d, h]. MLA: q is q_a [h, q_lora] + q_b
    [q_lora, a d_qk] (or one [h, a d_qk]); k is the latent down-projection kv_a [h, kv_lora +
    d_rope]; v is its up-projection kv_b [kv_lora, a (d_nope + d_v)]; o is [a d_v, h].
    """
    h, a, g, d = arch.hidden, arch.heads, arch.kv_heads, arch.head_dim
    if not arch.is_mla:
        return {"q": [(h, a * d)], "k": [(h, g * d)], "v": [(h, g * d)], "o": [(a * d, h)]}
    assert arch.kv_lora_rank is not None  # is_mla
    dqk, dv, rope = qk_head_dim(arch), v_head_dim(arch), arch.qk_rope_head_dim or 0
    q = [(h, arch.q_lora_rank), (arch.q_lora_rank, a * dqk)] if arch.q_lora_rank else [(h, a * dqk)]
    return {
        "q": q,
        "k": [(h, arch.kv_lora_rank + rope)],
        "v": [(arch.kv_lora_rank, a * (d + dv))],
        "o": [(a * dv, h)],
    }


def mla_up_proj_share(arch: ModelArch) -> float:
    """Share of the attention projections' weights (so of their FLOPs) in MLA's up-projections
    (q_b [q_lora, a d_qk] and kv_b [kv_lora, a (d_nope + d_v)]), what Megatron-Core's
    `mla_up_proj` recompute repeats; 0 for other attention."""
    if not arch.is_mla:
        return 0.0
    linears = attention_linears(arch)
    total = sum(i * o for shapes in linears.values() for i, o in shapes)
    up = sum(i * o for i, o in linears["v"]) + (sum(i * o for i, o in linears["q"][1:]))
    return float(up) / float(total)


def attention_params_per_layer(arch: ModelArch) -> float:
    """Weights of one layer's attention (with MLA's two latent RMSNorms)."""
    mats = sum(i * o for shapes in attention_linears(arch).values() for i, o in shapes)
    norms = (arch.q_lora_rank or 0) + (arch.kv_lora_rank or 0) if arch.is_mla else 0
    return float(mats + norms)


def kv_cache_elems_per_token_layer(arch: ModelArch) -> int:
    """Cached elements per token per layer: K and V (2 g d), or MLA's latent and rotary key."""
    if arch.is_mla:
        assert arch.kv_lora_rank is not None
        return arch.kv_lora_rank + (arch.qk_rope_head_dim or 0)
    return 2 * arch.kv_heads * arch.head_dim


def mlp_linears(arch: ModelArch, ffn: int) -> dict[str, tuple[int, int]]:
    """One MLP's (or one expert's) matrices as (d_in, d_out) by LoRA target name."""
    h = arch.hidden
    mats = {"up": (h, ffn), "down": (ffn, h)}
    return {"gate": (h, ffn), **mats} if arch.mlp == "swiglu" else mats


def count_params(arch: ModelArch) -> ParamCounts:
    h = arch.hidden
    attention = attention_params_per_layer(arch)
    mats = mlp_matrices(arch)
    dense_mlp = mats * h * arch.ffn_hidden
    moe_layers = arch.layers - arch.dense_layers if arch.is_moe else 0
    f_e = arch.expert_ffn_hidden or arch.ffn_hidden
    routed = arch.experts * mats * h * f_e if arch.is_moe else 0.0
    shared = arch.shared_experts * mats * h * f_e if arch.is_moe else 0.0
    router = h * arch.experts if arch.is_moe else 0.0
    norms = 2 * h
    embedding = arch.vocab * h
    output = 0.0 if arch.tied_embeddings else arch.vocab * h
    return ParamCounts(
        attention_per_layer=float(attention),
        dense_mlp_per_layer=float(dense_mlp),
        routed_experts_per_layer=float(routed),
        shared_experts_per_layer=float(shared),
        router_per_layer=float(router),
        norms_per_layer=float(norms),
        embedding=float(embedding),
        output=float(output),
        layers=arch.layers,
        moe_layers=moe_layers,
    )


def active_params(arch: ModelArch) -> float:
    """Parameters one token touches: only `experts_per_token` routed experts in MoE layers."""
    c = count_params(arch)
    if not arch.is_moe:
        return c.total
    per_expert = c.routed_experts_per_layer / arch.experts
    moe_active = c.moe_layer - c.routed_experts_per_layer + per_expert * arch.experts_per_token
    return (c.layers - c.moe_layers) * c.dense_layer + c.moe_layers * moe_active + c.embedding + c.output


def lora_counts(arch: ModelArch, rank: int, targets: Sequence[str] = ALL_LINEAR) -> ParamCounts:
    """Adapter parameters, laid out like `count_params` (routed experts: all of a layer's)."""
    wanted = set(targets)

    def adapters(shapes: list[tuple[int, int]]) -> float:
        return float(sum(rank * (i + o) for i, o in shapes))

    attention = sum(adapters(v) for k, v in attention_linears(arch).items() if k in wanted)
    dense_mlp = adapters([v for k, v in mlp_linears(arch, arch.ffn_hidden).items() if k in wanted])
    f_e = arch.expert_ffn_hidden or arch.ffn_hidden
    one_expert = adapters([v for k, v in mlp_linears(arch, f_e).items() if k in wanted])
    return ParamCounts(
        attention_per_layer=attention,
        dense_mlp_per_layer=dense_mlp,
        routed_experts_per_layer=arch.experts * one_expert if arch.is_moe else 0.0,
        shared_experts_per_layer=arch.shared_experts * one_expert if arch.is_moe else 0.0,
        router_per_layer=0.0,
        norms_per_layer=0.0,
        embedding=0.0,
        output=0.0,
        layers=arch.layers,
        moe_layers=arch.layers - arch.dense_layers if arch.is_moe else 0,
    )


def trainable_params(
    arch: ModelArch,
    method: str = "full",
    lora: object | None = None,
    *,
    rank: int = 16,
    targets: Sequence[str] = ALL_LINEAR,
) -> float:
    """Parameters the optimizer updates: every one for 'full', the adapters for 'lora'/'qlora'.

    `lora` may be the spec's `LoraSettings` (its rank and targets are used); otherwise
    `rank` and `targets` say which adapters exist. Checkpoints of a LoRA run hold only these
    (with their optimizer states): `checkpoint_bytes(trainable_params(...), optimizer)`.
    """
    if method == "full":
        return count_params(arch).total
    if method not in ("lora", "qlora"):
        raise ValueError(f"unknown training method {method!r}: use full, lora or qlora")
    if lora is not None:
        rank, targets = lora.rank, lora.targets  # type: ignore[attr-defined]
    return lora_counts(arch, rank, targets).total


def active_lora_params(arch: ModelArch, rank: int, targets: Sequence[str] = ALL_LINEAR) -> float:
    """Adapter parameters one token passes through (top-k routed experts' adapters only)."""
    c = lora_counts(arch, rank, targets)
    if not arch.is_moe:
        return c.total
    per_expert = c.routed_experts_per_layer / arch.experts
    moe = c.moe_layer - c.routed_experts_per_layer + per_expert * arch.experts_per_token
    return (c.layers - c.moe_layers) * c.dense_layer + c.moe_layers * moe
