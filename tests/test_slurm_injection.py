"""Issue #24: no code runs from a name in an exported Slurm script.

Hostile plan and model names (command substitution, backticks, `;`, newlines, quotes,
`${IFS}`, Unicode line separators) go into a planned training and serving plan; every
`.sbatch` is then run by bash in a sandbox folder with stub Slurm, launcher and framework
commands on PATH (srun passes its command through, so the rank wrapper and the framework's
arguments are parsed as on a cluster), and no canary file may appear. Each script must also
pass `bash -n`, keep its `#SBATCH` block whole, and (where Slurm is installed) be accepted
by `sbatch` with the job name made safe."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rightsize.api as api
from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.export.shell_words import UNSAFE_CATEGORIES, arg_variables, arg_words, safe_token, word
from rightsize.report.render import result_dict

sys.path.insert(0, str(Path(__file__).parent))
from slurm_cluster import NodeShape, catalog_cluster, missing  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = [
    "$(touch CANARY)",
    "`touch CANARY`",
    "x; touch CANARY;",
    "x\ntouch CANARY\n",
    "x\r\ntouch CANARY #",
    "'; touch CANARY; '",
    '"; touch CANARY; "',
    "${IFS}touch${IFS}CANARY",
    "$((0))$(touch${IFS}CANARY)",
    "x\u2028touch CANARY",
    "x\n#SBATCH --wrap=touch CANARY\n",
    "${X:-$(touch CANARY)}",
    "\\$(touch CANARY)",
    "--output=/tmp/x $(touch CANARY)",
    "é漢字🙂",
]
STUBS = [
    "sbatch",
    "scontrol",
    "torchrun",
    "python",
    "python3",
    "nvidia-smi",
    "scancel",
    "squeue",
    "vllm",
    "rightsize",
]
ENV = {"SLURM_JOB_NODELIST": "n1", "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_ID": "1", "SLURM_ARRAY_TASK_ID": "0",
       "DATA_PATH": "d", "MODEL": "m", "TOKENIZER_MODEL": "t"}  # fmt: skip
names = st.lists(st.sampled_from(HOSTILE) | st.text(max_size=6), min_size=1, max_size=4).map("".join)


class Plans(dict):
    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return "<plans>"


@pytest.fixture(scope="module")
def plans() -> dict[str, dict]:
    """Planned once: a pretraining plan (every framework) and a serving plan."""
    return Plans(
        train=result_dict(api.plan(ROOT / "examples/llama3-70b-pretrain.yaml")),
        serve=result_dict(api.plan(ROOT / "examples/llama3-70b-chat-serving.yaml")),
    )


@pytest.fixture(scope="module")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Commands that print nothing and succeed; `scontrol show hostnames` prints n1, srun
    runs its command (options dropped) as a cluster would."""
    d = tmp_path_factory.mktemp("bin")
    for name in STUBS:
        (d / name).write_text("#!/bin/sh\nexit 0\n")
    (d / "scontrol").write_text('#!/bin/sh\n[ "$1 $2" = "show hostnames" ] && echo n1\nexit 0\n')
    (d / "srun").write_text('#!/bin/bash\nwhile [[ "${1:-}" == -* ]]; do shift; done\nexec "$@"\n')
    for f in d.iterdir():
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return d


def _hostile(plan: dict, name: str) -> dict:
    p = {**plan, "name": name, "model": name}
    p["spec"] = {**plan["spec"], "name": name, "model": {**plan["spec"]["model"], "name": name}}
    return p


def _scripts(plans: dict[str, dict], name: str) -> dict[str, str]:
    if "\0" in name:  # a shell script cannot carry NUL: refused with the reason
        with pytest.raises(BadInput, match="NUL"):
            render_files(_hostile(plans["serve"], name), "slurm")
        return {}
    out = {}
    for fw in ("megatron", "torchtitan", "nemo"):
        for f, text in render_files(_hostile(plans["train"], name), "slurm", fw).items():
            if f.endswith(".sbatch"):
                out[f"{fw}/{f}"] = text
    out["serve.sbatch"] = render_files(_hostile(plans["serve"], name), "slurm")["serve.sbatch"]
    return out


def _sbatch_block_whole(text: str) -> None:
    """sbatch reads `#SBATCH` lines up to the first line that is not a comment: all of
    ours come first, each with a safe value, and no plan text starts a line of its own."""
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    block = [ln for ln in lines[1:] if ln.startswith("#SBATCH")]
    assert lines[1 : 1 + len(block)] == block
    for ln in block:
        assert re.fullmatch(r"#SBATCH --[a-z-]+(=[A-Za-z0-9._:@%\-]+)?", ln), ln
    for ln in lines:  # no line break, carriage return or invisible character from a name
        assert not any(unicodedata.category(ch) in UNSAFE_CATEGORIES and ch != "\t" for ch in ln), ln


def _run(script: str, work: Path, stubs: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8", **ENV}
    (work / "job.sbatch").write_text(script, encoding="utf-8")
    return subprocess.run(["bash", "job.sbatch"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=15)  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names)
def test_no_code_runs_from_a_name(plans: dict[str, dict], stubs: Path, name: str) -> None:
    with tempfile.TemporaryDirectory(prefix="rightsize-inject-") as tmp:
        root = Path(tmp)
        for label, text in _scripts(plans, name).items():
            assert (
                subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True).returncode == 0
            ), label
            _sbatch_block_whole(text)
            work = root / label.replace("/", "-")
            work.mkdir()
            res = _run(text, work, stubs)
            canaries = [str(p) for p in root.rglob("*CANARY*")]
            assert not canaries, f"{label} ran code from the name {name!r}: {canaries}"
            if label.endswith("train.sbatch"):  # the whole script ran: it stops for want of a checkpoint
                assert "no checkpoint newer than step 0" in res.stderr, (
                    label,
                    res.returncode,
                    res.stderr[-500:],
                )
            else:
                assert res.returncode == 0, (label, res.stderr[-500:])


@pytest.mark.parametrize("name", HOSTILE)
def test_job_name_is_a_safe_token(plans: dict[str, dict], name: str) -> None:
    text = render_files(_hostile(plans["train"], name), "slurm", "megatron")["train.sbatch"]
    token = safe_token(name)
    assert f"#SBATCH --job-name={token}\n" in text
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}", token)
    assert "made safe for Slurm" in text  # the header says the name changed
    for line in text.splitlines():  # every comment is one line of printable text
        if line.startswith("#"):
            assert not any(unicodedata.category(ch) in UNSAFE_CATEGORIES for ch in line), line


def _skip_reason() -> str | None:
    if os.environ.get("RIGHTSIZE_REQUIRE_SLURM"):
        return None  # CI installs Slurm: a missing piece is a failure there, not a skip
    if missing():
        return f"Slurm/munge not installed ({', '.join(missing())}); .ci/run installs slurm-wlm and munge"
    if os.geteuid() != 0:
        return "the test Slurm controller runs as root"
    return None


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_sbatch_reads_the_safe_name(plans: dict[str, dict]) -> None:
    """Slurm's own parser: a held job from each hostile name carries the safe job name and
    the plan's node count, so no #SBATCH line was cut short or added."""
    root = Path(tempfile.mkdtemp(prefix="rightsize-inject-slurm-", dir="/tmp"))
    root.chmod(0o755)
    node = plans["train"]["best"]["node"]
    nodes = plans["train"]["sizing"]["nodes"]["nodes"]
    from rightsize.catalog import get_node

    nd = get_node(node)
    shape = NodeShape(node, nodes, nd.cpu_cores, int(nd.host_memory_bytes // 2**20), nd.gpus_per_node)
    try:
        with catalog_cluster(root / "cluster", [shape]) as env:
            for i, name in enumerate(HOSTILE):
                job = root / f"job{i}"
                job.mkdir()
                (job / "train.sbatch").write_text(
                    render_files(_hostile(plans["train"], name), "slurm", "megatron")["train.sbatch"]
                )
                sub = subprocess.run(["sbatch", "--parsable", "--hold", "-p", node, "train.sbatch"], cwd=job,
                                     env=env, capture_output=True, text=True, timeout=30)  # fmt: skip
                assert sub.returncode == 0, (name, sub.stderr)
                job_id = sub.stdout.strip().split(";")[0]
                show = subprocess.run(["scontrol", "show", "job", job_id], env=env, capture_output=True,
                                      text=True, timeout=30).stdout  # fmt: skip
                assert f"JobName={safe_token(name)} " in show or f"JobName={safe_token(name)}\n" in show, show
                assert f"NumNodes={nodes}" in show, show
                subprocess.run(["scancel", job_id], env=env, capture_output=True, timeout=30)
            assert not list(root.rglob("*CANARY*"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _argv(words: list[str], env: dict[str, str] | None = None) -> list[str]:
    out = subprocess.run(["bash", "-c", "printf '%s\\0' " + " ".join(words)], env={"LANG": "C.UTF-8", **(env or {})},
                         capture_output=True, timeout=15).stdout  # fmt: skip
    return out.decode("utf-8", "surrogateescape").split("\0")[:-1]


@settings(max_examples=100, deadline=None)
@given(text=st.text(st.characters(blacklist_characters="\0", blacklist_categories=["Cs"]), max_size=12))
def test_words_are_exactly_the_text(text: str) -> None:
    """bash reads back exactly what was quoted: a name as one word, and a framework's
    argument entry (shell text, as `shlex.quote` writes it) as its flag and the same value."""
    assert _argv([word(text)]) == [text]
    assert _argv(arg_words([f"--served-model-name {shlex.quote(text)}"])) == ["--served-model-name", text]
    assert not arg_variables([f"--name {shlex.quote(text)}"])  # a quoted value never expands


def test_the_jobs_own_variables_expand() -> None:
    words = arg_words(
        ['--save "$CKPT_DIR"', "--data-path ${DATA_PATH}/x", "--name '$CKPT_DIR'", "--n $A$(id)"]
    )
    env = {"CKPT_DIR": "/ck pt", "DATA_PATH": "/d"}
    assert _argv(words, env) == [
        "--save",
        "/ck pt",
        "--data-path",
        "/d/x",
        "--name",
        "$CKPT_DIR",
        "--n",
        "$A$(id)",
    ]
    assert arg_variables(['--save "$CKPT_DIR"', "--n $A"]) == {"CKPT_DIR"}
