"""`rightsize profile comms` under torchrun or srun: one process per rank, across nodes.

Every rank runs this (the launcher started it); rank, world size and rendezvous come from
the launcher's environment (`rightsize.profile.launcher`). The ranks join one
`torch.distributed` group (NCCL on GPUs, one GPU per local rank; gloo on CPUs) and time
all-reduce, all-gather, reduce-scatter, all-to-all and ring point-to-point over the sizes,
as the local profiler does (`rightsize.profile.comms`).

Tiers: the whole world is measured once; its tier is `inter_node` when the ranks sit on
more than one host, else `intra_node`. With several hosts and several ranks per host, the
ranks of the first host are measured again on their own (`intra_node`), so one run gives
both tiers for `rightsize calibrate`.

Merging: each rank times its own calls; the per-rank medians are gathered (an all-gather
of a float64 tensor) and rank 0 writes one record per op, size and tier holding every
rank's time and the slowest as the time (a collective is as fast as its slowest rank).
Only rank 0 writes the profile.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize.profile import jsonl
from rightsize.profile.comms import BUS_FACTOR, _collective, _ring_sendrecv
from rightsize.profile.launcher import Launch
from rightsize.profile.telemetry import Sampler, summarise


def _hosts(dist: Any, launch: Launch, device: Any) -> list[str]:
    names: list[Any] = [None] * launch.world_size
    dist.all_gather_object(names, launch.host)
    return [str(n) for n in names]


def _groups(dist: Any, hosts: list[str]) -> list[tuple[str, Any, list[int]]]:
    """(tier, process group or None for the world, member ranks)."""
    distinct = list(dict.fromkeys(hosts))
    world = list(range(len(hosts)))
    out: list[tuple[str, Any, list[int]]] = [
        ("inter_node" if len(distinct) > 1 else "intra_node", None, world)
    ]
    first = [r for r, h in enumerate(hosts) if h == distinct[0]]
    if len(distinct) > 1 and len(first) > 1:
        out.append(("intra_node", dist.new_group(first), first))  # every rank must call new_group
    return out


def _time_call(
    call: Callable[[], None], iters: int, barrier: Callable[[], None], sync: Callable[[], None]
) -> list[float]:
    times = []
    for i in range(2 + iters):
        barrier()
        sync()
        t0 = time.perf_counter()
        call()
        sync()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return times


def _one(
    op: str, nbytes: int, group: Any, members: list[int], job: dict[str, Any], ctx: dict[str, Any]
) -> dict[str, float] | None:
    """Time `op` on `group`; the gathered per-rank medians (rank 0 only), else None."""
    import torch

    dist, device, rank = ctx["dist"], ctx["device"], ctx["rank"]
    n = len(members)
    in_group = rank in members
    med = float("nan")
    if in_group:
        numel = max(n, nbytes // 4 // n * n)
        buf = torch.ones(numel, device=device)
        if op == "p2p":
            call = _ring_sendrecv(buf, dist, group)
        elif group is None:
            call = _collective(op, buf, numel // n, dist, ctx["ag"], ctx["rs"])
        else:
            call = _group_collective(op, buf, numel // n, dist, group)
        times = _time_call(call, int(job["iters"]), lambda: dist.barrier(group=group), ctx["sync"])
        med = float(torch.tensor(times, dtype=torch.float64).median())
        ctx["last"] = (numel * 4, min(times), max(times))
    gathered = [torch.zeros(1, dtype=torch.float64, device=device) for _ in range(ctx["world"])]
    dist.all_gather(gathered, torch.tensor([med], dtype=torch.float64, device=device))
    if rank != 0:
        return None
    return {str(r): float(gathered[r][0]) for r in members}


def _group_collective(op: str, buf: Any, shard_numel: int, dist: Any, group: Any) -> Callable[[], None]:
    import torch

    if op == "all_reduce":
        return lambda: dist.all_reduce(buf, group=group)
    if op == "all_gather":
        shard = buf[:shard_numel].clone()
        return lambda: dist.all_gather_into_tensor(buf, shard, group=group)
    if op == "reduce_scatter":
        out = torch.empty(shard_numel, device=buf.device)
        return lambda: dist.reduce_scatter_tensor(out, buf, group=group)
    dst = torch.empty_like(buf)
    return lambda: dist.all_to_all_single(dst, buf, group=group)


def _record(
    op: str, nbytes_real: int, tier: str, per_rank: dict[str, float], hosts: list[str], ctx: dict[str, Any]
) -> dict[str, Any]:
    members = [int(r) for r in per_rank]
    n = len(members)
    slowest = max(per_rank.values())
    _, tmin, tmax = ctx.get("last") or (nbytes_real, slowest, slowest)
    return {
        "type": "result",
        "kind": "comms",
        "key": f"comms:{op}:{nbytes_real}:{n}:{tier}",
        "status": "ok",
        "op": op,
        "backend": ctx["backend"],
        "launcher": ctx["launcher"],
        "world_size": n,
        "tier": tier,
        "hosts": len({hosts[r] for r in members}),
        "ranks_per_host": n // max(1, len({hosts[r] for r in members})),
        "bytes": nbytes_real,
        "time_s": {"median": slowest, "min": tmin, "max": tmax},
        "per_rank_time_s": per_rank,
        "alg_bytes_per_s": nbytes_real / slowest,
        "bus_bytes_per_s": nbytes_real / slowest * BUS_FACTOR[op](n),
    }


def run_distributed_comms(
    launch: Launch, job: dict[str, Any], out: Path | None, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Measure as this rank; rank 0 returns the merged profile (others an empty dict)."""
    import torch
    import torch.distributed as dist

    backend = job["backend"]
    device = torch.device("cuda", launch.local_rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        backend, init_method=launch.init_method, rank=launch.rank, world_size=launch.world_size
    )
    say = progress if launch.rank == 0 and progress else (lambda _m: None)
    ctx: dict[str, Any] = {
        "dist": dist,
        "device": device,
        "rank": launch.rank,
        "world": launch.world_size,
        "backend": backend,
        "launcher": launch.launcher,
        "ag": getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor,
        "rs": getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor,
        "sync": (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None),
    }
    hosts = _hosts(dist, launch, device)
    groups = _groups(dist, hosts)
    hdr = jsonl.header(
        "comms",
        {**job, "launcher": launch.launcher, "world_size": launch.world_size, "hosts": sorted(set(hosts))},
    )
    writer = jsonl.ProfileWriter(out if launch.rank == 0 else None)
    writer.write(hdr)
    results: list[dict[str, Any]] = []
    sampler = Sampler().start() if launch.rank == 0 else None
    try:
        for tier, group, members in groups:
            for op in job["ops"]:
                for nbytes in job["sizes"]:
                    per_rank = _one(op, int(nbytes), group, members, job, ctx)
                    if per_rank is None:
                        continue
                    n = len(members)
                    real = max(n, int(nbytes) // 4 // n * n) * 4
                    rec = _record(op, real, tier, per_rank, hosts, ctx)
                    writer.write(rec)
                    results.append(rec)
                    say(f"{tier:<10} {op:<15} {real:>10} B  {rec['bus_bytes_per_s'] / 1e9:8.3f} GB/s bus")
        dist.barrier()  # every rank done before any tears the group down (see dist_train)
    finally:
        tele = summarise(sampler.stop(), sampler.notes) if sampler else {}
        if launch.rank == 0:
            writer.write({"type": "telemetry", "kind": "comms", "summary": tele})
        writer.close()
        dist.destroy_process_group()
    if launch.rank != 0:
        return {}
    return {"header": hdr, "results": results, "telemetry": tele}


if __name__ == "__main__":  # pragma: no cover - a debugging entry: python -m ... JOB_JSON
    from rightsize.profile.launcher import detect

    found = detect()
    if found is None:
        sys.exit("not launched by torchrun or srun")
    print(json.dumps(run_distributed_comms(found, json.loads(sys.argv[1]), None), default=float))
