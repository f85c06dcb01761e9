"""`rightsize profile train`: a progressive load test of real training steps.

The sweep runs every (sequence length, batch size) point, shortest sequence and smallest
batch first, in a child process (`train_worker`) that the parent watches:

- timeouts: each point must report within `timeout_s` (subprocess-based: the parent kills
  the worker's process group, records the point as "timeout" and starts a fresh worker
  for the remaining points);
- out of memory: an OOM is a result; larger batches at that sequence length, and those
  batches at longer sequences, are recorded as "skipped" beyond the boundary;
- crashes: a worker killed by a signal (SIGSEGV, SIGABRT, a SIGKILL the kernel's OOM
  killer did not send) records "crash" with the signal, an error exit "error" with its
  status; a SIGKILL is "oom" only when the kernel counted an OOM kill. Either way the
  sweep goes on with a fresh worker for the remaining points;
- Ctrl-C: the worker is stopped and everything measured so far is already on disk;
- resume: points already in the output file are not measured again.

torch is imported only in the worker; this module is torch-free.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.profile import jsonl
from rightsize.profile.telemetry import Sampler, summarise
from rightsize.spec.model import ModelArch

Progress = Callable[[str], None]


@dataclass
class TrainProfileConfig:
    batches: list[int]
    seqs: list[int]
    arch: ModelArch | None = None  # a preset or a ModelArch file
    module: str | None = None  # path/to/file.py:build_fn
    device: str = "auto"
    dtype: str = "fp32"
    steps: int = 3
    warmup: int = 2
    timeout_s: float = 120.0
    memory_limit_bytes: float | None = None
    threads: int | None = None
    micro: bool = True  # GEMM and memory-bandwidth microbenchmarks (calibration inputs)
    flash: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def job(self, device: str) -> dict[str, Any]:
        return {
            "arch": self.arch.model_dump() if self.arch is not None else None,
            "module": self.module,
            "device": device,
            "dtype": self.dtype,
            "steps": self.steps,
            "warmup": self.warmup,
            "memory_limit_bytes": self.memory_limit_bytes,
            "threads": self.threads,
            "flash": self.flash,
        }


def point_key(b: int, s: int) -> str:
    return f"train:b={b}:s={s}"


def resolve_device(device: str) -> str:
    """auto -> cuda when torch sees a GPU, else cpu. Asks torch in a subprocess-free way."""
    if device != "auto":
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def _need_torch() -> None:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise BadInput(
            "The profiler needs PyTorch, which is not installed.",
            "torch is an optional extra: planning never needs it, measuring does.",
            "Install it with `pip install 'rightsize[profile]'` (CPU build: `pip install torch "
            "--index-url https://download.pytorch.org/whl/cpu`).",
        )


class _Worker:
    """One `train_worker` child: JSON job in, JSON lines out on a private pipe."""

    def __init__(self, job: dict[str, Any]) -> None:
        r, w = os.pipe()
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["RIGHTSIZE_PROTOCOL_FD"] = str(w)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rightsize.profile.train_worker"],
            stdin=subprocess.PIPE,
            stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else subprocess.DEVNULL,
            pass_fds=(w,),
            env=env,
            start_new_session=True,  # its own process group: killed as a whole on timeout
        )
        os.close(w)
        self.fd = r
        self.buf = b""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.close()

    def read(self, timeout_s: float) -> dict[str, Any] | None:
        """The next message, or None on timeout or when the worker has exited."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:  # a garbled protocol line (a worker dying mid-write) ends the point
            return None
        return msg if isinstance(msg, dict) else None

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self.fd)


def _has_fileno(f: Any) -> bool:
    try:
        f.fileno()
        return True
    except (AttributeError, OSError, ValueError):
        return False


def _beyond_boundary(b: int, s: int, ooms: list[tuple[int, int]]) -> bool:
    return any(b >= ob and s >= os_ for ob, os_ in ooms)


def _close_run(sampler: Sampler, windows: dict[str, tuple[float, float]], writer: Any) -> dict[str, Any]:
    """Stop the telemetry, record its summary over the measured windows, close the record."""
    tele = summarise(sampler.stop(), sampler.notes, windows)
    writer.write({"type": "telemetry", "kind": "train", "summary": tele})
    writer.close()
    return tele


def _start_worker(
    cfg: TrainProfileConfig, job: dict[str, Any], writer: Any, results: list[dict[str, Any]]
) -> _Worker:
    """A worker process for `job`, ready to measure its points: the microbenchmarks it runs
    first are recorded as they arrive; `BadInput` when it does not start or the user's
    module fails."""
    worker = _Worker(job)
    try:
        msg = worker.read(cfg.timeout_s * 2 + 60)
        while msg is not None and msg.get("type") == "result":  # microbenchmarks
            rec = {k: v for k, v in msg.items() if k != "event"}
            writer.write(rec)
            results.append(rec)
            msg = worker.read(cfg.timeout_s * 2 + 60)
    except KeyboardInterrupt:  # the caller never saw this worker: stop it here
        worker.kill()
        raise
    if msg is None:
        code = worker.proc.poll()
        worker.kill()
        raise BadInput(
            "The profiler's worker did not start.",
            f"It exited with status {code}" if code is not None else "It did not report within the timeout.",
            "Check that torch imports (`python -c 'import torch'`), or raise --timeout.",
        )
    if msg.get("event") == "user_error":
        worker.kill()
        raise _user_error(cfg.module, msg["traceback"])
    return worker


def run_train_profile(
    cfg: TrainProfileConfig,
    out: Path | None = None,
    resume: bool = False,
    progress: Progress | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Run the sweep; returns {"header", "results", "telemetry", "fit"} and appends to `out`
    (`resume` continues the same configuration's run there; `force` appends a new run)."""
    _need_torch()
    device = resolve_device(cfg.device)
    if device == "cuda":
        _check_cuda()
    say = progress or (lambda _m: None)
    hdr = jsonl.header("train", {**cfg.job(device), "batches": cfg.batches, "seqs": cfg.seqs, **cfg.extra})
    writer, earlier = jsonl.start_run(out, hdr, resume, force, may_differ=("batches", "seqs", "micro"))
    done = {str(r["key"]) for r in earlier if "key" in r}
    previous = [r for r in earlier if r.get("kind") == "train"]
    points = [(b, s) for s in sorted(cfg.seqs) for b in sorted(cfg.batches)]
    todo = [p for p in points if point_key(*p) not in done]
    ooms = [(int(r["batch"]), int(r["seq_len"])) for r in previous if r.get("status") == "oom"]
    results: list[dict[str, Any]] = list(previous)
    windows: dict[str, tuple[float, float]] = {}
    sampler = Sampler().start()
    worker: _Worker | None = None
    micro_needed = cfg.micro and not any(k.startswith("gemm:") for k in done)
    try:
        while todo:
            todo = [p for p in todo if not _skip(p, ooms, writer, results, say)]
            if not todo:
                break
            worker = _start_worker(
                cfg, {**cfg.job(device), "points": todo, "micro": micro_needed}, writer, results
            )
            micro_needed = False
            # ready: read the points
            while todo:
                b, s = todo[0]
                if _skip((b, s), ooms, writer, results, say):
                    todo.pop(0)
                    continue
                say(f"batch {b:>5} x seq {s:>6}: measuring")
                oom_kills = _oom_kill_count()
                start = worker.read(cfg.timeout_s)
                started = start is not None and start.get("event") == "start"
                res = worker.read(cfg.timeout_s) if started else None
                if res is not None and res.get("event") == "user_error":
                    worker.kill()
                    raise _user_error(cfg.module, res["traceback"])
                if res is None or res.get("event") != "result":
                    # the worker died or hung on this point: record why, then go on with a fresh worker
                    rec = _lost_point(worker, cfg.timeout_s, oom_kills)
                    if rec["status"] == "oom":
                        ooms.append((b, s))
                    _emit(rec, b, s, writer, results, say)
                    worker.kill()
                    worker = None
                    todo.pop(0)
                    break
                rec = {k: v for k, v in res.items() if k != "event"}
                windows[point_key(b, s)] = (rec["t_start"], rec["t_end"])
                if rec["status"] == "oom":
                    ooms.append((b, s))
                _emit(rec, b, s, writer, results, say)
                todo.pop(0)
            if worker is not None:
                worker.kill()
                worker = None
    except KeyboardInterrupt:
        say("interrupted: stopping the worker; every finished point is saved")
        if worker is not None:
            worker.kill()
        raise
    finally:
        tele = _close_run(sampler, windows, writer)
    from rightsize.profile.fit import fit_sweep

    train = [r for r in results if r.get("kind") == "train"]
    return {"header": hdr, "results": results, "telemetry": tele, "fit": fit_sweep(train)}


def _emit(
    rec: dict[str, Any],
    b: int,
    s: int,
    writer: jsonl.ProfileWriter,
    results: list[dict[str, Any]],
    say: Progress,
) -> None:
    rec = {"type": "result", "kind": "train", "key": point_key(b, s), "batch": b, "seq_len": s, **rec}
    rec["tokens"] = b * s
    writer.write(rec)
    results.append(rec)
    if rec["status"] == "ok":
        say(f"batch {b:>5} x seq {s:>6}: {rec['time_s']['step']['median'] * 1e3:.1f} ms/step")
    else:
        say(f"batch {b:>5} x seq {s:>6}: {rec['status']}")


def _skip(
    p: tuple[int, int],
    ooms: list[tuple[int, int]],
    writer: jsonl.ProfileWriter,
    results: list[dict[str, Any]],
    say: Progress,
) -> bool:
    b, s = p
    if not _beyond_boundary(b, s, ooms):
        return False
    _emit({"status": "skipped", "error": "beyond the out-of-memory boundary"}, b, s, writer, results, say)
    return True


def _lost_point(worker: _Worker, timeout_s: float, oom_kills_before: int | None) -> dict[str, Any]:
    """The record of a point whose worker never reported: a timeout, an out-of-memory kill, a crash
    (a signal such as SIGSEGV or SIGABRT) or an error exit, told apart by the exit status and the
    kernel's OOM-kill counter. Only an OOM sets the memory boundary; the sweep goes on after any."""
    code = worker.proc.poll()
    if code is None:  # still running: give it a moment to finish dying before judging
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = worker.proc.wait(timeout=1.0)
    now = time.time()
    rec: dict[str, Any] = {"t_start": now, "t_end": now}
    if code is None:
        rec.update(status="timeout", error=f"no result within {timeout_s:g} s: the worker was killed")
        return rec
    signum = -code if code < 0 else (code - 128 if code > 128 else 0)
    oom_killed = oom_kills_before is not None and (_oom_kill_count() or 0) > oom_kills_before
    if signum == signal.SIGKILL and oom_killed:
        rec.update(status="oom", error="the kernel's out-of-memory killer stopped the worker (SIGKILL)")
    elif signum:
        name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
        rec.update(
            status="crash",
            signal=name,
            error=f"the worker was killed by signal {name}"
            + (" (no out-of-memory kill was recorded by the kernel)" if signum == signal.SIGKILL else ""),
        )
    else:
        rec.update(status="error", exit_code=code, error=f"the worker exited with status {code}")
    return rec


def _oom_kill_count() -> int | None:
    """The kernel's count of OOM kills in this cgroup (cgroup v2 memory.events), None if unknown."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def _user_error(module: str | None, tb: str) -> BadInput:
    return BadInput(
        f"Your module {module} raised an exception:\n\n{tb.rstrip()}\n",
        "The error is in the user code being profiled, not in rightsize.",
        "Fix the module (run it on its own first), then profile again.",
    )


def _check_cuda() -> None:
    try:
        import torch

        ok = torch.cuda.is_available()
    except ImportError:
        ok = False
    if not ok:
        raise BadInput(
            "--device cuda was asked for, but PyTorch sees no CUDA GPU on this host.",
            "torch.cuda.is_available() is False (no GPU, no driver, or a CPU-only torch build).",
            "Use --device cpu (or auto), or install a CUDA build of torch on a GPU host.",
        )
