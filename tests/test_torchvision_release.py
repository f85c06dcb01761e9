"""Issue #25: the vision export's arguments, read by torchvision's classification reference itself.

`references/classification/train.py` of torchvision v0.21.0 is vendored byte for byte (from
Debian's source archive of the release; tests/data/torchvision_release.py; SHA-256 checked
here). Its own `get_args_parser` parses the exported arguments, which must carry the plan's
figures. The resume launcher the export writes is run with real PyTorch on a checkpoint shaped
like train.py's (its argparse Namespace inside): without the launcher PyTorch refuses it.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shlex
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

import rightsize.api as api
from rightsize.errors import BadInput, RightsizeError
from rightsize.export import fw_vision, render_files
from rightsize.report.render import result_dict

ROOT = Path(__file__).resolve().parents[1]
RELEASE = Path(__file__).parent / "data" / f"torchvision_v{fw_vision.TV_VERSION}"
SOURCE = json.loads((RELEASE / "SOURCE.json").read_text())


def _file(path: str) -> str:
    return (RELEASE / (path + ".txt")).read_text(encoding="utf-8")


@cache
def parser() -> argparse.ArgumentParser:
    """train.py's own get_args_parser, compiled from the vendored text (the module imports torch)."""
    tree = ast.parse(_file(fw_vision.TRAIN_SCRIPT))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_args_parser")
    ns: dict[str, Any] = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "train.py", "exec"), ns)
    p: argparse.ArgumentParser = ns["get_args_parser"](add_help=False)
    p.exit_on_error = False
    return p


def parse(words: list[str]) -> argparse.Namespace | str:
    """train.py parses with parse_args: an unknown or ill-typed argument is an error."""
    try:
        ns, extra = parser().parse_known_args(words)
    except argparse.ArgumentError as err:
        return f"train.py rejects {err}"
    return f"train.py does not know {extra}" if extra else ns


def train_words(text: str) -> list[list[str]]:
    """The words after each train.py in a shell text (variables become /var)."""
    out = []
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():
        if line.lstrip().startswith(("#", "test ")) or "train.py" not in line:
            continue
        words = shlex.split(re.sub(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z_0-9]*", "/var", line))
        at = [i for i, w in enumerate(words) if w.endswith("references/classification/train.py")]
        if at:
            rest = words[at[0] + 1 :]
            out.append(rest[: rest.index("&")] if "&" in rest else rest)
    return out


def scripts(files: dict[str, str]) -> str:
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


@cache
def planned(**changes: Any) -> dict[str, Any] | RightsizeError:
    doc = yaml.safe_load((ROOT / "examples" / "resnet50-imagenet-train.yaml").read_text())
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        d = doc
        for key in path:
            d = d.setdefault(key, {})
        if value is None:
            d.pop(last, None)
        else:
            d[last] = list(value) if isinstance(value, tuple) else value
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(yaml.safe_dump(doc), encoding="utf-8")
        try:
            return json.loads(json.dumps(result_dict(api.plan(spec))))
        except RightsizeError as err:
            return err


def test_vendored_reference_is_the_release() -> None:
    assert (
        SOURCE["tag"] == f"v{fw_vision.TV_VERSION}" and _file("version.txt").strip() == fw_vision.TV_VERSION
    )
    for path, digest in SOURCE["sha256"].items():
        data = (RELEASE / (path + ".txt")).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"{path} differs from {SOURCE['tag']}"
    assert "BSD 3-Clause" in _file("LICENSE")


def test_the_release_parser_can_refuse() -> None:
    assert isinstance(parse(["--model", "resnet50"]), argparse.Namespace)
    assert "does not know" in str(parse(["--no-such-flag"]))
    assert "rejects" in str(parse(["--epochs", "2.5"]))


@pytest.mark.parametrize(
    ("changes", "model"),
    [
        ({}, "resnet50"),
        ({"model": "vit-b16", "train__optimizer": None, "targets__accelerators": ("h100-sxm",)}, "vit_b_16"),
    ],
)
@pytest.mark.parametrize("target", ["slurm", "kubernetes"])
def test_exported_arguments_are_accepted_and_are_the_plans(
    target: str, changes: dict[str, Any], model: str
) -> None:
    plan = planned(**changes)
    assert not isinstance(plan, RightsizeError), plan
    files = render_files(plan, target)
    commands = train_words(scripts(files))
    assert len(commands) == 1, scripts(files)
    ns = parse(commands[0])
    assert isinstance(ns, argparse.Namespace), ns
    best, train = plan["best"], plan["spec"]["train"]
    assert ns.model == model and ns.batch_size == best["batch_per_gpu"] and ns.epochs == train["epochs"]
    assert ns.workers == round(best["cpu_cores_per_gpu"]) and ns.amp and ns.data_path == "/var"
    assert ns.output_dir == "/var" and ns.resume == "/var/checkpoint.pth"
    if model == "resnet50":  # Goyal et al.: 0.1 per 256 images, linear warm-up from the base rate
        assert ns.lr == pytest.approx(0.1 * best["batch_per_gpu"] * best["gpus"] / 256)
        assert ns.lr_warmup_epochs == 5 and ns.lr_warmup_decay == pytest.approx(
            256 / (best["batch_per_gpu"] * best["gpus"])
        )
    else:
        assert ns.opt == "adamw" and ns.lr == 0.003
    if target == "slurm":
        assert 'DATA_PATH="${DATA_PATH:?' in files["train.sbatch"] and fw_vision.RESUME_FILE in files


@pytest.mark.parametrize(
    ("preset", "model", "optimizer"), [("vit-b16", "vit_b_16", None), ("vit-l16", "vit_l_16", "sgd")]
)
def test_the_vit_recipes_are_the_readme_s(preset: str, model: str, optimizer: str | None) -> None:
    """The ViT recipe flags equal the README's command for the model, parsed by the same parser;
    only the plan's own figures differ."""
    block = _file("references/classification/README.md").split(f"#### {model}\n")[1].split("```")[1]
    words = shlex.split(block.replace("\\\n", " "))
    ref = parse(words[words.index("train.py") + 1 :])
    plan = planned(model=preset, train__optimizer=optimizer, targets__accelerators=("h100-sxm",))
    assert isinstance(ref, argparse.Namespace) and not isinstance(plan, RightsizeError)
    ours = parse(train_words(render_files(plan, "slurm")["train.sbatch"])[0])
    assert isinstance(ours, argparse.Namespace)
    keep = {"data_path", "batch_size", "epochs", "workers", "output_dir", "resume", "amp"}  # the plan's own
    differ = {
        k: (getattr(ours, k), getattr(ref, k))
        for k in vars(ref)
        if k not in keep and getattr(ours, k) != getattr(ref, k)
    }
    assert not differ, differ


def test_the_resume_launcher_loads_what_train_py_saves(tmp_path: Path) -> None:
    """With real PyTorch: a checkpoint holding an argparse Namespace (as train.py saves it) is
    refused by torch.load(weights_only=True) as train.py calls it, and loads under the launcher;
    a --resume of a file that does not exist yet is dropped (the first start)."""
    pytest.importorskip("torch")
    fake = tmp_path / "train.py"
    fake.write_text(
        "import argparse, sys, torch\n"
        "args = sys.argv[1:]\n"
        "if '--resume' in args:\n"
        "    ckpt = torch.load(args[args.index('--resume') + 1], map_location='cpu', weights_only=True)\n"
        "    print('resumed', ckpt['epoch'])\n"
        "else:\n"
        "    torch.save({'epoch': 3, 'args': argparse.Namespace(lr=0.1)}, sys.argv[0] + '.pth')\n"
        "    print('fresh')\n"
    )
    launcher = tmp_path / fw_vision.RESUME_FILE
    launcher.write_text(fw_vision.resume_script())
    ckpt = str(fake) + ".pth"

    def run(*cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *cmd], capture_output=True, text=True, timeout=120)

    first = run(str(launcher), str(fake), "--resume", ckpt)
    assert first.returncode == 0 and "fresh" in first.stdout, first.stderr
    bare = run(str(fake), "--resume", ckpt)
    assert bare.returncode != 0 and "Weights only load failed" in bare.stderr
    again = run(str(launcher), str(fake), "--resume", ckpt)
    assert again.returncode == 0 and "resumed 3" in again.stdout, again.stderr


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"targets__accelerators": ("b200",)}, "Blackwell"),
        ({"targets__accelerators": ("mi300x",)}, "NVIDIA GPUs only"),
        ({"train__decode": "gpu"}, "DALI"),
        ({"train__precision": "fp8", "targets__accelerators": ("h100-sxm",)}, "fp8"),
        ({"train__optimizer": "lars"}, "lars"),
    ],
)
def test_what_the_reference_cannot_run_is_refused(changes: dict[str, Any], says: str) -> None:
    plan = planned(**changes)
    assert not isinstance(plan, RightsizeError), plan
    for target in ("slurm", "kubernetes"):
        with pytest.raises(BadInput) as err:
            render_files(plan, target)
        assert says in err.value.what + err.value.why and err.value.fix, err.value.what


@pytest.mark.parametrize(
    ("part", "key", "value"),
    [
        ("best", "batch_per_gpu", 0),
        ("best", "images_per_s", float("inf")),
        ("best", "step", {"step_s": -1}),
        ("spec", "model", "no-such-model"),
        ("sizing", "nodes", {"nodes": 3}),
        ("best", "whole_run", {"parts": [{"part": "job start", "time_s": "x"}]}),
    ],
)
def test_a_hand_edited_vision_plan_is_bad_input_not_a_traceback(part: str, key: str, value: Any) -> None:
    plan = planned()
    assert not isinstance(plan, RightsizeError)
    plan = json.loads(json.dumps(plan))
    plan[part][key] = value
    for target in ("slurm", "kubernetes"):
        with pytest.raises(BadInput) as err:
            render_files(plan, target)
        assert err.value.why and err.value.fix
