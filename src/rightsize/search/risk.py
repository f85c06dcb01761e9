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
wins: the P75 normally, the P90 when a deadline must be met. Not the median: the model
error is a lognormal centred on the base, so its median is the base at any distance and a
P50 ranking would let a layout far from validated ground win on its optimistic base alone
(issue #27: the 405B search chose an unvalidated CP4 layout at 50% MFU); an upper quantile
charges each layout for how little the validation says about it.

A layout less validated than the best-validated of the few (a larger model-error sigma:
mechanisms or a scale the validation never reached) must also win at its pessimistic end:
it replaces the best-validated layout only when its P90 beats that layout's P90 too.
Otherwise the search would still go where the model knows least whenever the
lognormal's upper quantile leaves it a little ahead (issue #27).
"""

from __future__ import annotations

import numpy as np

from rightsize.perf.hardware import Hardware
from rightsize.perf.step import step_time_variants
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.search.ground import ground_sigma, position
from rightsize.search.uncertainty import EFFICIENCY_RANGES, FD_STEP, MAX_EFFICIENCY, _capped, _triangular

# Layouts per GPU count re-ranked by risk (the rest are slower at their base already).
TOP_K = 6
RISK_SAMPLES = 512
RISK_SEED = 1
P50, P75, P90 = 0.5, 0.75, 0.9
# Sigmas closer than this are one level of validation (rounding of the distance terms).
SIGMA_TIE = 1e-6


def top_per_count(gpus: np.ndarray, step_time: np.ndarray, fits: np.ndarray, k: int = TOP_K) -> np.ndarray:
    """Indices of the k fastest fitting configurations of each distinct GPU count."""
    idx = np.flatnonzero(fits)
    if idx.size == 0:
        return idx
    g = gpus[idx]
    if np.all(g[1:] >= g[:-1]):  # grouped by count already (as the search enumerates)
        return _top_per_sorted_group(idx, g, step_time[idx], k)
    order = idx[np.lexsort((step_time[idx], gpus[idx]))]
    g = gpus[order]
    starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    rank = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    return order[rank < k]


def _top_per_sorted_group(idx: np.ndarray, g: np.ndarray, t: np.ndarray, k: int) -> np.ndarray:
    """`top_per_count` where the counts `g` are already in order: per group, the k smallest
    times, ties by position (as a stable sort), without sorting whole groups."""
    bounds = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1, g.size]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=False):
        seg = t[a:b]
        if seg.size > k:  # every time up to the k-th smallest (all its ties), then a stable sort
            kth = np.partition(seg, k - 1)[k - 1]
            cand = np.flatnonzero(seg <= kth)
        else:
            cand = np.arange(seg.size)
        out.append(a + cand[np.argsort(seg[cand], kind="stable")[:k]])
    return idx[np.concatenate(out)]


def risk_quantiles(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, quantiles: tuple[float, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """(quantiles of the step-time multiplier, shape (len(quantiles), configs); model-error
    sigma per configuration) for each configuration of `cfg`."""
    # Central differences of every efficiency, all variants in one vectorised pass.
    steps: dict[str, tuple[float, float]] = {}
    for r in EFFICIENCY_RANGES:
        base = float(getattr(hw, r.field))
        if base > 0:
            steps[r.field] = (min(base * (1 + FD_STEP), MAX_EFFICIENCY), base * (1 - FD_STEP))
    variants = [{f: x} for f, (hi, lo) in steps.items() for x in (hi, lo)]
    times = step_time_variants(w, cfg, hw, variants)
    log_el = []
    for r in EFFICIENCY_RANGES:
        if r.field not in steps:
            log_el.append(np.zeros(len(cfg)))
            continue
        hi, lo = steps[r.field]
        j = 2 * list(steps).index(r.field)
        log_el.append((np.log(times[j]) - np.log(times[j + 1])) / (np.log(hi) - np.log(lo)))
    el = np.stack(log_el)  # (fields, configs)
    rng = np.random.default_rng(RISK_SEED)
    mult = _capped(_triangular(rng, RISK_SAMPLES), hw)
    log_m = np.stack([np.log(mult[r.field]) for r in EFFICIENCY_RANGES])  # (fields, samples)
    sigma = _sigmas(w, hw, cfg)
    z = rng.standard_normal(RISK_SAMPLES)
    log_k = el.T @ log_m + sigma[:, None] * z[None, :]
    return np.exp(np.quantile(log_k, quantiles, axis=1)), sigma


def risk_factors(
    w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, quantile: float
) -> tuple[np.ndarray, np.ndarray]:
    """(quantile of step-time multiplier, model-error sigma) for each configuration of `cfg`."""
    factors, sigma = risk_quantiles(w, cfg, hw, (quantile,))
    return factors[0], sigma


def _sigmas(w: TrainWorkload, hw: Hardware, cfg: ParallelConfigs) -> np.ndarray:
    """Each configuration's model-error sigma from its distance to validated ground."""
    names = ("tp", "pp", "dp", "cp", "vpp", "zero_stage")
    columns = [getattr(cfg, k).astype(int).tolist() for k in names]
    out = []
    for values in zip(*columns, strict=True):
        parallel = dict(zip(names, values, strict=True))
        out.append(
            ground_sigma(position(w.arch, w.seq_len, w.precision, w.method, hw.accelerator_id, parallel))
        )
    return np.array(out)


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
    both, sigma = risk_quantiles(w, cfg.take(top), hw, (quantile, max(quantile, P90)))
    factors = both[0]
    risk_time = step_time[top] * factors
    pessimistic = step_time[top] * both[1]
    g_top = cfg.gpus[top]
    chosen = []
    for g in np.unique(g_top):
        mine = np.flatnonzero(g_top == g)
        chosen.append(int(mine[_validated_first(risk_time[mine], pessimistic[mine], sigma[mine])]))
    return top[chosen], {int(top[j]): float(factors[j]) for j in chosen}


def _validated_first(risk_time: np.ndarray, pessimistic: np.ndarray, sigma: np.ndarray) -> int:
    """Index of the layout to take among one GPU count's few: the best-validated layout
    (smallest sigma; the lowest ranking time among equals) unless a less validated one is
    faster at the pessimistic end (P90) as well; among those that are, the lowest ranking
    time."""
    ref_sigma = float(sigma.min())
    well = np.flatnonzero(sigma <= ref_sigma + SIGMA_TIE)
    ref = int(well[np.argmin(risk_time[well])])
    ok = (sigma <= ref_sigma + SIGMA_TIE) | (pessimistic <= pessimistic[ref])
    ok_idx = np.flatnonzero(ok)
    # Ties by position (the base-time order of `top_per_count`), as a stable sort.
    return int(ok_idx[np.argmin(risk_time[ok_idx])])
