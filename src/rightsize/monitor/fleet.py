"""GPU metrics at fleet scale: Prometheus aggregates, the client keeps a bounded summary.

Up to `PER_GPU_MAX` GPUs, monitor reads one series per GPU (a straggler shows in the charts).
Above it, no query returns one series per GPU over the window; memory no longer grows with
GPUs x steps:

- how many GPUs report, one number (``count`` over the window, computed by Prometheus);
- per step, three series whatever the GPU count (`FleetSeries`): the GPUs' mean, lowest and
  highest value (``avg``/``min``/``max`` over the per-GPU expression);
- per GPU, one number over the whole window (`BusyStats`), computed by Prometheus with a
  subquery: the GPU's mean activity over the steps when the median GPU is busy, and its
  throttled seconds per second over those steps. These are what the straggler and throttle
  findings compare; a few floats a GPU.

Every query touches at most `CHUNK_POINTS` GPU-steps on the server (Prometheus refuses a query
that loads more than 50 million samples): the window is cut into chunks of steps, each
chunk's answer is reduced as it arrives (per-step values written into the window's grid,
per-GPU sums and counts added up) and dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from rightsize.monitor.prom import Series, Source, Window, on_grid

PER_GPU_MAX = 64  # up to this many GPUs, one series per GPU (the charts show each)
CHUNK_POINTS = 4_000_000  # GPU-steps one query may touch on the server
BUSY_ACTIVITY = 0.2  # steps when the median GPU is at least this busy count as "busy"
GPU_BY = "Hostname, instance, gpu"
STATS = {"mean": "avg", "low": "min", "high": "max"}


@dataclass
class FleetSeries:
    """Per step, over the GPUs that reported: their mean, lowest and highest value."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray

    def scaled(self, factor: float) -> FleetSeries:
        return FleetSeries(self.mean * factor, self.low * factor, self.high * factor)

    @property
    def has_data(self) -> bool:
        return bool(np.isfinite(self.mean).any())


@dataclass
class BusyStats:
    """Per GPU, over the steps when the median GPU was busy: mean activity and throttled share."""

    means: dict[str, float]  # GPU id -> mean activity (ratio) over busy steps
    throttle: dict[str, float] | None  # GPU id -> throttled seconds per second over busy steps
    busy_steps: int


def gpu_id(labels: dict[str, str]) -> str:
    host = labels.get("Hostname") or labels.get("instance") or "host"
    return f"{host}/gpu{labels.get('gpu', '?')}"


def count_query(selector: str, window: Window) -> str:
    """How many GPUs (host, instance, index) have a sample of `selector` in the window."""
    span = max(int(math.ceil(window.duration_s + window.range_s)), 1)
    return f"count(count by ({GPU_BY}) (count_over_time({selector}[{span}s])))"


def count_gpus(source: Source, selector: str, window: Window) -> int | None:
    """The GPUs reporting `selector` in the window, one number from the server; None when none
    (or an answer that is not a count: the per-GPU reading then decides, and checks, as before)."""
    point = Window(window.end_s, window.end_s, window.step_s)
    values = [v for s in source.query_range(count_query(selector, window), point) for v in s.values]
    finite = [v for v in values if math.isfinite(v)]
    if not values:
        return None
    if not finite:
        return 1  # NaN or infinite: let the per-GPU reading check it
    top = max(finite)
    return int(math.ceil(top)) if top > 0 else None


def chunks(window: Window, gpus: int) -> Iterator[Window]:
    """The window's steps in runs of at most CHUNK_POINTS / gpus steps (the window itself when one fits)."""
    grid = window.grid()
    per = max(1, CHUNK_POINTS // max(gpus, 1))
    if grid.size <= per:
        yield window
        return
    for i in range(0, grid.size, per):
        j = min(i + per, grid.size) - 1
        yield Window(float(grid[i]), float(grid[j]), window.step_s)


def fleet_series(
    source: Source, per_gpu: str, window: Window, gpus: int, check: Callable[[np.ndarray], None]
) -> tuple[FleetSeries, bool]:
    """avg/min/max of the per-GPU expression at every step, and whether any value came back
    (NaN aside). `check` sees the lowest and highest values as they arrive (and may refuse them)."""
    grid = window.grid()
    out: dict[str, np.ndarray] = {}
    seen = False
    for stat, fn in STATS.items():
        values = np.full(grid.shape, np.nan)
        for part in chunks(window, gpus):
            for s in source.query_range(f"{fn}({per_gpu})", part):  # one series, or none
                seen = seen or bool((~np.isnan(s.values)).any())
                if stat in ("low", "high"):
                    check(s.values)
                _fill(values, s, grid)
        out[stat] = values
    return FleetSeries(out["mean"], out["low"], out["high"]), seen


def _fill(values: np.ndarray, s: Series, grid: np.ndarray) -> None:
    v = on_grid(s, grid)
    got = ~np.isnan(v)
    values[got] = v[got]


def _duration_ms(seconds: float) -> str:
    return f"{max(int(round(seconds * 1000)), 1)}ms"


def busy_stats(
    source: Source,
    window: Window,
    gpus: int,
    activity: tuple[str, float],
    throttles: list[tuple[str, float]],
) -> BusyStats:
    """Per-GPU mean activity and throttled share over busy steps, summed chunk by chunk on the server.

    `activity` and each of `throttles` are (per-GPU PromQL expression, factor to SI)."""
    act, act_si = activity
    busy = f"(quantile(0.5, {act}) >= {BUSY_ACTIVITY / act_si:.12g})"
    sums: dict[str, float] = {}
    counts: dict[str, float] = {}
    throttled: dict[str, float] = {}
    busy_steps = 0.0
    for part in chunks(window, gpus):
        # the subquery's points are this chunk's steps: (end - range, end] holds exactly them
        span = part.end_s - part.start_s + part.step_s / 2
        sub = f"[{_duration_ms(span)}:{_duration_ms(part.step_s)}] @ {part.end_s:.3f}"
        point = Window(part.end_s, part.end_s, part.step_s)

        def ask(query: str, point: Window = point) -> list[Series]:
            return source.query_range(query, point)

        _add(sums, ask(f"sum_over_time(({act} and on() {busy}){sub})"), act_si)
        _add(counts, ask(f"count_over_time(({act} and on() {busy}){sub})"), 1.0)
        for expr, si in throttles:
            _add(throttled, ask(f"sum_over_time(({expr} and on() {busy}){sub})"), si)
        busy_steps += sum(_last(s) for s in ask(f"count_over_time({busy}{sub})"))
    means = {g: sums[g] / n for g, n in sorted(counts.items()) if n > 0 and g in sums}
    share = None
    if throttles and busy_steps > 0:
        share = {g: throttled.get(g, 0.0) / busy_steps for g in means}
    return BusyStats(means, share, int(busy_steps))


def _last(s: Series) -> float:
    v = s.values[np.isfinite(s.values)] if s.values.size else s.values
    return float(v[-1]) if v.size else 0.0


def _add(into: dict[str, float], series: list[Series], factor: float) -> None:
    for s in series:
        gid = gpu_id(s.labels)
        into[gid] = into.get(gid, 0.0) + _last(s) * factor
