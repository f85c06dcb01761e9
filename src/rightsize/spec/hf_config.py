"""Read a model's shape from a Hugging Face `config.json`, offline (no transformers, no network).

Supported families: Llama, Mistral, Qwen2/Qwen3 (dense, gated SiLU MLP, RMSNorm; Qwen3 with its
query/key norm), Qwen3-MoE, Mixtral (every layer MoE), DeepSeek-V2/V3 (routed + shared experts, leading dense layers), GPT-2 and BLOOM (GeLU MLP,
LayerNorm, tied embeddings), Falcon (7B/40B/180B, and the older RefinedWeb configs: multi-query or grouped KV heads,
GeLU MLP, the parallel attention/MLP block), GPT-NeoX and Pythia (parallel residual when the config says so), GPT-OSS (biased experts, clamped SwiGLU, sliding-window layers, attention
sinks, YaRN rotary scaling). DeepSeek's multi-head latent attention is read exactly (kv_lora_rank,
q_lora_rank, qk_rope_head_dim, v_head_dim, with head_dim = qk_nope_head_dim).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rightsize.errors import BadInput
from rightsize.safe_read import clean_key, read_json_capped
from rightsize.spec.model import ModelArch

_LLAMA_LIKE = ("llama", "mistral", "qwen2")
_ARCHITECTURE_TO_TYPE = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "MixtralForCausalLM": "mixtral",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "GPT2LMHeadModel": "gpt2",
    "BloomForCausalLM": "bloom",
    "BloomModel": "bloom",
    "GptOssForCausalLM": "gpt_oss",
    "FalconForCausalLM": "falcon",
    "RWForCausalLM": "falcon",
    "GPTNeoXForCausalLM": "gpt_neox",
}
_MISSING = object()
MAX_CONFIG_BYTES = 4 * 2**20  # a config.json is a few KB


class _Config:
    """A parsed config.json with lookups that fail with the file and key named."""

    def __init__(self, data: dict[str, Any], path: Path, model_type: str) -> None:
        self.data, self.path, self.model_type = data, path, model_type

    def integer(self, *keys: str, default: Any = _MISSING) -> Any:
        """The first of `keys` present (and not null), as an int; `default` when none is (else BadInput)."""
        for key in keys:
            value = self.data.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.error(f"Key '{key}' is {_shown(value)}, not an integer.")
            return value
        if default is _MISSING:
            raise self.error(f"Key '{keys[0]}' is missing (a {self.model_type} config needs it).")
        return default

    def number(self, key: str, default: float) -> float:
        """A positive finite number (int or float in the file); `default` when absent or null."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e300:
            raise self.error(f"Key '{key}' is {_shown(value)}, not a positive number.")
        return float(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.error(f"Key '{key}' is {_shown(value)}, not true or false.")
        return value

    def error(self, why: str) -> BadInput:
        return BadInput(
            f"Cannot read the model shape from {self.path}.",
            why,
            "Check that the file is the model's original config.json, or describe the model inline in the spec.",
        )


def _shown(value: Any) -> str:
    """A value from the file, fit for a message: a number or a short string as it is, else its type."""
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(clean_key(value))
    return f"a {'list' if isinstance(value, list) else 'mapping' if isinstance(value, dict) else type(value).__name__}"


def _gated_mlp(cfg: _Config) -> str:
    act = cfg.data.get("hidden_act", "silu")
    if act not in ("silu", "swish"):
        raise cfg.error(
            f"hidden_act {_shown(act)} is not supported for {cfg.model_type}; expected 'silu' (SwiGLU)."
        )
    return "swiglu"


def _llama(cfg: _Config) -> dict[str, Any]:
    return {
        "layers": cfg.integer("num_hidden_layers"),
        "hidden": cfg.integer("hidden_size"),
        "heads": cfg.integer("num_attention_heads"),
        "kv_heads": cfg.integer("num_key_value_heads", default=None),
        "head_dim": cfg.integer("head_dim", default=None),
        "ffn_hidden": cfg.integer("intermediate_size"),
        "vocab": cfg.integer("vocab_size"),
        "mlp": _gated_mlp(cfg),
        "norm": "rmsnorm",
        "tied_embeddings": cfg.flag("tie_word_embeddings", False),
        "max_seq_len": cfg.integer("max_position_embeddings", default=None),
        "positions": "rope",
        "rope_theta": cfg.number("rope_theta", 10000.0),
        "rope_scaling_factor": _llama3_scaling(cfg),
    }


def _llama3_scaling(cfg: _Config) -> float | None:
    """Llama 3.1's rotary scaling factor (rope_scaling with rope_type llama3); None otherwise."""
    scaling = cfg.data.get("rope_scaling")
    if not isinstance(scaling, dict) or scaling.get("rope_type", scaling.get("type")) != "llama3":
        return None
    return _Config(scaling, cfg.path, cfg.model_type).number("factor", 8.0)


def _qwen3(cfg: _Config) -> dict[str, Any]:
    """Qwen3: Llama's fields, and an RMSNorm over each head's queries and keys (q_norm, k_norm)."""
    return {**_llama(cfg), "qk_norm": True}


def _qwen3_moe(cfg: _Config) -> dict[str, Any]:
    """Qwen3-MoE (Qwen/Qwen3-30B-A3B config.json): num_experts routed experts of
    moe_intermediate_size, top num_experts_per_tok, on every layer but the leading mlp_only_layers."""
    fields = _qwen3(cfg)
    dense = cfg.data.get("mlp_only_layers") or []
    step = cfg.integer("decoder_sparse_step", default=1)
    if step != 1 or not isinstance(dense, list) or sorted(dense) != list(range(len(dense))):
        raise cfg.error(
            "Only leading dense layers are supported: decoder_sparse_step must be 1 and mlp_only_layers "
            f"the first layers (got {_shown(step)} and {_shown(dense)})."
        )
    fields.update(
        experts=cfg.integer("num_experts"),
        experts_per_token=cfg.integer("num_experts_per_tok"),
        expert_ffn_hidden=cfg.integer("moe_intermediate_size"),
        dense_layers=len(dense),
    )
    return fields


def _mixtral(cfg: _Config) -> dict[str, Any]:
    fields = _llama(cfg)
    fields.update(
        experts=cfg.integer("num_local_experts"), experts_per_token=cfg.integer("num_experts_per_tok")
    )
    fields["expert_ffn_hidden"] = fields["ffn_hidden"]
    return fields


def _deepseek(cfg: _Config) -> dict[str, Any]:
    fields = _llama(cfg)
    fields["head_dim"] = cfg.integer("head_dim", "v_head_dim", default=None)
    kv_lora = cfg.integer("kv_lora_rank", default=None)
    if kv_lora:  # multi-head latent attention (DeepSeek-V2/V3)
        fields.update(
            head_dim=cfg.integer("qk_nope_head_dim"),
            kv_lora_rank=kv_lora,
            q_lora_rank=cfg.integer("q_lora_rank", default=None),
            qk_rope_head_dim=cfg.integer("qk_rope_head_dim"),
            v_head_dim=cfg.integer("v_head_dim", default=None),
        )
    experts = cfg.integer("n_routed_experts", default=0)
    if experts:  # a config with n_routed_experts null describes a dense model
        fields.update(
            experts=experts,
            experts_per_token=cfg.integer("num_experts_per_tok"),
            expert_ffn_hidden=cfg.integer("moe_intermediate_size"),
            shared_experts=cfg.integer("n_shared_experts", default=0),
            dense_layers=cfg.integer("first_k_dense_replace", default=0),
        )
    return fields


def _gpt_oss(cfg: _Config) -> dict[str, Any]:
    """GPT-OSS (openai/gpt-oss-120b config.json): Mixtral's fields plus what its layers add."""
    fields = _mixtral(cfg)
    layer_types = cfg.data.get("layer_types")
    full_every = 2  # the released models alternate sliding and full layers
    if isinstance(layer_types, list) and layer_types:
        full = sum(1 for t in layer_types if t == "full_attention")
        full_every = max(round(len(layer_types) / full), 1) if full else len(layer_types) + 1
    scaling = cfg.data.get("rope_scaling")
    yarn = isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) == "yarn"
    fields.update(
        sliding_window=cfg.integer("sliding_window", default=None),
        full_attention_every=full_every,
        attention_sinks=True,  # every GPT-OSS attention layer has its learned sinks
        linear_bias=cfg.flag("attention_bias", True),
        glu_clamp=cfg.number("swiglu_limit", 7.0),
        rope_type="yarn" if yarn else "default",
    )
    return fields


def _gpt2(cfg: _Config) -> dict[str, Any]:
    hidden = cfg.integer("n_embd", "hidden_size")
    return {
        "layers": cfg.integer("n_layer", "num_hidden_layers"),
        "hidden": hidden,
        "heads": cfg.integer("n_head", "num_attention_heads"),
        "ffn_hidden": cfg.integer("n_inner", default=4 * hidden),
        "vocab": cfg.integer("vocab_size"),
        "mlp": "gelu",
        "norm": "layernorm",
        "tied_embeddings": cfg.flag("tie_word_embeddings", True),
        "max_seq_len": cfg.integer("n_positions", "n_ctx", default=None),
        "positions": "learned",
    }


def _bloom(cfg: _Config) -> dict[str, Any]:
    hidden = cfg.integer("hidden_size", "n_embed")
    return {
        "layers": cfg.integer("n_layer", "num_hidden_layers"),
        "hidden": hidden,
        "heads": cfg.integer("n_head", "num_attention_heads"),
        "ffn_hidden": 4 * hidden,
        "vocab": cfg.integer("vocab_size"),
        "mlp": "gelu",
        "norm": "layernorm",
        "tied_embeddings": cfg.flag("tie_word_embeddings", True),
        "max_seq_len": cfg.integer("seq_length", default=None),
        "positions": "alibi",
    }


def _falcon(cfg: _Config) -> dict[str, Any]:
    """Falcon as transformers' FalconConfig reads it (defaults from its __init__). KV heads:
    num_kv_heads under the new decoder (40B, 180B) or without multi-query, else one (7B's
    multi-query). The block is parallel when either flag says so: the new decoder adds the
    MLP's output to the attention's from the same input (FalconDecoderLayer). The older
    RefinedWeb names (n_layer, n_head, n_head_kv) are read as NeMo's converter maps them."""
    heads = cfg.integer("num_attention_heads", "n_head", default=71)
    new_decoder = cfg.flag("new_decoder_architecture", cfg.model_type == "RefinedWeb")
    if new_decoder or not cfg.flag("multi_query", True):
        kv_heads = cfg.integer("num_kv_heads", "n_head_kv", default=heads)
    else:
        kv_heads = 1
    hidden = cfg.integer("hidden_size", "n_embed", default=4544)
    return {
        "layers": cfg.integer("num_hidden_layers", "n_layer", default=32),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "ffn_hidden": cfg.integer("ffn_hidden_size", default=4 * hidden),
        "vocab": cfg.integer("vocab_size", default=65024),
        "mlp": "gelu",
        "norm": "layernorm",
        "tied_embeddings": cfg.flag("tie_word_embeddings", True),
        "max_seq_len": cfg.integer("max_position_embeddings", default=2048),
        "positions": "alibi" if cfg.flag("alibi", False) else "rope",
        "rope_theta": cfg.number("rope_theta", 10000.0),
        "linear_bias": cfg.flag("bias", False),
        # transformers' FalconConfig defaults parallel_attn to true, the older RWConfig to false
        "parallel_block": new_decoder or cfg.flag("parallel_attn", cfg.model_type == "falcon"),
    }


def _gpt_neox(cfg: _Config) -> dict[str, Any]:
    """GPT-NeoX and Pythia as transformers' GPTNeoXConfig reads them: attention and MLP in
    parallel when use_parallel_residual (its default), untied output embedding."""
    return {
        "layers": cfg.integer("num_hidden_layers"),
        "hidden": cfg.integer("hidden_size"),
        "heads": cfg.integer("num_attention_heads"),
        "ffn_hidden": cfg.integer("intermediate_size"),
        "vocab": cfg.integer("vocab_size"),
        "mlp": "gelu",
        "norm": "layernorm",
        "tied_embeddings": cfg.flag("tie_word_embeddings", False),
        "max_seq_len": cfg.integer("max_position_embeddings", default=None),
        "positions": "rope",
        "rope_theta": cfg.number("rotary_emb_base", 10000.0),
        "linear_bias": cfg.flag("attention_bias", True),
        "parallel_block": cfg.flag("use_parallel_residual", True),
    }


_READERS: dict[str, Callable[[_Config], dict[str, Any]]] = {
    **dict.fromkeys(_LLAMA_LIKE, _llama),
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "mixtral": _mixtral,
    "gpt_oss": _gpt_oss,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gpt2": _gpt2,
    "bloom": _bloom,
    **dict.fromkeys(("falcon", "RefinedWeb", "RefinedWebModel"), _falcon),
    "gpt_neox": _gpt_neox,
}


def _load_json(path: Path) -> dict[str, Any]:
    fix = "Point the spec at a Hugging Face model folder or its config.json."
    data = read_json_capped(path, "the model config", MAX_CONFIG_BYTES, fix)
    if not isinstance(data, dict):
        raise BadInput(f"Cannot read the model config {path}.", "The top level is not a JSON object.", fix)
    return data


def _model_type(data: dict[str, Any], path: Path) -> str:
    model_type = data.get("model_type")
    if model_type is None:
        architectures = data.get("architectures") or []
        model_type = next(
            (_ARCHITECTURE_TO_TYPE[a] for a in architectures if a in _ARCHITECTURE_TO_TYPE), None
        )
    if model_type not in _READERS:
        raise BadInput(
            f"Cannot read the model shape from {path}.",
            f"Key 'model_type' is {_shown(model_type)}; supported: {', '.join(sorted(_READERS))}.",
            "Describe the model inline in the spec (layers, hidden, heads, ffn_hidden, vocab, mlp).",
        )
    return str(model_type)


def read_hf_config_fields(path: str | Path) -> dict[str, Any]:
    """The ModelArch fields a config.json states (kv_heads/head_dim only where the file gives them).

    `path` is a config.json or a folder holding one. The name is `_name_or_path` when the file has
    one, else the folder's name.
    """
    path = Path(path).expanduser()
    try:
        if path.is_dir():
            path = path / "config.json"
    except OSError:  # a name too long or otherwise impossible: _load_json says why
        pass
    data = _load_json(path)
    model_type = _model_type(data, path)
    fields = _READERS[model_type](_Config(data, path, model_type))
    name = data.get("_name_or_path")
    fields["name"] = name if isinstance(name, str) and name else (path.resolve().parent.name or str(path))
    fields["source"] = str(path)
    return {key: value for key, value in fields.items() if value is not None}


def read_hf_config(path: str | Path) -> ModelArch:
    """The architecture described by a Hugging Face config.json (or a folder holding one)."""
    fields = read_hf_config_fields(path)
    try:
        return ModelArch.model_validate(fields)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'model'}: {e['msg'].removeprefix('Value error, ')}"
            for e in err.errors()
        )
        raise BadInput(
            f"The model shape in {fields['source']} is inconsistent.",
            problems,
            "Check the config.json, or describe the model inline in the spec.",
        ) from None
