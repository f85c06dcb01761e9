"""Fits over measured sweeps (torch-free, numpy only).

`fit_sweep` describes a progressive load test: step time and memory as functions of batch
b and sequence length s,

    y = c0 + c1 (b s) + c2 (b s^2)

(a fixed cost, a per-token cost, and attention's per-token cost that grows with s), by
non-negative least squares; and where scaling is not linear: the local exponent
d log(time) / d log(b) between neighbouring batches at one s (1 is linear; well below 1
means the hardware is under-used at the smaller batch; above 1 means the larger batch
pays extra, e.g. cache or memory pressure).

`nelder_mead` is a small derivative-free minimiser used by the calibration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

LINEAR_LOW, LINEAR_HIGH = 0.8, 1.2


def nnls(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients (active-set by elimination; few columns)."""
    cols = list(range(a.shape[1]))
    while True:
        coef = np.zeros(a.shape[1])
        if cols:
            sol, *_ = np.linalg.lstsq(a[:, cols], y, rcond=None)
            coef[cols] = sol
        neg = [c for c in cols if coef[c] < 0]
        if not neg:
            return coef
        cols.remove(min(neg, key=lambda c: coef[c]))


def _fit_surface(b: np.ndarray, s: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    a = np.column_stack([np.ones_like(b), b * s, b * s * s])
    scale = np.maximum(np.abs(a).max(axis=0), 1e-30)
    coef = nnls(a / scale, y) / scale
    pred = a @ coef
    ss_res = float(((y - pred) ** 2).sum())
    ss_tot = float(((y - y.mean()) ** 2).sum())
    return {
        "formula": "c0 + c1*b*s + c2*b*s^2",
        "c0": float(coef[0]),
        "c1": float(coef[1]),
        "c2": float(coef[2]),
        "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0,
        "max_relative_error": float(np.max(np.abs(pred / y - 1.0))) if len(y) else 0.0,
    }


def fit_sweep(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Time and memory surfaces, the OOM boundary and non-linear scaling of a train sweep."""
    ok = [r for r in results if r.get("status") == "ok"]
    out: dict[str, Any] = {"points": len(ok)}
    boundary: dict[str, Any] = {}
    for r in results:
        s = str(r.get("seq_len"))
        if r.get("status") == "ok":
            boundary.setdefault(s, {"max_ok_batch": 0, "first_oom_batch": None})
            boundary[s]["max_ok_batch"] = max(boundary[s]["max_ok_batch"], int(r["batch"]))
        elif r.get("status") == "oom":
            boundary.setdefault(s, {"max_ok_batch": 0, "first_oom_batch": None})
            first = boundary[s]["first_oom_batch"]
            boundary[s]["first_oom_batch"] = int(r["batch"]) if first is None else min(first, int(r["batch"]))
    out["oom_boundary"] = boundary
    if not ok:
        return out
    b = np.array([float(r["batch"]) for r in ok])
    sq = np.array([float(r["seq_len"]) for r in ok])
    t = np.array([r["time_s"]["step"]["median"] for r in ok])
    if len(ok) >= 2:
        out["step_time_s"] = _fit_surface(b, sq, t)
        mem_key = (
            "peak_allocated_bytes" if "peak_allocated_bytes" in ok[0]["memory"] else "peak_estimate_bytes"
        )
        m = np.array([float(r["memory"].get(mem_key, 0.0)) for r in ok])
        out["memory_bytes"] = {**_fit_surface(b, sq, m), "measure": mem_key}
    out["nonlinear"] = nonlinear_scaling(ok)
    return out


def nonlinear_scaling(ok: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neighbouring points whose time grows far from proportionally to batch or sequence."""
    findings = []
    for axis, other in (("batch", "seq_len"), ("seq_len", "batch")):
        groups: dict[int, list[dict[str, Any]]] = {}
        for r in ok:
            groups.setdefault(int(r[other]), []).append(r)
        for fixed, rows in sorted(groups.items()):
            rows.sort(key=lambda r: r[axis])
            for lo, hi in zip(rows, rows[1:], strict=False):
                x0, x1 = float(lo[axis]), float(hi[axis])
                t0, t1 = lo["time_s"]["step"]["median"], hi["time_s"]["step"]["median"]
                if x1 <= x0 or t0 <= 0 or t1 <= 0:
                    continue
                exponent = float(np.log(t1 / t0) / np.log(x1 / x0))
                if exponent < LINEAR_LOW or exponent > LINEAR_HIGH:
                    why = (
                        "sub-linear: the smaller size leaves the hardware under-used (fixed overheads dominate)"
                        if exponent < LINEAR_LOW
                        else (
                            "super-linear: attention's s^2 term or memory pressure"
                            if axis == "seq_len"
                            else "super-linear: the larger batch pays extra (cache or memory pressure)"
                        )
                    )
                    findings.append(
                        {"axis": axis, other: fixed, "from": x0, "to": x1, "exponent": exponent, "why": why}
                    )
    return findings


def nelder_mead(
    f: Callable[[np.ndarray], float], x0: np.ndarray, step: float = 0.5, iters: int = 600, tol: float = 1e-10
) -> tuple[np.ndarray, float]:
    """Minimise f from x0 (standard reflection / expansion / contraction / shrink)."""
    n = len(x0)
    pts = [np.asarray(x0, dtype=np.float64)]
    for i in range(n):
        p = pts[0].copy()
        p[i] += step
        pts.append(p)
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < tol:
            break
        centroid = np.mean(pts[:-1], axis=0)
        xr = centroid + (centroid - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = centroid + 2.0 * (centroid - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (pts[-1] - centroid)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0] + 0.5 * (p - pts[0]) for p in pts]
                vals = [f(p) for p in pts]
    i = int(np.argmin(vals))
    return pts[i], float(vals[i])
