"""Interpolation over measured kernel latencies on a rectilinear grid, never beyond it.

A kernel table measures an operation at a grid of shapes (GEMM m x n x k, attention
heads x sequence length x batch, all-reduce bytes). Latencies follow power laws in the
shape (a memory-bound GEMV grows with n k, a compute-bound GEMM with m n k, causal
attention with s^2), so interpolation is multilinear in log(shape) and log(latency):
exact for any power law between neighbouring grid points.

A query outside the measured range on any axis, or one whose surrounding grid cell has
an unmeasured corner, returns NaN: the caller falls back to the analytic model and
says so. Nothing is extrapolated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Grid:
    """Latencies (seconds) at every combination of the axis values; NaN where not measured."""

    axes: tuple[str, ...]
    points: tuple[np.ndarray, ...]  # sorted, unique axis values (> 0)
    latency_s: np.ndarray  # shape = tuple(len(p) for p in points)

    @classmethod
    def from_points(cls, axes: Sequence[str], rows: Iterable[tuple[Sequence[float], float]]) -> Grid:
        """A grid from scattered (coordinates, latency) measurements; repeats keep the fastest."""
        pairs = list(rows)
        if not pairs:
            raise ValueError("a kernel grid needs at least one measurement")
        coords = np.array([c for c, _ in pairs], dtype=np.float64).reshape(len(pairs), len(axes))
        lat = np.array([v for _, v in pairs], dtype=np.float64)
        keep = (lat > 0) & np.isfinite(lat)
        coords, lat = coords[keep], lat[keep]
        if not len(lat) or float(coords.min()) <= 0:
            raise ValueError(f"kernel grid axes {tuple(axes)} need positive coordinates and latencies")
        uniq = [np.unique(coords[:, i], return_inverse=True) for i in range(len(axes))]
        points = tuple(u[0] for u in uniq)
        values = np.full(tuple(len(p) for p in points), np.inf)
        np.minimum.at(values, tuple(u[1].ravel() for u in uniq), lat)  # repeats keep the fastest
        values[np.isinf(values)] = np.nan
        return cls(tuple(axes), points, values)

    @property
    def measured(self) -> int:
        return int(np.isfinite(self.latency_s).sum())

    def bounds(self) -> dict[str, tuple[float, float]]:
        return {a: (float(p[0]), float(p[-1])) for a, p in zip(self.axes, self.points, strict=True)}

    def __call__(self, *coords: np.ndarray | float) -> np.ndarray:
        """Latency at each query point (broadcast over the coordinates); NaN outside the grid."""
        if len(coords) != len(self.axes):
            raise ValueError(f"expected {len(self.axes)} coordinates ({', '.join(self.axes)})")
        q = np.broadcast_arrays(*(np.asarray(c, dtype=np.float64) for c in coords))
        shape = q[0].shape
        lows: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        inside = np.ones(shape, dtype=bool)
        for axis_points, x in zip(self.points, q, strict=True):
            inside &= (x >= axis_points[0]) & (x <= axis_points[-1])
            if len(axis_points) == 1:
                lows.append(np.zeros(shape, dtype=np.intp))
                weights.append(np.zeros(shape))
                continue
            xc = np.clip(x, axis_points[0], axis_points[-1])
            lo = np.clip(np.searchsorted(axis_points, xc, side="right") - 1, 0, len(axis_points) - 2)
            lp, hp = np.log(axis_points[lo]), np.log(axis_points[lo + 1])
            lows.append(lo)
            weights.append((np.log(xc) - lp) / (hp - lp))
        log_lat = np.zeros(shape)
        for corner in range(1 << len(self.axes)):
            w = np.ones(shape)
            idx = []
            for d in range(len(self.axes)):
                upper = (corner >> d) & 1
                if len(self.points[d]) == 1:
                    if upper:
                        w = np.zeros(shape)
                    idx.append(lows[d])
                    continue
                idx.append(lows[d] + upper)
                w = w * (weights[d] if upper else 1.0 - weights[d])
            values = self.latency_s[tuple(idx)]
            used = w > 0
            bad = used & ~np.isfinite(values)
            inside &= ~bad
            log_lat = log_lat + np.where(
                used & np.isfinite(values), w * np.log(np.where(used, values, 1.0)), 0.0
            )
        return np.where(inside, np.exp(log_lat), np.nan)
