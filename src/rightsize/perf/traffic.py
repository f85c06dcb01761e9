"""Synthetic serving traffic: request arrival times and prompt/output lengths.

Everything takes a seeded `np.random.Generator`, so a workload is reproducible from its
seed; nothing here keeps global random state.

Arrivals are a renewal process started at t = 0 (the first request arrives one gap
after 0):
- "poisson": exponential gaps with mean 1 / rate (coefficient of variation 1), the
  memoryless traffic of many independent users.
- "bursty": gamma-distributed gaps with mean 1 / rate and coefficient of variation
  `burst_cv` (shape k = 1 / cv^2, scale = 1 / (rate k)). cv > 1 clusters requests into
  bursts separated by lulls at the same mean rate (vLLM's `--burstiness` is the shape
  k = 1 / cv^2 of the same gamma); cv = 1 is Poisson; cv = 0 is evenly spaced arrivals.

Lengths come from one of four families, rounded to integers and clipped to
[min_, max_] (clipping moves the mean a little when the tails are cut):
- "fixed": every request has `mean` tokens;
- "normal": N(mean, std);
- "lognormal": parameterised by the mean and std of the lognormal itself, the usual
  shape of real prompt and output lengths (long right tail);
- "empirical": resampled with replacement from measured `values`.
"""

from __future__ import annotations

import math

import numpy as np

from rightsize.errors import BadInput

ARRIVALS = ("poisson", "bursty")
LENGTH_KINDS = ("fixed", "normal", "lognormal", "empirical")


def arrival_times(
    n: int,
    rate_per_s: float,
    rng: np.random.Generator,
    arrival: str = "poisson",
    burst_cv: float = 1.0,
) -> np.ndarray:
    """`n` sorted arrival times in seconds from 0 at a mean of `rate_per_s` requests per second."""
    if n < 0:
        raise BadInput(f"Asked for {n} arrivals.", "A request count cannot be negative.", "Pass n >= 0.")
    if not (rate_per_s > 0 and math.isfinite(rate_per_s)):
        raise BadInput(
            f"Arrival rate {rate_per_s} requests/s.",
            "The rate must be positive and finite.",
            "Pass rate_per_s > 0.",
        )
    gaps = _gaps(n, 1.0 / rate_per_s, rng, arrival, burst_cv)
    return np.cumsum(gaps)


def _gaps(n: int, mean_gap_s: float, rng: np.random.Generator, arrival: str, burst_cv: float) -> np.ndarray:
    """Inter-arrival gaps: exponential (Poisson) or gamma with the requested CV."""
    if arrival == "poisson":
        return rng.exponential(mean_gap_s, n)
    if arrival != "bursty":
        raise BadInput(
            f"Unknown arrival process {arrival!r}.",
            f"Known processes: {', '.join(ARRIVALS)}.",
            "Use 'poisson', or 'bursty' with burst_cv.",
        )
    if not (burst_cv >= 0 and math.isfinite(burst_cv)):
        raise BadInput(
            f"burst_cv = {burst_cv}.",
            "A coefficient of variation is finite and >= 0.",
            "Pass e.g. burst_cv=3.",
        )
    if burst_cv == 0:
        return np.full(n, mean_gap_s)
    shape = 1.0 / burst_cv**2
    return rng.gamma(shape, mean_gap_s / shape, n)


def sample_lengths(
    n: int,
    rng: np.random.Generator,
    kind: str,
    mean: float | None = None,
    std: float | None = None,
    min_: int = 1,
    max_: int | None = None,
    values: np.ndarray | list[int] | None = None,
) -> np.ndarray:
    """`n` token lengths (int64) from the family `kind`, clipped to [min_, max_]."""
    if kind == "empirical":
        raw = _empirical(n, rng, values)
    elif kind in ("fixed", "normal", "lognormal"):
        raw = _parametric(n, rng, kind, mean, std)
    else:
        raise BadInput(
            f"Unknown length distribution {kind!r}.",
            f"Known distributions: {', '.join(LENGTH_KINDS)}.",
            "Pick one of those.",
        )
    hi = np.inf if max_ is None else max_
    if hi < min_:
        raise BadInput(f"Length bounds [{min_}, {max_}].", "max_ is below min_.", "Pass max_ >= min_.")
    return np.clip(np.rint(raw), min_, hi).astype(np.int64)


def _parametric(
    n: int, rng: np.random.Generator, kind: str, mean: float | None, std: float | None
) -> np.ndarray:
    """Fixed, normal or lognormal draws with the given mean (and std)."""
    if mean is None or not mean > 0:
        raise BadInput(
            f"{kind} lengths with mean={mean}.", "The mean must be a positive number.", "Pass mean=..."
        )
    if kind == "fixed":
        return np.full(n, float(mean))
    if std is None or not std >= 0:
        raise BadInput(f"{kind} lengths with std={std}.", "The std must be a number >= 0.", "Pass std=...")
    if kind == "normal":
        return rng.normal(mean, std, n)
    mu, sigma = lognormal_params(mean, std)
    return rng.lognormal(mu, sigma, n)


def lognormal_params(mean: float, std: float) -> tuple[float, float]:
    """(mu, sigma) of the underlying normal for a lognormal with this mean and std.

    E[X] = exp(mu + sigma^2 / 2) and Var[X] = (exp(sigma^2) - 1) E[X]^2, so
    sigma^2 = ln(1 + std^2 / mean^2) and mu = ln(mean) - sigma^2 / 2.
    """
    sigma2 = math.log1p((std / mean) ** 2)
    return math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2)


def _empirical(n: int, rng: np.random.Generator, values: np.ndarray | list[int] | None) -> np.ndarray:
    """Resample measured lengths with replacement."""
    if values is None or len(values) == 0:
        raise BadInput(
            "Empirical lengths without values.",
            "Resampling needs measured lengths.",
            "Pass values=[...] (e.g. the prompt lengths of a trace).",
        )
    return rng.choice(np.asarray(values, dtype=np.float64), n, replace=True)
