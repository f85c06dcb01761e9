"""`rightsize profile kernels`: measure a kernel table (GEMM, attention, all-reduce) with PyTorch.

The sweep writes the format `rightsize.perf.kernels.table` reads, as JSON Lines while it
runs: a header (`kind: kernels`, the accelerator's catalog id, engine `pytorch`, torch's
version, the environment) and one `result` line per point:

- `gemm`: `torch.matmul` of [m, k] x [k, n] per dtype and shape;
- `context_attention`: causal `scaled_dot_product_attention` over `batch` prompts of
  `seq_len` tokens (grouped-query: kv_heads < heads);
- `generation_attention`: one query token per sequence over `context_len` cached tokens;
- `all_reduce`: `rightsize profile comms` all-reduce times (gloo on CPUs, NCCL on GPUs)
  when `--world-size` is 2 or more.

Each point: warm-up, then `iters` timed calls between device synchronisations; the median
is recorded. On a CPU the table describes that CPU (useful to exercise the path and to
size CPU serving); measured on a GPU it times that GPU's kernels.
"""

from __future__ import annotations

import datetime
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.profile import jsonl

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def _timer(torch: Any, device: str) -> Callable[[Callable[[], Any], int], float]:
    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def run(fn: Callable[[], Any], iters: int) -> float:
        fn()
        sync()
        times = []
        for _ in range(max(1, iters)):
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    return run


def _gemm_points(torch: Any, timer: Any, cfg: dict[str, Any], device: str) -> list[dict[str, Any]]:
    out = []
    for dtype in cfg["dtypes"]:
        td = getattr(torch, TORCH_DTYPES[dtype])
        for m in cfg["gemm_m"]:
            for n in cfg["gemm_nk"]:
                for k in cfg["gemm_nk"]:
                    a = torch.randn(m, k, device=device, dtype=td)
                    b = torch.randn(k, n, device=device, dtype=td)
                    lat = timer(lambda a=a, b=b: torch.matmul(a, b), cfg["iters"])
                    out.append({"op": "gemm", "dtype": dtype, "m": m, "n": n, "k": k, "latency_s": lat})
    return out


def _attention_points(torch: Any, timer: Any, cfg: dict[str, Any], device: str) -> list[dict[str, Any]]:
    sdpa = torch.nn.functional.scaled_dot_product_attention
    heads, kv, d = cfg["heads"], cfg["kv_heads"], cfg["head_dim"]
    td = getattr(torch, TORCH_DTYPES[cfg["dtypes"][0]])
    out = []

    def expand(x: Any) -> Any:  # grouped-query: each KV head serves heads / kv query heads
        return x.repeat_interleave(heads // kv, dim=1) if kv != heads else x

    for b in cfg["batch"]:
        for s in cfg["seq"]:
            q = torch.randn(b, heads, s, d, device=device, dtype=td)
            k = expand(torch.randn(b, kv, s, d, device=device, dtype=td))
            lat = timer(lambda q=q, k=k: sdpa(q, k, k, is_causal=True), cfg["iters"])
            out.append({"op": "context_attention", "dtype": cfg["dtypes"][0], "kv_heads": kv, "head_dim": d,
                        "heads": heads, "seq_len": s, "batch": b, "latency_s": lat})  # fmt: skip
            q1 = torch.randn(b, heads, 1, d, device=device, dtype=td)
            lat = timer(lambda q1=q1, k=k: sdpa(q1, k, k), cfg["iters"])
            out.append({"op": "generation_attention", "kv_dtype": cfg["dtypes"][0], "kv_heads": kv,
                        "head_dim": d, "heads": heads, "batch": b, "context_len": s, "latency_s": lat})  # fmt: skip
    return out


def run_kernel_sweep(
    accelerator: str,
    cfg: dict[str, Any],
    out: Path | None = None,
    device: str = "auto",
    world_size: int = 1,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Measure the sweep in `cfg` (dtypes, gemm_m, gemm_nk, heads, kv_heads, head_dim, batch,
    seq, iters) and return {header, results}; each point is written to `out` as measured."""
    try:
        import torch
    except ImportError:
        raise BadInput(
            "`profile kernels` needs PyTorch, which is not installed.",
            "torch is an optional extra.",
            "pip install 'rightsize[profile]'",
        ) from None
    if cfg["heads"] % cfg["kv_heads"]:
        raise BadInput(
            f"--heads {cfg['heads']} is not a multiple of --kv-heads {cfg['kv_heads']}.", fix="Fix one."
        )
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    name = torch.cuda.get_device_name(0) if dev.startswith("cuda") else "CPU"
    hdr = jsonl.header("kernels", {**cfg, "device": dev})
    hdr.update(
        {
            "accelerator": accelerator,
            "engine": "pytorch",
            "version": torch.__version__,
            "source": f"measured: rightsize profile kernels on {name} (torch {torch.__version__})",
            "as_of": datetime.date.today().isoformat(),
        }
    )
    say = progress or (lambda _m: None)
    results: list[dict[str, Any]] = []
    with jsonl.ProfileWriter(out) as writer:
        writer.write(hdr)
        timer = _timer(torch, dev)
        for rec in _gemm_points(torch, timer, cfg, dev) + _attention_points(torch, timer, cfg, dev):
            rec = {"type": "result", "status": "ok", **rec}
            writer.write(rec)
            results.append(rec)
            say(f"{rec['op']:<22} {rec['latency_s'] * 1e6:10.1f} us")
        if world_size >= 2:
            from rightsize.profile.comms import default_sizes, run_comms_profile

            comms = run_comms_profile(
                backend="nccl" if dev.startswith("cuda") else "gloo",
                world_size=world_size,
                sizes=default_sizes(int(cfg.get("max_bytes", 4 * 2**20))),
                ops=("all_reduce",),
                iters=cfg["iters"],
            )
            for r in comms["results"]:
                rec = {"type": "result", "status": "ok", "op": "all_reduce", "dtype": "bf16",
                       "gpus": world_size, "bytes": r["bytes"], "latency_s": r["time_s"]["median"]}  # fmt: skip
                writer.write(rec)
                results.append(rec)
    return {"header": hdr, "results": results}


def render_kernels(result: dict[str, Any]) -> str:
    """A short terminal summary of a kernel sweep."""
    h = result["header"]
    counts: dict[str, int] = {}
    for r in result["results"]:
        counts[r["op"]] = counts.get(r["op"], 0) + 1
    lines = [f"kernel table for {h['accelerator']} ({h['source']})"]
    lines += [f"  {op}: {n} points" for op, n in counts.items()]
    return "\n".join(lines)
