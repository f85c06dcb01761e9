"""Parameter counts from a model's shape.

Counts follow the weight matrices a decoder-only transformer really holds:
QKV with grouped-query attention (a query heads, g key/value heads of size d),
the output projection, a GELU MLP (two matrices) or a SwiGLU MLP (three),
norms, and for mixture-of-experts layers the routed experts, shared experts and
the router. Biases are ignored (under 0.1% of any preset).
"""

from __future__ import annotations

from dataclasses import dataclass

from rightsize.spec.model import ModelArch


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


def count_params(arch: ModelArch) -> ParamCounts:
    h, d = arch.hidden, arch.head_dim
    a, g = arch.heads, arch.kv_heads
    attention = h * (a + 2 * g) * d + a * d * h
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
