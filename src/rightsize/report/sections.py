"""Sections every plan kind shares: the advisor's findings, the SCALE and DEPLOY
checklists, the uncertainty ranges (with margins against them) and the sizing (nodes,
fabric, storage, reliability, power, cost, margins, growth, sensitivity)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rightsize.advise.checklists import ANSWERED, Item
from rightsize.advise.findings import Finding
from rightsize.report import svg, svg_ranges, units
from rightsize.report.document import Chart, Section, Table, generic_section, records_table

SIZING_TITLES = {
    "nodes": "Nodes and racks",
    "fabric": "Network fabric",
    "storage": "Storage",
    "reliability": "Reliability and checkpoints",
    "power": "Power and cooling",
    "cost": "Cost",
    "margins": "Margins",
    "growth": "Growth plan",
    "sensitivity": "Sensitivity",
    "warnings": "Sizing warnings",
}
# Uncertainty metrics in report order, with their labels and formatters.
UNCERTAINTY_METRICS: dict[str, tuple[str, Callable[[float], str]]] = {
    "time_to_train_s": ("time to train", units.seconds),
    "step_time_s": ("step time", units.seconds),
    "gpu_hours": ("GPU-hours", units.count),
    "cost_usd": ("cost (on demand)", units.usd),
    "tokens_per_s_per_gpu": ("tokens/s per GPU", lambda v: f"{v:,.0f}"),
    "mfu": ("MFU", units.pct),
    "replicas": ("replicas needed", lambda v: f"{v:,.0f}"),
    "replica_capacity_rps": ("capacity per replica", lambda v: f"{v:,.2f} req/s"),
    "cost_usd_per_hour": ("cost per hour", units.usd),
    "output_tokens_per_s": ("output tokens/s", lambda v: f"{v:,.0f}"),
}
# A margin line's `unit` word, and the formatter its base and planned values take.
MARGIN_UNITS: dict[str, Callable[[float], str]] = {
    "bytes": units.nbytes,
    "days": lambda v: f"{v:,.1f} d",
    "GPUs": units.count,
    "replicas": units.count,
    "req/s": lambda v: f"{v:,.2f} req/s",
}


def source_line(s: dict[str, Any]) -> str:
    """One catalog or price source as a bullet: the figure, its value in its own unit (from the
    figure's name: `host_memory_bytes` reads 2.20 TB), where it came from and when."""
    what = s.get("item", s.get("figure"))
    v = s.get("value")
    parts = []
    if what is not None:
        name = str(what).rsplit(".", 1)[-1]
        parts.append(f"{what} = {units.value(name, v)}" if v is not None else str(what))
    elif v is not None:
        parts.append(units.number(v))
    if s.get("source"):
        parts.append(str(s["source"]))
    if s.get("as_of"):
        parts.append(f"as of {s['as_of']}")
    rest = [
        f"{k}: {units.value(k, x)}"
        for k, x in s.items()
        if k not in ("item", "figure", "value", "source", "as_of")
    ]
    return "source: " + "; ".join(parts + rest)


def margins_table(rows: list[dict[str, Any]]) -> Table:
    """The margin lines, base and planned in each line's own unit (bytes as TB, days as d)."""

    def cell(fmt: Callable[[float], str], v: Any) -> str:
        number = isinstance(v, int | float) and not isinstance(v, bool)
        return fmt(float(v)) if number else units.number(v)

    out = []
    for r in rows:
        fmt = MARGIN_UNITS.get(str(r.get("unit", "")), units.number)
        frac = r.get("margin_fraction")
        out.append(
            [
                str(r.get("what", "")),
                cell(fmt, r.get("base")),
                cell(fmt, r.get("planned", r.get("with_margin"))),
                units.pct(frac) if isinstance(frac, int | float) else "-",
                str(r.get("applied", "")),
            ]
        )
    return Table(["what", "base", "planned", "margin", "applied"], out, align=["l", "r", "r", "r", "l"])


def _evidence(ev: dict[str, Any]) -> str:
    return "; ".join(f"{units.label(k)} {units.value(k, v)}" for k, v in ev.items() if v is not None)


def findings_section(findings: list[Finding]) -> Section:
    sec = Section("findings", "Advisor: findings", brief=True)
    if not findings:
        sec.text.append("No finding: every rule's threshold is met.")
        return sec
    sec.text.append("Ranked by impact: the share of the run's time or cost each finding puts at stake.")
    rows = [
        [str(i), f.severity, f.category, f.title, _evidence(f.evidence), f.fix]
        for i, f in enumerate(findings, 1)
    ]
    sec.tables.append(
        Table(
            ["#", "severity", "class", "finding", "evidence", "fix"],
            rows,
            align=["r", "l", "l", "l", "l", "l"],
        )
    )
    return sec


def checklist_sections(lists: dict[str, list[Item]]) -> list[Section]:
    titles = {
        "SCALE": (
            "scale-review",
            "SCALE review (scale, compute, interconnect, latency and locality, economics)",
        ),
        "DEPLOY": (
            "deploy-checklist",
            "DEPLOY checklist (define, estimate, pick platform, load-test, observe, yield plan)",
        ),
    }
    out = []
    for name, items in lists.items():
        if not items:
            continue
        id_, title = titles.get(name, (name.lower(), name))
        sec = Section(id_, title)
        done = sum(1 for i in items if i.status == ANSWERED)
        sec.text.append(
            f"{done} of {len(items)} answered from the plan's numbers; {len(items) - done} for you to decide."
        )
        sec.checks = [
            (
                i.status == ANSWERED,
                f"{i.step}: {i.question} {'' if i.status == ANSWERED else 'TO DECIDE: '}{i.answer}",
            )
            for i in items
        ]
        out.append(sec)
    return out


def _margin_metric(what: str, metrics: dict[str, Any]) -> str | None:
    w = what.lower()
    for words, key in (
        (("time", "deadline", "run"), "time_to_train_s"),
        (("step",), "step_time_s"),
        (("replica", "capacity", "rate", "request"), "replicas"),
        (("cost",), "cost_usd"),
    ):
        if any(x in w for x in words) and key in metrics:
            return key
    return None


def _margin_coverage(
    line: dict[str, Any], metrics: dict[str, Any], coverage: Callable[..., float]
) -> str | None:
    """How far up the sampled spread one sizing margin reaches: "covers up to P9x"."""
    from rightsize.constants import DAY_S

    key = _margin_metric(str(line.get("what", "")), metrics)
    m = metrics.get(key) if key else None
    base, planned = line.get("base"), line.get("planned", line.get("with_margin"))
    frac = line.get("margin_fraction")
    if m is None or not m.get("base") or not isinstance(frac, int | float):
        return None
    if key == "time_to_train_s" and isinstance(base, int | float) and isinstance(planned, int | float):
        scale = DAY_S if str(line.get("unit", "")).startswith("day") else 1.0
        limit = max(base, planned) * scale  # a time budget: the real limit is the larger
    elif key == "replicas" and isinstance(planned, int | float):
        limit = float(planned)
    else:
        limit = m["base"] * (1 + abs(frac))
    cov = coverage(m, limit)
    label = UNCERTAINTY_METRICS.get(key or "", (key,))[0]
    how = f" ({line['applied']})" if line.get("applied") else ""
    return f"The {abs(frac):.0%} margin on {line.get('what')}{how} covers up to P{min(99, round(cov * 100))} of the {label} spread."


def uncertainty_section(
    unc: dict[str, Any] | None, margins: list[dict[str, Any]] | None = None
) -> Section | None:
    if not unc or not unc.get("metrics"):
        return None
    from rightsize.search.uncertainty import coverage

    metrics: dict[str, Any] = unc["metrics"]
    sec = Section("uncertainty", "Uncertainty: P10, P50, P90", brief=True)
    sec.text.append(
        f"{unc.get('samples', '?')} Monte Carlo samples over the efficiencies' ranges ({unc.get('method', '')})."
    )
    rows, chart_rows = [], []
    keys = [k for k in UNCERTAINTY_METRICS if k in metrics] + sorted(
        k for k in metrics if k.startswith("latency_")
    )
    for k in keys:
        m = metrics[k]
        lab, fmt = UNCERTAINTY_METRICS.get(
            k, (k.removeprefix("latency_").replace("_", " ").removesuffix(" s"), units.seconds)
        )
        base = m.get("base", m["p50"])
        spread = f"{m['p10'] / base - 1:+.0%} to {m['p90'] / base - 1:+.0%}" if base else "-"
        rows.append([lab, fmt(base), fmt(m["p10"]), fmt(m["p50"]), fmt(m["p90"]), spread])
        if base and (not k.startswith("latency_") or k.endswith("p95_s")):
            chart_rows.append((lab, m["p10"] / base - 1, m["p50"] / base - 1, m["p90"] / base - 1))
    sec.tables.append(Table(["metric", "plan", "P10", "P50", "P90", "P10-P90 vs plan"], rows))
    # A chart of spreads that are all nil (every sample lands on the plan) would have no scale.
    if any(abs(v) > 1e-12 for row in chart_rows for v in row[1:]):
        sec.charts.append(
            Chart(
                "uncertainty",
                "Spread around the plan (P10-P90, dot at P50)",
                svg_ranges.intervals(
                    "uncertainty",
                    "Spread around the plan (P10-P90, dot at P50)",
                    chart_rows,
                    lambda v: f"{v:+.0%}",
                ),
            )
        )
    g = unc.get("ground")
    if g and g.get("nearest"):
        near = g["nearest"][0]
        thin = g.get("thin_mechanisms") or []
        sec.bullets.append(
            f"Validated ground: {g['distance']:.1f} steps from the nearest validated run ({near['id']}); "
            f"model error sigma {g['sigma']:.0%}"
            + (f"; no validated run on this kind of accelerator used {', '.join(thin)}" if thin else "")
            + "."
        )
    fam = unc.get("family")
    if fam:
        sec.bullets.append(
            f"Accelerator family {fam['family']}: {fam['status']}; family error sigma {fam['sigma']:.0%}."
        )
    d = unc.get("deadline")
    if d:
        sec.bullets.append(
            f"Deadline {units.seconds(d['deadline_s'])}: met in {d['probability_met']:.0%} of samples; it sits "
            f"{d['margin_fraction']:+.0%} from the P50 time to train."
        )
    r = unc.get("replicas")
    if r:
        sec.bullets.append(
            f"The planned {units.plural(r['planned'], 'replica')} suffice in {r['probability_sufficient']:.0%} of samples."
        )
    for k in ("time_to_train_s", "replicas", "cost_usd_per_hour"):
        m = metrics.get(k)
        if m and m.get("base"):
            need = m["p90"] / m["base"] - 1
            lab = UNCERTAINTY_METRICS[k][0]
            sec.bullets.append(
                f"Covering P90 of the {lab} spread takes a margin of {need:+.0%} over the plan."
            )
    for line in margins or []:
        text = _margin_coverage(line, metrics, coverage)
        if text:
            sec.bullets.append(text)
    return sec


def _growth_chart(g: dict[str, Any]) -> Chart | None:
    stages = [
        s for s in g.get("stages") or [] if isinstance(s, dict) and isinstance(s.get("gpus"), int | float)
    ]
    if not stages:
        return None
    # One bar per point in time: purchases due together (the build and the first cycle's growth
    # bought ahead with it) are one bar, the GPUs installed after the last of them and their
    # capital summed; "today" is year 0, never both.
    points: dict[str, tuple[float, float, bool]] = {}
    for s in stages:
        year = s.get("year", s.get("needed_at_years", s.get("stage", "")))
        if isinstance(year, int | float):
            when = "today" if year <= 0 else f"year {year:g}"
        else:
            when = "today" if s is stages[0] else f"year {year}"
        capex = s.get("added_capex_usd")
        ok = s.get("fabric_ok") is not False and s.get("power_ok") is not False
        _, spent, ok_before = points.get(when, (0.0, 0.0, True))
        spent += float(capex) if isinstance(capex, int | float) else 0.0
        points[when] = (float(s["gpus"]), spent, ok_before and ok)
    bars = [
        (when, gpus, f"+{units.usd(capex)}" if capex else "", ok)
        for when, (gpus, capex, ok) in points.items()
    ]
    title = "Growth: GPUs after each purchase, one a budget cycle (capital cost added above)"
    return Chart("growth", title, svg.vbars("growth", title, bars, "GPUs", lambda v: f"{v:,.0f}"))


def _sensitivity_charts(rows: list[dict[str, Any]]) -> list[Chart]:
    out = []
    for what, lo_k, hi_k, name in (
        ("time", "time_change_fraction_low", "time_change_fraction_high", "sensitivity"),
        ("cost", "cost_change_fraction_low", "cost_change_fraction_high", "sensitivity-cost"),
    ):
        data = [
            (
                str(r.get("assumption", "?")),
                float(r[lo_k]),
                float(r[hi_k]),
                str(r.get("low_label", "")),
                str(r.get("high_label", "")),
            )
            for r in rows
            if isinstance(r.get(lo_k), int | float) and isinstance(r.get(hi_k), int | float)
        ]
        if data and any(abs(a) + abs(b) > 0 for _, a, b, _, _ in data):
            title = f"Sensitivity of {what}: change from the plan at each assumption's low and high case"
            out.append(Chart(name, title, svg_ranges.tornado(name, title, data, lambda v: f"{v:+.0%}")))
    return out


def _fabric_chart(f: dict[str, Any]) -> Chart | None:
    rows = [
        r for r in (f.get("slowdown_by_nic_gbps") or []) + (f.get("sensitivity") or []) if isinstance(r, dict)
    ]
    pts = sorted(
        {float(r["nic_gbps"]): float(r["step_s"]) for r in rows if "nic_gbps" in r and "step_s" in r}.items()
    )
    if len(pts) < 2:
        return None
    title = "Step time against scale-out line rate per GPU"
    return Chart(
        "fabric-nic",
        title,
        svg.lines(
            "fabric-nic",
            title,
            [("step time", [p[0] for p in pts], [p[1] for p in pts])],
            "Gb/s per GPU",
            "step time",
            lambda v: f"{v:,.0f}",
            units.seconds,
            logx=True,
        ),
    )


def _cost_chart(c: dict[str, Any]) -> Chart | None:
    cloud = c.get("cloud")
    options: dict[str, dict[str, Any]] = (
        {k: v for k, v in cloud.items() if isinstance(v, dict)} if isinstance(cloud, dict) else {}
    )
    if isinstance(c.get("onprem"), dict):
        options["on premises"] = c["onprem"]
    for key in ("usd_per_run", "usd_per_month"):
        rows = [
            (k.replace("_", " "), float(v[key]))
            for k, v in options.items()
            if isinstance(v.get(key), int | float)
        ]
        if rows:
            title = f"Cost per {'run' if key == 'usd_per_run' else 'month'} by option"
            return Chart("cost-options", title, svg.hbars("cost-options", title, rows, units.usd))
    return None


def sizing_sections(sizing: dict[str, Any]) -> list[Section]:
    from rightsize.report.bom import bom_section
    from rightsize.report.cost_section import cost_section

    bom = bom_section(sizing)
    out = [bom] if bom else []
    scalars = {k: v for k, v in sizing.items() if not isinstance(v, dict | list) and v is not None}
    if scalars:
        out.append(generic_section("sizing", "Sizing", scalars))
    for key, data in sizing.items():
        if key in scalars:
            continue
        if data is None or data == [] or data == {}:
            continue
        title = SIZING_TITLES.get(key, units.label(key).capitalize())
        if key == "warnings" and isinstance(data, list):
            out.append(Section("sizing-warnings", title, bullets=[str(w) for w in data], brief=True))
            continue
        if key == "margins" and isinstance(data, list):
            sec = Section("sizing-margins", title)
            sec.tables.append(margins_table([r for r in data if isinstance(r, dict)]))
            out.append(sec)
            continue
        if key == "sensitivity" and isinstance(data, list):
            sec = Section("sizing-sensitivity", title)
            sec.charts.extend(_sensitivity_charts([r for r in data if isinstance(r, dict)]))
            sec.tables.append(records_table([r for r in data if isinstance(r, dict)], first="assumption"))
            out.append(sec)
            continue
        body = {k: v for k, v in data.items() if k != "sources"} if isinstance(data, dict) else data
        if key == "cost" and isinstance(data, dict):
            sec = cost_section(data)
            cost_chart = _cost_chart(data)
            if cost_chart:
                sec.charts.append(cost_chart)
            out.append(sec)
            continue
        sec = generic_section(f"sizing-{key}", title, body)
        if isinstance(data, dict):
            chart = {"growth": _growth_chart, "fabric": _fabric_chart}.get(key)
            c = chart(data) if chart else None
            if c:
                sec.charts.insert(0, c)
            sources = data.get("sources")
            if isinstance(sources, list):
                sec.bullets.extend(source_line(s) for s in sources if isinstance(s, dict))
        out.append(sec)
    return out
