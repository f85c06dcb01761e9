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

# First gallop step, in leaves, from a rough estimate of the answer: estimates are off by
# several leaves (each 1.36% of rate at 9 halvings over a 1050x range), so steps of one
# would take several runs to leave the estimate's neighbourhood.
GUESS_STEP = 4


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


def first_leaf(lo: float, hi: float, steps: int, pred: Passes) -> int | None:
    """The smallest leaf k whose rate satisfies `pred` (monotone: false below, true from
    some leaf up); None when no leaf does."""
    top = (1 << steps) - 1
    if not pred(leaf_rate(lo, hi, steps, top)):
        return None
    low, high = -1, top  # pred(leaf high) holds; pred(leaf low) does not (-1: below leaf 0)
    while high - low > 1:
        mid = (low + high) // 2
        if pred(leaf_rate(lo, hi, steps, mid)):
            high = mid
        else:
            low = mid
    return high


def capacity_rps(
    passes: Passes,
    lo: float,
    hi: float,
    steps: int,
    guess: Passes | None = None,
    known_pass: int | None = None,
    start_rate: float | None = None,
) -> float:
    """max{grid[k] : passes(grid[k])} over the reference bisection's grid between `lo` and
    `hi`; 0 when even `lo` fails.

    The top leaf is tried first. Then the search gallops from a first try and closes in by
    binary search: from a cheaper, rougher `guess` bisected, or from `start_rate`, a rough
    estimate of the answer (then with steps of GUESS_STEP leaves), or down from the top.
    `known_pass` is a leaf the caller has already seen pass. None of these changes the
    answer, only how many runs it takes; a `start_rate` of 0 says the trickle probably
    fails, so leaf 0 is tried right after the top."""
    top = (1 << steps) - 1
    cache: dict[int, bool] = {} if known_pass is None else {known_pass: True}

    def ok(k: int) -> bool:
        if k not in cache:
            cache[k] = passes(leaf_rate(lo, hi, steps, k))
        return cache[k]

    if ok(top):
        return leaf_rate(lo, hi, steps, top)
    if start_rate == 0.0 and not ok(0):
        return 0.0
    step = 1
    k0 = top - 1
    if guess is not None:
        k0 = _bisect_leaf(guess, lo, hi, steps)
    elif start_rate:
        first = first_leaf(lo, hi, steps, lambda rate: rate >= start_rate)
        k0, step = (top - 1 if first is None else max(0, first - 1)), GUESS_STEP
    if known_pass is not None and known_pass > k0:
        k0, step = known_pass, 1
    good, bad = _gallop(ok, min(k0, top - 1), top, step)
    while bad - good > 1:  # binary search between a passing and a failing leaf
        # the upper middle: a failing run (stopped early) costs less than a passing one
        mid = (good + bad + 1) // 2
        if ok(mid):
            good = mid
        else:
            bad = mid
    return leaf_rate(lo, hi, steps, good) if good >= 0 else 0.0


def _gallop(ok: Callable[[int], bool], k0: int, top: int, step: int = 1) -> tuple[int, int]:
    """A passing leaf and a failing one above it, found by doubling steps from `k0` (leaf
    `top` is known to fail); (-1, 0) when even leaf 0, the trickle, fails."""
    if ok(k0):
        good = k0
        while True:
            probe = min(good + step, top)
            if probe == top or not ok(probe):
                return good, probe
            good, step = probe, step * 2
    bad = k0
    while True:
        probe = bad - step
        if probe <= 0:
            return (0, bad) if ok(0) else (-1, 0)
        if ok(probe):
            return probe, bad
        bad, step = probe, step * 2
