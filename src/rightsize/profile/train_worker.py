"""The process that runs the training measurements (needs torch).

`rightsize.profile.train` starts it with `python -m rightsize.profile.train_worker`, sends one
JSON job on stdin and reads JSON lines back on a private pipe (its file descriptor is in
RIGHTSIZE_PROTOCOL_FD; the user's own prints go to stderr). Running in a child process lets the parent
enforce a timeout on every point (it kills the child), survive a crash or an out-of-memory
kill, and keep what was measured.

Per point: `warmup` untimed steps, then `steps` timed ones, each split into phases (waiting
for data, forward with loss, backward, optimizer step) with a device synchronisation at
every phase boundary. FLOPs come from `torch.utils.flop_counter.FlopCounterMode`. Memory:
CUDA allocator peaks on a GPU; on the CPU the bytes of parameters, gradients, optimizer
state and the tensors saved for backward (deduplicated by storage). An out-of-memory error
is a result ("oom"), not a failure. On the CPU the address space can be capped
(`memory_limit_bytes`, RLIMIT_AS) so that exceeding it raises instead of waking the kernel's
OOM killer.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from rightsize.profile.torch_model import build_decoder, lm_loss
from rightsize.spec.model import ModelArch


class UserCodeError(Exception):
    """The user's module raised; carries the user's traceback text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _user_traceback(exc: BaseException, user_file: str) -> str:
    """The traceback from the first frame in the user's file on (our frames dropped)."""
    tb = traceback.TracebackException.from_exception(exc)
    frames = list(tb.stack)
    first = next((i for i, f in enumerate(frames) if os.path.samefile(f.filename, user_file)), 0)
    tb.stack = traceback.StackSummary.from_list(frames[first:])
    return "".join(tb.format())


def _load_user(spec: str) -> tuple[Any, str]:
    path, _, fn = spec.rpartition(":")
    file = str(Path(path).resolve())
    try:
        mspec = importlib.util.spec_from_file_location("rightsize_user_module", file)
        assert mspec is not None and mspec.loader is not None
        mod = importlib.util.module_from_spec(mspec)
        sys.modules["rightsize_user_module"] = mod
        mspec.loader.exec_module(mod)
        build = getattr(mod, fn)
        return build, file
    except Exception as exc:
        raise UserCodeError(_user_traceback(exc, file)) from None


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    if torch.cuda.is_available() and isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    msg = str(exc)
    return isinstance(exc, RuntimeError) and (
        "can't allocate memory" in msg or "out of memory" in msg.lower() or "std::bad_alloc" in msg
    )


def _stats(xs: list[float]) -> dict[str, float]:
    t = torch.tensor(xs, dtype=torch.float64)
    return {
        "median": float(t.median()),
        "mean": float(t.mean()),
        "std": float(t.std()) if len(xs) > 1 else 0.0,
        "min": float(t.min()),
        "max": float(t.max()),
    }


class Runner:
    def __init__(self, job: dict[str, Any], send: Any) -> None:
        self.job = job
        self.send = send
        dev = job.get("device", "cpu")
        self.device = torch.device(dev)
        self.dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[job["dtype"]]
        self.user_file: str | None = None
        self.loader_fn: Any = None
        torch.manual_seed(0)
        if job.get("module"):
            build, self.user_file = _load_user(job["module"])
            built = self._user_call(build)
            model, self.loader_fn = (built if isinstance(built, tuple) else (built, None))[:2]
            self.model = model.to(device=self.device)
            self.vocab = int(getattr(model, "vocab_size", 256))
        else:
            arch = ModelArch.model_validate(job["arch"])
            self.model = build_decoder(
                arch, device=self.device, dtype=self.dtype, flash=job.get("flash", True)
            )
            self.vocab = arch.vocab
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def _user_call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            if _is_oom(exc):
                raise
            assert self.user_file is not None
            raise UserCodeError(_user_traceback(exc, self.user_file)) from None

    def _loss(self, inputs: torch.Tensor) -> torch.Tensor:
        out = self._user_call(self.model, inputs) if self.user_file else self.model(inputs)
        if out.dim() == 0:
            return out  # the module returned its own loss
        return lm_loss(out, inputs)

    def _batches(self, b: int, s: int) -> Any:
        if self.loader_fn is not None:
            it = iter(self._user_call(self.loader_fn, b, s))
            while True:
                try:
                    item = self._user_call(next, it)
                except StopIteration:
                    it = iter(self._user_call(self.loader_fn, b, s))
                    continue
                yield item.to(self.device)
        while True:
            yield torch.randint(0, self.vocab, (b, s), device=self.device)

    def micro(self) -> None:
        """GEMM throughput by shape and memory bandwidth: inputs to the calibration."""
        dev, dt = self.device, self.dtype
        shapes = self.job.get("gemm_shapes") or [
            [128, 128, 128],
            [256, 256, 256],
            [512, 512, 512],
            [1024, 1024, 1024],
            [2048, 256, 256],
            [2048, 1024, 256],
            [256, 256, 2048],
        ]
        for m, n, k in shapes:
            a = torch.randn(m, k, device=dev, dtype=dt)
            bm = torch.randn(k, n, device=dev, dtype=dt)
            times = []
            for i in range(7):
                _sync(dev)
                t0 = time.perf_counter()
                a @ bm
                _sync(dev)
                if i >= 2:  # two warm-ups
                    times.append(time.perf_counter() - t0)
            st = _stats(times)
            st["median"] = st["min"]  # the best run: interference only ever slows a GEMM down
            self.send(
                {
                    "type": "result",
                    "kind": "gemm",
                    "key": f"gemm:{m}x{n}x{k}",
                    "status": "ok",
                    "m": m,
                    "n": n,
                    "k": k,
                    "time_s": st,
                    "flops_per_s": 2.0 * m * n * k / st["median"],
                }
            )
        n_el = int(self.job.get("copy_bytes", 64e6)) // 4
        src = torch.randn(n_el, device=dev)
        dst = torch.empty_like(src)
        times = []
        for i in range(4):
            _sync(dev)
            t0 = time.perf_counter()
            dst.copy_(src)
            _sync(dev)
            if i:
                times.append(time.perf_counter() - t0)
        st = _stats(times)
        moved = 2.0 * n_el * 4  # read + write
        self.send(
            {
                "type": "result",
                "kind": "membw",
                "key": "membw:copy",
                "status": "ok",
                "bytes": moved,
                "time_s": st,
                "bytes_per_s": moved / st["median"],
            }
        )
        del a, bm, src, dst

    def _memory_totals(self, memory: dict[str, float]) -> None:
        """Add the parameter and optimizer-state bytes, and the peak: the allocator's on a
        GPU, on a CPU the counted parts' sum and the process's maximum resident set."""
        dev = self.device
        memory["params_bytes"] = float(sum(p.numel() * p.element_size() for p in self.model.parameters()))
        memory["optimizer_bytes"] = float(
            sum(
                v.numel() * v.element_size()
                for st in self.opt.state.values()
                for v in st.values()
                if isinstance(v, torch.Tensor)
            )
        )
        if dev.type == "cuda":
            memory["peak_allocated_bytes"] = float(torch.cuda.max_memory_allocated(dev))
            memory["peak_reserved_bytes"] = float(torch.cuda.max_memory_reserved(dev))
        else:
            memory["peak_estimate_bytes"] = (
                memory["params_bytes"]
                + memory["gradients_bytes"]
                + memory["optimizer_bytes"]
                + memory["activations_bytes"]
            )
            memory["max_rss_bytes"] = float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)

    def measure(self, b: int, s: int) -> dict[str, Any]:
        """Time `warmup + steps` training steps at batch `b` x sequence `s` by phase; the
        first warm-up step also counts memory (saved activations, gradients) and FLOPs."""
        dev = self.device
        batches = self._batches(b, s)
        warmup, steps = int(self.job.get("warmup", 2)), int(self.job.get("steps", 3))
        phases: dict[str, list[float]] = {
            "data": [],
            "forward": [],
            "backward": [],
            "optimizer": [],
            "step": [],
        }
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        memory: dict[str, float] = {}
        flops: dict[str, float] = {}
        for i in range(warmup + steps):
            counting = i == 0  # the first warm-up step counts memory and FLOPs (untimed)
            _sync(dev)
            t0 = time.perf_counter()
            inputs = next(batches)
            _sync(dev)
            t1 = time.perf_counter()
            if counting:
                saved = _SavedBytes(self.model)
                from torch.utils.flop_counter import FlopCounterMode

                fc = FlopCounterMode(display=False)
                with fc, torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda t: t):
                    loss = self._loss(inputs)
                flops["forward"] = float(fc.get_total_flops())
                memory["activations_bytes"] = saved.bytes
            else:
                loss = self._loss(inputs)
            _sync(dev)
            t2 = time.perf_counter()
            if counting:
                fc = FlopCounterMode(display=False)
                with fc:
                    loss.backward()
                flops["backward"] = float(fc.get_total_flops())
            else:
                loss.backward()
            _sync(dev)
            t3 = time.perf_counter()
            if counting:
                memory["gradients_bytes"] = float(
                    sum(
                        p.grad.numel() * p.grad.element_size()
                        for p in self.model.parameters()
                        if p.grad is not None
                    )
                )
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
            _sync(dev)
            t4 = time.perf_counter()
            del loss
            if i >= warmup:
                for name, v in (("data", t1 - t0), ("forward", t2 - t1), ("backward", t3 - t2)):
                    phases[name].append(v)
                phases["optimizer"].append(t4 - t3)
                phases["step"].append(t4 - t0)
        self._memory_totals(memory)
        times = {k: _stats(v) for k, v in phases.items()}
        step = times["step"]["median"]
        data_frac = times["data"]["median"] / step if step > 0 else 0.0
        total_flops = flops.get("forward", 0.0) + flops.get("backward", 0.0)
        return {
            "time_s": times,
            "flops": {**flops, "total": total_flops},
            "achieved_flops_per_s": total_flops
            / max(times["forward"]["median"] + times["backward"]["median"], 1e-12),
            "tokens_per_s": b * s / step if step > 0 else 0.0,
            "memory": memory,
            "data_wait_fraction": data_frac,
            "input_bound": bool(self.loader_fn is not None and data_frac > 0.2),
        }

    def release(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


class _SavedBytes:
    def __init__(self, model: torch.nn.Module) -> None:
        self.seen = {p.untyped_storage()._cdata for p in model.parameters()}
        self.bytes = 0.0

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st._cdata not in self.seen:
            self.seen.add(st._cdata)
            self.bytes += float(st.nbytes())
        return t


def _limit_memory(limit: float | None) -> None:
    if not limit:
        return
    try:
        import psutil

        vms = psutil.Process().memory_info().vms
    except ImportError:
        vms = 0
    cap = int(vms + limit)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def main() -> int:
    proto = os.fdopen(int(os.environ["RIGHTSIZE_PROTOCOL_FD"]), "w", buffering=1)

    def send(rec: dict[str, Any]) -> None:
        proto.write(json.dumps(rec, default=float) + "\n")
        proto.flush()

    job = json.loads(sys.stdin.readline())
    if job.get("threads"):
        torch.set_num_threads(int(job["threads"]))
    try:
        runner = Runner(job, send)
        if job.get("micro"):
            runner.micro()
        torch.ones(64, 64) @ torch.ones(64, 64)  # start the thread pool before capping memory
        if runner.device.type == "cpu":
            _limit_memory(job.get("memory_limit_bytes"))
    except UserCodeError as err:
        send({"event": "user_error", "traceback": err.text})
        return 3
    send({"event": "ready"})
    for b, s in job["points"]:
        send({"event": "start", "batch": b, "seq_len": s})
        t_start = time.time()
        try:
            res = runner.measure(int(b), int(s))
            rec = {"status": "ok", **res}
        except UserCodeError as err:
            send({"event": "user_error", "traceback": err.text})
            return 3
        except Exception as exc:
            runner.release()
            if _is_oom(exc):
                rec = {"status": "oom", "error": str(exc).splitlines()[0][:300]}
            else:
                rec = {"status": "error", "error": "".join(traceback.format_exception(exc))[-4000:]}
        except MemoryError as exc:  # pragma: no cover - caught above as Exception subclass
            rec = {"status": "oom", "error": str(exc)}
        send({"event": "result", "batch": b, "seq_len": s, "t_start": t_start, "t_end": time.time(), **rec})
    send({"event": "done"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
