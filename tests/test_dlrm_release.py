"""Issue #25: the recommendation export's arguments, read by TorchRec's DLRM trainer itself.

`torchrec_dlrm/dlrm_main.py` of facebookresearch/dlrm at the pinned commit is vendored byte for
byte (tests/data/dlrm_release.py; SHA-256 checked here). Its own `parse_args` (and the
`InteractionType` enum it parses into) runs on the exported argument vector, then the start-up
statements of its `main` up to the point where it needs a GPU (the comma lists it converts and
the asserts on tables, multi-hot sizes and data paths), with torchrec's 26 Criteo table names.
What it rejects fails here, as it would fail on the cluster.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import hashlib
import io
import json
import re
import shlex
import tempfile
from enum import Enum
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

import rightsize.api as api
from rightsize.errors import BadInput, RightsizeError
from rightsize.export import fw_recsys, render_files
from rightsize.report.render import result_dict

ROOT = Path(__file__).resolve().parents[1]
RELEASE = Path(__file__).parent / "data" / f"torchrec_dlrm_{fw_recsys.DLRM_COMMIT[:7]}"
SOURCE = json.loads((RELEASE / "SOURCE.json").read_text())
# torchrec.datasets.criteo: DEFAULT_CAT_NAMES = [f"cat_{idx}" for idx in range(CAT_FEATURE_COUNT)], 26 of them
CRITEO_CAT_NAMES = [f"cat_{i}" for i in range(26)]


def _file(path: str) -> str:
    return (RELEASE / (path + ".txt")).read_text(encoding="utf-8")


@cache
def release() -> dict[str, Any]:
    """dlrm_main.py's InteractionType, parse_args and the GPU-free start of main, compiled from
    the vendored text (the rest of the module imports torch and torchrec)."""
    tree = ast.parse(_file("torchrec_dlrm/dlrm_main.py"))
    nodes = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    main = nodes["main"]
    body = [s for s in main.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    cut = next(i for i, s in enumerate(body) if "LOCAL_RANK" in ast.unparse(s))  # needs a GPU from here
    startup = ast.FunctionDef(
        name="startup", args=main.args, body=[*body[:cut], ast.parse("return args").body[0]],
        decorator_list=[], returns=None, type_params=[],
    )  # fmt: skip
    module = ast.Module(body=[nodes["InteractionType"], nodes["parse_args"], startup], type_ignores=[])
    ast.fix_missing_locations(module)
    ns: dict[str, Any] = {"argparse": argparse, "Enum": Enum, "DEFAULT_CAT_NAMES": CRITEO_CAT_NAMES}
    ns["torch"] = type(
        "torch", (), {"backends": argparse.Namespace(cuda=argparse.Namespace(matmul=argparse.Namespace()))}
    )
    exec(compile(module, "dlrm_main.py", "exec"), ns)
    return ns


def run_release(words: list[str]) -> argparse.Namespace | str:
    """The parsed, start-up-checked arguments, or what the trainer says when it refuses them."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return release()["startup"](words)
    except SystemExit:
        said = [line for line in err.getvalue().splitlines() if "error:" in line] or [err.getvalue().strip()]
        return f"dlrm_main.py parse_args rejects: {said[-1][-300:]}"
    except AssertionError as e:
        return f"dlrm_main.py main() asserts: {e}"


def dlrm_words(text: str) -> list[list[str]]:
    """The argument words after each dlrm_main.py in a shell text (variables become /var: the
    data path is the one variable an argument uses)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        if line.lstrip().startswith(("#", "test ", '"""')) or "dlrm_main.py" not in line:
            continue  # a comment, or the check that the checkout has the file
        words = shlex.split(re.sub(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z_0-9]*", "/var", line))
        i = next(i for i, w in enumerate(words) if w.endswith("dlrm_main.py"))
        out.append(words[i + 1 :])
    return out


def scripts(files: dict[str, str]) -> str:
    """The shell the export runs: the job scripts, and every container's `bash -c` script."""
    out = [text for name, text in files.items() if name.endswith(".sbatch")]
    for name, text in files.items():
        if name.endswith(".yaml"):
            for doc in yaml.safe_load_all(text):
                if doc and doc["kind"] == "JobSet":
                    for rj in doc["spec"]["replicatedJobs"]:
                        out += [
                            c["args"][0] for c in rj["template"]["spec"]["template"]["spec"]["containers"]
                        ]
    return "\n".join(out)


# MLPerf's reference run is one 8-GPU node. Pinned: since 1- and 2-GPU shapes are billed as such
# (issue 28), `objective: gpu_hours` alone picks 2 H100s, whose 70 GB each for embeddings
# cannot hold dlrm_main.py's exact-Adagrad state (the exporter refuses that plan with the reason).
EIGHT = 8


@cache
def planned(**changes: Any) -> dict[str, Any] | RightsizeError:
    doc = yaml.safe_load((ROOT / "examples" / "dlrm-criteo-train.yaml").read_text())
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        d = doc
        for key in path:
            d = d.setdefault(key, {})
        d[last] = (
            list(value) if isinstance(value, tuple) else copy.deepcopy(value)
        )  # tuples: hashable for @cache
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(yaml.safe_dump(doc), encoding="utf-8")
        try:
            return json.loads(json.dumps(result_dict(api.plan(spec))))
        except RightsizeError as err:
            return err


def test_vendored_trainer_is_the_pinned_commit() -> None:
    assert SOURCE["commit"] == fw_recsys.DLRM_COMMIT
    for path, digest in SOURCE["sha256"].items():
        data = (RELEASE / (path + ".txt")).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"{path} differs from {SOURCE['commit']}"
    assert "MIT License" in _file("LICENSE")


def test_the_release_parser_can_refuse() -> None:
    """The loaded parser is the real one: it rejects what the trainer rejects."""
    assert isinstance(run_release(["--epochs", "1"]), argparse.Namespace)
    assert "rejects" in str(run_release(["--no_such_flag"]))
    assert "rejects" in str(run_release(["--interaction_type", "transformer"]))
    both = ["--in_memory_binary_criteo_path", "a", "--synthetic_multi_hot_criteo_path", "b"]
    assert "asserts" in str(run_release(both))


@pytest.mark.parametrize("target", ["slurm", "kubernetes"])
def test_exported_arguments_are_accepted_and_are_the_plans(target: str) -> None:
    plan = planned(train__precision="tf32", targets__gpus=EIGHT)
    assert not isinstance(plan, RightsizeError), plan
    files = render_files(plan, target)
    text = scripts(files)
    commands = dlrm_words(text)
    assert len(commands) == 1, text
    ns = run_release(commands[0])
    assert isinstance(ns, argparse.Namespace), ns
    best, tables = plan["best"], plan["tables"]
    assert ns.batch_size * best["gpus"] == best["batch"] == plan["spec"]["train"]["global_batch"]
    assert ns.num_embeddings_per_feature == [round(b / tables["row_bytes"]) for b in tables["bytes_by_table"]]
    assert ns.embedding_dim == tables["embedding_dim"] and ns.epochs == plan["spec"]["train"]["epochs"]
    assert ns.allow_tf32 and ns.adagrad and str(ns.interaction_type) == "dcn"
    assert ns.synthetic_multi_hot_criteo_path == "/var"  # "$DATA_PATH": a required input
    if target == "slurm":
        assert 'DATA_PATH="${DATA_PATH:?' in files["train.sbatch"]
        assert f"#SBATCH --gpus-per-node={min(best['gpus'], 8)}" in files["train.sbatch"]


def test_the_architecture_is_the_mlperf_reference_command() -> None:
    """The exported model arguments equal those of the MLPerf DLRM v2 command in the trainer's
    own README (the preset's source), parsed by the same parser."""
    readme = _file("torchrec_dlrm/README.MD")
    block = readme.split("Run the MLPerf DLRM v2 benchmark, which uses the materialized multi-hot dataset")[1]
    cmd = block.split("```")[1].split("dlrm_main.py -- ")[1]
    ref = run_release(shlex.split(re.sub(r"\$\(\(.*?\)\)\)?(?=\s)|\$\w+", "1", cmd.replace("\\\n", " "))))
    plan = planned(train__precision="tf32", targets__gpus=EIGHT)
    assert not isinstance(plan, RightsizeError) and isinstance(ref, argparse.Namespace)
    ours = run_release(dlrm_words(render_files(plan, "slurm")["train.sbatch"])[0])
    assert isinstance(ours, argparse.Namespace)
    for key in ("num_embeddings_per_feature", "embedding_dim", "dense_arch_layer_sizes", "over_arch_layer_sizes",
                "interaction_type", "dcn_num_layers", "dcn_low_rank_dim", "adagrad", "learning_rate", "epochs",
                "mmap_mode", "pin_memory"):  # fmt: skip
        assert getattr(ours, key) == getattr(ref, key), key


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({}, "dense compute in bf16"),  # the example as it is: the trainer has no autocast
        ({"train__precision": "tf32", "embeddings__precision": "fp16"}, "fp16 embedding tables"),
        ({"train__precision": "tf32", "targets__accelerators": ("mi300x",)}, "NVIDIA GPUs only"),
        ({"train__precision": "tf32", "targets__accelerators": ("trn2",)}, "no Neuron"),
        ({"train__precision": "tf32", "targets__accelerators": ("gb200",)}, "Arm (Grace)"),
        ({"train__precision": "tf32", "train__epochs": 150, "targets__deadline": "30d"}, "checkpoint"),
        # gpu_hours alone picks 2 H100s with two tables in host memory: the trainer keeps all in HBM
        ({"train__precision": "tf32"}, "in host memory"),
    ],
)
def test_what_the_trainer_cannot_run_is_refused(changes: dict[str, Any], says: str) -> None:
    plan = planned(**changes)
    assert not isinstance(plan, RightsizeError), plan
    for target in ("slurm", "kubernetes"):
        with pytest.raises(BadInput) as err:
            render_files(plan, target)
        e = err.value
        assert says in e.what + e.why and e.why and e.fix, (target, e.what)


def test_vision_and_recsys_serving_are_refused_with_the_reason() -> None:
    """Serving plans of both kinds (no Triton or TorchServe config is written) and their
    Prometheus rules are refused with what, why and fix."""
    for example in ("resnet50-batch-serving", "dlrm-criteo-serving"):
        plan = json.loads(json.dumps(result_dict(api.plan(ROOT / "examples" / f"{example}.yaml"))))
        for target in ("slurm", "kubernetes", "prometheus"):
            with pytest.raises(BadInput) as err:
                render_files(plan, target)
            assert ("Triton" in err.value.why or target == "prometheus") and err.value.what and err.value.fix


@pytest.mark.parametrize(
    ("part", "key", "value"),
    [
        ("tables", "bytes_by_table", [1.0, 2.0]),  # not every table
        ("tables", "row_bytes", 0),
        ("tables", "embedding_dim", "x"),
        ("best", "batch", 7),  # does not split over the GPUs
        ("best", "step", {"step_s": float("nan")}),
        ("best", "placement", {"ssd_bytes": 1e9}),
        ("spec", "model", "no-such-model"),
        ("sizing", "nodes", {"nodes": 3}),
    ],
)
def test_a_hand_edited_recommendation_plan_is_bad_input_not_a_traceback(
    part: str, key: str, value: Any
) -> None:
    plan = planned(train__precision="tf32", targets__gpus=EIGHT)
    assert not isinstance(plan, RightsizeError)
    plan = copy.deepcopy(plan)
    plan[part][key] = value
    for target in ("slurm", "kubernetes"):
        with pytest.raises(BadInput) as err:
            render_files(plan, target)
        assert err.value.why and err.value.fix
