"""Choose the capacity and the schedule together: one mixed-integer program solved by HiGHS.

Decision variables, on the grid of months m x hours h of a representative day (`fleet.demand`):

- n[p, k, s] integer: nodes of committed kind k (owned, 1- or 3-year reserved) bought in pool p in
  month s; they serve from s for the kind's term. Cost: nodes x GPUs per node x price x the hours
  of the term's months inside the horizon.
- od[p, m, h] >= 0: on-demand GPUs. Cost: price x the month's days (one hour each day).
- x[j, m, h] >= 0: GPUs a placeable job j runs on the pool or on-demand; xs[j, m, h] >= 0 the work it
  runs on spot, which takes `spot_factor` times the GPUs (preemptions lengthen it). Cost of spot:
  price x factor x days.
- miss[j, q] >= 0: GPU-hours of period q of job j left undone, at a penalty far above any price.

Constraints: in every slot the committed GPUs x the utilisation target plus on-demand cover the
fixed load and the placed jobs; each job's period gets its GPU-hours (or reports the miss); a job
never runs more than its gang (or copies) at once, only in its allowed hours, and a job that cannot
pause runs the same GPUs every hour of a day; the total stays within the budget; the owned racks'
facility power within the power limit. The objective is cost plus miss penalties. Minimising it
puts the committed baseline where one more GPU-hour of commitment costs more than the on-demand
hours it saves (the demand duration curve's break-even), and moves deferrable work into valleys.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.errors import Infeasible
from rightsize.fleet.demand import HOURS, WorkloadDemand
from rightsize.fleet.prices import COMMITTED, PoolPrices

MISS_PENALTY_FACTOR = 20.0  # a missed GPU-hour costs this many times the dearest price in the fleet
TIME_LIMIT_S = 120.0  # defaults of policy.solver (spec.fleet.SolverOptions)
MIP_REL_GAP = 1e-3  # 0.1% of the cost: far inside the price table's own uncertainty
TIE_BREAK_USD_PER_GPU_HOUR = 1e-4
BUY_EVERY_MONTHS = 3  # commitments start at quarter boundaries (procurement runs quarterly)


@dataclass(frozen=True)
class Limits:
    utilisation_target: float = 1.0
    budget_usd: float | None = None
    power_limit_w: float | None = None
    time_limit_s: float = TIME_LIMIT_S
    mip_gap: float = MIP_REL_GAP
    random_seed: int = 0


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

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        return self.values.get(name, np.zeros(shape))


def _spot_prices(md: _Model, pools: dict[str, PoolPrices], work: list[WorkloadDemand]) -> dict[str, float]:
    return {
        f"xs:{w.name}": pools[w.pool].usd_per_gpu_hour["spot"] * (w.spot_factor or 1.0)
        for w in work
        if f"xs:{w.name}" in md.blocks
    }


class _Model:
    """Variable blocks and sparse rows for scipy.optimize.milp."""

    def __init__(self) -> None:
        self.blocks: dict[str, np.ndarray] = {}
        self.lb: list[np.ndarray] = []
        self.ub: list[np.ndarray] = []
        self.cost: list[np.ndarray] = []
        self.penalty: list[np.ndarray] = []
        self.tie: list[np.ndarray] = []
        self.integer: list[np.ndarray] = []
        self.n = 0
        self.rows: list[tuple[np.ndarray, np.ndarray, float, float]] = []

    def add(
        self,
        name: str,
        shape: tuple[int, ...],
        cost: Any,
        ub: Any = np.inf,
        integer: bool = False,
        role: str = "cost",  # cost | penalty (misses) | tie (tie-break, far below any price)
    ) -> np.ndarray:
        size = int(np.prod(shape))
        idx = np.arange(self.n, self.n + size).reshape(shape)
        self.n += size
        self.blocks[name] = idx
        c = np.broadcast_to(np.asarray(cost, dtype=float), shape).ravel()
        zero = np.zeros(size)
        self.cost.append(c if role == "cost" else zero)
        self.penalty.append(c if role == "penalty" else zero)
        self.tie.append(c if role == "tie" else zero)
        self.lb.append(np.zeros(size))
        self.ub.append(np.broadcast_to(np.asarray(ub, dtype=float), shape).ravel().copy())
        self.integer.append(np.full(size, 1 if integer else 0))
        return idx

    def row(self, cols: Any, vals: Any, lo: float, hi: float = np.inf) -> None:
        self.rows.append((np.asarray(cols, dtype=int).ravel(), np.asarray(vals, dtype=float).ravel(), lo, hi))

    def matrix(self) -> tuple[Any, np.ndarray, np.ndarray]:
        from scipy.sparse import coo_matrix

        r = np.concatenate([np.full(len(c), i) for i, (c, _, _, _) in enumerate(self.rows)])
        c = np.concatenate([c for c, _, _, _ in self.rows])
        v = np.concatenate([v for _, v, _, _ in self.rows])
        a = coo_matrix((v, (r, c)), shape=(len(self.rows), self.n)).tocsr()
        return a, np.array([lo for *_, lo, _ in self.rows]), np.array([hi for *_, hi in self.rows])


def _active(term: int, months: int) -> np.ndarray:
    """[s, m] 1 where a commitment bought in month s serves month m."""
    s = np.arange(months)[:, None]
    m = np.arange(months)[None, :]
    return ((m >= s) & (m < s + term)).astype(float)


def build(
    days: np.ndarray, pools: dict[str, PoolPrices], work: list[WorkloadDemand], limits: Limits
) -> _Model:
    months = len(days)
    md = _Model()
    dearest = max([max(p.usd_per_gpu_hour.values(), default=1.0) for p in pools.values()] + [1.0])
    fixed: dict[str, np.ndarray] = {acc: np.zeros((months, HOURS)) for acc in pools}
    commits: dict[str, list[tuple[np.ndarray, np.ndarray, float]]] = {acc: [] for acc in pools}
    for acc, pr in pools.items():
        for kind in COMMITTED:
            if kind not in pr.usd_per_gpu_hour:
                continue
            act = _active(pr.term_months[kind], months)  # [s, m]
            hours_in = act @ (days * HOURS)
            price = pr.gpus_per_node * pr.usd_per_gpu_hour[kind] * hours_in
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
    _jobs(md, days, pools, work, fixed, MISS_PENALTY_FACTOR * dearest)
    _cover_rows(md, months, work, commits, fixed)
    if limits.budget_usd is not None:
        c = np.concatenate(md.cost)
        nz = np.flatnonzero(c)
        md.row(nz, c[nz], -np.inf, limits.budget_usd)
    return md


def _jobs(
    md: _Model,
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
        ub = np.where(w.allowed, w.max_gpus, 0.0)
        # Among schedules of equal cost, the earliest: a tie-break far below any price, kept out of
        # the reported cost (it rides with the penalties).
        early = TIE_BREAK_USD_PER_GPU_HOUR * (np.arange(months)[:, None] + np.arange(HOURS)[None, :] / HOURS)
        x = md.add(f"x:{w.name}", (months, HOURS), early * days[:, None] / months, ub, role="tie")
        blocks = [x]
        spot = pools[w.pool].usd_per_gpu_hour.get("spot")
        if spot is not None and w.spot_factor is not None:
            xs = md.add(f"xs:{w.name}", (months, HOURS), spot * w.spot_factor * days[:, None], ub)
            blocks.append(xs)
            for m, h in zip(*np.nonzero(w.allowed), strict=True):
                md.row([x[m, h], xs[m, h]], [1.0, 1.0], -np.inf, w.max_gpus)
        miss = md.add(f"miss:{w.name}", (len(w.periods),), penalty, role="penalty")
        for q, (ms, gpu_hours) in enumerate(w.periods):
            cols = [b[ms, :].ravel() for b in blocks] + [np.array([miss[q]])]
            vals = [np.repeat(days[ms], HOURS) for _ in blocks] + [np.ones(1)]
            md.row(np.concatenate(cols), np.concatenate(vals), gpu_hours)
        if w.flat_in_day:
            for b in blocks:
                for m in np.flatnonzero(w.allowed.any(axis=1)):
                    for h in range(1, HOURS):
                        md.row([b[m, h], b[m, 0]], [1.0, -1.0], 0.0, 0.0)


def _cover_rows(
    md: _Model,
    months: int,
    work: list[WorkloadDemand],
    commits: dict[str, list[tuple[np.ndarray, np.ndarray, float]]],
    fixed: dict[str, np.ndarray],
) -> None:
    """committed x utilisation + on-demand - placed jobs >= fixed load, in every slot of every pool."""
    for acc, kinds in commits.items():
        od = md.blocks.get(f"od:{acc}")
        jobs = [md.blocks[f"x:{w.name}"] for w in work if w.pool == acc and w.placed]
        for m in range(months):
            base_c: list[np.ndarray] = []
            base_v: list[np.ndarray] = []
            for idx, act, weight in kinds:
                served = np.flatnonzero(act[:, m])
                base_c.append(idx[served])
                base_v.append(np.full(len(served), weight))
            for h in range(HOURS):
                c = [*base_c, *(np.array([j[m, h]]) for j in jobs)]
                v = [*base_v, *(np.array([-1.0]) for _ in jobs)]
                if od is not None:
                    c.append(np.array([od[m, h]]))
                    v.append(np.ones(1))
                md.row(np.concatenate(c), np.concatenate(v), float(fixed[acc][m, h]))


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Send whatever the native solver writes to file descriptor 1 to stderr for the duration:
    stdout carries the plan (`--format json`) and nothing else."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real stdout (an embedding host): nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _highs_options(limits: Limits) -> dict[str, Any]:
    """Bounded, deterministic and silent: one thread, a fixed seed, no log."""
    return {
        "time_limit": float(limits.time_limit_s),
        "mip_rel_gap": float(limits.mip_gap),
        "disp": False,
        "threads": 1,
        "random_seed": int(limits.random_seed),
        "output_flag": False,
        "log_to_console": False,
    }


def solve(
    days: np.ndarray, pools: dict[str, PoolPrices], work: list[WorkloadDemand], limits: Limits
) -> Solution:
    """Build and solve the program; Infeasible when even unlimited misses cannot make it fit."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    t0 = time.perf_counter()
    md = build(days, pools, work, limits)
    a, lo, hi = md.matrix()
    cost, pen = np.concatenate(md.cost), np.concatenate(md.penalty)
    integ = np.concatenate(md.integer)
    with warnings.catch_warnings(), quiet_stdout():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy: options passed to HiGHS verbatim
        res = milp(
            cost + pen + np.concatenate(md.tie),
            integrality=integ,
            bounds=Bounds(np.concatenate(md.lb), np.concatenate(md.ub)),
            constraints=[LinearConstraint(a, lo, hi)],
            options=_highs_options(limits),
        )
    seconds = time.perf_counter() - t0
    stopped = int(res.status) == 1  # scipy: "iteration or time limit reached"
    if res.x is None:
        raise Infeasible(
            "No capacity plan serves the fleet's fixed load within the policy.",
            f"The solver (HiGHS) reports: {res.message}"
            + (f" (after {seconds:,.0f} s, at policy.solver.time_limit_s)" if stopped else ""),
            "Raise policy.solver.time_limit_s, or allow on_demand capacity, raise policy.budget_usd or "
            "policy.power_limit_w, or shorten the services' windows."
            if stopped
            else "Allow on_demand capacity, raise policy.budget_usd or policy.power_limit_w, or shorten the "
            "services' windows.",
        )
    xv = np.where(integ > 0, np.round(res.x), res.x)
    values = {name: xv[idx] for name, idx in md.blocks.items()}
    gap = getattr(res, "mip_gap", None)
    sol = Solution(
        values,
        float(cost @ xv),
        float(pen @ xv),
        str(res.message),
        seconds,
        md.n,
        int(integ.sum()),
        len(md.rows),
        float(gap) if gap is not None and np.isfinite(gap) else None,
        _spot_prices(md, pools, work),
    )
    sol.stopped_at_time_limit = stopped
    sol.time_limit_s = float(limits.time_limit_s)
    sol.gap_limit = float(limits.mip_gap)
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
    return Solution(
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
