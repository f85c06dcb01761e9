"""The spread of a job's whole run: each part of the sized whole run (`sizing.whole_run`)
sampled with its own spread on top of the step model's.

    steps, phases, evaluation, loader, checkpoints, throttling   x k (the step-time samples)
    the step's slowest-GPU share (perf.step)                     x triangular(0, 1, high)
    steps and phases: transient fail-slows                       + x triangular(0, 0, high)
    failures, restarts and lost work                             x k x triangular(low, 1, high)
    unplanned losses (rollbacks, manual restarts, reduced scale) + total x triangular(0, 0, high)

The last has no base line (modern runs, Llama 3's among them, lose little beyond failures:
its mode is 0) but a long upper tail (OPT-175B ran about twice its steady time); its range is
the catalog's (`whole_run.yaml`, spread.unplanned_high). The plan reads the part lines by name
from the sizing it is given; nothing is imported from `sizing`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rightsize.catalog.whole_run import whole_run_factors

FAILURES = "failures"
STEPS = ("steady-state steps", "phase: ")
# Stream of the whole-run draws: apart from the step model's (same seed, other stream).
STREAM = 7


def whole_run_samples(
    whole_run: Any, k: np.ndarray, seed: int, straggler_share: float = 0.0
) -> np.ndarray | None:
    """Samples of the whole run's seconds (None without a whole run), `k` the step-time
    multiplier samples of the same plan, `straggler_share` the step's slowest-GPU share."""
    lines = getattr(whole_run, "lines", None)
    if not lines:
        return None
    f = whole_run_factors()
    rng = np.random.default_rng([seed, STREAM])
    n = k.size
    m_strag = rng.triangular(0.0, 1.0, f.stragglers_high, size=n)
    m_fail = rng.triangular(f.failures_low, 1.0, f.failures_high, size=n)
    unplanned = rng.triangular(0.0, 0.0, f.unplanned_high, size=n)
    # Fail-slows and unplanned losses share one cause, how the cluster is run (shared or
    # dedicated, fail-slows caught by automation or handled by hand as checkpoint-and-restart):
    # one draw moves both (comonotone), each on its own triangular(0, 0, high).
    fail_slow = unplanned * (f.fail_slow_high / f.unplanned_high) if f.unplanned_high > 0 else 0.0 * unplanned
    total = np.zeros(n)
    base = 0.0
    # Stragglers beyond the step's chip spread: its slowest-GPU share scaled by m_strag.
    strag = 1.0 + straggler_share * (m_strag - 1.0)
    for line in lines:
        m = m_fail if line.part.startswith(FAILURES) else 1.0
        if line.part.startswith(STEPS):  # fail-slows stretch the steps, not the stalls
            m = 1.0 + fail_slow
        total += line.time_s * k * m * strag
        base += line.time_s
    return total + unplanned * base


def method_note() -> str:
    f = whole_run_factors()
    return (
        "whole run: each part of the sized run scaled with the step samples; the step's straggler share x triangular"
        f"(0, 1, {f.stragglers_high:g}), steps and phases x (1 + triangular(0, 0, {f.fail_slow_high:g})) for "
        f"fail-slows, failures x triangular({f.failures_low:g}, 1, {f.failures_high:g}), "
        f"plus unplanned losses triangular(0, 0, {f.unplanned_high:g}) of the run"
    )
