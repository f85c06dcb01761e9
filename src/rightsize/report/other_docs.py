"""Documents for validation results, profiles and any other result with `to_dict()`.

A profile (from `rightsize profile`) is a dict (or a list of JSONL records) of this shape:

    {"kind": "profile", "schema_version": 1, "name": str, "model": str, "device": str,
     "accelerator": str | None, "memory_capacity_bytes": float | None,
     "environment": {...versions...},
     "points": [{"batch": int, "seq": int, "step_s": float, "peak_memory_bytes": float,
                 "tokens_per_s": float (optional), "mfu": float (optional), ...}],
     "telemetry": [{"t_s": float, "gpu_util_fraction": float, "cpu_util_fraction": float,
                    "power_w": float, "gpu_memory_bytes": float, "temperature_c": float, ...}],
     "predicted": [{"batch": int, "seq": int, "step_s": float}] (optional)}

As JSONL, the records may come one per line: a header with kind "profile", points (with
`step_s`) and telemetry samples (with `t_s`) in any order; `profile_from_records` folds them.
"""

from __future__ import annotations

import statistics
from typing import Any

from rightsize.report import svg, svg_ranges, units
from rightsize.report.document import Chart, Document, Section, Table, generic_section, records_table


def validation_document(result: dict[str, Any], title: str = "Validation") -> Document:
    doc = Document("validation", title, "predictions against published runs")
    summary = result.get("summary", {})
    rows = []
    for metric, s in summary.items():
        med = units.pct(s["median_abs_error"]) if s.get("median_abs_error") is not None else "-"
        mx = units.pct(s["max_abs_error"]) if s.get("max_abs_error") is not None else "-"
        rows.append([metric, str(s.get("n", 0)), med, mx, str(s.get("not_predicted", 0))])
        if s.get("n"):
            doc.key_numbers.append((f"{metric}: median |error|", f"{med} (n={s['n']})"))
    sec = Section("summary", "Summary", brief=True)
    sec.tables.append(Table(["metric", "n", "median |error|", "max |error|", "not predicted"], rows))
    doc.sections.append(sec)
    fam = _family_section(result.get("by_family") or {})
    if fam is not None:
        doc.sections.append(fam)
    cases = Section("cases", "Cases")
    crow = []
    bars = []
    for r in result.get("rows", []):
        err = r.get("error")
        crow.append(
            [
                r["id"],
                r["metric"],
                f"{r['published']:,.4g}",
                f"{r['predicted']:,.4g}" if r.get("predicted") is not None else "-",
                f"{err:+.1%}" if err is not None else "n/a",
                r.get("reason", ""),
            ]
        )
        if err is not None:
            bars.append((f"{r['id'][:34]}", float(err), 0.0, "", ""))
    cases.tables.append(
        Table(
            ["case", "metric", "published", "predicted", "error", "note"],
            crow,
            align=["l", "l", "r", "r", "r", "l"],
        )
    )
    if bars:
        t = "Prediction error per case (predicted / published - 1)"
        cases.charts.append(
            Chart(
                "validation-errors",
                t,
                svg_ranges.tornado("validation-errors", t, bars, lambda v: f"{v:+.0%}"),
            )
        )
    doc.sections.append(cases)
    return doc


def _family_section(by_family: dict[str, Any]) -> Section | None:
    """Accuracy per accelerator family (issue 28): rows, median / worst |error|, coverage."""
    if not by_family:
        return None
    rows = []
    for fid, s in by_family.items():
        med = units.pct(s["median_abs_error"]) if s.get("median_abs_error") is not None else "-"
        mx = units.pct(s["max_abs_error"]) if s.get("max_abs_error") is not None else "-"
        cov = units.pct(s["coverage_p10_p90"]) if s.get("coverage_p10_p90") is not None else "-"
        rows.append([fid, str(s["rows"]), med, mx, cov, str(s["not_predicted"])])
    sec = Section("families", "By accelerator family", brief=True)
    sec.tables.append(
        Table(["family", "n", "median |error|", "max |error|", "P10-P90 coverage", "not predicted"], rows)
    )
    return sec


def profile_from_records(records: Any) -> dict[str, Any]:
    """A profile dict from a dict (returned as is) or a list of JSONL records."""
    if isinstance(records, dict):
        return records
    out: dict[str, Any] = {"kind": "profile", "points": [], "telemetry": []}
    for r in records:
        if not isinstance(r, dict):
            continue
        if "step_s" in r:
            out["points"].append(r)
        elif "t_s" in r:
            out["telemetry"].append(r)
        else:
            out.update({k: v for k, v in r.items() if k not in ("points", "telemetry")})
            out["points"] += r.get("points", [])
            out["telemetry"] += r.get("telemetry", [])
    return out


def _tokens_per_s(p: dict[str, Any]) -> float | None:
    if isinstance(p.get("tokens_per_s"), int | float):
        return float(p["tokens_per_s"])
    if p.get("step_s") and p.get("batch") and p.get("seq"):
        return float(p["batch"]) * float(p["seq"]) / float(p["step_s"])
    return None


def profile_document(profile: dict[str, Any], title: str = "Profile") -> Document:
    """A profile's report: key numbers, the scaling curves over the measured points, the
    telemetry over time and the environment it ran in."""
    prof = profile_from_records(profile)
    points = [p for p in prof.get("points", []) if isinstance(p, dict)]
    tele = [t for t in prof.get("telemetry", []) if isinstance(t, dict)]
    name = prof.get("name") or prof.get("model") or "profile"
    doc = Document("profile", f"{title}: {name}", f"device {prof.get('device', '?')}")
    kn = doc.key_numbers
    kn.append(("measurements", f"{len(points)} points, {len(tele)} telemetry samples"))
    tps = [(r, p) for p in points if (r := _tokens_per_s(p)) is not None]
    if tps:
        top, at = max(tps, key=lambda x: x[0])
        kn.append(
            ("best throughput", f"{top:,.0f} tokens/s at batch {at.get('batch')} x seq {at.get('seq')}")
        )
    mems = [
        float(p["peak_memory_bytes"]) for p in points if isinstance(p.get("peak_memory_bytes"), int | float)
    ]
    if mems:
        kn.append(("largest peak memory", units.gib(max(mems))))
    if points:
        doc.sections.append(_scaling_section(prof, points))
    if tele:
        doc.sections.append(_telemetry_section(tele))
    env = prof.get("environment")
    if isinstance(env, dict) and env:
        doc.sections.append(generic_section("environment", "Environment", env))
    return doc


Series = list[tuple[str, list[float], list[float]]]


def _line_chart(key: str, title: str, series: Series, x: str, y: str, y_fmt: Any = None, **kw: Any) -> Chart:
    """A line chart whose x axis (and, unless given, y axis) reads as whole numbers."""
    whole = lambda v: f"{v:,.0f}"  # noqa: E731
    return Chart(key, title, svg.lines(key, title, series, x, y, whole, y_fmt or whole, **kw))


def _scaling_series(prof: dict[str, Any], points: list[dict[str, Any]]) -> tuple[Series, Series, Series]:
    """(step time, tokens/s, peak GiB) against batch, one line per sequence length; the
    predicted step times as one more line."""
    seqs = sorted({p.get("seq") for p in points if p.get("batch") is not None}, key=lambda s: (s is None, s))
    step_series, tps_series, mem_series = [], [], []
    for s in seqs:
        mine = sorted(
            (p for p in points if p.get("seq") == s and p.get("batch") is not None), key=lambda p: p["batch"]
        )
        lab = f"seq {s}" if s is not None else "measured"
        step_series.append((lab, [float(p["batch"]) for p in mine], [float(p["step_s"]) for p in mine]))
        tt = [(float(p["batch"]), _tokens_per_s(p)) for p in mine]
        tps_series.append((lab, [b for b, t in tt if t is not None], [t for _, t in tt if t is not None]))
        mm = [(float(p["batch"]), p.get("peak_memory_bytes")) for p in mine]
        mem_series.append(
            (
                lab,
                [b for b, m in mm if isinstance(m, int | float)],
                [float(m) / 2**30 for _, m in mm if isinstance(m, int | float)],
            )
        )
    pred = prof.get("predicted")
    if isinstance(pred, list) and pred:
        pp = sorted(
            (p for p in pred if isinstance(p, dict) and p.get("batch") is not None), key=lambda p: p["batch"]
        )
        step_series.append(("predicted", [float(p["batch"]) for p in pp], [float(p["step_s"]) for p in pp]))
    return step_series, tps_series, mem_series


def _scaling_section(prof: dict[str, Any], points: list[dict[str, Any]]) -> Section:
    sec = Section("scaling", "Scaling curves", brief=True)
    step_series, tps_series, mem_series = _scaling_series(prof, points)
    x = "batch (sequences)"
    sec.charts.append(
        _line_chart("scaling", "Step time against batch size", step_series, x, "step time", units.seconds)
    )
    if any(s[1] for s in tps_series):
        sec.charts.append(
            _line_chart("scaling-throughput", "Throughput against batch size", tps_series, x, "tokens/s")
        )
    if any(s[1] for s in mem_series):
        cap = prof.get("memory_capacity_bytes")
        h = [(float(cap) / 2**30, "capacity")] if isinstance(cap, int | float) else []
        sec.charts.append(
            _line_chart(
                "scaling-memory",
                "Peak memory against batch size (GiB)",
                [s for s in mem_series if s[1]],
                x,
                "GiB",
                hlines=h,
            )
        )
    sec.tables.append(records_table(points, "measurements", first="batch"))
    return sec


def _telemetry_section(tele: list[dict[str, Any]]) -> Section:
    sec = Section("telemetry", "Telemetry", brief=True)
    ts = [float(t["t_s"]) for t in tele]
    util = [
        (
            k.removesuffix("_fraction").replace("_", " "),
            [ts[i] for i, t in enumerate(tele) if isinstance(t.get(k), int | float)],
            [100.0 * float(t[k]) for t in tele if isinstance(t.get(k), int | float)],
        )
        for k in ("gpu_util_fraction", "cpu_util_fraction", "gpu_memory_util_fraction")
    ]
    util = [u for u in util if u[1]]
    if util:
        sec.charts.append(_line_chart("telemetry", "Utilisation over time (%)", util, "time (s)", "%"))
    pw = [
        (ts[i], float(t["power_w"])) for i, t in enumerate(tele) if isinstance(t.get("power_w"), int | float)
    ]
    if pw:
        power = [("power", [a for a, _ in pw], [b for _, b in pw])]
        sec.charts.append(_line_chart("telemetry-power", "Power over time (W)", power, "time (s)", "W"))
    keys = [k for k in tele[0] if k != "t_s" and isinstance(tele[0][k], int | float)]
    rows = []
    for k in keys:
        vals = [float(t[k]) for t in tele if isinstance(t.get(k), int | float)]
        rows.append([units.label(k), units.value(k, statistics.fmean(vals)), units.value(k, max(vals))])
    sec.tables.append(Table(["signal", "mean", "max"], rows, "telemetry summary"))
    return sec


def _candidate_charts(best: dict[str, Any], alternatives: Any) -> list[Chart]:
    """Step breakdown, memory against capacity and the alternatives' trade-off, from any
    plan kind whose chosen candidate has `step` (seconds, with a `step_s` or `step_time_s`
    total) and `memory` (`*_bytes` with `total_bytes` / `capacity_bytes`)."""
    out = []
    step = best.get("step")
    if isinstance(step, dict):
        total_key = next((k for k in ("step_time_s", "step_s") if isinstance(step.get(k), int | float)), None)
        parts = [
            (units.label(k), float(v))
            for k, v in step.items()
            if k != total_key and k.endswith("_s") and isinstance(v, int | float) and v > 0
        ]
        if total_key and parts:
            total = float(step[total_key])
            title = f"Step time breakdown ({units.seconds(total)} per step)"
            out.append(
                Chart(
                    "step-breakdown", title, svg.hbars("step-breakdown", title, parts, units.seconds, total)
                )
            )
    mem = best.get("memory")
    if isinstance(mem, dict) and isinstance(mem.get("capacity_bytes"), int | float):
        parts = [
            (units.label(k), float(v) / 2**30)
            for k, v in mem.items()
            if k.endswith("_bytes")
            and k not in ("total_bytes", "capacity_bytes")
            and isinstance(v, int | float)
        ]
        if parts:
            title = "Memory per GPU against capacity (GiB; dashed line: HBM)"
            row = (str(best.get("accelerator", "chosen")), parts, float(mem["capacity_bytes"]) / 2**30)
            out.append(
                Chart("memory", title, svg.stacked_hbars("memory", title, [row], lambda v: f"{v:,.0f} GiB"))
            )
    cands = [best] + [a for a in alternatives or [] if isinstance(a, dict)]
    for xk, yk in (
        ("time_to_train_s", "cost_usd"),
        ("latency_p99_s", "cost_usd"),
        ("time_to_train_s", "gpu_hours"),
    ):
        pts = [
            svg.Point(
                float(c[xk]),
                float(c[yk]),
                f"{c.get('gpus', '?')} x {c.get('accelerator', '?')}",
                str(c.get("accelerator", "")),
                c is best,
            )
            for c in cands
            if isinstance(c.get(xk), int | float) and isinstance(c.get(yk), int | float)
        ]
        if len(pts) >= 2:
            title = f"Alternatives: {units.label(xk)} against {units.label(yk)}; the choice ringed"
            yf = (lambda v: "$" + units.short(v)) if yk == "cost_usd" else units.short
            out.append(
                Chart(
                    "pareto",
                    title,
                    svg.scatter("pareto", title, pts, units.label(xk), units.label(yk), units.seconds, yf),
                )
            )
            break
    return out


def generic_document(result: Any, title: str = "Plan") -> Document:
    """Any result with `to_dict()` (or a dict): its scalars as key numbers, each nested part
    as a section, plus the shared sections when the result is a plan."""
    from rightsize.report.plan_doc import _shared

    d = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    kind = str(d.get("kind", type(result).__name__))
    name = d.get("name") or d.get("model") or kind
    doc = Document(kind, f"{title}: {name}", kind.replace("_", " "))
    skip = {"kind", "name", "schema_version", "sizing", "uncertainty", "findings", "checklists"}
    if isinstance(d.get("best"), dict) and not isinstance(result, dict):
        from rightsize.report.plan_doc import headline_numbers

        doc.key_numbers += headline_numbers(d["best"], result)
    for k, v in d.items():
        if k not in skip and not isinstance(v, dict | list):
            doc.key_numbers.append((units.label(k), units.value(k, v)))
    for k, v in d.items():
        if k not in skip and isinstance(v, dict | list) and v:
            sec = generic_section(k, units.label(k).capitalize(), v, brief=k in ("best", "chosen"))
            if k in ("best", "chosen") and isinstance(v, dict):
                sec.charts.extend(_candidate_charts(v, d.get("alternatives")))
            doc.sections.append(sec)
    if not isinstance(result, dict):
        _shared(doc, result)
    return doc
