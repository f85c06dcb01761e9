"""Profiles as JSON Lines, written as they are measured.

Every line is one JSON object with a `type`:

- `header`: what ran, on what (hardware, driver and software versions), when;
- `result`: one measured point (a batch/sequence point, a collective at one size, ...),
  with `status` "ok", "oom", "timeout", "error" or "skipped";
- `telemetry`: the telemetry summary of a run.

Each line is flushed and fsync'd as it is written, so a crash, an out-of-memory kill or
Ctrl-C loses nothing already measured; `read_profile` skips a torn last line, and
`done_keys` tells a rerun with `--resume` which points it can skip. torch-free.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from rightsize._version import __version__
from rightsize.errors import BadInput

SCHEMA_VERSION = 1


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
    """Appends records to a JSON Lines file, durably, one line per record."""

    def __init__(self, path: Path | None, resume: bool = False) -> None:
        self.path = path
        self._fh: TextIO | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = path.open("a" if resume else "w", encoding="utf-8")

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
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise BadInput(
            f"Cannot read the profile {path}.", str(err), "Pass a file written by `rightsize profile`."
        ) from None
    records = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
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


def done_keys(path: Path | None) -> set[str]:
    """Keys of points a previous run already finished (any status but a crash mid-point)."""
    if path is None or not path.exists():
        return set()
    return {str(r["key"]) for r in results(read_profile(path)) if "key" in r}
