"""The monitor report: measured against planned, findings, hour-of-day profile, time-series
charts (measured against the planned level) and the re-plan, from `MonitorResult.to_dict()`.
"""

from __future__ import annotations

import math
import time
from typing import Any

from rightsize.report import svg, units
from rightsize.report.document import Chart, Document, Section, Table

HOURS = range(24)


def _utc(t_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t_s))


def _fmt(v: Any, unit: str) -> str:
    if v is None or not math.isfinite(float(v)):
        return "-"  # not measured (a reader refuses impossible values; nothing non-finite is shown)
    if unit == "ratio":
        return units.pct(float(v))
    if unit == "s":
        return units.seconds(float(v))
    if unit == "bytes":
        return units.gib(float(v))
    if unit == "W":
        return units.watts(float(v))
    if unit == "usd":
        return units.usd(float(v))
    return f"{units.number(float(v))} {unit}"


def _evidence(ev: dict[str, Any]) -> str:
    parts = []
    for k, v in ev.items():
        if v is None or (isinstance(v, list) and len(v) == 24):
            continue  # hourly series are drawn in the hour-of-day section
        if isinstance(v, dict):
            v = ", ".join(f"{a} {units.number(b)}" for a, b in v.items())
            parts.append(f"{units.label(k)}: {v}")
        elif isinstance(v, list):
            parts.append(f"{units.label(k)} {', '.join(str(x) for x in v)}")
        else:
            parts.append(f"{units.label(k)} {units.value(k, v)}")
    return "; ".join(parts)


def _summary(d: dict[str, Any]) -> Section:
    sec = Section("measured", "Measured against planned", brief=True)
    rows = [
        [r["what"], _fmt(r["measured"], r["unit"]), _fmt(r["planned"], r["unit"]),
         "-" if r["ratio"] is None else f"{r['ratio']:.2f}x", r["status"]]
        for r in d.get("summary", [])
    ]  # fmt: skip
    sec.tables.append(
        Table(["quantity", "measured", "planned", "ratio", "status"], rows, align=["l", "r", "r", "r", "l"])
    )
    return sec


def _findings(d: dict[str, Any]) -> Section:
    sec = Section("findings", "Findings: where the running system departs from the plan", brief=True)
    fs = d.get("findings") or []
    if not fs:
        sec.text.append("No finding: the system runs within its plan on every measured quantity.")
        return sec
    rows = [
        [str(i), f["severity"], f["category"], f["title"], _evidence(f["evidence"]), f["fix"]]
        for i, f in enumerate(fs, 1)
    ]
    sec.tables.append(
        Table(
            ["#", "severity", "class", "finding", "evidence", "fix"],
            rows,
            align=["r", "l", "l", "l", "l", "l"],
            brief_columns=[0, 1, 3],
        )
    )
    return sec


def _hourly(d: dict[str, Any]) -> Section | None:
    h = d.get("by_hour") or {}
    if not h:
        return None
    p = d.get("planned") or {}
    sec = Section("by-hour", "By hour of day (UTC)")
    cols = [("rate_mean_rps", "rate mean", "req/s"), ("rate_p95_rps", "rate P95", "req/s"),
            ("replicas_needed", "replicas needed", ""), ("gpu_activity", "GPU activity", "ratio"),
            ("ttft_s", "TTFT", "s"), ("itl_s", "ITL", "s"), ("waiting", "queued", "")]  # fmt: skip
    present = [c for c in cols if c[0] in h]
    rows = []
    for hour in HOURS:
        row = [f"{hour:02d}:00"]
        for key, _, unit in present:
            v = h[key][hour] if hour < len(h[key]) else None
            row.append(
                "-"
                if v is None
                else (str(v) if key == "replicas_needed" else _fmt(v, unit).replace(" req/s", ""))
            )
        rows.append(row)
    if "replicas_needed" in h:
        sec.text.append(f"Planned: {p.get('replicas')} replicas at every hour.")
    sec.tables.append(Table(["hour"] + [c[1] for c in present], rows))
    if "rate_p95_rps" in h:
        refs = []
        if p.get("peak_rate_rps"):
            refs.append((float(p["peak_rate_rps"]), "planned peak"))
            refs.append(
                (float(p["peak_rate_rps"]) * (1 + float(p.get("headroom") or 0)), "design (peak + headroom)")
            )
        series = [(lab, list(HOURS), [v if v is not None else float("nan") for v in h[k]]) for k, lab in
                  (("rate_mean_rps", "measured mean"), ("rate_p95_rps", "measured P95")) if k in h]  # fmt: skip
        sec.charts.append(Chart("monitor-rate-by-hour", "Request rate by hour of day", svg.lines(
            "monitor-rate-by-hour", "Request rate by hour of day against the plan", series, "hour of day (UTC)",
            "requests/s", lambda x: f"{x:.0f}", units.short, hlines=refs)))  # fmt: skip
    return sec


def _time_chart(name: str, title: str, t: list[float], lines: dict[str, list[Any]], ylabel: str,
                yfmt: svg.Fmt, refs: list[tuple[float, str]], scale: float = 1.0) -> Chart:  # fmt: skip
    t0 = t[0] if t else 0.0
    xs = [(x - t0) / 3600.0 for x in t]
    series = [
        (lab, xs, [float("nan") if v is None else v * scale for v in vals]) for lab, vals in lines.items()
    ]
    text = svg.lines(name, title, series, "hours since the window's start", ylabel, lambda x: f"{x:.0f}", yfmt,
                     hlines=[(v * scale, lab) for v, lab in refs])  # fmt: skip
    return Chart(
        name, title, text, f"Measured series (lines) against the planned level (dashed); from {_utc(t0)}."
    )


def _series(d: dict[str, Any]) -> Section | None:
    s, p = d.get("series") or {}, d.get("planned") or {}
    t = s.get("t_s") or []
    if len(t) < 2:
        return None
    sec = Section("time-series", "Over the window: measured against planned")
    if "request_success" in s:
        refs = []
        if p.get("peak_rate_rps"):
            refs = [
                (float(p["peak_rate_rps"]), "planned peak"),
                (float(p["usable_capacity_rps"] or 0), "usable capacity"),
            ]
        sec.charts.append(
            _time_chart(
                "monitor-rate",
                "Request rate",
                t,
                {"measured": s["request_success"]},
                "requests/s",
                units.short,
                refs,
            )
        )
    slo = p.get("slo") or {}
    for key, slo_key, label in (
        ("time_to_first_token", "ttft_s", "Time to first token"),
        ("inter_token_latency", "tpot_s", "Inter-token latency"),
    ):
        if key in s:
            refs = [(float(slo[slo_key]), "SLO")] if slo.get(slo_key) else []
            sec.charts.append(_time_chart(f"monitor-{slo_key.removesuffix('_s')}", f"{label} P{p.get('slo_percentile', 95):g}", t,
                                          {"measured": s[key]}, "ms", lambda v: f"{v:.0f}", refs, 1e3))  # fmt: skip
    act = s.get("gr_engine_active_by_gpu") or s.get("gpu_util_by_gpu")
    if act:
        refs = [(float(p["gpu_activity"]), "planned mean")] if p.get("gpu_activity") else []
        sec.charts.append(
            _time_chart(
                "monitor-gpu-activity", "GPU activity per GPU", t, act, "%", lambda v: f"{v:.0f}", refs, 100.0
            )
        )
    power = s.get("power_usage_by_gpu")
    if power:
        refs = [(float(p["gpu_typical_w"]), "planned typical")] if p.get("gpu_typical_w") else []
        sec.charts.append(_time_chart("monitor-power", "Power per GPU", t, power, "W", units.short, refs))
    fb = s.get("fb_used_by_gpu")
    if fb:
        refs = (
            [(float(p["memory_bytes_per_gpu"]) / 2**30, "planned peak")]
            if p.get("memory_bytes_per_gpu")
            else []
        )
        fb_gib = {k: [None if v is None else v / 2**30 for v in vals] for k, vals in fb.items()}
        sec.charts.append(
            _time_chart("monitor-memory", "GPU memory used", t, fb_gib, "GiB", units.short, refs)
        )
    return sec


def _replan(d: dict[str, Any]) -> Section | None:
    rp = d.get("replan")
    if not rp:
        return None
    sec = Section(
        "replan", "Re-plan from the observed traffic (a recommendation; nothing is changed)", brief=True
    )
    rec = rp.get("recommendation")
    if rec:
        sec.text.append(
            f"Sized for the 95th percentile of the observed request rate, {rec['target_rps']:.3g} req/s (mean "
            f"{rec['mean_rps']:.3g}), plus the plan's headroom; over {rec['history_days']:.1f} days of history the "
            f"bounds are {rec['lower_rps']:.3g} to {rec['upper_rps']:.3g} req/s (upper bound x{rec['upper_factor']:.2f} "
            "for the history's length, as the Kubernetes VPA recommender widens it)."
        )
    before, after = rp.get("before") or {}, rp.get("after") or {}
    if after:
        keys = [("accelerator", ""), ("tp", ""), ("replicas", ""), ("gpus", ""), ("replica_capacity_rps", "req/s"),
                ("peak_rate_rps", "req/s"), ("usd_per_month", "usd")]  # fmt: skip
        rows = [
            [
                units.label(k),
                _fmt(before.get(k), u) if u else str(before.get(k)),
                _fmt(after.get(k), u) if u else str(after.get(k)),
            ]
            for k, u in keys
        ]
        if rp.get("replicas_range"):
            lo, hi = rp["replicas_range"]
            rows.append(["replicas for the bounds", "-", f"{lo} to {hi}"])
        sec.tables.append(Table(["", "plan", "re-plan"], rows, "plan against re-plan", ["l", "r", "r"]))
    changes = rp.get("spec_changes") or {}
    if changes:
        sec.bullets.extend(f"{k}: {units.number(a)} -> {units.number(b)}" for k, (a, b) in changes.items())
    hb, ha = rp.get("replicas_by_hour_before") or [], rp.get("replicas_by_hour_after") or []
    if ha:
        rows = [
            [f"{h:02d}:00", str(hb[h]) if h < len(hb) else "-", "-" if ha[h] is None else str(ha[h])]
            for h in HOURS
        ]
        sec.tables.append(Table(["hour", "planned replicas", "needed (re-plan)"], rows, "replicas by hour"))
        sec.charts.append(Chart("monitor-replicas-by-hour", "Replicas by hour", svg.lines(
            "monitor-replicas-by-hour", "Replicas by hour of day: plan and re-plan",
            [("plan", list(HOURS), [float(v) for v in hb] or [float("nan")] * 24),
             ("re-plan (needed)", list(HOURS), [float("nan") if v is None else float(v) for v in ha])],
            "hour of day (UTC)", "replicas", lambda x: f"{x:.0f}", lambda y: f"{y:.0f}")))  # fmt: skip
    eff = rp.get("efficiency") or {}
    if eff.get("decode_speed_ratio"):
        sec.bullets.append(
            f"Decode speed at planned load: observed ITL {units.seconds(eff['observed_itl_at_percentile_s'])} "
            f"against {units.seconds(eff['planned_tpot_at_percentile_s'])} planned (ratio {eff['decode_speed_ratio']:.2f})."
        )
    sec.bullets.extend(rp.get("notes") or [])
    return sec


def _metrics(d: dict[str, Any]) -> Section:
    sec = Section("metrics", "Metrics read")
    rows = [[u["key"], u["name"], u["unit"], u["query"]] for u in d.get("metrics_used", [])]
    sec.tables.append(Table(["quantity", "metric", "unit", "PromQL"], rows, align=["l"] * 4))
    if d.get("metrics_missing"):
        sec.text.append("Not found (not compared): " + ", ".join(d["metrics_missing"]) + ".")
    return sec


def monitor_document(d: dict[str, Any], title: str = "Monitor") -> Document:
    w, p = d.get("window") or {}, d.get("planned") or {}
    fs = d.get("findings") or []
    doc = Document(
        "monitor",
        f"{title}: {d.get('name', '')}",
        subtitle=(
            f"{d.get('source')} from {_utc(w.get('start_s', 0))} to {_utc(w.get('end_s', 0))}, every "
            f"{units.seconds(float(w.get('step_s', 0)))}"
        ),
        decision=(
            f"{len(fs)} finding{'s' if len(fs) != 1 else ''}: " + "; ".join(f["title"] for f in fs[:3])
            if fs
            else "The running system is within its plan."
        ),
    )
    doc.key_numbers.append(("plan", f"{p.get('replicas')} x {p.get('accelerator')} ({p.get('gpus')} GPUs)"))
    after = (d.get("replan") or {}).get("after") or {}
    if after:
        doc.key_numbers.append(
            ("re-plan", f"{after.get('replicas')} x {after.get('accelerator')} ({after.get('gpus')} GPUs)")
        )
        if after.get("usd_per_month") and p.get("usd_per_month"):
            doc.key_numbers.append(
                ("cost per month", f"{units.usd(p['usd_per_month'])} -> {units.usd(after['usd_per_month'])}")
            )
    for section in (_summary(d), _findings(d), _replan(d), _hourly(d), _series(d), _metrics(d)):
        if section is not None:
            doc.sections.append(section)
    return doc
