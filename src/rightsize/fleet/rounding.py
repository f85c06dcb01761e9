"""From relaxed gang counts to whole gangs within the caps, without branching (phase 2 of
`fleet.highs.two_phase`).

Each job-month holds the ceiling of its relaxed total of gang copies: the floor of each kind's
relaxed copies, and the copies rounding adds on demand while the on-demand cap has room (it is
paid by the hour), then on capacity blocks and on spot within their caps, then on the committed
pool. Where the spot
copies of a month pass the spot cap, or the on-demand copies of an hour (with the fixed load the
committed pool did not take in phase 1) pass the on-demand cap, copies move to the committed pool
(biggest gangs first), which the next solve buys. None when a pool has nothing to commit to.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from rightsize.fleet.blocks import KIND as BLOCK
from rightsize.fleet.demand import HOURS, WorkloadDemand
from rightsize.fleet.prices import COMMITTED, PoolPrices

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.fleet.model import Model

KINDS = ("cr", "co", "cs", "cb")
EPS = 1e-6


def whole_fixed(w: WorkloadDemand) -> np.ndarray:
    """A workload's fixed load in whole units (replicas, gangs)."""
    unit = max(1.0, float(round(w.gang_gpus)))
    return unit * np.ceil(np.maximum(w.fixed, 0.0) / unit - EPS)


def _floors(v: dict[str, float]) -> tuple[dict[str, int], int]:
    """Whole copies below the relaxed ones, and how many more the ceiling of the total needs."""
    k = math.ceil(sum(v.values()) - EPS)
    base = {f: math.floor(x + EPS) for f, x in v.items()}
    return base, max(0, k - sum(base.values()))


def round_gangs(
    md: Model, x: np.ndarray, work: list[WorkloadDemand], pools: dict[str, PoolPrices]
) -> np.ndarray | None:
    out = np.full(md.n, np.nan)
    months = len(next(iter(md.blocks.values())))
    for acc, pr in pools.items():
        can_commit = any(f"n:{acc}:{k}" in md.blocks for k in COMMITTED)
        placed = sorted((w for w in work if w.pool == acc and w.placed), key=lambda w: w.name)
        whole = sum((whole_fixed(w) for w in work if w.pool == acc), np.zeros((months, HOURS)))
        sr = md.blocks.get(f"sr:{acc}")
        taken = x[sr] if sr is not None else np.zeros((months, HOURS))
        held = {w.name: np.zeros((months, len(KINDS)), dtype=int) for w in placed}
        extra: dict[str, np.ndarray] = {w.name: np.zeros(months, dtype=int) for w in placed}
        kinds = {w.name: [k for k in KINDS if f"{k}:{w.name}" in md.blocks] for w in placed}
        for w in placed:
            for m in np.flatnonzero(w.allowed.any(axis=1)):
                base, more = _floors({k: float(x[md.blocks[f"{k}:{w.name}"][m]]) for k in kinds[w.name]})
                for k, n in base.items():
                    held[w.name][m, KINDS.index(k)] = n
                extra[w.name][m] = more
        _place_remainders(placed, held, extra, kinds, pr, whole - taken)
        if not _within_caps(placed, held, pr, whole - taken, can_commit):
            return None
        for w in placed:
            for i, k in enumerate(KINDS):
                if f"{k}:{w.name}" in md.blocks:
                    out[md.blocks[f"{k}:{w.name}"]] = held[w.name][:, i]
            _starts(md, w, held[w.name], out)
    return out


def _place_remainders(
    placed: list[WorkloadDemand],
    held: dict[str, np.ndarray],
    extra: dict[str, np.ndarray],
    kinds: dict[str, list[str]],
    pr: PoolPrices,
    fixed_on_demand: np.ndarray,
) -> None:
    """The copies rounding adds go where they cost least to hold whole: on demand while its cap
    has room at every hour the job may run, then spot within its cap, then the committed pool."""
    spot_cap = pr.burst_caps_gpus.get("spot", np.inf)
    od_cap = pr.burst_caps_gpus.get("on_demand", np.inf)
    block_cap = pr.burst_caps_gpus.get(BLOCK, np.inf)
    biggest = sorted(placed, key=lambda w: (-w.gang_gpus, w.name))
    for m in range(fixed_on_demand.shape[0]):
        od = np.maximum(fixed_on_demand[m], 0.0) + sum(
            w.gang_gpus * held[w.name][m, 1] * w.allowed[m] for w in placed
        )
        spot = sum(w.gang_gpus * held[w.name][m, 2] for w in placed)
        block = sum(w.gang_gpus * held[w.name][m, 3] for w in placed)
        for w in biggest:
            for _ in range(int(extra[w.name][m])):
                if "co" in kinds[w.name] and (od + w.gang_gpus * w.allowed[m]).max() <= od_cap + EPS:
                    held[w.name][m, 1] += 1
                    od = od + w.gang_gpus * w.allowed[m]
                elif "cb" in kinds[w.name] and block + w.gang_gpus <= block_cap + EPS:
                    held[w.name][m, 3] += 1
                    block += w.gang_gpus
                elif "cs" in kinds[w.name] and spot + w.gang_gpus <= spot_cap + EPS:
                    held[w.name][m, 2] += 1
                    spot += w.gang_gpus
                else:
                    held[w.name][m, 0] += 1


def _within_caps(
    placed: list[WorkloadDemand],
    held: dict[str, np.ndarray],
    pr: PoolPrices,
    fixed_on_demand: np.ndarray,
    can_commit: bool,
) -> bool:
    """Move copies to the committed pool until spot, blocks and on-demand fit their caps; False if
    they cannot."""
    od_cap = pr.burst_caps_gpus.get("on_demand", np.inf)
    biggest = sorted(placed, key=lambda w: (-w.gang_gpus, w.name))
    for m in range(fixed_on_demand.shape[0]):
        for col, cap in (
            (2, pr.burst_caps_gpus.get("spot", np.inf)),
            (3, pr.burst_caps_gpus.get(BLOCK, np.inf)),
        ):
            over = sum(w.gang_gpus * held[w.name][m, col] for w in placed) - cap
            for w in biggest:
                while over > EPS and held[w.name][m, col] > 0:
                    if not can_commit:
                        return False
                    held[w.name][m, col] -= 1
                    held[w.name][m, 0] += 1
                    over -= w.gang_gpus
            if over > EPS:
                return False
        need = np.maximum(fixed_on_demand[m], 0.0) + sum(
            w.gang_gpus * held[w.name][m, 1] * w.allowed[m] for w in placed
        )
        for w in biggest:
            while (need - od_cap).max() > EPS and held[w.name][m, 1] > 0 and w.allowed[m][np.argmax(need)]:
                if not can_commit:
                    return False
                held[w.name][m, 1] -= 1
                held[w.name][m, 0] += 1
                need = need - w.gang_gpus * w.allowed[m]
        if (need - od_cap).max() > EPS:
            return False
    return True


def _starts(md: Model, w: WorkloadDemand, held: np.ndarray, out: np.ndarray) -> None:
    """A run that may not be checkpointed starts in the first month it holds its gang."""
    start = md.blocks.get(f"start:{w.name}")
    if start is None:
        return
    months = list(w.periods[0][0])
    runs = held[months].sum(axis=1) > 0
    out[start] = [1.0 if r and (i == 0 or not runs[i - 1]) else 0.0 for i, r in enumerate(runs)]
