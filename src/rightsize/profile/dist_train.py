"""`rightsize profile train` under torchrun or srun: data-parallel training steps across
the launched ranks (DistributedDataParallel; NCCL on GPUs, gloo on CPUs).

Each rank builds the same decoder (a preset or ModelArch file), wraps it in DDP and, per
batch x sequence point, runs `warmup` untimed and `steps` timed optimizer steps with a
device synchronisation between phases: forward with loss, backward (which includes DDP's
gradient all-reduce, overlapped with the backward as in real training) and the optimizer
step. Per-rank medians are gathered (all-gather of a float64 tensor) and rank 0 writes one
record per point with every rank's step time, the slowest as the step time, and the
tokens per second of the whole job (world x batch x sequence / slowest step).
The `--module` path is for single-process profiles only.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize.profile import jsonl
from rightsize.profile.launcher import Launch

PHASES = ("forward", "backward", "optimizer", "step")


def _stats(xs: list[float]) -> dict[str, float]:
    s = sorted(xs)
    return {"median": s[len(s) // 2], "min": s[0], "max": s[-1]}


def _measure(
    model: Any, opt: Any, b: int, s: int, cfg: dict[str, Any], ctx: dict[str, Any]
) -> dict[str, Any]:
    import torch

    from rightsize.profile.torch_model import lm_loss

    device, sync, vocab = ctx["device"], ctx["sync"], ctx["vocab"]
    gen = torch.Generator().manual_seed(1000 + ctx["rank"])
    tokens = torch.randint(0, vocab, (b, s), generator=gen).to(device)
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:  # one counted forward + backward per point
        lm_loss(model(tokens), tokens).backward()
    opt.zero_grad(set_to_none=True)
    ctx["flops"] = float(counter.get_total_flops())
    times: dict[str, list[float]] = {p: [] for p in PHASES}
    for i in range(int(cfg["warmup"]) + int(cfg["steps"])):
        sync()
        t0 = time.perf_counter()
        loss = lm_loss(model(tokens), tokens)
        sync()
        t1 = time.perf_counter()
        loss.backward()
        sync()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        t3 = time.perf_counter()
        if i >= int(cfg["warmup"]):
            for p, v in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t3 - t0), strict=True):
                times[p].append(v)
    return {p: _stats(v) for p, v in times.items()}


def _memory(model: Any, device: Any) -> dict[str, Any]:
    """CUDA allocator peak on a GPU; on a CPU the model state (weights, gradients, two
    AdamW moments, all fp32-sized per parameter as allocated)."""
    import torch

    if device.type == "cuda":
        return {"peak_allocated_bytes": float(torch.cuda.max_memory_allocated(device))}
    state = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"peak_estimate_bytes": float(4 * state), "what": "weights + gradients + AdamW moments"}


def _record(
    launch: Launch, b: int, s: int, t: dict[str, Any], per_rank: list[float], module: Any, ctx: dict[str, Any]
) -> dict[str, Any]:
    """One merged record: every rank's step time, the slowest as the job's."""
    from rightsize.profile.torch_model import param_count

    slowest = max(per_rank)
    return {
        "type": "result",
        "kind": "train",
        "key": f"train:b{b}:s{s}:w{launch.world_size}",
        "status": "ok",
        "batch": b,
        "seq_len": s,
        "world_size": launch.world_size,
        "launcher": launch.launcher,
        "parallel": {"dp": launch.world_size, "tp": 1, "pp": 1},
        "params": param_count(module),
        "time_s": t,
        "per_rank_step_s": {str(r): v for r, v in enumerate(per_rank)},
        "step_time_s": slowest,
        "flops_per_step": ctx["flops"],
        "achieved_flops_per_s": ctx["flops"] / slowest,
        "data_wait_fraction": 0.0,  # synthetic tokens already on the device
        "memory": _memory(module, ctx["device"]),
        "tokens_per_s": launch.world_size * b * s / slowest,
    }


def _gather(dist: Any, value: float, ctx: dict[str, Any]) -> list[float]:
    import torch

    out = [torch.zeros(1, dtype=torch.float64, device=ctx["device"]) for _ in range(ctx["world"])]
    dist.all_gather(out, torch.tensor([value], dtype=torch.float64, device=ctx["device"]))
    return [float(t[0]) for t in out]


def run_distributed_train(
    launch: Launch, cfg: dict[str, Any], out: Path | None, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Train as this rank; rank 0 returns the merged profile (others an empty dict)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from rightsize.profile.torch_model import build_decoder
    from rightsize.spec.model import ModelArch

    cuda = cfg["device"] == "cuda"
    device = torch.device("cuda", launch.local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if cfg.get("threads"):
        torch.set_num_threads(int(cfg["threads"]))
    dist.init_process_group(
        "nccl" if cuda else "gloo",
        init_method=launch.init_method,
        rank=launch.rank,
        world_size=launch.world_size,
    )
    arch = ModelArch.model_validate(cfg["arch"])
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    model = DDP(build_decoder(arch, device, dtype, flash=bool(cfg.get("flash", True))))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ctx: dict[str, Any] = {
        "device": device,
        "rank": launch.rank,
        "world": launch.world_size,
        "vocab": arch.vocab,
        "sync": (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None),
    }
    hosts: list[Any] = [None] * launch.world_size
    dist.all_gather_object(hosts, launch.host)
    hdr = jsonl.header(
        "train",
        {
            **cfg,
            "launcher": launch.launcher,
            "world_size": launch.world_size,
            "hosts": sorted(set(map(str, hosts))),
        },
    )
    writer = jsonl.ProfileWriter(out if launch.rank == 0 else None)
    writer.write(hdr)
    say = progress if launch.rank == 0 and progress else (lambda _m: None)
    results = []
    try:
        for s in cfg["seqs"]:
            for b in cfg["batches"]:
                t = _measure(model, opt, int(b), int(s), cfg, ctx)
                per_rank = _gather(dist, t["step"]["median"], ctx)
                if launch.rank != 0:
                    continue
                rec = _record(launch, int(b), int(s), t, per_rank, model.module, ctx)
                slowest = rec["step_time_s"]
                writer.write(rec)
                results.append(rec)
                say(f"b{b} s{s}: step {slowest * 1e3:.1f} ms over {launch.world_size} ranks")
        # Every rank done before any tears down: gloo aborts a process ("terminate called without an
        # active exception") when its peer destroys the group while rank 0 is still writing.
        dist.barrier()
    finally:
        writer.close()
        # DDP and its reducer hold the group: free them, and the gloo work they keep, while the
        # interpreter is whole. Left to interpreter exit, a gloo thread releasing a tensor takes the
        # GIL during finalisation and the rank aborts the same way (pytorch/pytorch PR 179291).
        del model, opt
        gc.collect()
        dist.destroy_process_group()
    return {"header": hdr, "results": results} if launch.rank == 0 else {}
