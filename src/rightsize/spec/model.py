"""`ModelArch`: the shape of a transformer, as published (paper, model card or config.json).

It is pure description: the perf package derives parameters, FLOPs and bytes from it. Derived
shape fields (`kv_heads`, `head_dim`, `expert_ffn_hidden`) are filled in at validation, so code
downstream can rely on `kv_heads` and `head_dim` being ints.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from rightsize.spec.finite import finite_numbers
from rightsize.spec.units import TokenLength

# Default of fields that `_fill_derived` always sets; typed Any so the fields can be declared `int`.
_FILLED_BY_VALIDATOR: Any = None
_OPTIONAL_POSITIVE_INT = WithJsonSchema(
    {"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "null"}]}
)


def _as_int(value: object) -> int | None:
    """An int for an int-like input (int, or a string of digits), else None; bools are not ints."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


class ModelArch(BaseModel):
    """A transformer's shape: layers, widths, attention grouping, MLP kind and mixture-of-experts layout."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _numbers_are_finite(cls, data: Any) -> Any:
        return finite_numbers(data)

    name: str = Field(
        min_length=1, max_length=200, description="Model name, e.g. 'llama3-70b'; used in reports."
    )
    layers: int = Field(gt=0, description="Number of transformer blocks.")
    hidden: int = Field(gt=0, description="Model (residual stream) width d_model.")
    heads: int = Field(gt=0, description="Attention (query) heads per layer.")
    kv_heads: Annotated[int, _OPTIONAL_POSITIVE_INT] = Field(
        default=_FILLED_BY_VALIDATOR,
        gt=0,
        description="Key/value heads (grouped-query attention); defaults to heads (multi-head attention).",
    )
    head_dim: Annotated[int, _OPTIONAL_POSITIVE_INT] = Field(
        default=_FILLED_BY_VALIDATOR,
        gt=0,
        description="Width of one attention head; defaults to hidden / heads (which must then divide).",
    )
    ffn_hidden: int = Field(
        gt=0, description="Inner width of the (dense) MLP, e.g. 4 * hidden for GPT, 28672 for Llama 3 70B."
    )
    vocab: int = Field(gt=0, description="Vocabulary size (rows of the embedding table).")
    mlp: Literal["gelu", "swiglu"] = Field(
        description="MLP kind: 'gelu' has two matrices (up, down); 'swiglu' is gated with three (gate, up, down)."
    )
    tied_embeddings: bool = Field(
        default=False, description="Whether the output projection shares the input embedding's weights."
    )
    norm: Literal["layernorm", "rmsnorm"] = Field(
        default="layernorm",
        description="Normalisation layer kind: 'layernorm' (scale and bias) or 'rmsnorm'.",
    )
    positions: Literal["rope", "learned", "alibi"] = Field(
        default="rope",
        description="Position encoding: 'rope' (rotary, Llama), 'learned' (absolute table, GPT-2/3) or 'alibi' (BLOOM).",
    )
    rope_theta: float = Field(
        default=10000.0,
        gt=0,
        description="Rotary base frequency (config.json rope_theta): 10,000 in RoFormer and Llama 2, 500,000 in Llama 3.",
    )
    rope_scaling_factor: float | None = Field(
        default=None,
        gt=0,
        description="Llama 3.1's rotary frequency scaling (config.json rope_scaling, rope_type llama3): its factor, 8.",
    )
    experts: int = Field(default=0, ge=0, description="Routed experts per MoE layer; 0 for a dense model.")
    experts_per_token: int = Field(
        default=0, ge=0, description="Routed experts each token is sent to (top-k)."
    )
    expert_ffn_hidden: int | None = Field(
        default=None,
        gt=0,
        description="Inner MLP width of one expert; defaults to ffn_hidden in an MoE model, unset for dense.",
    )
    shared_experts: int = Field(
        default=0, ge=0, description="Always-active shared experts per MoE layer (DeepSeek style)."
    )
    dense_layers: int = Field(
        default=0,
        ge=0,
        description="Leading layers of an MoE model that use a dense MLP of ffn_hidden (DeepSeek first_k_dense).",
    )
    kv_lora_rank: int | None = Field(
        default=None,
        gt=0,
        description=(
            "Multi-head latent attention (DeepSeek-V2/V3): width of the compressed key/value latent that "
            "is cached; setting it makes the attention MLA. head_dim is then the per-head query/key width "
            "without rotary part (qk_nope_head_dim)."
        ),
    )
    q_lora_rank: int | None = Field(
        default=None,
        gt=0,
        description="MLA: width of the compressed query latent; unset means a plain query projection.",
    )
    qk_rope_head_dim: int | None = Field(
        default=None,
        gt=0,
        description="MLA: per-head width of the decoupled rotary query/key part (one shared rotary key).",
    )
    v_head_dim: int | None = Field(
        default=None, gt=0, description="MLA: per-head value width; defaults to head_dim."
    )
    max_seq_len: TokenLength | None = Field(
        default=None,
        description="Longest context the model was trained for (position embeddings); '8k' = 8,192 tokens.",
    )
    sliding_window: int | None = Field(
        default=None,
        gt=0,
        description=(
            "Keys each query attends to in the windowed layers (config.json sliding_window: 128 in "
            "GPT-OSS); unset means every layer attends over the whole causal context."
        ),
    )
    full_attention_every: int = Field(
        default=1,
        ge=1,
        description=(
            "With sliding_window: every n-th layer attends over the whole context, the others through "
            "the window (Megatron-Core window_attn_skip_freq; GPT-OSS alternates, 2)."
        ),
    )
    attention_sinks: bool = Field(
        default=False,
        description="A learned per-head sink logit joins each softmax (GPT-OSS; Megatron softmax_type 'learnable').",
    )
    linear_bias: bool = Field(
        default=False,
        description="Linear layers, experts included, carry biases (GPT-OSS; Megatron add_bias_linear).",
    )
    glu_clamp: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Gated MLP inputs clamped to this limit before the activation (GPT-OSS swiglu_limit 7.0; "
            "Megatron activation_func_clamp_value)."
        ),
    )
    qk_norm: bool = Field(
        default=False,
        description="RMSNorm over each head's queries and keys before the rotary embedding (Qwen3; Megatron qk_layernorm).",
    )
    parallel_block: bool = Field(
        default=False,
        description=(
            "Attention and MLP read the same residual input and their outputs are added once, "
            "x + attn(ln1(x)) + mlp(ln2(x)) (GPT-J, GPT-NeoX use_parallel_residual, PaLM, Falcon parallel_attn); "
            "under tensor parallelism the two branches share one forward all-reduce."
        ),
    )
    rope_type: Literal["default", "yarn"] = Field(
        default="default",
        description="Rotary scaling kind (config.json rope_scaling.rope_type): 'yarn' in GPT-OSS.",
    )
    source: str | None = Field(
        default=None, description="Where the shape was published: a paper, model card or config.json path."
    )

    @model_validator(mode="before")
    @classmethod
    def _fill_derived(cls, data: Any) -> Any:
        """Fill kv_heads, head_dim and expert_ffn_hidden from the other fields (the model is frozen)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        heads, hidden = _as_int(data.get("heads")), _as_int(data.get("hidden"))
        if data.get("kv_heads") is None and heads is not None:
            data["kv_heads"] = heads
        if data.get("head_dim") is None and heads and hidden:
            if hidden % heads:
                raise ValueError(
                    f"hidden ({hidden}) is not a multiple of heads ({heads}), so head_dim cannot be derived; "
                    "give head_dim explicitly or fix hidden/heads"
                )
            data["head_dim"] = hidden // heads
        experts, ffn = _as_int(data.get("experts", 0)), data.get("ffn_hidden")
        if data.get("expert_ffn_hidden") is None and experts and ffn is not None:
            data["expert_ffn_hidden"] = ffn
        return data

    @model_validator(mode="after")
    def _check_consistency(self) -> ModelArch:
        if self.kv_heads is None or self.head_dim is None:  # only when heads/hidden were not int-like
            raise ValueError("kv_heads and head_dim could not be derived; give heads and hidden as integers")
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads}): each key/value head "
                "serves a whole group of query heads; use a kv_heads that divides heads"
            )
        if self.dense_layers >= self.layers:
            raise ValueError(f"dense_layers ({self.dense_layers}) must be less than layers ({self.layers})")
        if self.kv_lora_rank is None:
            mla_only = {"q_lora_rank": self.q_lora_rank, "qk_rope_head_dim": self.qk_rope_head_dim}
            mla_only["v_head_dim"] = self.v_head_dim
            given = [f"{k}={v}" for k, v in mla_only.items() if v is not None]
            if given:
                raise ValueError(
                    f"{', '.join(given)} only apply to multi-head latent attention; set kv_lora_rank "
                    "(the cached latent width) or remove them"
                )
        if self.experts == 0:
            moe_only = {
                "experts_per_token": self.experts_per_token,
                "shared_experts": self.shared_experts,
                "dense_layers": self.dense_layers,
            }
            set_fields = [f"{k}={v}" for k, v in moe_only.items() if v]
            if set_fields or self.expert_ffn_hidden is not None:
                set_fields += ["expert_ffn_hidden"] if self.expert_ffn_hidden is not None else []
                raise ValueError(
                    f"{', '.join(set_fields)} only apply to mixture-of-experts models; set experts > 0 or remove them"
                )
        elif not 1 <= self.experts_per_token <= self.experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must be between 1 and experts ({self.experts})"
            )
        return self

    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (kv_lora_rank set)."""
        return self.kv_lora_rank is not None

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model (experts > 0)."""
        return self.experts > 0
