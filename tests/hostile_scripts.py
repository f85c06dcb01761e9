"""Exported files checked the way their users run them (issue #24's injection test).

`check_exports(out_dir, sandbox_dir)` parses every file `rightsize export` wrote for its
language (bash -n, `ast.parse`, YAML, TOML; `promtool check rules` where promtool is
installed) and then runs it, in a copy of the export folder, with the cluster commands stubbed:

- `.sbatch` and `.sh` files with bash, with `srun` and `torchrun` running the command they
  launch, `python`/`python3` running an exported `.py` file (others exit 0), and `sbatch`,
  `scontrol` (prints `n1`), `scancel`, `squeue`, `nvidia-smi`, `vllm`, `rightsize`, `curl`,
  `kubectl`, `sleep` exiting 0; SLURM_JOB_NODELIST=n1, SLURM_JOB_NUM_NODES=1, SLURM_JOB_ID=1,
  DATA_PATH=d, MODEL=m;
- `.py` files with the real Python and stand-in `nemo`, `nemo_run`, `megatron`, `torchtitan`,
  `torch` and `vllm` modules whose every attribute and call is inert;
- Kubernetes containers whose command is `bash -c`/`sh -c` (the script in `args`), and
  ConfigMap entries that are Python or shell.

A payload that ran leaves a file called `pwned`; a payload that broke out of a YAML or TOML
string leaves a key with `pwned` in it; one that broke out of a PromQL string leaves `pwned`
outside the quotes of an `expr`; one that broke out of a Python string leaves a call to
`__import__`, `exec` or `eval`. Each is reported, as is any file holding the planted secret,
and any Kubernetes object name that is not a valid DNS-1123 name.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from hostile_gen import MARK, SECRET

SCRIPT_TIMEOUT_S = 10.0
_PASS = ["sbatch", "scancel", "squeue", "nvidia-smi", "vllm", "rightsize", "curl", "wget", "kubectl", "sleep"]
_SKIP_OPTS = (
    "-N|-n|-c|-w|-p|-t|-J|-o|-e|--nodes|--ntasks|--cpus-per-task|--gpus|--gres|--nnodes|--nproc-per-node"
)
_LAUNCH = f"""#!/bin/bash
# skip the launcher's options, then run what it launches
while [ $# -gt 0 ]; do
  case "$1" in
    {_SKIP_OPTS}) shift 2 ;;
    --no-python) shift ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || exit 0
case "$1" in *.py) exec python "$@" ;; esac
exec "$@"
"""
_PYTHON = f"""#!/bin/bash
# run an exported Python file with the stand-in framework modules; anything else: exit 0
for a in "$@"; do
  case "$a" in -*) continue ;; esac
  case "$a" in *.py) [ -f "$a" ] && exec {sys.executable} "$a"; exit 0 ;; esac
  exit 0
done
exit 0
"""
_SITECUSTOMIZE = """
import importlib.abc, importlib.machinery, sys, types

class _Any:
    def __getattr__(self, name): return _Any()
    def __setattr__(self, name, value): pass
    def __call__(self, *a, **k): return _Any()
    def __getitem__(self, k): return _Any()
    def __iter__(self): return iter(())

class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"): raise AttributeError(name)
        return _Any()

STUBBED = {"nemo", "nemo_run", "megatron", "torchtitan", "torch", "vllm", "transformers", "lightning"}

class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None
    def create_module(self, spec):
        m = _Stub(spec.name); m.__path__ = []; return m
    def exec_module(self, module): pass

sys.meta_path.insert(0, _Finder())
"""


@cache
def stub_dir() -> Path:
    """A folder of stub commands and the stand-in modules (one per test session)."""
    root = Path(tempfile.mkdtemp(prefix="rs-stubs-"))
    (root / "bin").mkdir()
    (root / "py").mkdir()
    for name, text in [("srun", _LAUNCH), ("torchrun", _LAUNCH), ("python", _PYTHON), ("python3", _PYTHON)]:
        (root / "bin" / name).write_text(text)
    (root / "bin" / "scontrol").write_text('#!/bin/bash\n[ "$1 $2" = "show hostnames" ] && echo n1\nexit 0\n')
    for name in _PASS:
        (root / "bin" / name).write_text("#!/bin/bash\nexit 0\n")
    for f in (root / "bin").iterdir():
        f.chmod(0o755)
    (root / "py" / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    return root


def _env(home: Path) -> dict[str, str]:
    stubs = stub_dir()
    return {
        "PATH": f"{stubs / 'bin'}:/usr/bin:/bin",
        "PYTHONPATH": str(stubs / "py"),
        "HOME": str(home),
        "SLURM_JOB_NODELIST": "n1",
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_JOB_ID": "1",
        "SLURM_ARRAY_TASK_ID": "0",
        "SLURM_PROCID": "0",
        "JOB_COMPLETION_INDEX": "0",
        "DATA_PATH": "d",
        "TOKENIZER_MODEL": "t",
        "MODEL": "m",
        "LANG": "C.UTF-8",
    }


def _run(cmd: list[str], cwd: Path) -> str | None:
    """Run one command in the sandbox; a sentence if it hung."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=_env(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        proc.wait(timeout=SCRIPT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return f"{' '.join(cmd[:3])[:120]} did not finish within {SCRIPT_TIMEOUT_S:g} s under stubs"
    return None


def _pwned(root: Path) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob(f"*{MARK}*")]


def check_exports(out_dir: Path, sandbox: Path) -> list[str]:
    """Every problem in the files of one export folder (parsed, then run in a copy of it)."""
    found: list[str] = []
    files = sorted(p for p in out_dir.rglob("*") if p.is_file() and not p.is_symlink())
    run_dir = sandbox / "run"
    shutil.copytree(out_dir, run_dir, symlinks=True, dirs_exist_ok=True)
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        name = path.relative_to(out_dir)
        if SECRET in text:
            found.append(f"{name} holds the secret planted in a file outside the input")
        found += [f"{name}: {p}" for p in _check_file(path.suffix, text, run_dir / name, run_dir)]
        if path.suffix in (".yml", ".yaml") and "groups:" in text and ".test." not in path.name:
            found += promtool_problems(path)
    for hit in _pwned(sandbox):
        found.append(f"running the exported files created {hit}: a payload in a name ran")
    return found


def _check_file(suffix: str, text: str, copy: Path, run_dir: Path) -> list[str]:
    if suffix in (".sbatch", ".sh"):
        syntax = subprocess.run(["bash", "-n", str(copy)], capture_output=True, text=True, timeout=10)
        if syntax.returncode:
            return [f"not valid bash: {syntax.stderr.strip()[:200]}"]
        hung = _run(["bash", str(copy)], run_dir)
        return [hung] if hung else []
    if suffix == ".py":
        return _check_python(text, copy, run_dir)
    if suffix in (".yaml", ".yml"):
        return _check_yaml(text, run_dir)
    if suffix == ".toml":
        try:
            return _bad_keys(tomllib.loads(text), "TOML")
        except tomllib.TOMLDecodeError as err:
            return [f"not valid TOML: {err}"]
    return []


_DANGEROUS = {"__import__", "exec", "eval", "compile", "system", "popen"}


def _check_python(text: str, copy: Path, run_dir: Path) -> list[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        return [f"not valid Python: {err}"]
    found = []
    for node in ast.walk(tree):
        ident = (
            node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        )
        if ident in _DANGEROUS or (ident and MARK in ident):
            found.append(f"Python code `{ident}` from a name outside any string (line {node.lineno})")  # type: ignore[attr-defined]
    hung = _run([sys.executable, str(copy)], run_dir)
    return found + ([hung] if hung else [])


def _check_yaml(text: str, run_dir: Path) -> list[str]:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        return [f"not valid YAML: {str(err)[:200]}"]
    found = _bad_keys(docs, "YAML")
    for doc in docs:
        found += _k8s_names(doc)
        found += _promql(doc)
        found += _containers(doc, run_dir)
    return found


def _bad_keys(node: Any, lang: str) -> list[str]:
    if isinstance(node, dict):
        bad = [f"{lang} key {k!r} injected by a name" for k in node if MARK in str(k)]
        return bad + [b for v in node.values() for b in _bad_keys(v, lang)]
    if isinstance(node, list):
        return [b for v in node for b in _bad_keys(v, lang)]
    return []


DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _k8s_names(doc: Any) -> list[str]:
    if not isinstance(doc, dict) or "apiVersion" not in doc:
        return []
    meta = doc.get("metadata") or {}
    found = []
    name = str(meta.get("name", ""))
    if len(name) > 253 or not DNS1123.match(name):
        found.append(f"Kubernetes {doc.get('kind')} name {name[:80]!r} is not a valid DNS-1123 name")
    for key, value in (meta.get("labels") or {}).items():
        if len(str(value)) > 63 or not LABEL_VALUE.match(str(value)):
            found.append(f"Kubernetes label {key}={str(value)[:80]!r} is not a valid label value")
    return found


_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')


def _promql(doc: Any) -> list[str]:
    found = []
    for group in (doc.get("groups") or []) if isinstance(doc, dict) else []:
        for rule in group.get("rules") or [] if isinstance(group, dict) else []:
            expr = str(rule.get("expr", "")) if isinstance(rule, dict) else ""
            if MARK in _QUOTED.sub('""', expr):
                found.append(f"PromQL outside a quoted label value: {expr[:160]!r}")
    return found


def _containers(node: Any, run_dir: Path) -> list[str]:
    """Run every `bash -c`/`sh -c` container script, and every ConfigMap Python or shell file."""
    found: list[str] = []
    if isinstance(node, dict):
        command = node.get("command")
        if isinstance(command, list) and command and str(command[0]).split("/")[-1] in ("bash", "sh"):
            script = [str(a) for a in [*command[1:], *(node.get("args") or [])]]
            hung = _run(["bash", *script], run_dir)
            found += [hung] if hung else []
        if node.get("kind") == "ConfigMap" and isinstance(node.get("data"), dict):
            for key, text in node["data"].items():
                suffix = Path(str(key)).suffix
                if suffix in (".py", ".sh"):
                    copy = run_dir / f"configmap-{Path(str(key)).name}"
                    copy.write_text(str(text))
                    found += [f"ConfigMap {key}: {p}" for p in _check_file(suffix, str(text), copy, run_dir)]
        for value in node.values():
            found += _containers(value, run_dir)
    elif isinstance(node, list):
        for value in node:
            found += _containers(value, run_dir)
    return found


def promtool_problems(rules: Path) -> list[str]:
    exe = shutil.which("promtool")
    if exe is None or not rules.exists():
        return []
    out = subprocess.run([exe, "check", "rules", str(rules)], capture_output=True, text=True, timeout=30)
    return (
        []
        if out.returncode == 0
        else [f"promtool rejects {rules.name}: {out.stdout[-300:]}{out.stderr[-300:]}"]
    )
