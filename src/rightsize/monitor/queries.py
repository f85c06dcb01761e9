"""What rightsize asks Prometheus, and the measurements it gets back, in SI units.

Names come from the catalog's map (`rightsize.catalog.metric_names`): for each quantity
the first name the server knows is used (newest first, so ``vllm:kv_cache_usage_perc``
before ``vllm:gpu_cache_usage_perc``), and its unit for that name turns values into SI
(percent to a ratio, MiB to bytes, mJ to joules, ns to seconds). Values a unit cannot
hold (a "ratio" of 87, a GPU drawing 300,000 W) stop the run with a message instead of
a wrong report.

GPU quantities are kept per GPU (host and index) so a straggler shows, up to
`fleet.PER_GPU_MAX` GPUs; above, Prometheus aggregates them (per step: count, mean, lowest,
highest; per GPU: one number over the window) so memory does not grow with the fleet. Serving
quantities are summed over the deployment's replicas; latency percentiles come from
`histogram_quantile` over the summed bucket rates; prompt and output lengths from the
window's bucket counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.catalog.metric_names import MetricName, metric_spec
from rightsize.errors import BadInput
from rightsize.monitor import fleet
from rightsize.monitor.fleet import GPU_BY, BusyStats, FleetSeries
from rightsize.monitor.prom import Series, Source, Window, on_grid

GPU_GAUGES = {  # key -> PromQL aggregation over each step's range
    "gr_engine_active": "avg_over_time",
    "gpu_util": "avg_over_time",
    "tensor_active": "avg_over_time",
    "dram_active": "avg_over_time",
    "power_usage": "avg_over_time",
    "fb_used": "max_over_time",
}
GPU_COUNTERS = ("total_energy", "power_violation", "thermal_violation")
# Plausible ranges in SI, to catch a unit that is not what the name promises.
SANE_MAX = {"ratio": 1.05, "W": 5000.0, "bytes": 2.0e12}
# What each serving query returns, and the range a real deployment can show (NaN: no sample).
SERVING_RANGE = {
    "request_success": ("req/s", 1e7),
    "num_requests_running": ("requests", 1e9),
    "num_requests_waiting": ("requests", 1e9),
    "kv_cache_usage": ("ratio", 1.05),
    "time_to_first_token": ("s", 1e6),
    "inter_token_latency": ("s", 1e6),
    "request_prompt_tokens": ("tokens per request", 1e9),
    "request_generation_tokens": ("tokens per request", 1e9),
}


@dataclass
class Used:
    """Which name answered for a quantity, in which unit, with which query."""

    key: str
    name: str
    unit: str
    query: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "name": self.name,
            "unit": self.unit,
            "query": self.query,
            "source": self.source,
        }


@dataclass
class LengthHistogram:
    """A token-length histogram over the whole window: bucket upper bounds and counts in each."""

    upper: np.ndarray  # le bounds, +inf last
    cumulative: np.ndarray  # requests with length <= upper
    sum_tokens: float
    count: float

    @property
    def mean(self) -> float:
        return self.sum_tokens / self.count if self.count > 0 else float("nan")

    def quantile(self, q: float) -> float:
        """Linear interpolation inside the bucket, as histogram_quantile does."""
        if self.count <= 0 or self.cumulative.size == 0:
            return float("nan")
        rank = q * self.cumulative[-1]
        i = int(np.searchsorted(self.cumulative, rank, side="left"))
        i = min(i, self.upper.size - 1)
        hi = self.upper[i] if np.isfinite(self.upper[i]) else self.upper[max(i - 1, 0)]
        lo = self.upper[i - 1] if i > 0 else 0.0
        below = self.cumulative[i - 1] if i > 0 else 0.0
        inside = self.cumulative[i] - below
        frac = (rank - below) / inside if inside > 0 else 1.0
        return float(lo + (hi - lo) * frac)

    def std(self) -> float:
        """Spread from bucket midpoints (the +inf bucket at its lower bound)."""
        if self.count <= 0:
            return float("nan")
        counts = np.diff(np.concatenate([[0.0], self.cumulative]))
        lows = np.concatenate([[0.0], self.upper[:-1]])
        highs = np.where(np.isfinite(self.upper), self.upper, lows)
        mids = (lows + highs) / 2.0
        total = counts.sum()
        if total <= 0:
            return float("nan")
        mean = float((counts * mids).sum() / total)
        return float(np.sqrt(max((counts * (mids - mean) ** 2).sum() / total, 0.0)))


@dataclass
class Observed:
    """Everything measured over the window, on one time grid, in SI units."""

    window: Window
    grid: np.ndarray
    gpu: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # key -> gpu id -> series
    fleet: dict[str, FleetSeries] = field(default_factory=dict)  # key -> per-step aggregates (large fleets)
    gpus_seen: dict[str, int] = field(default_factory=dict)  # key -> GPUs reporting it (large fleets)
    busy: BusyStats | None = None  # per-GPU activity and throttling over busy steps (large fleets)
    serving: dict[str, np.ndarray] = field(default_factory=dict)  # key -> series
    lengths: dict[str, LengthHistogram] = field(default_factory=dict)  # prompt / output
    used: dict[str, Used] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    @property
    def has_gpu(self) -> bool:
        return any(self.gpu.values()) or any(f.has_data for f in self.fleet.values())

    @property
    def has_serving(self) -> bool:
        return bool(self.serving)

    def activity(self) -> dict[str, np.ndarray]:
        """Per-GPU activity (ratio): DCP engine activity where exported, else NVML utilisation
        (the per-GPU reading only; `gpu_view` reads a fleet's aggregates too)."""
        return self.gpu.get("gr_engine_active") or self.gpu.get("gpu_util") or {}


def matcher(selector: str | None) -> str:
    """'{job="x", env="p"}' -> 'job="x", env="p"'; empty or None -> ''."""
    if not selector:
        return ""
    s = selector.strip()
    if not (s.startswith("{") and s.endswith("}")):
        raise BadInput(
            f"--selector {selector!r} is not a PromQL label matcher.",
            "It must be a set of label matchers in braces.",
            'Write it like \'{job="dcgm-exporter", cluster="east"}\' (quote it for the shell).',
        )
    return s[1:-1].strip()


def _sel(name: str, inner: str, suffix: str = "") -> str:
    return f"{name}{suffix}{{{inner}}}" if inner else f"{name}{suffix}"


class Collector:
    """Runs the queries for one window against one source and fills an `Observed`."""

    def __init__(
        self, source: Source, window: Window, gpu_sel: str, serving_sel: str, quantile: float
    ) -> None:
        self.source = source
        self.window = window
        self.gpu_inner = matcher(gpu_sel)
        self.serving_inner = matcher(serving_sel)
        self.q = quantile
        self.known = source.metric_names()
        self.obs = Observed(window=window, grid=window.grid())

    def _candidates(self, key: str) -> list[MetricName]:
        spec = metric_spec(key)
        seen: list[MetricName] = []
        for name in spec.distinct_names():
            if self.known is None or name in self.known or f"{name}_bucket" in self.known:
                seen.append(spec.entry(name))
        return seen

    def _first(self, key: str, build: Any) -> tuple[MetricName, str, list[Series]] | None:
        for entry in self._candidates(key):
            query = build(entry.name)
            series = self.source.query_range(query, self.window)
            if any((~np.isnan(s.values)).any() for s in series):  # infinities go on to be refused
                return entry, query, series
        self.obs.missing.append(key)
        return None

    def _record(self, key: str, entry: MetricName, query: str) -> None:
        self.obs.used[key] = Used(key, entry.name, entry.unit, query, entry.source)

    def _check_range(self, entry: MetricName, values: np.ndarray, unit: str, high: float) -> None:
        """Every sample NaN (no data) or a finite number in [0, high]: nothing negative or infinite."""
        bad = ~np.isnan(values) & ~(np.isfinite(values) & (values >= 0) & (values <= high))
        if not bad.any():
            return
        worst = float(values[bad][0])
        raise BadInput(
            f"{self.source.where} reports {entry.name} as {worst:,.6g} {unit}, which it cannot be.",
            f"It must be a finite number from 0 to {high:,.6g} {unit} (or NaN where there is no sample); "
            "a negative or infinite value means a broken exporter, recording rule or server.",
            "Check the exporter and any recording rule that produces this name, or select the raw series "
            "with --gpu-selector / --serving-selector.",
        )

    def _check_unit(self, key: str, entry: MetricName, values: np.ndarray, si_unit: str) -> None:
        high = SANE_MAX.get(si_unit)
        self._check_range(entry, values, si_unit, math.inf)  # sign and finiteness; the unit's top below
        limit = high
        finite = values[np.isfinite(values)]
        if limit is None or finite.size == 0 or float(finite.max()) <= limit:
            return
        top = float(finite.max()) / entry.to_si
        raise BadInput(
            f"{entry.name} reports values up to {top:,.4g}, which its unit ({entry.unit}) cannot hold.",
            f"In {entry.exporter} this name is in {entry.unit} ({entry.source}); {top:,.4g} {entry.unit} is "
            f"{top * entry.to_si:,.4g} {si_unit}, above the plausible {limit:g}.",
            "Check the exporter's version and any recording rule that rescales it (a ratio exported as a "
            "percent, bytes written where MiB are expected), or select the raw series with --gpu-selector.",
        )

    def collect_gpu(self) -> None:
        r, inner = self.window.range_s, self.gpu_inner
        exprs: dict[str, tuple[str, float]] = {}  # key -> per-GPU expression, factor to SI (fleet keys)
        for key, fn in GPU_GAUGES.items():
            self._gpu_key(key, lambda n, fn=fn: f"avg by ({GPU_BY}) ({fn}({_sel(n, inner)}[{r}s]))", exprs)
        for key in GPU_COUNTERS:
            self._gpu_key(key, lambda n: f"sum by ({GPU_BY}) (rate({_sel(n, inner)}[{r}s]))", exprs)
        act = next((k for k in ("gr_engine_active", "gpu_util") if k in exprs), None)
        if act is not None:
            throttles = [exprs[k] for k in ("power_violation", "thermal_violation") if k in exprs]
            self.obs.busy = fleet.busy_stats(
                self.source, self.window, self.obs.gpus_seen[act], exprs[act], throttles
            )

    def _gpu_key(self, key: str, build: Any, exprs: dict[str, tuple[str, float]]) -> None:
        """The first name with data: one series per GPU for a few GPUs, aggregates for a fleet."""
        for entry in self._candidates(key):
            gpus = fleet.count_gpus(self.source, _sel(entry.name, self.gpu_inner), self.window)
            if gpus is None:
                continue
            query = build(entry.name)
            if gpus <= fleet.PER_GPU_MAX:
                series = self.source.query_range(query, self.window)
                if any((~np.isnan(s.values)).any() for s in series):  # infinities go on to be refused
                    self._store_gpu(key, entry, query, series)
                    return
                continue
            si = self._si_check_unit(key)

            def check(values: np.ndarray, entry: MetricName = entry, si: str = si) -> None:
                self._check_unit(key, entry, values * entry.to_si, si)

            agg, seen = fleet.fleet_series(self.source, query, self.window, gpus, check)
            if not seen:
                continue
            self.obs.fleet[key] = agg.scaled(entry.to_si)
            self.obs.gpus_seen[key] = gpus
            exprs[key] = (query, entry.to_si)
            self._record(key, entry, query)
            return
        self.obs.missing.append(key)

    @staticmethod
    def _si_check_unit(key: str) -> str:
        """energy and violation counters become rates: W and seconds throttled per second"""
        return (
            "W"
            if key == "total_energy"
            else ("ratio" if key.endswith("violation") else metric_spec(key).si_unit)
        )

    def _store_gpu(self, key: str, entry: MetricName, query: str, series: list[Series]) -> None:
        check = self._si_check_unit(key)
        per: dict[str, np.ndarray] = {}
        for s in series:
            self._check_unit(key, entry, s.values * entry.to_si, check)
            per[fleet.gpu_id(s.labels)] = on_grid(s, self.obs.grid) * entry.to_si
        self.obs.gpu[key] = dict(sorted(per.items()))
        self._record(key, entry, query)

    def collect_serving(self) -> None:
        r, inner, q = self.window.range_s, self.serving_inner, self.q
        simple = {
            "request_success": lambda n: f"sum(rate({_sel(n, inner)}[{r}s]))",
            "num_requests_running": lambda n: f"sum(avg_over_time({_sel(n, inner)}[{r}s]))",
            "num_requests_waiting": lambda n: f"sum(avg_over_time({_sel(n, inner)}[{r}s]))",
            "kv_cache_usage": lambda n: f"max(max_over_time({_sel(n, inner)}[{r}s]))",
            "time_to_first_token": lambda n: (
                f"histogram_quantile({q:g}, sum by (le) (rate({_sel(n, inner, '_bucket')}[{r}s])))"
            ),
            "inter_token_latency": lambda n: (
                f"histogram_quantile({q:g}, sum by (le) (rate({_sel(n, inner, '_bucket')}[{r}s])))"
            ),
            "request_prompt_tokens": lambda n: (
                f"sum(rate({_sel(n, inner, '_sum')}[{r}s])) / sum(rate({_sel(n, inner, '_count')}[{r}s]))"
            ),
            "request_generation_tokens": lambda n: (
                f"sum(rate({_sel(n, inner, '_sum')}[{r}s])) / sum(rate({_sel(n, inner, '_count')}[{r}s]))"
            ),
        }
        for key, build in simple.items():
            found = self._first(key, build)
            if not found:
                continue
            entry, query, series = found
            unit, high = SERVING_RANGE[key]
            if key == "kv_cache_usage":
                self._check_unit(key, entry, series[0].values * entry.to_si, "ratio")
            self._check_range(entry, series[0].values * entry.to_si, unit, high)
            values = on_grid(series[0], self.obs.grid) * entry.to_si
            self.obs.serving[key] = values
            self._record(key, entry, query)
        for key, label in (("request_prompt_tokens", "prompt"), ("request_generation_tokens", "output")):
            if key in self.obs.used:
                hist = self._length_histogram(self.obs.used[key].name)
                if hist is not None:
                    self.obs.lengths[label] = hist

    def _length_histogram(self, name: str) -> LengthHistogram | None:
        w = self.window
        span = int(w.duration_s)
        point = Window(w.end_s, w.end_s, w.step_s)
        inner = self.serving_inner
        buckets = self.source.query_range(
            f"sum by (le) (increase({_sel(name, inner, '_bucket')}[{span}s]))", point
        )
        total = self.source.query_range(f"sum(increase({_sel(name, inner, '_sum')}[{span}s]))", point)
        count = self.source.query_range(f"sum(increase({_sel(name, inner, '_count')}[{span}s]))", point)
        rows = sorted(
            (_bucket_bound(s.labels["le"], name, self.source.where), float(s.values[-1]))
            for s in buckets
            if s.values.size and "le" in s.labels and not np.isnan(s.values[-1])
        )
        if not rows or not total or not count or not total[0].values.size or not count[0].values.size:
            return None
        upper = np.array([u for u, _ in rows])
        counts = np.array([c for _, c in rows])
        sums = np.array([float(total[0].values[-1]), float(count[0].values[-1])])
        top = SERVING_RANGE["request_prompt_tokens"][1]
        if (
            not (np.isfinite(counts) & (counts >= 0)).all()
            or not (np.isfinite(sums) & (sums >= 0)).all()
            or sums[0] > top * max(sums[1], 1.0)
        ):
            raise BadInput(
                f"{self.source.where} reports a length histogram {name} with negative, infinite or "
                "impossible counts.",
                "Request counts and token sums over the window must be finite numbers of 0 or more, "
                f"and a request at most {top:,.0f} tokens long.",
                "Check the vLLM exporter and any recording rule that produces this name.",
            )
        cum = np.maximum.accumulate(counts)
        return LengthHistogram(upper, cum, float(sums[0]), float(sums[1]))


def _bucket_bound(le: str, name: str, where: str) -> float:
    """A histogram bucket's `le` label: a number above 0, or +Inf."""
    try:
        bound = float(le)
    except ValueError:
        bound = math.nan
    if math.isnan(bound) or bound < 0:
        raise BadInput(
            f"{where} reports a bucket of {name} with le={le[:40]!r}.",
            "A bucket's upper bound (le) is a number of 0 or more, or +Inf.",
            "Check the vLLM exporter and any recording rule that produces this name.",
        )
    return bound


def collect(
    source: Source, window: Window, gpu_selector: str | None, serving_selector: str | None, quantile: float
) -> Observed:
    """Query every quantity; raise when nothing at all came back (with the reason)."""
    c = Collector(source, window, gpu_selector or "", serving_selector or "", quantile)
    c.collect_gpu()
    c.collect_serving()
    obs = c.obs
    if not obs.has_gpu and not obs.has_serving:
        _explain_nothing(c)
    return obs


def _explain_nothing(c: Collector) -> None:
    """Nothing measured: say whether the names are unknown or the window is empty."""
    keys = ["gr_engine_active", "gpu_util", "request_success", "num_requests_running"]
    tried = [n for k in keys for n in metric_spec(k).distinct_names()]
    known = c.known or set()
    present = [n for n in tried if n in known]
    window = f"{c.window.duration_s / 3600:g} h ending {np.datetime64(int(c.window.end_s), 's')} UTC"
    sel = ", ".join(
        f"{k} {v!r}" for k, v in (("GPU selector", c.gpu_inner), ("serving selector", c.serving_inner)) if v
    )
    if present:
        from rightsize.errors import Infeasible

        raise Infeasible(
            f"{c.source.where} has {', '.join(present[:3])} but no samples of them in the window ({window})"
            + (f" matching {sel}" if sel else "")
            + ".",
            "An empty window has nothing to compare with the plan.",
            "Move the window (--window, --end) to when the system ran, or loosen --selector.",
        )
    raise BadInput(
        f"{c.source.where} has none of the DCGM exporter or vLLM metrics rightsize reads.",
        f"Tried {', '.join(tried)}" + (f" with {sel}" if sel else "") + ".",
        "Scrape NVIDIA's dcgm-exporter and vLLM's /metrics into this Prometheus, or point --prometheus at the "
        "one that does.",
    )
