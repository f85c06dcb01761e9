"""`rightsize profile comms`: collective bandwidth and latency with real process groups.

`world_size` local processes (`python -m rightsize.profile.comms`, one per rank) join a
`torch.distributed` group over TCP on loopback (gloo on CPUs; NCCL on GPUs, one GPU per
rank) and time all-reduce, all-gather, reduce-scatter and all-to-all over a range of
message sizes: warm-up, then `iters` timed calls between barriers, device-synchronised.
Rank 0 reports, per op and size, the median time, the algorithm bandwidth
(bytes / time) and the bus bandwidth (NCCL's definition: all-reduce x 2 (n-1)/n, the
others x (n-1)/n), which is comparable across group sizes and to link speeds.

The parent waits for the ranks with a timeout (subprocess-based) and kills them all when it
passes; each result line is written as it arrives. torch is imported only in the ranks.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.profile import jsonl
from rightsize.profile.telemetry import Sampler, summarise

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p")
BUS_FACTOR = {
    "p2p": lambda n: 1.0,  # ring send/recv: every rank sends its buffer to the next
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
}


def default_sizes(max_bytes: int) -> list[int]:
    sizes, b = [], 1024
    while b <= max_bytes:
        sizes.append(b)
        b *= 4
    return sizes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _read_records(
    rank0: subprocess.Popen[str],
    timeout_s: float,
    writer: Any,
    results: list[dict[str, Any]],
    say: Callable[[str], None],
) -> None:
    """Read rank 0's records as they come (stray library output skipped), each recorded at
    once; `BadInput` when the ranks do not finish within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    stdout = rank0.stdout
    assert stdout is not None
    os.set_blocking(stdout.fileno(), True)
    import select

    buf = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stdout], [], [], 0.5)
        if ready:
            chunk = os.read(stdout.fileno(), 65536).decode()
            if not chunk:
                break
            buf += chunk
            while "\n" in buf:
                line, buf = buf.split("\n", 1)
                try:
                    rec = json.loads(line)
                except ValueError:  # a stray line from a rank's libraries is not a record
                    continue
                if not isinstance(rec, dict) or "op" not in rec:
                    continue
                writer.write(rec)
                results.append(rec)
                say(
                    f"{rec['op']:<15} {rec['bytes']:>10} B  {rec.get('bus_bytes_per_s', 0) / 1e9:8.3f} GB/s bus"
                )
        elif rank0.poll() is not None:
            break
    else:
        raise BadInput(
            f"The collectives did not finish within {timeout_s:g} s.",
            "A rank hung (a firewall on loopback, a missing GPU, or a deadlock in the backend).",
            "Raise --timeout, use fewer sizes, or check `python -c 'import torch.distributed'`.",
        )


def run_comms_profile(
    backend: str = "gloo",
    world_size: int = 2,
    sizes: list[int] | None = None,
    ops: tuple[str, ...] = OPS,
    iters: int = 5,
    timeout_s: float = 120.0,
    out: Path | None = None,
    resume: bool = False,
    progress: Callable[[str], None] | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Measure collectives over `world_size` real torch.distributed ranks on this host
    (processes on loopback); every record is appended to `out` as it arrives."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise BadInput(
            "`profile comms` needs PyTorch, which is not installed.",
            "torch is an optional extra.",
            "pip install 'rightsize[profile]'",
        )
    if world_size < 2:
        raise BadInput(
            f"--world-size {world_size} has no peer to talk to.",
            "Collectives need at least 2 ranks.",
            "Use 2 or more.",
        )
    sizes = sizes or default_sizes(4 * 2**20)
    say = progress or (lambda _m: None)
    job = {"backend": backend, "world_size": world_size, "sizes": sizes, "ops": list(ops), "iters": iters}
    hdr = jsonl.header("comms", job)
    writer, previous = jsonl.start_run(out, hdr, resume, force, may_differ=("sizes", "ops"))
    done = {str(r["key"]) for r in previous if "key" in r}
    results: list[dict[str, Any]] = list(previous)
    job["skip"] = sorted(done)
    port = _free_port()
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    procs = []
    sampler = Sampler().start()
    try:
        for rank in range(world_size):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "rightsize.profile.comms", str(rank), str(port), json.dumps(job)],
                    stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env=env,
                    text=True,
                    start_new_session=True,
                )
            )
        _read_records(procs[0], timeout_s, writer, results, say)
        codes = [p.wait(timeout=30) for p in procs]
        if any(codes):
            assert procs[0].stderr is not None
            err = "".join((p.stderr.read() if p.stderr else "") for p in procs)[-2000:]
            raise BadInput(
                f"A rank of the {backend} process group failed (exit codes {codes}).",
                err.strip() or "no error output",
                "For nccl, run on a host with at least --world-size GPUs; on a CPU use --backend gloo.",
            )
    finally:
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, 9)
                p.wait()
        tele = summarise(sampler.stop(), sampler.notes)
        writer.write({"type": "telemetry", "kind": "comms", "summary": tele})
        writer.close()
    return {"header": hdr, "results": results, "telemetry": tele}


def _collective(op: str, buf: Any, shard_numel: int, dist: Any, ag: Any, rs: Any) -> Callable[[], None]:
    """A no-argument call of `op` on `buf` (buffers allocated once, outside the timing)."""
    import torch

    if op == "all_reduce":
        return lambda: dist.all_reduce(buf)
    if op == "all_gather":
        shard = buf[:shard_numel].clone()
        return lambda: ag(buf, shard)
    if op == "reduce_scatter":
        out = torch.empty(shard_numel, device=buf.device)
        return lambda: rs(out, buf)
    if op == "p2p":
        return _ring_sendrecv(buf, dist)
    dst = torch.empty_like(buf)
    return lambda: dist.all_to_all_single(dst, buf)


def _ring_sendrecv(buf: Any, dist: Any, group: Any = None) -> Callable[[], None]:
    """Point-to-point: each rank sends `buf` to the next rank of the ring and receives the
    previous rank's, all pairs at once (the slowest link sets the time)."""
    import torch

    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(dist.get_world_size()))
    me = ranks.index(dist.get_rank())
    nxt, prev = ranks[(me + 1) % len(ranks)], ranks[(me - 1) % len(ranks)]
    dst = torch.empty_like(buf)

    def call() -> None:
        ops = [dist.P2POp(dist.isend, buf, nxt, group), dist.P2POp(dist.irecv, dst, prev, group)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()

    return call


def _rank_main(rank: int, port: int, job: dict[str, Any]) -> int:  # pragma: no cover - runs in a child
    import torch
    import torch.distributed as dist

    n, backend = int(job["world_size"]), job["backend"]
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    ag = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    rs = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    skip = set(job.get("skip", []))
    for op in job["ops"]:
        for nbytes in job["sizes"]:
            key = f"comms:{op}:{nbytes}:{n}"
            if key in skip:
                continue
            numel = max(n, nbytes // 4 // n * n)
            buf = torch.ones(numel, device=device)
            call = _collective(op, buf, numel // n, dist, ag, rs)
            times = []
            for i in range(2 + int(job["iters"])):
                dist.barrier()
                sync()
                t0 = time.perf_counter()
                call()
                sync()
                if i >= 2:
                    times.append(time.perf_counter() - t0)
            t = torch.tensor(times, dtype=torch.float64)
            tt = torch.tensor([float(t.median())], dtype=torch.float64)
            dist.all_reduce(tt, op=dist.ReduceOp.MAX)  # the slowest rank sets the time
            if rank == 0:
                real_bytes = numel * 4
                med = float(tt[0])
                rec = {
                    "type": "result",
                    "kind": "comms",
                    "key": key,
                    "status": "ok",
                    "op": op,
                    "backend": backend,
                    "world_size": n,
                    "bytes": real_bytes,
                    "time_s": {"median": med, "min": float(t.min()), "max": float(t.max())},
                    "alg_bytes_per_s": real_bytes / med,
                    "bus_bytes_per_s": real_bytes / med * BUS_FACTOR[op](n),
                }
                sys.stdout.write(json.dumps(rec) + "\n")
                sys.stdout.flush()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_rank_main(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])))
