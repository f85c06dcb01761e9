"""Framework arguments against the pinned releases' own code, and the model as planned.

- Megatron-LM: every flag and value is checked against the argument table of Megatron-LM tag
  core_v0.13.0 (commit c550cf6c41c31cd3ec72e05c25ea0c979f2b6631), megatron/training/arguments.py,
  written from that release's own parser into tests/data/megatron_core_v0.13.0_arguments.json
  (tests/data/megatron_release.py; tests/test_megatron_release.py runs the release's parse_args
  and validate_args on every exported command where megatron-core 0.13.0 is installed); its interleaved-schedule
  rule (megatron/core/pipeline_parallel/schedules.py of that tag) and its layout rules are
  re-run here. The model the flags build is counted the way Megatron builds it and must equal
  the plan's parameter count within 1%.
- torchtitan: the TOML's sections and keys against the JobConfig dataclasses of the torchtitan
  0.1.0 wheel (torchtitan/config_manager.py) in tests/data/torchtitan_v0.1.0_job_config.json
  (its ConfigManager silently drops unknown keys, so the table is the stricter check), and its
  Llama 3 flavors (torchtitan/models/llama3/__init__.py) with torchtitan's own FFN rounding.
- NeMo 2.0: the script parses as Python, names the recipe of the plan's shape, reads real data,
  saves on preemption, and leaves the distributed-optimizer field alone for LoRA.
"""

from __future__ import annotations

import ast
import json
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
from export_plans import plan_dict as _plan_dict

from rightsize.errors import BadInput
from rightsize.export.frameworks import launch_for
from rightsize.export.fw_megatron import microbatch_group
from rightsize.export.fw_torchtitan import FLAVORS
from rightsize.export.names import ShellExpr
from rightsize.export.plan_view import training_view
from rightsize.perf.params import count_params
from rightsize.spec.model import ModelArch

DATA = Path(__file__).parent / "data"
MEGATRON = json.loads((DATA / "megatron_core_v0.13.0_arguments.json").read_text())["flags"]
TITAN = json.loads((DATA / "torchtitan_v0.1.0_job_config.json").read_text())
PRETRAIN = ["gpt3-175b-megatron", "llama3-70b-pretrain", "llama3.1-405b-pretrain", "mixtral-8x7b-pretrain",
            "deepseek-v3-pretrain"]  # fmt: skip


def plan_dict(example: str) -> dict[str, Any]:
    """The example's plan, its layer offload (if the search chose it) replaced by full recompute:
    the pinned Megatron-LM cannot launch layer offload (its refusal and NeMo's fields are
    tested in test_layer_offload.py), and these tests check the rest of each launch."""
    plan = _plan_dict(example)
    if str(plan["best"]["parallel"].get("recompute", "")).startswith("layer_offload"):
        plan["best"]["parallel"]["recompute"] = "full"
    return plan


def _flags(args: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for flag, value in args:
        assert flag not in out, f"{flag} given twice"
        out[flag] = value
    return out


def check_megatron_args(args: tuple[tuple[str, Any], ...]) -> None:
    """Every flag exists in core_v0.13.0, takes a value exactly when the parser wants one, and
    the value is of the parser's type and among its choices."""
    for flag, value in args:
        assert flag in MEGATRON, f"{flag} is not an argument of Megatron-LM core_v0.13.0"
        spec = MEGATRON[flag]
        assert spec["value"] == (value is not None), f"{flag}: value {value!r} vs parser {spec}"
        if value is None or isinstance(value, ShellExpr):
            continue
        text = str(value)
        if spec.get("type") == "int":
            int(text)
        elif spec.get("type") == "float":
            float(text)
        if "choices" in spec:
            assert text in spec["choices"], f"{flag} {text} not in {spec['choices']}"


def megatron_params(f: dict[str, Any], vocab: int) -> float:
    """Parameters of the GPT model Megatron (core_v0.13.0, gpt_layer_specs) builds from the flags."""
    h, layers, heads = int(f["--hidden-size"]), int(f["--num-layers"]), int(f["--num-attention-heads"])
    ffn, bias = int(f["--ffn-hidden-size"]), "--disable-bias-linear" not in f
    per_norm = h if f["--normalization"] == "RMSNorm" else 2 * h
    tp = int(f["--tensor-model-parallel-size"])
    multiple = int(f.get("--make-vocab-size-divisible-by", 128)) * tp
    padded = math.ceil(vocab / multiple) * multiple
    total = padded * h * (1 if "--untie-embeddings-and-output-weights" not in f else 2) + per_norm
    if f["--position-embedding-type"] == "learned_absolute":
        total += int(f["--max-position-embeddings"]) * h
    if "--multi-latent-attention" in f:
        qk, rope, v = int(f["--qk-head-dim"]), int(f["--qk-pos-emb-head-dim"]), int(f["--v-head-dim"])
        ql, kvl = int(f["--q-lora-rank"]), int(f["--kv-lora-rank"])
        attn = h * ql + ql + ql * heads * (qk + rope) + h * (kvl + rope) + kvl + kvl * heads * (qk + v)
        attn += heads * v * h
    else:
        d = int(f.get("--kv-channels", h // heads))
        g = int(f.get("--num-query-groups", heads))
        qkv = heads * d + 2 * g * d
        attn = h * qkv + heads * d * h + (qkv + h if bias else 0)
    mats = 3 if "--swiglu" in f else 2

    def mlp(width: int) -> float:
        return (mats * h * width) + ((width * (mats - 1) + h) if bias else 0)

    moe = [0] * layers
    if "--num-experts" in f:
        freq = f.get("--moe-layer-freq", 1)
        moe = eval(freq) if isinstance(freq, str) else [1] * layers  # noqa: S307 (the test's own flag text)
    for is_moe in moe:
        total += attn + 2 * per_norm
        if is_moe:
            experts, width = int(f["--num-experts"]), int(f.get("--moe-ffn-hidden-size", ffn))
            total += experts * mlp(width) + h * experts
            total += (
                mlp(int(f["--moe-shared-expert-intermediate-size"]))
                if "--moe-shared-expert-intermediate-size" in f
                else 0
            )
        else:
            total += mlp(ffn)
    return float(total)


@pytest.mark.parametrize("example", PRETRAIN)
def test_megatron_builds_the_planned_model(example: str) -> None:
    plan = plan_dict(example)
    launch = launch_for(training_view(plan), "megatron")
    check_megatron_args(launch.arg_list)
    f = _flags(launch.arg_list)
    arch = ModelArch.model_validate(plan["spec"]["model"])
    planned = count_params(arch).total
    built = megatron_params(f, arch.vocab)
    assert abs(built - planned) / planned < 0.01, (example, built / 1e9, planned / 1e9)
    assert f["--tokenizer-type"] == "HuggingFaceTokenizer"
    assert f["--tokenizer-model"] == ShellExpr("$TOKENIZER_MODEL")
    assert int(f["--lr-warmup-iters"]) >= 1


def test_gpt3_is_gpt3() -> None:
    f = _flags(launch_for(training_view(plan_dict("gpt3-175b-megatron")), "megatron").arg_list)
    assert "--swiglu" not in f and "--untie-embeddings-and-output-weights" not in f
    assert "--disable-bias-linear" not in f
    assert (f["--normalization"], f["--position-embedding-type"]) == ("LayerNorm", "learned_absolute")
    assert (f["--lr"], f["--lr-warmup-iters"]) == ("6e-05", 120)  # GPT-3: 375M tokens of 3.1M a step


def test_llama3_rotary_base() -> None:
    f = _flags(launch_for(training_view(plan_dict("llama3-70b-pretrain")), "megatron").arg_list)
    assert (f["--position-embedding-type"], f["--rotary-base"]) == ("rope", 500000)
    assert "--swiglu" in f and f["--normalization"] == "RMSNorm" and "--use-rope-scaling" not in f
    f = _flags(launch_for(training_view(plan_dict("llama3.1-405b-pretrain")), "megatron").arg_list)
    assert (f["--use-rope-scaling"], f["--rope-scaling-factor"]) == (None, "8")  # Llama 3.1


def _schedule_ok(micro: int, pp: int, group: int) -> bool:
    """megatron/core/pipeline_parallel/schedules.py (core_v0.13.0), interleaved schedule checks."""
    return pp <= group <= micro and not (0 < micro % group < pp)


@pytest.mark.parametrize("example", PRETRAIN)
def test_megatron_layout_rules(example: str) -> None:
    v = training_view(plan_dict(example))
    f = _flags(launch_for(v, "megatron").arg_list)
    layout = f.get("--pipeline-model-parallel-layout")
    assert (
        sum(x in f for x in ("--pipeline-model-parallel-layout", "--num-layers-per-virtual-pipeline-stage"))
        <= 1
    )
    if layout:  # PipelineParallelLayerLayout.validate_layer_layout (core_v0.13.0)
        stages = layout.split("|")
        assert len(stages) % v.pp == 0 and sum(s.count("t") for s in stages) == v.model.layers
        assert layout[0] == "E" and layout[-1] == "L" and layout.count("E") == layout.count("L") == 1
        assert set(layout) <= set("Et|L")
    # megatron/core/num_microbatches_calculator.py: the global batch splits into whole micro-batches
    assert int(f["--global-batch-size"]) % (int(f["--micro-batch-size"]) * v.dp) == 0
    assert int(f["--seq-length"]) <= int(f["--max-position-embeddings"])
    if v.vpp > 1:
        micro = v.global_batch // (v.micro_batch * v.dp)
        group = int(f.get("--microbatch-group-size-per-virtual-pipeline-stage", v.pp))
        assert v.pp > 1 and _schedule_ok(micro, v.pp, group)
    if "--use-custom-fsdp" in f:
        assert "--use-distributed-optimizer" in f and "--no-gradient-accumulation-fusion" in f


def test_interleaved_micro_batches_fixed_or_refused() -> None:
    plan = plan_dict("gpt3-175b-megatron")
    plan["spec"]["training"]["global_batch"] = 16 * 12  # 12 micro-batches per replica, pp 8
    v = training_view(plan)
    group = microbatch_group(v)
    assert group is not None and _schedule_ok(12, 8, group) and not _schedule_ok(12, 8, 8)
    check_megatron_args(launch_for(v, "megatron").arg_list)
    plan["spec"]["training"]["global_batch"] = 16 * 4  # fewer micro-batches than stages
    with pytest.raises(BadInput, match="micro-batches"):
        launch_for(training_view(plan), "megatron")


def test_alibi_refused_by_megatron() -> None:
    plan = plan_dict("gpt3-175b-megatron")
    plan["spec"]["model"]["positions"] = "alibi"
    with pytest.raises(BadInput, match="ALiBi"):
        launch_for(training_view(plan), "megatron")


def _titan_ffn(dim: int, multiplier: float, multiple_of: int) -> int:
    """torchtitan/models/llama3/model/model.py FeedForward (v0.1.0)."""
    hidden = int(multiplier * int(2 * 4 * dim / 3))
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def test_torchtitan_flavors_match_the_release() -> None:
    for name, a in TITAN["llama3_flavors"].items():
        ffn = _titan_ffn(a["dim"], a["ffn_dim_multiplier"], a["multiple_of"])
        assert FLAVORS[name] == (a["n_layers"], a["dim"], a["n_heads"], a["n_kv_heads"], ffn, a["rope_theta"])


@pytest.mark.parametrize(("example", "flavor"), [("llama3-70b-pretrain", "70B")])
def test_torchtitan_keys_exist_in_the_release(example: str, flavor: str) -> None:
    v = training_view(plan_dict(example))
    launch = launch_for(v, "torchtitan")
    doc = tomllib.loads(launch.files["torchtitan.toml"])
    for section, keys in doc.items():
        assert section in TITAN["sections"], section
        for key, value in keys.items():
            typ = TITAN["sections"][section].get(key)
            assert typ is not None, f"[{section}] {key} is not a torchtitan v0.1.0 key"
            if typ.startswith("Literal["):
                assert repr(value) in typ, (section, key, value, typ)
    assert doc["model"]["flavor"] == flavor and doc["training"]["dataset"] in TITAN["datasets"]
    par = doc["parallelism"]
    stages = (v.model.layers + 2) // par.get("pipeline_parallel_layers_per_stage", v.model.layers + 2)
    if v.vpp > 1 and "pipeline_parallel_layers_per_stage" not in par:  # torchtitan's default: 2 per rank
        assert any("2 per rank" in n for n in launch.notes)
    elif v.vpp > 1:
        assert stages == v.pp * v.vpp and (v.model.layers + 2) % (v.pp * v.vpp) == 0
    for flag, _ in launch.arg_list:
        section, key = flag.removeprefix("--").split(".")
        assert key in TITAN["sections"][section], flag


@pytest.mark.parametrize(
    "example",
    ["gpt3-175b-megatron", "mixtral-8x7b-pretrain", "deepseek-v3-pretrain", "llama3.1-405b-pretrain"],
)
def test_torchtitan_refuses_what_it_cannot_load(example: str) -> None:
    with pytest.raises(BadInput, match="cannot run this plan"):
        launch_for(training_view(plan_dict(example)), "torchtitan")


@pytest.mark.parametrize(
    ("example", "recipe"),
    [("gpt3-175b-megatron", "gpt3_175b.pretrain_recipe"), ("llama3-8b-lora-weekly", "llama3_8b.finetune_recipe"),
     ("mixtral-8x7b-pretrain", "mixtral_8x7b.pretrain_recipe"),
     ("llama3.1-405b-pretrain", "llama31_405b.pretrain_recipe")],
)  # fmt: skip
def test_nemo_script(example: str, recipe: str) -> None:
    v = training_view(plan_dict(example))
    py = launch_for(v, "nemo").files["nemo_train.py"]
    ast.parse(py)
    assert f"llm.{recipe}(" in py and "PreemptionCallback" in py and "max_time" in py
    assert "mock" not in py.lower() and "DATA_PATH" in py
    assert ("use_distributed_optimizer" in py) == (v.method != "lora")
    assert ("PreTrainingDataModule" in py) == (v.method != "lora")


def test_nemo_refuses_a_shape_without_recipe() -> None:
    plan = plan_dict("gpt3-175b-megatron")
    plan["spec"]["model"]["layers"] = 90
    with pytest.raises(BadInput, match="no NeMo recipe"):
        launch_for(training_view(plan), "nemo")


def test_nemo_refuses_an_uneven_pipeline() -> None:
    with pytest.raises(BadInput, match="--framework megatron"):  # DeepSeek-V3: 61 layers over 8 x 4 stages
        launch_for(training_view(plan_dict("deepseek-v3-pretrain")), "nemo")


@pytest.mark.parametrize("vpp", [2, 3, 4, 6])
@pytest.mark.parametrize("micro", [1, 7, 8, 9, 12, 15, 16, 17, 23, 96])
def test_megatron_interleaving_sweep(vpp: int, micro: int) -> None:
    """Every micro-batch count per replica: arguments the schedule accepts, or a clear refusal."""
    plan = plan_dict("gpt3-175b-megatron")  # pp 8, dp 16, micro-batch 1
    plan["spec"]["training"]["global_batch"] = 16 * micro
    plan["best"]["parallel"]["vpp"] = vpp
    v = training_view(plan)
    try:
        args = launch_for(v, "megatron").arg_list
    except BadInput as e:
        assert micro < v.pp and "micro-batches" in str(e)
        return
    check_megatron_args(args)
    f = _flags(args)
    assert _schedule_ok(micro, v.pp, int(f.get("--microbatch-group-size-per-virtual-pipeline-stage", v.pp)))


def test_nemo_script_stops_without_its_data(tmp_path: Path) -> None:
    """Run by Python with empty stand-ins for NeMo: no DATA_PATH stops it with the name."""
    import subprocess
    import sys

    for module in ("nemo_run", "nemo/collections/common/tokenizers/huggingface/auto_tokenizer",
                   "nemo/lightning/pytorch/callbacks"):  # fmt: skip
        path = tmp_path / "py" / f"{module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "from unittest.mock import MagicMock\ndef __getattr__(name):\n    return MagicMock()\n"
        )
    (tmp_path / "py" / "nemo" / "collections" / "__init__.py").write_text(
        "from unittest.mock import MagicMock\nllm = MagicMock()\n"
    )
    py = launch_for(training_view(plan_dict("llama3-70b-pretrain")), "nemo").files["nemo_train.py"]
    (tmp_path / "job.py").write_text(py)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "py")}
    run = subprocess.run(
        [sys.executable, "job.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 1 and "set DATA_PATH to the dataset prefix" in run.stderr
    env |= {"DATA_PATH": "d", "TOKENIZER_MODEL": "t"}
    run = subprocess.run(
        [sys.executable, "job.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.parametrize("framework", ["megatron", "torchtitan", "nemo"])
def test_an_fp8_moe_dispatch_is_refused_by_every_pinned_framework(framework: str) -> None:
    """The plan timed DeepSeek-style fp8 dispatch; none of the pinned releases sends tokens in
    fp8, so the job would run slower than planned: refused with the reason, not exported."""
    plan = plan_dict("deepseek-v3-pretrain")
    launch_for(training_view(plan), "megatron")  # exports as planned in 16 bit
    plan["spec"]["training"]["moe_dispatch_dtype"] = "fp8"
    with pytest.raises(BadInput, match="moe_dispatch_dtype: bf16"):
        launch_for(training_view(plan), framework)
