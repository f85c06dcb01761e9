"""HiGHS through scipy.optimize.milp, bounded, deterministic and silent; and the fleet program's
two-phase solve.

Phase 1 solves the program as a linear program (the whole-gang counts, how many copies of each
job's gang it holds in a month on each kind of capacity, and the nodes bought, relaxed to real
numbers): a bound on the best cost and where the gangs go. Phase 2 fixes the gang counts where
`fleet.rounding` puts them (whole, within the caps) and solves again with the nodes bought integer,
which is quick. If that has no solution, the counts may take any whole value up to the ceiling of
their relaxed total; failing that, the full program is solved. A small program (few integers)
is then solved whole by branch and bound (its work left undone at most the plan's), bounded by a
node count (not by time, so the result does not depend on the machine's speed): it keeps the
better plan, and HiGHS's bound on that integer program (every plan that does as much of the work)
replaces phase 1's when higher. Phase 1's linear bound lets a gang be held in
fractions, say a quarter of a 1,024-GPU gang within a 256-GPU on-demand cap, so it can sit far
below every whole-gang plan; the integer bound does not. The gap reported is the final cost
against the best bound, so it covers both the solver's gap and the rounding.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

GANG_BLOCKS = ("cr", "co", "cs", "cb", "start")
POLISH_MAX_INTEGERS = 600  # programs this small also get a search near the rounded solution
POLISH_NODES = 2000  # ... bounded by nodes, not time, so the plan is the same every run


@dataclass
class Outcome:
    x: np.ndarray | None
    message: str
    stopped: bool  # a time limit stopped a phase
    gap: float | None  # relative, against the best bound known
    phases: int
    bound: float | None = None  # the best bound on the objective (cost, penalties and tie-breaks)
    bound_from: str = "linear"  # linear: gangs relaxed to fractions; integer: HiGHS's whole-program bound


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


def options(time_limit_s: float, mip_gap: float, seed: int) -> dict[str, Any]:
    """Bounded, deterministic and silent: one thread, a fixed seed, no log."""
    return {
        "time_limit": max(0.01, float(time_limit_s)),
        "mip_rel_gap": float(mip_gap),
        "disp": False,
        "threads": 1,
        "random_seed": int(seed),
        "output_flag": False,
        "log_to_console": False,
    }


def milp(
    c: np.ndarray,
    integ: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    a: Any,
    lo: np.ndarray,
    hi: np.ndarray,
    opts: dict[str, Any],
) -> Any:
    from scipy.optimize import Bounds, LinearConstraint
    from scipy.optimize import milp as scipy_milp

    with warnings.catch_warnings(), quiet_stdout():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy: options passed to HiGHS verbatim
        return scipy_milp(
            c,
            integrality=integ,
            bounds=Bounds(lb, ub),
            constraints=[LinearConstraint(a, lo, hi)],
            options=opts,
        )


def _bound(res: Any) -> float | None:
    b = getattr(res, "mip_dual_bound", None)
    if b is not None and np.isfinite(b):
        return float(b)
    return float(res.fun) if res.x is not None and int(res.status) == 0 else None


Rounder = Callable[[np.ndarray], np.ndarray | None]


@dataclass(frozen=True)
class Program:
    c: np.ndarray  # objective (cost + penalties + tie-breaks)
    pen: np.ndarray  # the penalties (work left undone) alone
    integ: np.ndarray
    group: np.ndarray  # job-month of each gang count, -1 elsewhere
    lb: np.ndarray
    ub: np.ndarray
    a: Any
    lo: np.ndarray
    hi: np.ndarray


def two_phase(p: Program, limit_s: float, gap: float, seed: int, rounder: Rounder | None = None) -> Outcome:
    """Solve as a linear program; then with them fixed where `rounder` puts them (whole
    gangs within the caps, a quick solve: only commitments stay integer); failing that, integer near
    their relaxed values; failing that, the whole program. A later phase that leaves more work undone
    than phase 1 (misses keep any program feasible) does not count as a solution."""
    t0 = time.perf_counter()
    gang = p.group >= 0
    if not gang.any():  # nothing to relax
        res = milp(p.c, p.integ, p.lb, p.ub, p.a, p.lo, p.hi, options(limit_s, gap, seed))
        return Outcome(
            res.x, str(res.message), int(res.status) == 1, _finite(getattr(res, "mip_gap", None)), 1
        )
    r1 = milp(p.c, np.zeros_like(p.integ), p.lb, p.ub, p.a, p.lo, p.hi, options(limit_s * 0.5, gap, seed))
    if r1.x is None:
        return Outcome(None, str(r1.message), int(r1.status) == 1, None, 1)
    bound = _bound(r1)
    tolerance = 1e-4 * max(1.0, abs(float(p.c @ r1.x)))

    def ok(r: Any) -> bool:
        return r.x is not None and float(p.pen @ r.x) <= float(p.pen @ r1.x) + tolerance

    stopped = int(r1.status) == 1
    tries = []
    fixed = rounder(r1.x) if rounder is not None else None
    if fixed is not None:
        tries.append((np.where(gang, fixed, p.lb), np.where(gang, fixed, p.ub)))
    totals = np.bincount(p.group[gang], weights=r1.x[gang])
    ceiling = np.zeros(len(p.c))
    ceiling[gang] = np.ceil(totals[p.group[gang]] - 1e-6)
    tries += [(p.lb, np.where(gang, np.minimum(p.ub, ceiling), p.ub)), (p.lb, p.ub)]
    r2 = None
    phases = 1
    for phase, (lb, ub) in enumerate(tries, start=2):
        phases = phase
        left = limit_s - (time.perf_counter() - t0)
        if left <= 0.05:
            stopped = True
            break
        r2 = milp(p.c, p.integ, lb, ub, p.a, p.lo, p.hi, options(left, gap, seed))
        stopped = stopped or int(r2.status) == 1
        if ok(r2):
            break
    if r2 is None or r2.x is None:
        return Outcome(
            None,
            "no whole-gang solution within the time limit" if r2 is None else str(r2.message),
            True,
            None,
            phase,
        )
    best = r2
    bound_from = "linear"
    if phases == 2 and int(p.integ.sum()) <= POLISH_MAX_INTEGERS:  # a small program: solve it whole
        left = limit_s - (time.perf_counter() - t0)
        if left > 0.05:
            opts = {**options(left, gap, seed), "mip_max_nodes": POLISH_NODES}
            # misses no larger than the plan's: the bound is then on plans that do as much work
            ub3 = np.where(p.pen > 0, np.minimum(p.ub, r2.x * (1 + 1e-9) + 1e-6), p.ub)
            r3 = milp(p.c, p.integ, p.lb, ub3, p.a, p.lo, p.hi, opts)
            stopped = stopped or int(r3.status) == 1
            if ok(r3) and float(p.c @ r3.x) < float(p.c @ r2.x) - 1e-9:
                best, phases = r3, 3
            b3 = getattr(r3, "mip_dual_bound", None)  # the whole program's: a bound on every plan
            if b3 is not None and np.isfinite(b3) and (bound is None or float(b3) > bound):
                bound, bound_from = float(b3), "integer"
    obj = float(p.c @ best.x)
    rel = None if bound is None else max(0.0, (obj - bound) / max(abs(obj), 1e-9))
    return Outcome(best.x, str(best.message), stopped, rel, phases, bound, bound_from)


def _finite(g: Any) -> float | None:
    return float(g) if g is not None and np.isfinite(g) else None
