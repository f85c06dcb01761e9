"""The spread of a job's whole run: each part of the sized whole run (`sizing.whole_run`)
sampled with its own spread on top of the step model's.

    steps, phases, evaluation, loader, checkpoints, throttling   x k (the step-time samples)
    the step's slowest-GPU share (perf.step)                     x triangular(0, 1, high)
    failures, restarts and lost work                             x k x triangular(low, 1, high)
    unplanned losses                                             the published runs' losses
                                                                 beyond the modelled lines

The unplanned-loss line carries the median of the published runs' losses (`whole_run.yaml`,
unplanned_losses: none for Llama 3 405B beyond its failures, 0.07 for BLOOM-176B, 0.29 for
MPT-7B, 1.2 for OPT-175B); its samples are drawn from their empirical distribution (Hazen
plotting positions, linear between runs, flat past the ends), so the range reaches both below
the plan (a run as clean as Llama 3's) and above it (one as rough as OPT's). Transient
fail-slows are inside those end-to-end figures and are not drawn again. The plan reads the
part lines by name from the sizing it is given; nothing is imported from `sizing`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rightsize.catalog.whole_run import whole_run_factors
from rightsize.constants import DAY_S
from rightsize.perf.whole_run import evidence_weight

FAILURES = "failures"
UNPLANNED = "unplanned losses"
# Stream of the whole-run draws: apart from the step model's (same seed, other stream).
STREAM = 7


def unplanned_samples(losses: tuple[float, ...], u: np.ndarray) -> np.ndarray:
    """Losses (fractions of the run) at uniform draws `u`: the published runs' empirical
    quantile function (Hazen positions (i - 0.5) / n, linear between, flat past the ends;
    `perf.whole_run.empirical_quantile` for one quantile)."""
    n = len(losses)
    if n == 0:
        return np.zeros_like(u)
    pos = (np.arange(n) + 0.5) / n
    return np.interp(u, pos, np.asarray(losses, dtype=np.float64))


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
    rest_s = sum(line.time_s for line in lines if not line.part.startswith(UNPLANNED))
    weight = evidence_weight(rest_s, f.unplanned_shortest_run_days * DAY_S)
    loss = weight * unplanned_samples(f.unplanned_losses, rng.uniform(size=n))
    total = np.zeros(n)
    # Stragglers beyond the step's chip spread: its slowest-GPU share scaled by m_strag.
    strag = 1.0 + straggler_share * (m_strag - 1.0)
    for line in lines:
        if line.part.startswith(UNPLANNED):  # drawn below, on the rest of the run
            continue
        m = m_fail if line.part.startswith(FAILURES) else 1.0
        total += line.time_s * k * m * strag
    return total * (1.0 + loss)


def method_note() -> str:
    f = whole_run_factors()
    losses = ", ".join(f"{v:g}" for v in f.unplanned_losses)
    return (
        "whole run: each part of the sized run scaled with the step samples; the step's straggler share x triangular"
        f"(0, 1, {f.stragglers_high:g}), failures x triangular({f.failures_low:g}, 1, {f.failures_high:g}), "
        f"times 1 + the unplanned losses drawn from published runs' ({losses} of the run)"
    )
