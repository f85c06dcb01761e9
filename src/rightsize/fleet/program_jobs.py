"""The jobs' part of the fleet's program: where each job's work may go, and whole gangs.

A job's work is a variable per cell: a month for work that holds the same GPUs all day (a run
that cannot pause daily), an hour for batch jobs in their window, a block of `BLOCK_HOURS` hours
for other jobs (time aggregated where nothing needs finer steps). Slots where the job may not run
point at the model's zero variable. Gang counts (whole copies of the gang on each kind of capacity)
are integers per month (`fleet.solver` explains the program).
"""

from __future__ import annotations

import math

import numpy as np

from rightsize.fleet.blocks import KIND as BLOCK
from rightsize.fleet.demand import HOURS, WorkloadDemand
from rightsize.fleet.model import Model
from rightsize.fleet.prices import PoolPrices

TIE_BREAK_USD_PER_GPU_HOUR = 1e-4
BLOCK_HOURS = 4  # a job that may run at any hour is placed in blocks of this many hours


def cells(w: WorkloadDemand) -> tuple[np.ndarray, int]:
    """[months, 24] cell number of each slot where the job may run (-1 elsewhere), and the count."""
    months = w.allowed.shape[0]
    if w.flat_in_day:
        key = np.repeat(np.arange(months)[:, None], HOURS, axis=1) * HOURS
    elif w.kind == "batch_inference":
        key = np.arange(months * HOURS).reshape(months, HOURS)
    else:
        key = np.arange(months)[:, None] * HOURS + (np.arange(HOURS)[None, :] // BLOCK_HOURS)
    key = np.where(w.allowed, key, -1)
    used = np.unique(key[key >= 0])
    out = np.full(key.shape, -1)
    out[w.allowed] = np.searchsorted(used, key[w.allowed])
    return out, len(used)


def work_block(md: Model, name: str, w: WorkloadDemand, cost: np.ndarray, role: str) -> np.ndarray:
    """The job's work as [months, 24] variable indices: one variable per cell, zero elsewhere."""
    cell, n = cells(w)
    c = np.bincount(cell[w.allowed], weights=cost[w.allowed], minlength=n)
    raw = md.add(f"{name}~cells", (n,), c, w.max_gpus, role=role)
    md.blocks.pop(f"{name}~cells")
    idx = np.where(cell >= 0, raw[np.maximum(cell, 0)], md.zero)
    md.blocks[name] = idx
    return idx


def _contiguous(md: Model, w: WorkloadDemand, run: list[np.ndarray], held: list[np.ndarray]) -> None:
    """A one-off run that cannot be checkpointed and resumed runs as one block: the months it holds
    its gang (on any of the kinds `held`: committed, on demand, blocks) are consecutive (at most one
    start), and a month between two such months is run in full (it has no spot: a preemption would
    lose the run)."""
    months = list(w.periods[0][0])
    start = md.add(f"start:{w.name}", (len(months),), 0.0, 1.0, integer=True)
    g = float(w.gang_gpus)
    k = len(held)
    for i, m in enumerate(months):
        prev = [c[months[i - 1]] for c in held] if i > 0 else []
        # start >= held[m] - held[m-1]
        md.row([start[i], *(c[m] for c in held), *prev], [1.0, *([-1.0] * k), *([1.0] * len(prev))], 0.0)
        if 0 < i < len(months) - 1:  # x[m] >= gang (held[m-1] + held[m+1] - 1)
            a, b = months[i - 1], months[i + 1]
            cols = [r[m, 0] for r in run]
            md.row(
                [*cols, *(c[a] for c in held), *(c[b] for c in held)],
                [*([1.0] * len(cols)), *([-g] * 2 * k)],
                -g,
            )
    md.row(start, np.ones(len(months)), -np.inf, 1.0)


def jobs(
    md: Model,
    days: np.ndarray,
    pools: dict[str, PoolPrices],
    work: list[WorkloadDemand],
    fixed: dict[str, np.ndarray],
    penalty: float,
) -> None:
    months = len(days)
    for w in work:
        fixed[w.pool] += w.fixed
        if not w.placed:
            continue
        # Among schedules of equal cost, the earliest: a tie-break far below any price, kept out of
        # the reported cost (it rides with the penalties).
        early = TIE_BREAK_USD_PER_GPU_HOUR * (np.arange(months)[:, None] + np.arange(HOURS)[None, :] / HOURS)
        x = work_block(md, f"x:{w.name}", w, early * days[:, None] / months, "tie")
        blocks = [x]
        spot = pools[w.pool].usd_per_gpu_hour.get("spot")
        xs = None
        if spot is not None and w.spot_factor is not None:
            xs = work_block(
                md, f"xs:{w.name}", w, spot * w.spot_factor * np.repeat(days[:, None], HOURS, 1), "cost"
            )
            blocks.append(xs)
        xb = None
        block = pools[w.pool].usd_per_gpu_hour.get(BLOCK)
        if block is not None:  # paid by the gang-days booked (`_book_blocks`)
            xb = work_block(md, f"xb:{w.name}", w, early * days[:, None] / months, "tie")
            blocks.append(xb)
        _gang_rows(md, w, x, xs, xb)
        if xb is not None and block is not None:
            _book_blocks(md, w, xb, days, block)
        miss = md.add(f"miss:{w.name}", (len(w.periods),), penalty, role="penalty")
        for q, (ms, gpu_hours) in enumerate(w.periods):
            ok = w.allowed[ms, :].ravel()
            cols = [b[ms, :].ravel()[ok] for b in blocks] + [np.array([miss[q]])]
            vals = [np.repeat(days[ms], HOURS)[ok] for _ in blocks] + [np.ones(1)]
            md.row(np.concatenate(cols), np.concatenate(vals), gpu_hours)


def _gang_rows(
    md: Model, w: WorkloadDemand, x: np.ndarray, xs: np.ndarray | None, xb: np.ndarray | None
) -> None:
    """Whole gangs: in each month the job holds whole copies of its gang, each on one kind of
    capacity: cr on the committed pool, co on demand, cs on spot, cb on capacity blocks (integers);
    its work in any cell fits in what it holds (spot work takes the spot slowdown more GPUs)."""
    months = x.shape[0]
    active = w.allowed.any(axis=1)
    most = np.where(active, math.ceil(w.max_gpus / w.gang_gpus - 1e-9), 0.0)
    cr = md.add(f"cr:{w.name}", (months,), 0.0, most, integer=True)
    co = md.add(f"co:{w.name}", (months,), 0.0, most, integer=True)
    cs = md.add(f"cs:{w.name}", (months,), 0.0, most, integer=True) if xs is not None else None
    cb = md.add(f"cb:{w.name}", (months,), 0.0, most, integer=True) if xb is not None else None
    if not w.preemptible and w.flat_in_day and len(w.periods) == 1 and len(w.periods[0][0]) > 1:
        extra = [] if xb is None or cb is None else [(xb, cb)]
        _contiguous(md, w, [x] + [e[0] for e in extra], [cr, co] + [e[1] for e in extra])
    g = -float(w.gang_gpus)
    cell, n = cells(w)
    first = np.full(n, -1)
    ms, hs = np.nonzero(cell >= 0)
    first[cell[ms, hs][::-1]] = np.arange(len(ms))[::-1]  # the first slot of each cell
    for k in first:
        a, b = int(ms[k]), int(hs[k])
        md.row([x[a, b], cr[a], co[a]], [1.0, g, g], -np.inf, 0.0)
        if xs is not None and cs is not None:
            md.row([xs[a, b], cs[a]], [w.spot_factor or 1.0, g], -np.inf, 0.0)
        if xb is not None and cb is not None:
            md.row([xb[a, b], cb[a]], [1.0, g], -np.inf, 0.0)
    for m in np.flatnonzero(active):
        held = [cr[m], co[m]] + ([cs[m]] if cs is not None else []) + ([cb[m]] if cb is not None else [])
        md.row(held, np.ones(len(held)), -np.inf, float(most[m]))


def _book_blocks(
    md: Model, w: WorkloadDemand, xb: np.ndarray, days: np.ndarray, usd_per_gpu_hour: float
) -> None:
    """The job books its own capacity blocks: db[m] whole gang-days in month m (a copy of its gang
    for a whole day, every hour paid); its work on blocks in any cell fits in them, spread over the
    month's days (a booked day covers all its hours); a recurring job books at least a day for each
    of the month's runs for each copy it holds there (runs are not packed into one day)."""
    months = xb.shape[0]
    g = float(w.gang_gpus)
    most = np.where(w.allowed.any(axis=1), math.ceil(w.max_gpus / g - 1e-9) * days, 0.0)
    db = md.add(f"db:{w.name}", (months,), g * HOURS * usd_per_gpu_hour, most, integer=True)
    cell, n = cells(w)
    first = np.full(n, -1)
    ms, hs = np.nonzero(cell >= 0)
    first[cell[ms, hs][::-1]] = np.arange(len(ms))[::-1]
    for k in first:
        a, b = int(ms[k]), int(hs[k])
        md.row([xb[a, b], db[a]], [1.0, -g / float(days[a])], -np.inf, 0.0)
    cb = md.blocks.get(f"cb:{w.name}")
    if w.runs_per_month and cb is not None:  # each run of a recurring job books its own day(s)
        for m in np.flatnonzero(w.allowed.any(axis=1)):
            runs = min(float(days[m]), math.ceil(w.runs_per_month * float(days[m]) * 12.0 / 365.0 - 1e-9))
            md.row([db[m], cb[m]], [1.0, -runs], 0.0)
