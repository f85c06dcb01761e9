"""The GPU measurements the findings and the report read, the same way for a few GPUs (one
series each, `Observed.gpu`) and for a fleet (Prometheus's aggregates, `Observed.fleet` and
`Observed.busy`).
"""

from __future__ import annotations

import warnings

import numpy as np

from rightsize.monitor.fleet import BUSY_ACTIVITY, PER_GPU_MAX
from rightsize.monitor.queries import Observed

ACTIVITY_KEYS = ("gr_engine_active", "gpu_util")
LISTED_IDS = 12  # GPU ids named in a finding's evidence for a fleet: the most extreme ones


def activity_key(obs: Observed) -> str | None:
    return next((k for k in ACTIVITY_KEYS if obs.gpu.get(k) or k in obs.fleet), None)


def mean_activity(obs: Observed) -> np.ndarray | None:
    """Mean activity over the GPUs at each step (ratio)."""
    key = activity_key(obs)
    if key is None:
        return None
    if key in obs.fleet:
        return obs.fleet[key].mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # steps where no GPU reported
        return np.nanmean(np.vstack(list(obs.gpu[key].values())), axis=0)


def gpus_seen(obs: Observed) -> tuple[int, list[str]]:
    """How many GPUs report activity (else power), and their ids (all of them for a few GPUs)."""
    for key in (*ACTIVITY_KEYS, "power_usage"):
        if obs.gpu.get(key):
            return len(obs.gpu[key]), list(obs.gpu[key])
        if key in obs.fleet:
            ids = list(obs.busy.means) if obs.busy is not None and key in ACTIVITY_KEYS else []
            return obs.gpus_seen[key], ids
    return 0, []


def ids_text(ids: list[str], values: list[float] | None = None) -> str:
    """Every id for a few GPUs; for a fleet the most extreme ones (by `values`) and how many more."""
    if len(ids) <= PER_GPU_MAX:
        if values is None:
            return ", ".join(ids)
        return ", ".join(f"{i} {m:.0%}" for i, m in zip(ids, values, strict=True))
    if values is None:
        shown = ids[:LISTED_IDS]
        return ", ".join(shown) + f" and {len(ids) - len(shown):,} more"
    order = np.argsort(values)
    half = LISTED_IDS // 2
    pick = [*order[:half], *order[-half:]]
    text = ", ".join(f"{ids[i]} {values[i]:.0%}" for i in pick)
    return f"{text} (the {half} lowest and {half} highest of {len(ids):,})"


def power_mean_w(obs: Observed) -> float | None:
    """Mean power per GPU: the mean of each GPU's mean (a fleet: the mean of the per-step fleet mean,
    the same number when every GPU reports at every step)."""
    if obs.gpu.get("power_usage"):
        per_gpu = [
            float(v[np.isfinite(v)].mean()) for v in obs.gpu["power_usage"].values() if np.isfinite(v).any()
        ]
        return float(np.mean(per_gpu)) if per_gpu else None
    f = obs.fleet.get("power_usage")
    if f is None or not f.has_data:
        return None
    return float(np.nanmean(f.mean))


def memory_max_bytes(obs: Observed) -> float | None:
    if obs.gpu.get("fb_used"):
        tops = [float(np.nanmax(v)) for v in obs.gpu["fb_used"].values() if np.isfinite(v).any()]
        return max(tops, default=0.0)
    f = obs.fleet.get("fb_used")
    if f is None or not np.isfinite(f.high).any():
        return None
    return float(np.nanmax(f.high))


def busy_means(obs: Observed) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """Per GPU over the steps when the median GPU is busy: ids, mean activity, throttled share
    (empty when no violation counter is exported). None when no step is busy."""
    if obs.busy is not None:
        ids = list(obs.busy.means)
        means = np.array([obs.busy.means[i] for i in ids])
        t = obs.busy.throttle
        return ids, means, np.array([t.get(i, 0.0) for i in ids]) if t is not None else np.array([])
    key = activity_key(obs)
    if key is None:
        return None
    act = obs.gpu[key]
    ids = list(act)
    stack = np.vstack([act[i] for i in ids])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        busy = np.nanmedian(stack, axis=0) >= BUSY_ACTIVITY
        if not busy.any():
            return None
        means = np.array([np.nanmean(row[busy]) for row in stack])
    keep = np.isfinite(means)
    ids, means = [i for i, k in zip(ids, keep, strict=True) if k], means[keep]
    return ids, means, _throttled_share(obs, ids, busy)


def _throttled_share(obs: Observed, ids: list[str], busy: np.ndarray) -> np.ndarray:
    """Seconds throttled per second (power + thermal), mean over busy steps, per GPU."""
    parts = [obs.gpu.get("power_violation") or {}, obs.gpu.get("thermal_violation") or {}]
    if not any(parts):
        return np.array([])
    out = []
    for i in ids:
        total = np.zeros(int(busy.sum()))
        for part in parts:
            if i in part:
                total = total + np.nan_to_num(part[i][busy])
        out.append(float(total.mean()) if total.size else 0.0)
    return np.array(out)


def chart_lines(obs: Observed, key: str) -> dict[str, np.ndarray]:
    """The lines of a per-GPU chart: each GPU for a few, the fleet's mean, lowest and highest for many."""
    if obs.gpu.get(key):
        return obs.gpu[key]
    f = obs.fleet.get(key)
    if f is None or not f.has_data:
        return {}
    n = obs.gpus_seen.get(key, 0)
    return {f"mean of {n:,} GPUs": f.mean, "lowest GPU": f.low, "highest GPU": f.high}
