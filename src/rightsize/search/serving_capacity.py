"""The highest request rate a replica (or a pool) serves within its SLOs: a geometric
bisection on the rate, found in few simulations.

The reference is plain bisection between a trickle `lo` and `hi`, `steps` halvings
(`mid = sqrt(lo x hi)`): it ends on one of 2^steps grid points, the largest that passes
(or `lo` itself when every halving fails). Meeting the SLOs is monotone in the rate, so
the answer is max{k : passes(grid[k])} and can be confirmed with two runs, grid[k]
passing and grid[k + 1] failing, whatever order the points are tried in. The search
tries the top leaf first (where throughput-bound options end), then gallops down from it
(or from a caller's cheaper guess) and closes in by binary search: the same answer as the
reference, in fewer runs than its 2 + steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable

Passes = Callable[[float], bool]


def leaf_rate(lo: float, hi: float, steps: int, k: int) -> float:
    """The rate the reference bisection returns when the threshold lies in leaf k
    (0 <= k < 2^steps): the halvings follow k's bits, highest first."""
    for level in range(steps):
        mid = math.sqrt(lo * hi)
        if (k >> (steps - 1 - level)) & 1:
            lo = mid
        else:
            hi = mid
    return lo


def _bisect_leaf(passes: Passes, lo: float, hi: float, steps: int) -> int:
    """The leaf the reference bisection ends in under `passes` (its trickle not checked)."""
    k = 0
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        k <<= 1
        if passes(mid):
            lo, k = mid, k | 1
        else:
            hi = mid
    return k


def capacity_rps(passes: Passes, lo: float, hi: float, steps: int, guess: Passes | None = None) -> float:
    """max{grid[k] : passes(grid[k])} over the reference bisection's grid between `lo` and
    `hi`; 0 when even `lo` fails. `guess` is a cheaper, rougher `passes` whose bisection
    places the first try; without one the search gallops down from the top leaf (where
    the capacity of an SLO-bound option usually lies, a few leaves below the roofline)."""
    top = (1 << steps) - 1
    cache: dict[int, bool] = {}

    def ok(k: int) -> bool:
        if k not in cache:
            cache[k] = passes(leaf_rate(lo, hi, steps, k))
        return cache[k]

    if ok(top):
        return leaf_rate(lo, hi, steps, top)
    k0 = _bisect_leaf(guess, lo, hi, steps) if guess is not None else top - 1
    good, bad = _gallop(ok, min(k0, top - 1), top)
    while bad - good > 1:  # binary search between a passing and a failing leaf
        mid = (good + bad) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return leaf_rate(lo, hi, steps, good) if good >= 0 else 0.0


def _gallop(ok: Callable[[int], bool], k0: int, top: int) -> tuple[int, int]:
    """A passing leaf and a failing one above it, found by doubling steps from `k0` (leaf
    `top` is known to fail); (-1, 0) when even leaf 0, the trickle, fails."""
    if ok(k0):
        good, step = k0, 1
        while True:
            probe = min(good + step, top)
            if probe == top or not ok(probe):
                return good, probe
            good, step = probe, step * 2
    bad, step = k0, 1
    while True:
        probe = bad - step
        if probe <= 0:
            return (0, bad) if ok(0) else (-1, 0)
        if ok(probe):
            return probe, bad
        bad, step = probe, step * 2
