"""The outcome of `rightsize monitor`: measured against planned, findings, re-plan.

`MonitorResult.to_dict()` is the JSON the report renders (and `--format json` prints):
the window and the metric names that answered, a measured-against-planned summary, the
24-hour profiles, down-sampled time series for the charts, the findings and the re-plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.advise.findings import Finding
from rightsize.constants import REPORT_SCHEMA_VERSION
from rightsize.monitor import gpu_view
from rightsize.monitor.compare import by_hour, mean, mean_activity, pct, replicas_by_hour
from rightsize.monitor.plan_view import Planned
from rightsize.monitor.queries import Observed
from rightsize.monitor.replan import Replan

SCHEMA_VERSION = REPORT_SCHEMA_VERSION  # the report JSON schema this dict follows
MAX_CHART_POINTS = 400


@dataclass
class MonitorResult:
    planned: Planned
    observed: Observed
    findings: list[Finding]
    replan: Replan | None
    source: str
    selectors: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        o, p = self.observed, self.planned
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "monitor",
            "name": p.name,
            "plan_kind": p.kind,
            "source": self.source,
            "window": {
                "start_s": o.window.start_s,
                "end_s": o.window.end_s,
                "step_s": o.window.step_s,
                "duration_s": o.window.duration_s,
            },
            "selectors": self.selectors,
            "metrics_used": [u.as_dict() for u in o.used.values()],
            "metrics_missing": list(o.missing),
            "planned": p.as_dict(),
            "summary": summary_rows(o, p),
            "by_hour": hourly_profiles(o, p),
            "series": chart_series(o),
            "findings": [f.as_dict() for f in self.findings],
            "replan": self.replan.as_dict() if self.replan else None,
        }


def _row(what: str, measured: float | None, planned: float | None, unit: str, worse: str) -> dict[str, Any]:
    """One measured-against-planned line; `worse` says which direction is bad ("above"/"below"/"off")."""
    ratio = None
    if measured is not None and math.isfinite(measured) and measured >= 0:  # readers refuse the rest
        ratio = measured / planned if planned and math.isfinite(planned) and planned > 0 else None
    status = "n/a"
    if ratio is not None:
        bad = {"above": ratio > 1.0, "below": ratio < 1.0, "off": abs(ratio - 1.0) > 0.25}[worse]
        status = "off plan" if bad else "within plan"
    return {
        "what": what,
        "measured": measured,
        "planned": planned,
        "unit": unit,
        "ratio": ratio,
        "status": status,
    }


def summary_rows(o: Observed, p: Planned) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    s = o.serving
    if "request_success" in s:
        rate = s["request_success"]
        rows.append(_row("request rate, mean", mean(rate), p.mean_rate_rps, "req/s", "off"))
        design = p.peak_rate_rps * (1 + p.headroom) if p.peak_rate_rps else None
        rows.append(
            _row("request rate, P95 against the design rate", pct(rate, 95), design, "req/s", "above")
        )
        if p.replica_capacity_rps:
            busiest = max((v for v in by_hour(o.grid, rate) if v is not None), default=None)
            util = busiest / (p.replicas * p.replica_capacity_rps) if busiest is not None else None
            rows.append(
                _row("replica utilisation, busiest hour", util, p.utilisation_target, "ratio", "above")
            )
    for key, slo_key, label in (
        ("time_to_first_token", "ttft_s", "TTFT"),
        ("inter_token_latency", "tpot_s", "ITL"),
    ):
        if key in s:
            rows.append(
                _row(
                    f"{label} P{p.slo_percentile:g}, worst step",
                    pct(s[key], 100),
                    p.slo.get(slo_key),
                    "s",
                    "above",
                )
            )
    act = mean_activity(o)
    if act is not None:
        rows.append(_row("GPU activity, mean", mean(act), p.gpu_activity, "ratio", "off"))
    if o.gpu.get("power_usage") or "power_usage" in o.fleet:
        avg = gpu_view.power_mean_w(o)
        rows.append(_row("power per GPU, mean", avg, p.gpu_typical_w, "W", "above"))
    if o.gpu.get("fb_used") or "fb_used" in o.fleet:
        top = gpu_view.memory_max_bytes(o)
        rows.append(_row("memory per GPU, max", top or 0.0, p.memory_bytes_per_gpu, "bytes", "above"))
    for label, planned_mean in (("prompt", p.prompt_mean_tokens), ("output", p.output_mean_tokens)):
        h = o.lengths.get(label)
        if h is not None:
            rows.append(_row(f"{label} length, mean", h.mean, planned_mean, "tokens", "off"))
    if "kv_cache_usage" in s:
        rows.append(_row("KV cache used, P95", pct(s["kv_cache_usage"], 95), None, "ratio", "above"))
    return rows


def hourly_profiles(o: Observed, p: Planned) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    s = o.serving
    if "request_success" in s:
        out["rate_mean_rps"] = by_hour(o.grid, s["request_success"])
        out["rate_p95_rps"] = by_hour(o.grid, s["request_success"], "p95")
        out["replicas_needed"] = replicas_by_hour(o, p)
    for key, name in (
        ("time_to_first_token", "ttft_s"),
        ("inter_token_latency", "itl_s"),
        ("num_requests_waiting", "waiting"),
    ):
        if key in s:
            out[name] = by_hour(o.grid, s[key])
    act = mean_activity(o)
    if act is not None:
        out["gpu_activity"] = by_hour(o.grid, act)
    return out


def _thin(values: np.ndarray) -> list[float | None]:
    step = max(1, int(np.ceil(values.size / MAX_CHART_POINTS)))
    return [None if not np.isfinite(v) else float(v) for v in values[::step]]


def chart_series(o: Observed) -> dict[str, Any]:
    """Time series for the charts, thinned to at most MAX_CHART_POINTS points each."""
    step = max(1, int(np.ceil(o.grid.size / MAX_CHART_POINTS)))
    out: dict[str, Any] = {"t_s": [float(t) for t in o.grid[::step]]}
    for key in (
        "request_success",
        "time_to_first_token",
        "inter_token_latency",
        "num_requests_waiting",
        "kv_cache_usage",
    ):
        if key in o.serving:
            out[key] = _thin(o.serving[key])
    for key in ("gr_engine_active", "gpu_util", "power_usage", "fb_used"):
        lines = gpu_view.chart_lines(o, key)
        if lines:
            out[f"{key}_by_gpu"] = {gid: _thin(v) for gid, v in lines.items()}
    return out
