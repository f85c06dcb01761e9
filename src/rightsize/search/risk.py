"""Risk-aware ranking: choose layouts by a quantile of their step time, not by the
optimistic base value.

The base value puts every efficiency at its catalog figure, and catalog figures are best
cases (see `search.uncertainty.EFFICIENCY_RANGES`, skewed low); a layout that leans on
the scale-out fabric or on a mechanism the validation never covered is more likely to
fall short of its base than one that does not. For the few best layouts of each GPU count
(by base time) the same model as the plan's uncertainty is sampled, vectorised over the
layouts: each efficiency's elasticity from the real step model (central differences), the
triangular efficiency multipliers, and the model error whose sigma grows with the
distance from validated ground (`search.ground`). The layout with the lowest quantile
wins: the median (P50) normally, the P90 when a deadline must be met.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from rightsize.perf.hardware import Hardware
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.search.ground import ground_report, position
from rightsize.search.uncertainty import EFFICIENCY_RANGES, FD_STEP, MAX_EFFICIENCY, _capped, _triangular

# Layouts per GPU count re-ranked by risk (the rest are slower at their base already).
TOP_K = 6
RISK_SAMPLES = 512
RISK_SEED = 1
P50, P90 = 0.5, 0.9


def top_per_count(gpus: np.ndarray, step_time: np.ndarray, fits: np.ndarray, k: int = TOP_K) -> np.ndarray:
    """Indices of the k fastest fitting configurations of each distinct GPU count."""
    idx = np.flatnonzero(fits)
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((step_time[idx], gpus[idx]))]
    g = gpus[order]
    starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    rank = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    return order[rank < k]


def risk_factors(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, quantile: float
) -> tuple[np.ndarray, np.ndarray]:
    """(quantile of step-time multiplier, model-error sigma) for each configuration of `cfg`."""
    log_el = []
    for r in EFFICIENCY_RANGES:
        base = float(getattr(hw, r.field))
        if base <= 0:
            log_el.append(np.zeros(len(cfg)))
            continue
        hi, lo = min(base * (1 + FD_STEP), MAX_EFFICIENCY), base * (1 - FD_STEP)
        t_hi = train_step(w, cfg, hw.with_overrides(**{r.field: hi})).step_time
        t_lo = train_step(w, cfg, hw.with_overrides(**{r.field: lo})).step_time
        log_el.append((np.log(t_hi) - np.log(t_lo)) / (np.log(hi) - np.log(lo)))
    el = np.stack(log_el)  # (fields, configs)
    rng = np.random.default_rng(RISK_SEED)
    mult = _capped(_triangular(rng, RISK_SAMPLES), hw)
    log_m = np.stack([np.log(mult[r.field]) for r in EFFICIENCY_RANGES])  # (fields, samples)
    sigma = np.array([_sigma(w, hw, cfg.row(i)) for i in range(len(cfg))])
    z = rng.standard_normal(RISK_SAMPLES)
    log_k = el.T @ log_m + sigma[:, None] * z[None, :]
    return np.exp(np.quantile(log_k, quantile, axis=1)), sigma


def _sigma(w: TrainWorkload, hw: Hardware, parallel: Mapping[str, object]) -> float:
    pos = position(w.arch, w.seq_len, w.precision, w.method, hw.accelerator_id, parallel)
    return float(ground_report(pos)["sigma"])


def pick_per_count(
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    step_time: np.ndarray,
    fits: np.ndarray,
    quantile: float,
) -> tuple[np.ndarray, dict[int, float]]:
    """Per GPU count, the configuration with the lowest risk-aware step time, and each
    picked configuration's factor (risk-aware time / base time)."""
    top = top_per_count(cfg.gpus, step_time, fits)
    if top.size == 0:
        return top, {}
    factors, _ = risk_factors(w, cfg.take(top), hw, quantile)
    risk_time = step_time[top] * factors
    order = np.lexsort((risk_time, cfg.gpus[top]))
    g = cfg.gpus[top][order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = g[1:] != g[:-1]
    chosen = order[first]
    return top[chosen], {int(top[j]): float(factors[j]) for j in chosen}
