"""The dedicated comparison: each workload alone on its own capacity, one program each.

These programs are independent, so they run in worker processes (`concurrent.futures`'
ProcessPoolExecutor) when there are enough of them to pay for the processes, and their results are
merged in the fleet's own order, so the plan does not depend on which finished first. Workloads
whose demand is identical but for the name (the same spec, the same schedule) are solved once and
the solution is shared under each name.
"""

from __future__ import annotations

import dataclasses
import hashlib
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from rightsize.fleet.demand import WorkloadDemand
from rightsize.fleet.prices import PoolPrices
from rightsize.fleet.solver import Limits, Solution, solve

PARALLEL_FROM = 6  # fewer distinct programs than this run in this process (a worker costs ~0.3 s)
Progress = Callable[[int, int], None]


def cap_shares(demands: list[WorkloadDemand]) -> dict[str, float]:
    """Each workload's share of its pool's burst caps when it is alone: its own peak over the pool's
    sum of peaks. The dedicated plans share one provider too, so together they stay within its caps
    (and their sum remains a solution of the pooled program)."""
    weight = {
        d.name: float(max(d.solo_gpus, d.gang_gpus, float(d.fixed.max(initial=0.0)), 1.0)) for d in demands
    }
    total: dict[str, float] = {}
    for d in demands:
        total[d.pool] = total.get(d.pool, 0.0) + weight[d.name]
    return {d.name: weight[d.name] / total[d.pool] for d in demands}


def _alone(pools: dict[str, PoolPrices], d: WorkloadDemand, share: float) -> dict[str, PoolPrices]:
    pr = pools[d.pool]
    caps = {k: v * share for k, v in pr.burst_caps_gpus.items()}
    return {d.pool: dataclasses.replace(pr, burst_caps_gpus=caps)}


def _key(d: WorkloadDemand, share: float) -> str:
    """The demand's content without its name, and its share of the caps: equal keys, equal programs."""
    h = hashlib.sha256()
    h.update(f"share:{share!r};".encode())
    fields = dataclasses.asdict(d)
    fields.pop("name")
    for k in sorted(fields):
        v = fields[k]
        if isinstance(v, np.ndarray):
            h.update(f"{k}:{v.dtype}:{v.shape}:".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        else:
            h.update(f"{k}:{v!r};".encode())
    return h.hexdigest()


def _renamed(sol: Solution, old: str, new: str) -> Solution:
    if old == new:
        return sol
    values = {_swap(k, old, new): v.copy() for k, v in sol.values.items()}
    prices = {_swap(k, old, new): v for k, v in sol.spot_prices.items()}
    return dataclasses.replace(sol, values=values, spot_prices=prices)


def _swap(block: str, old: str, new: str) -> str:
    kind, _, name = block.partition(":")
    return (
        f"{kind}:{new}" if name == old and kind in ("x", "xs", "miss", "cr", "co", "cs", "start") else block
    )


def _one(args: tuple[np.ndarray, dict[str, PoolPrices], WorkloadDemand, Limits]) -> Solution:
    days, pools, d, limits = args
    return solve(days, pools, [d], limits)


def _in_workers(tasks: list[Any], n: int, progress: Progress | None) -> list[Solution]:
    """The solves in `n` worker processes, in submission order; as many as finished if the pool
    breaks (a worker killed), the caller solves the rest itself."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    solved: list[Solution] = []
    try:
        with ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context(method)) as pool:
            for sol in pool.map(_one, tasks, chunksize=max(1, len(tasks) // (4 * n))):
                solved.append(sol)  # map yields in submission order: a deterministic merge
                if progress is not None:
                    progress(len(solved), len(tasks))
    except (BrokenProcessPool, OSError):
        pass
    return solved


def workers_for(jobs: int, wanted: int | None) -> int:
    cpus = os.cpu_count() or 1
    return max(1, min(jobs, wanted if wanted is not None else cpus))


def dedicated_solutions(
    days: np.ndarray,
    pools: dict[str, PoolPrices],
    demands: list[WorkloadDemand],
    limits: Limits,
    workers: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Solution]:
    """Each workload's solution alone, keyed by name in the fleet's order."""
    shares = cap_shares(demands)
    first: dict[str, WorkloadDemand] = {}
    keys = []
    for d in demands:
        k = _key(d, shares[d.name])
        keys.append(k)
        first.setdefault(k, d)
    unique = list(first.items())
    tasks = [(days, _alone(pools, d, shares[d.name]), d, limits) for _, d in unique]
    n = workers_for(len(tasks), workers)
    solved: list[Solution] = []
    if n > 1 and len(tasks) >= PARALLEL_FROM:
        solved = _in_workers(tasks, n, progress)
    if len(solved) < len(tasks):  # one process, or the workers could not finish: here, in order
        for t in tasks[len(solved) :]:
            solved.append(_one(t))
            if progress is not None:
                progress(len(solved), len(tasks))
    by_key = {k: (d.name, s) for (k, d), s in zip(unique, solved, strict=True)}
    out: dict[str, Solution] = {}
    for d, k in zip(demands, keys, strict=True):
        name, sol = by_key[k]
        out[d.name] = _renamed(sol, name, d.name)
    return out
