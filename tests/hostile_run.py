"""The harness of `test_hostile_fuzz.py` (issue #24): run the real `rightsize` CLI as a
subprocess on hostile inputs in a fresh sandbox folder, and report every broken invariant.

A sandbox is `base/work` (the CLI's working folder, where the inputs are written and where
outputs may go) next to `base/outside` (a secret credentials file, a victim file and a link to
the secret: nothing there may change, and the secret may never be printed). `Sandbox.cli(...)`
snapshots the whole tree (kind, size, mtime and a hash of every entry, links not followed)
before and after the run; `problems()` then lists, as sentences:

- a hang (no exit within `TIMEOUT_S`), an exit code outside {0, 1, 2}, a traceback, a failure
  without a `rightsize:` message, an error message over 20 kB, the planted secret in any output;
- any file created, changed or removed outside the outputs the command names, any input
  changed (even when it is also named as the output);
- with exit 0 and JSON, a non-finite or absurd number, a negative or absurd count, a range
  whose low end is above its high end; with exit 0 and text, `nan`, `inf` or `$-0`;
- for exported files (`hostile_scripts.check_exports`): files that are not valid shell,
  Python, YAML or TOML, or that run a payload when run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hostile_gen import CREDENTIALS, CREDENTIALS_YAML, MARK, SECRET

import rightsize

SRC = str(Path(rightsize.__file__).resolve().parents[1])
TIMEOUT_S = float(os.environ.get("RIGHTSIZE_FUZZ_TIMEOUT", "15"))
MAX_STDERR = 20_000


@dataclass
class Run:
    argv: list[str]
    code: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    cwd: Path = Path(".")
    changed: dict[str, str] = field(default_factory=dict)  # relative path -> created/changed/removed


def _entry(path: Path) -> tuple[Any, ...]:
    st = path.lstat()
    if path.is_symlink():
        return ("link", os.readlink(path))
    if path.is_file():
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if st.st_size < 2**24 else ""
        return ("file", st.st_size, st.st_mtime_ns, st.st_mode, digest)
    return ("other", st.st_mode)


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under `root` (links not followed): kind, size, mtime, mode, content hash."""
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            try:
                out[str(p.relative_to(root))] = _entry(p)
            except OSError:
                out[str(p.relative_to(root))] = ("gone",)
    return out


class Sandbox:
    """`base/work` (the CLI's folder) and `base/outside` (must never change)."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="rs-hostile-")
        self.base = Path(self._tmp.name)
        self.work = self.base / "work"
        self.outside = self.base / "outside"
        self.work.mkdir()
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text(CREDENTIALS)
        (self.outside / "secret.yaml").write_text(CREDENTIALS_YAML)
        (self.outside / "victim.txt").write_text("victim\n")
        (self.outside / "link.yaml").symlink_to(self.outside / "secret.txt")
        (self.work / "link-out.yaml").symlink_to(self.outside / "secret.txt")
        (self.base / "home").mkdir()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: Any) -> None:
        for p in self.base.rglob("*"):  # read-only files and folders made by a test
            if not p.is_symlink():
                p.chmod(0o700 if p.is_dir() else 0o600)
        self._tmp.cleanup()

    def write(self, name: str, text: str | bytes) -> Path:
        path = self.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
        return path

    def cli(self, *args: str, timeout: float = TIMEOUT_S) -> Run:
        """Run `rightsize ARGS` in `work`; the tree's changes are in `Run.changed`."""
        before = snapshot(self.base)
        tmp_mark = Path("/tmp", MARK).exists()
        run = run_cli(list(args), self.work, self.base / "home", timeout)
        after = snapshot(self.base)
        for rel in sorted(set(before) | set(after)):
            if rel not in after:
                run.changed[rel] = "removed"
            elif rel not in before:
                run.changed[rel] = "created"
            elif before[rel] != after[rel]:
                run.changed[rel] = "changed"
        if not tmp_mark and Path("/tmp", MARK).exists():
            run.changed[f"/tmp/{MARK}"] = "created"
        return run


def run_cli(argv: list[str], cwd: Path, home: Path, timeout: float) -> Run:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": SRC,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "COLUMNS": "100",
        "PYTHONHASHSEED": "0",
    }
    cmd = [sys.executable, "-m", "rightsize.cli.main", *argv]
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    return Run(argv, code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), cwd)


def problems(
    run: Run,
    *,
    outputs: tuple[str, ...] = (),
    inputs: tuple[str, ...] = (),
    json_out: str | None = None,
    text_out: bool = False,
) -> list[str]:
    """Every broken invariant of one run, as sentences. `outputs`: paths (relative to work/)
    the command may create or change (a folder: anything under it); `inputs`: paths that must
    stay byte for byte and mtime for mtime; `json_out`: where the JSON result is ('-': stdout)."""
    found = _process_problems(run)
    for rel, how in run.changed.items():
        inside = rel.startswith("work/") and any(
            rel == f"work/{o}" or rel.startswith(f"work/{o.rstrip('/')}/") for o in outputs
        )
        if rel.startswith("work/") and rel[5:] in inputs:
            found.append(f"input {rel[5:]} was {how}")
        elif not inside and not rel.startswith("home/"):
            found.append(f"{rel} was {how}, outside the command's output")
    if any(Path(p).name == MARK for p in run.changed):
        found.append("a payload in a name created a file called `pwned`")
    if run.code == 0 and json_out:
        text = run.stdout if json_out == "-" else _read(run, json_out)
        found += json_problems(text)
    elif run.code == 0 and text_out:
        found += text_problems(run.stdout)
    return found


def _read(run: Run, rel: str) -> str:
    try:
        return (run.cwd / rel).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return f"(cannot read {rel}: {err})"


def _process_problems(run: Run) -> list[str]:
    found: list[str] = []
    tail = run.stderr.strip()[-600:]
    if run.code is None:
        found.append(f"hang: no exit within {TIMEOUT_S:g} s")
    elif run.code not in (0, 1, 2):
        found.append(f"exit code {run.code}: {tail}")
    if "Traceback (most recent call last)" in run.stderr + run.stdout:
        found.append(f"traceback: {tail}")
    if run.code in (1, 2) and "rightsize:" not in run.stderr:
        found.append(f"exit {run.code} without a `rightsize:` message: {tail}")
    if len(run.stderr) > MAX_STDERR:
        found.append(f"error output of {len(run.stderr):,} characters (limit {MAX_STDERR:,})")
    if SECRET in run.stdout or SECRET in run.stderr:
        found.append("printed the secret planted in a file outside the input")
    return found


# ---- figures --------------------------------------------------------------------------------

COUNT_KEY = re.compile(r"(^|_)(gpus|nodes|replicas|racks|replicas_needed)$")
NONNEG_KEY = re.compile(
    r"(_s|_usd|_w|_bytes|_per_s|_rps|_hours|_kw|_mw)$|^(measured|waiting|request_success|time_to_first_token"
    r"|inter_token_latency|num_requests_waiting|num_requests_running|kv_cache_usage|gpu_activity|activity"
    r"|utilisation|utilization)$"
)
MONEY = re.compile(r"usd|cost|price|capex|opex|saving")
ABSURD = 1e18
MAX_COUNT = 1e7
# (low, high) key pairs that must be ordered; sensitivities (`*_change_fraction_low`: the change
# when an input is at its low end) are not ranges.
RANGE_PAIRS = [("low", "high"), ("min", "max"), ("lower", "upper")]


def json_problems(text: str) -> list[str]:
    """Figures in a JSON result: finite, not absurd, counts and sizes not negative, ranges ordered."""
    try:
        doc = json.loads(text)
    except ValueError as err:
        return [f"exit 0 but the output is not JSON: {err}"]
    found: list[str] = []
    _walk_figures(doc, "$", "", found)
    return found[:10]


def _pairs(node: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for key in node:
        if not isinstance(key, str) or "change" in key:
            continue
        for lo, hi in RANGE_PAIRS:
            if key == lo or key.endswith(f"_{lo}"):
                out.append((key, key[: len(key) - len(lo)] + hi))
            elif key.startswith(f"{lo}_"):
                out.append((key, hi + key[len(lo) :]))
    return out


def _walk_figures(node: Any, where: str, key: str, found: list[str]) -> None:
    if isinstance(node, dict):
        for low_key, high_key in _pairs(node):
            low, high = node.get(low_key), node.get(high_key)
            if _num(low) and _num(high) and low > high + 1e-9 * abs(high):
                found.append(f"{where}.{low_key} = {low!r} is above {where}.{high_key} = {high!r}")
        for k, value in node.items():
            if where == "$" and k == "spec":  # the user's own spec, echoed: only finiteness
                _walk_finite(value, f"{where}.{k}", found)
            elif _num(value):
                _check_number(str(k), value, f"{where}.{k}", found)
            else:
                _walk_figures(value, f"{where}.{k}", str(k), found)
    elif isinstance(node, list):
        if key.endswith("_range") and len(node) == 2 and all(_num(v) for v in node) and node[0] > node[1]:
            found.append(f"{where} = {node!r}: its low end is above its high end")
        for i, value in enumerate(node):
            if _num(value):
                _check_number(key, value, f"{where}[{i}]", found)
            else:
                _walk_figures(value, f"{where}[{i}]", key, found)


def _walk_finite(node: Any, where: str, found: list[str]) -> None:
    if isinstance(node, float) and not math.isfinite(node):
        found.append(f"{where} = {node!r} (not finite)")
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for k, value in items:
        _walk_finite(value, f"{where}.{k}", found)


def _num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_number(key: str, value: float, where: str, found: list[str]) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        found.append(f"{where} = {value!r} (not finite)")
    elif abs(value) > ABSURD:
        found.append(f"{where} = {value:.3g} (absurd)")
    elif (
        COUNT_KEY.search(key)
        and not key.startswith("max_")
        and not MONEY.search(where)
        and not 0 <= value <= MAX_COUNT
    ):
        found.append(f"{where} = {value!r} (a count outside 0..{MAX_COUNT:.0e})")
    elif NONNEG_KEY.search(key) and value < 0 and "saving" not in where:
        found.append(f"{where} = {value!r} (negative)")


TEXT_NONSENSE = re.compile(r"\bnan\b|\binf(inity)?\b|\$-0\b|\(-0%\)", re.IGNORECASE)


def text_problems(text: str) -> list[str]:
    hit = TEXT_NONSENSE.search(text)
    if hit:
        line = text[max(0, text.rfind("\n", 0, hit.start()) + 1) :].split("\n", 1)[0]
        return [f"exit 0 with a nonsense figure: {line.strip()[:200]!r}"]
    return []
