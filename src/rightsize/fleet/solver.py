"""Choose the capacity and the schedule together: one mixed-integer program solved by HiGHS.

Decision variables, on the grid of months m x hours h of a representative day (`fleet.demand`):

- n[p, k, s] integer: nodes of committed kind k (owned, 1- or 3-year reserved) bought in pool p in
  month s; they serve from s for the kind's term. Cost: a reservation, nodes x GPUs per node x
  price x the hours of the term inside the horizon; an owned node, bought (`PoolPrices.
  onprem_node_price`: its capital plus its running cost inside the horizon).
- od[p, m, h] >= 0: on-demand GPUs. Cost: price x the month's days (one hour each day).
- x[j, m, h] >= 0: GPUs a placeable job j runs on the pool or on-demand; xs[j, m, h] >= 0 the work it
  runs on spot, which takes `spot_factor` times the GPUs (preemptions lengthen it). Cost of spot:
  price x factor x days. One variable per cell where nothing changes (`fleet.program_jobs`).
- xb[j, m, h] >= 0: GPUs job j runs on capacity blocks (`fleet.blocks`); cb[j, m] integer whole
  copies of its gang on blocks at once (within the provider's limit), db[j, m] integer whole
  gang-days booked in month m, paid gang GPUs x 24 h x the block price; its work on blocks fits in
  the days booked.
- cr, co, cs[j, m] integer: whole copies of job j's gang held in month m on the committed pool, on
  demand and on spot; sr[p, m, h] the fixed load (services) put on the committed pool.
- miss[j, q] >= 0: GPU-hours of period q of job j left undone, at a penalty far above any price.

Constraints: in every slot the committed GPUs x the utilisation target plus on-demand cover the
fixed load and the placed jobs; each job's period gets its GPU-hours (or reports the miss); a job's
work fits in the whole gangs it holds, at most its copies at once, only in its allowed hours; a run
that cannot pause runs the same GPUs every hour of a day, and one that cannot be checkpointed runs
in consecutive months; the gangs held on the committed pool plus the fixed load put there fit in
the committed GPUs, those on demand plus the rest of the fixed load in the on-demand cap, those on
spot in the spot cap; the total stays within the budget; the owned racks' facility power within
the power limit. The objective is cost plus miss penalties. Minimising it puts the committed
baseline where one more GPU-hour of commitment costs more than the on-demand hours it saves (the
demand duration curve's break-even), and moves deferrable work into valleys. `fleet.highs` solves
it in phases and states the gap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.errors import Infeasible
from rightsize.fleet.blocks import KIND as BLOCK
from rightsize.fleet.demand import HOURS, WorkloadDemand
from rightsize.fleet.highs import GANG_BLOCKS, Program, two_phase
from rightsize.fleet.model import Model
from rightsize.fleet.prices import COMMITTED, PoolPrices
from rightsize.fleet.program_jobs import jobs
from rightsize.fleet.rounding import round_gangs, whole_fixed

MISS_PENALTY_FACTOR = 20.0  # a missed GPU-hour costs this many times the dearest price in the fleet
TIME_LIMIT_S = 120.0  # defaults of policy.solver (spec.fleet.SolverOptions)
MIP_REL_GAP = 1e-3  # 0.1% of the cost: far inside the price table's own uncertainty
BUY_EVERY_MONTHS = 3  # commitments start at quarter boundaries (procurement runs quarterly)


@dataclass(frozen=True)
class Limits:
    utilisation_target: float = 1.0
    budget_usd: float | None = None
    power_limit_w: float | None = None
    time_limit_s: float = TIME_LIMIT_S
    mip_gap: float = MIP_REL_GAP
    random_seed: int = 0


class SolveStopped(Infeasible):
    """The time limit stopped the solve before it found any plan (not proof that none exists)."""


@dataclass
class Solution:
    values: dict[str, np.ndarray]  # variable block name -> its values
    cost_usd: float  # capacity cost, penalties excluded
    penalty_usd: float
    status: str
    seconds: float
    variables: int
    integers: int
    rows: int
    mip_gap: float | None = None
    spot_prices: dict[str, float] = field(default_factory=dict)  # xs block -> USD per GPU-hour of work
    stopped_at_time_limit: bool = False  # HiGHS stopped at limits.time_limit_s, not at the gap
    time_limit_s: float | None = None
    gap_limit: float | None = None
    gap_usd: float | None = None  # the plan's objective less the best bound: most a better plan saves
    bound_from: str = "linear"  # what the bound is: `fleet.highs.Outcome.bound_from`
    block_gpu_days: dict[str, np.ndarray] = field(default_factory=dict)  # pool -> GPU-days booked, by month
    block_work_gpu_hours: dict[str, np.ndarray] = field(default_factory=dict)  # pool -> work run on blocks
    block_gpus: dict[str, np.ndarray] = field(
        default_factory=dict
    )  # pool -> GPUs of gangs on blocks, by month

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        return self.values.get(name, np.zeros(shape))


def _spot_prices(md: Model, pools: dict[str, PoolPrices], work: list[WorkloadDemand]) -> dict[str, float]:
    return {
        f"xs:{w.name}": pools[w.pool].usd_per_gpu_hour["spot"] * (w.spot_factor or 1.0)
        for w in work
        if f"xs:{w.name}" in md.blocks
    }


def _block_gpus(
    values: dict[str, np.ndarray], work: list[WorkloadDemand], days: np.ndarray
) -> dict[str, Any]:
    """Per pool and month: GPUs of the whole gangs booked on capacity blocks at once, the GPU-days
    booked (whole days of whole gangs) and the GPU-hours of work run on them."""
    at_once: dict[str, np.ndarray] = {}
    gpu_days: dict[str, np.ndarray] = {}
    ran: dict[str, np.ndarray] = {}
    for w in work:
        cb, db = values.get(f"cb:{w.name}"), values.get(f"db:{w.name}")
        if cb is None or db is None:
            continue
        zero = np.zeros(len(cb))
        booked = np.round(db) > 0
        at_once[w.pool] = at_once.get(w.pool, zero) + np.where(booked, np.round(cb), 0.0) * float(w.gang_gpus)
        gpu_days[w.pool] = gpu_days.get(w.pool, zero) + np.round(db) * float(w.gang_gpus)
        ran[w.pool] = ran.get(w.pool, zero) + values[f"xb:{w.name}"].sum(axis=1) * days
    return {"block_gpus": at_once, "block_gpu_days": gpu_days, "block_work_gpu_hours": ran}


def _active(term: int, months: int) -> np.ndarray:
    """[s, m] 1 where a commitment bought in month s serves month m."""
    s = np.arange(months)[:, None]
    m = np.arange(months)[None, :]
    return ((m >= s) & (m < s + term)).astype(float)


def build(
    days: np.ndarray, pools: dict[str, PoolPrices], work: list[WorkloadDemand], limits: Limits
) -> Model:
    months = len(days)
    md = Model()
    md.days = days
    dearest = max([max(p.usd_per_gpu_hour.values(), default=1.0) for p in pools.values()] + [1.0])
    fixed: dict[str, np.ndarray] = {acc: np.zeros((months, HOURS)) for acc in pools}
    commits: dict[str, list[tuple[np.ndarray, np.ndarray, float]]] = {acc: [] for acc in pools}
    for acc, pr in pools.items():
        for kind in COMMITTED:
            if kind not in pr.usd_per_gpu_hour:
                continue
            act = _active(pr.term_months[kind], months)  # [s, m]
            hours_in = act @ (days * HOURS)
            term = pr.term_months[kind]
            left = np.maximum(0, np.arange(months) + term - months) / term
            bought = pr.onprem_node_price(hours_in, left) if kind == "onprem" else None
            price = bought if bought is not None else pr.gpus_per_node * pr.usd_per_gpu_hour[kind] * hours_in
            buy = np.where(np.arange(months) % BUY_EVERY_MONTHS == 0, np.inf, 0.0)
            idx = md.add(f"n:{acc}:{kind}", (months,), price, ub=buy, integer=True)
            commits[acc].append((idx, act, limits.utilisation_target * pr.gpus_per_node))
            if kind == "onprem" and limits.power_limit_w is not None:
                for m in range(months):
                    served = np.flatnonzero(act[:, m])
                    watts = np.full(len(served), pr.onprem_facility_w_per_node)
                    md.row(idx[served], watts, -np.inf, limits.power_limit_w)
        if "on_demand" in pr.usd_per_gpu_hour:
            md.add(f"od:{acc}", (months, HOURS), pr.usd_per_gpu_hour["on_demand"] * days[:, None])
    jobs(md, days, pools, work, fixed, MISS_PENALTY_FACTOR * dearest)
    _cover_rows(md, months, work, commits, fixed, pools)
    if limits.budget_usd is not None:
        c = np.concatenate(md.cost)
        nz = np.flatnonzero(c)
        md.row(nz, c[nz], -np.inf, limits.budget_usd)
    return md


def _cover_rows(
    md: Model,
    months: int,
    work: list[WorkloadDemand],
    commits: dict[str, list[tuple[np.ndarray, np.ndarray, float]]],
    fixed: dict[str, np.ndarray],
    pools: dict[str, PoolPrices],
) -> None:
    """committed x utilisation + on-demand - placed jobs >= fixed load, in every slot of every pool;
    then the whole gangs (`_held_rows`)."""
    for acc, kinds in commits.items():
        od = md.blocks.get(f"od:{acc}")
        placed = [w for w in work if w.pool == acc and w.placed]
        x = (
            np.stack([md.blocks[f"x:{w.name}"] for w in placed])
            if placed
            else np.zeros((0, months, HOURS), int)
        )
        ok = np.stack([w.allowed for w in placed]) if placed else np.zeros((0, months, HOURS), bool)
        for m in range(months):
            base_c, base_v = _committed(kinds, m)
            for h in range(HOURS):
                here = x[ok[:, m, h], m, h]
                c = [*base_c, here]
                v = [*base_v, np.full(len(here), -1.0)]
                if od is not None:
                    c.append(np.array([od[m, h]]))
                    v.append(np.ones(1))
                md.row(np.concatenate(c), np.concatenate(v), float(fixed[acc][m, h]))
        _held_rows(md, months, [w for w in work if w.pool == acc], kinds, pools[acc])


def _committed(
    kinds: list[tuple[np.ndarray, np.ndarray, float]], m: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    cols, vals = [], []
    for idx, act, weight in kinds:
        served = np.flatnonzero(act[:, m])
        cols.append(idx[served])
        vals.append(np.full(len(served), weight))
    return cols, vals


def _held_rows(
    md: Model,
    months: int,
    mine: list[WorkloadDemand],
    kinds: list[tuple[np.ndarray, np.ndarray, float]],
    pr: PoolPrices,
) -> None:
    """Whole units on one kind each, at every hour: the gangs held on the committed pool plus the
    fixed load put there (sr) fit in the committed GPUs x utilisation; the gangs held on demand plus
    the rest of the fixed load fit in the on-demand cap; the spot gangs in the spot cap. Fixed load
    counts whole units (a replica, a gang)."""
    od_cap = pr.burst_caps_gpus.get("on_demand", np.inf)
    spot_cap = pr.burst_caps_gpus.get("spot", np.inf)
    _block_rows(md, months, mine, pr)
    whole = sum((whole_fixed(w) for w in mine), np.zeros((months, HOURS)))
    room = od_cap - whole if np.isfinite(od_cap) else None
    placed = [w for w in mine if w.placed]
    sr = md.add(f"sr:{pr.accelerator}", (months, HOURS), 0.0, whole)
    ok = np.stack([w.allowed for w in placed]) if placed else np.zeros((0, months, HOURS), bool)
    all_gangs = np.array([float(w.gang_gpus) for w in placed])
    all_cr = np.array([md.blocks[f"cr:{w.name}"] for w in placed], dtype=int).reshape(len(placed), months)
    all_co = np.array([md.blocks[f"co:{w.name}"] for w in placed], dtype=int).reshape(len(placed), months)
    for m in range(months):
        base_c, base_v = _committed(kinds, m)
        for h in range(HOURS):
            sel = ok[:, m, h]
            gangs, cr, co = all_gangs[sel], all_cr[sel, m], all_co[sel, m]
            md.row(
                np.concatenate([*base_c, cr, [sr[m, h]]]),
                np.concatenate([*(-v for v in base_v), gangs, [1.0]]),
                -np.inf,
                0.0,
            )
            if room is not None:
                md.row(
                    np.concatenate([co, [sr[m, h]]]),
                    np.concatenate([gangs, [-1.0]]),
                    -np.inf,
                    float(room[m, h]),
                )
        spots = [
            (md.blocks[f"cs:{w.name}"][m], float(w.gang_gpus)) for w in placed if f"cs:{w.name}" in md.blocks
        ]
        if np.isfinite(spot_cap) and spots:
            md.row([c for c, _ in spots], [g for _, g in spots], -np.inf, spot_cap)
    od = md.blocks.get(f"od:{pr.accelerator}")
    if od is not None and np.isfinite(od_cap):
        md.ub[_block_of(md, od)] = np.minimum(md.ub[_block_of(md, od)], od_cap)


def _block_rows(md: Model, months: int, mine: list[WorkloadDemand], pr: PoolPrices) -> None:
    """Capacity blocks: the gangs held on them at once fit the provider's limit (each job books its
    own blocks, `fleet.program_jobs`)."""
    on = [w for w in mine if w.placed and f"cb:{w.name}" in md.blocks]
    cap = pr.burst_caps_gpus.get(BLOCK, np.inf)
    if not on or not np.isfinite(cap):
        return
    for m in range(months):
        md.row([md.blocks[f"cb:{w.name}"][m] for w in on], [float(w.gang_gpus) for w in on], -np.inf, cap)


def _block_of(md: Model, idx: np.ndarray) -> int:
    """The position in md's lists of the block whose first variable is idx's first."""
    first = int(np.asarray(idx).ravel()[0])
    start = 0
    for i, ub in enumerate(md.ub):
        if start == first:
            return i
        start += len(ub)
    raise KeyError(first)


def _gang_groups(md: Model) -> np.ndarray:
    """Each gang count's job-month (cr, co and cs of one job and month share it); -1 elsewhere."""
    group = np.full(md.n, -1)
    base: dict[tuple[str, str], int] = {}
    for name, idx in md.blocks.items():
        kind, _, who = name.partition(":")
        if kind not in GANG_BLOCKS:
            continue
        cols = np.asarray(idx).ravel()
        key = (who, "start" if kind == "start" else "held")
        if key not in base:
            base[key] = int(group.max()) + 1
        group[cols] = base[key] + np.arange(len(cols))
    return group


def solve(
    days: np.ndarray, pools: dict[str, PoolPrices], work: list[WorkloadDemand], limits: Limits
) -> Solution:
    """Build and solve the program (`fleet.highs.two_phase`); Infeasible when even unlimited misses
    cannot make it fit."""
    t0 = time.perf_counter()
    md = build(days, pools, work, limits)
    a, lo, hi = md.matrix()
    cost, pen = np.concatenate(md.cost), np.concatenate(md.penalty)
    integ = np.concatenate(md.integer)
    program = Program(
        cost + pen + np.concatenate(md.tie),
        pen,
        integ,
        _gang_groups(md),
        np.concatenate(md.lb),
        np.concatenate(md.ub),
        a,
        lo,
        hi,
    )
    out = two_phase(
        program,
        limits.time_limit_s,
        limits.mip_gap,
        limits.random_seed,
        lambda x: round_gangs(md, x, work, pools),
    )
    seconds = time.perf_counter() - t0
    if out.x is None:
        raise (SolveStopped if out.stopped else Infeasible)(
            "No capacity plan serves the fleet's fixed load within the policy.",
            f"The solver (HiGHS) reports: {out.message}"
            + (f" (after {seconds:,.0f} s, at policy.solver.time_limit_s)" if out.stopped else ""),
            "Raise policy.solver.time_limit_s, or allow on_demand capacity, raise policy.budget_usd or "
            "policy.power_limit_w, or shorten the services' windows."
            if out.stopped
            else "Allow on_demand or a committed kind, raise policy.burst_caps (a provider's quota), "
            "policy.budget_usd or policy.power_limit_w, or shorten the services' windows.",
        )
    xv = np.where(integ > 0, np.round(out.x), out.x)
    values = {name: xv[idx] for name, idx in md.blocks.items()}
    sol = Solution(
        values,
        float(cost @ xv),
        float(pen @ xv),
        out.message,
        seconds,
        md.n,
        int(integ.sum()),
        len(md.rows),
        out.gap,
        _spot_prices(md, pools, work),
    )
    for k, v in _block_gpus(values, work, days).items():
        setattr(sol, k, v)
    sol.stopped_at_time_limit = out.stopped
    sol.time_limit_s = float(limits.time_limit_s)
    sol.gap_limit = float(limits.mip_gap)
    if out.bound is not None:
        sol.gap_usd = max(0.0, float(program.c @ xv) - out.bound)
    sol.bound_from = out.bound_from
    return sol


def combine(
    parts: list[Solution],
    days: np.ndarray,
    pools: dict[str, PoolPrices],
    work: list[WorkloadDemand],
    limits: Limits,
) -> Solution | None:
    """The sum of separate solutions as one solution of the pooled program, if it is feasible there."""
    md = build(days, pools, work, limits)
    x = np.zeros(md.n)
    for name, idx in md.blocks.items():
        for p in parts:
            if name in p.values:
                x[idx] += p.values[name]
    a, lo, hi = md.matrix()
    ax = a @ x
    tol = 1e-6 * (1.0 + np.abs(lo[np.isfinite(lo)]).max(initial=1.0))
    if np.any(ax < lo - tol) or np.any(ax > hi + tol) or np.any(x > np.concatenate(md.ub) + 1e-9):
        return None
    cost, pen = np.concatenate(md.cost), np.concatenate(md.penalty)
    values = {name: x[idx] for name, idx in md.blocks.items()}
    summed = Solution(
        values,
        float(cost @ x),
        float(pen @ x),
        "sum of the dedicated plans",
        0.0,
        md.n,
        int(np.concatenate(md.integer).sum()),
        len(md.rows),
        None,
        _spot_prices(md, pools, work),
    )
    for k, v in _block_gpus(values, work, days).items():
        setattr(summed, k, v)
    return summed
