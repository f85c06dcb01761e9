"""Profiles as JSON Lines, written as they are measured.

Every line is one JSON object with a `type`:

- `header`: what ran, on what (hardware, driver and software versions), when;
- `result`: one measured point (a batch/sequence point, a collective at one size, ...),
  with `status` "ok", "oom", "timeout", "error" or "skipped";
- `telemetry`: the telemetry summary of a run.

Each line is flushed and fsync'd as it is written, so a crash, an out-of-memory kill or
Ctrl-C loses nothing already measured: records are a stream, appended, not written
atomically like the tool's other outputs. The file is only ever appended to, never through
a link, and only when it is a regular file that is new, empty or already a profile
(`check_records_out`). `read_profile` skips a torn last line, and `start_run` gives a
rerun with `--resume` the records it can skip. torch-free.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from rightsize._version import __version__
from rightsize.errors import BadInput
from rightsize.safe_read import check_json_text, read_text_capped

SCHEMA_VERSION = 1
MAX_PROFILE_BYTES = 512 * 2**20
_MAX_HEADER_BYTES = 4 * 2**20


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def environment() -> dict[str, Any]:
    """Hardware, driver and software versions of this host (torch and NVML when present)."""
    env: dict[str, Any] = {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "python": sys.version.split()[0],
        "rightsize": __version__,
        "cpu_count_logical": os.cpu_count(),
    }
    try:
        import psutil

        env["cpu_count_physical"] = psutil.cpu_count(logical=False)
        env["host_memory_bytes"] = float(psutil.virtual_memory().total)
        freq = psutil.cpu_freq()
        if freq is not None:
            env["cpu_max_mhz"] = freq.max or freq.current
    except Exception:  # psutil is optional here
        pass
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    env["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import torch

        env["torch"] = torch.__version__
        env["cuda_runtime"] = torch.version.cuda
        env["cuda_available"] = bool(torch.cuda.is_available())
        env["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            env["gpu_name"] = torch.cuda.get_device_name(0)
            env["gpu_count"] = torch.cuda.device_count()
            env["gpu_memory_bytes"] = float(torch.cuda.get_device_properties(0).total_memory)
    except Exception:
        env["torch"] = None
    from rightsize.profile.telemetry import nvml_versions

    env.update(nvml_versions())
    return env


class ProfileWriter:
    """Appends records to a JSON Lines file, durably, one line per record. It only ever appends
    (earlier records are never truncated), never writes through a symbolic link, and never
    blocks on a FIFO: the file is opened without following links or waiting, and refused
    unless it is a regular file."""

    def __init__(self, path: Path | None, resume: bool = False) -> None:
        del resume  # always appends; kept for callers that still pass it
        self.path = path
        self._fh: TextIO | None = None
        if path is not None:
            self._fh = os.fdopen(_open_append(path), "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            return
        self._fh.write(json.dumps(record, default=float, sort_keys=True) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> ProfileWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open_append(path: Path) -> int:
    """A descriptor appending to the regular file `path` (created if missing)."""
    fix = "Give --out a regular file in a folder you may write to."
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        link = " (it is a symbolic link, which is never followed)" if path.is_symlink() else ""
        raise BadInput(
            f"Cannot open the profile {path} for writing.", (err.strerror or str(err)) + link + ".", fix
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BadInput(f"Will not write the profile to {path}: it is not a regular file.", fix=fix)
    os.set_blocking(fd, True)
    return fd


def check_records_out(path: Path) -> None:
    """Refuse, before anything is measured, a `--out` the records cannot go to: anything but a
    regular file (a link, folder, FIFO, socket or device: a FIFO would block the run), or an
    existing file that does not start with a profile header (records appended to some other
    file would spoil it, and `--force` does not change that). Permissions and links are
    checked by `atomic_write.check_output`; a missing or empty file is a fresh profile."""
    try:
        st = path.lstat()
    except OSError:
        return  # missing: created when the run starts (opening it reports other problems)
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(
            f"Will not record the profile in {path}: it is not a regular file.",
            "Records go to a regular file (a pipe would block the run, a device would lose them).",
            "Give --out a new or earlier profile file (.jsonl), or leave it out.",
        )
    if st.st_size > 0 and not _starts_with_header(path):
        raise BadInput(
            f"Will not record the profile in {path}: it exists and is not a profile.",
            "Appending records to another file would spoil it; a profile starts with a header line.",
            "Give --out a new file, or a profile that `rightsize profile` wrote.",
        )


def _starts_with_header(path: Path) -> bool:
    """Whether the file's first line is a profile header (read without following links or blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        first = os.read(fd, _MAX_HEADER_BYTES).split(b"\n", 1)[0]
        rec = json.loads(first)
    except (OSError, ValueError, RecursionError):
        return False
    finally:
        os.close(fd)
    return isinstance(rec, dict) and rec.get("type") == "header" and "schema_version" in rec


def start_run(
    out: Path | None,
    hdr: dict[str, Any],
    resume: bool,
    force: bool,
    may_differ: Iterable[str] = (),
) -> tuple[ProfileWriter, list[dict[str, Any]]]:
    """Open `out` for a run; returns the writer and, when resuming, the earlier run's results.

    Earlier records are never destroyed: a file that already holds records is continued with
    `resume` (only if its last run had the same configuration, apart from the `may_differ` keys
    such as the sweep's points), appended to with a new header with `force`, and otherwise
    refused. A fresh run writes `hdr` first.
    """
    if out is None:
        return ProfileWriter(None), []
    check_records_out(out)
    records = read_profile(out) if _has_records(out) else []
    if records and resume:
        last = _last_run(records)
        _check_same_config(out, last[0] if last else {}, hdr, set(may_differ))
        return ProfileWriter(out), results(last)
    if records and not force:
        raise BadInput(
            f"The profile {out} already holds {len(records)} records from an earlier run.",
            "Writing a new run there would mix it with them (or destroy them).",
            "Use --resume to continue that run, --force to append a new run after it, "
            "or give --out a new file.",
        )
    writer = ProfileWriter(out)
    writer.write(hdr)
    return writer, []


def _has_records(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _last_run(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records from the last header on (a file may hold several runs appended with --force)."""
    starts = [i for i, r in enumerate(records) if r.get("type") == "header"]
    return records[starts[-1] :] if starts else []


def _check_same_config(path: Path, old: dict[str, Any], new: dict[str, Any], may_differ: set[str]) -> None:
    if old.get("kind") != new.get("kind"):
        raise BadInput(
            f"Cannot resume {path}: it holds a '{old.get('kind', 'unknown')}' profile, not '{new.get('kind')}'.",
            "--resume continues a run of the same command and configuration.",
            "Give --out a new file, or run the command that wrote it.",
        )
    before, after = old.get("config") or {}, new.get("config") or {}
    differ = sorted(
        key
        for key in set(before) | set(after)
        if key not in may_differ and _canon(before.get(key)) != _canon(after.get(key))
    )
    if differ:
        shown = "; ".join(
            f"{k}: {_canon(before.get(k))[:60]} then, {_canon(after.get(k))[:60]} now" for k in differ
        )
        raise BadInput(
            f"Cannot resume {path}: it was measured with another configuration.",
            f"Different: {shown}.",
            "Rerun with the file's settings, or give --out a new file (or --force to append a new run).",
        )


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def header(kind: str, config: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "header",
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "created": now_iso(),
        "config": config,
        "environment": environment(),
    }


def read_profile(path: Path) -> list[dict[str, Any]]:
    """Every complete record of a profile; a torn final line (a crash mid-write) is dropped."""
    fix = "Pass a file written by `rightsize profile`."
    text = read_text_capped(path, "the profile", MAX_PROFILE_BYTES, fix)
    # Depth and number caps once on the whole text: lines before a torn one parse or are refused first.
    check_json_text(text, "the profile", path, fix)
    records = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            if i == len(lines) - 1:
                continue  # torn last line
            raise BadInput(
                f"Line {i + 1} of the profile {path} is not JSON.",
                "Profiles are JSON Lines written by `rightsize profile`.",
                "Pass an unmodified profile file.",
            ) from None
        if isinstance(rec, dict):
            records.append(rec)
    return records


def results(records: Iterable[dict[str, Any]], kind: str | None = None) -> list[dict[str, Any]]:
    return [r for r in records if r.get("type") == "result" and (kind is None or r.get("kind") == kind)]
