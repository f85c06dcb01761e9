"""The fleet plan as a format-neutral document: timeline, typical day, utilisation, cost, purchases,
deadlines, shared parts, Kueue quotas, findings. Built from the plan's JSON data (`to_dict`), so
every format says what the JSON says."""

from __future__ import annotations

from typing import Any

from rightsize.fleet.report_data import solver_headline
from rightsize.report import svg, units
from rightsize.report.document import Chart, Document, Section, Table
from rightsize.report.sections import findings_section

HOLDERS_SHOWN = 15

# Each workload peaks at its own hour, so the bars of one month can sum above that month's peak demand.
_BY_WORKLOAD_TITLE = "Each workload's peak GPUs in the month (peaks at different hours; dashed: committed)"


def _g(v: float | None) -> str:
    return "" if v is None else f"{v:,.0f}" if abs(v) >= 10 else f"{v:,.1f}"


def _hour(v: float) -> str:
    return f"{v:.0f}h" if 0 <= v <= 23 else ""


def _pct(v: float | None) -> str:
    return "" if v is None else units.pct(v, 0)


def _saving_text(c: dict[str, Any]) -> str:
    """What pooling saves, "no saving", or what it costs more: never "$-0 (-0%)"."""
    saving, share = float(c["saving_usd"]), float(c["saving_fraction"])
    if saving >= 0.5 and share >= 0.005:
        return f"{units.usd(saving)} ({_pct(share)}) saved"
    if saving > -0.5:
        return "no saving"
    return f"pooling costs {units.usd(-saving)} ({_pct(-share)}) more"


def fleet_document(plan: Any, title: str = "Plan") -> Document:
    d = plan.to_dict()
    c = d["cost"]
    line = d["timeline"]
    peak = max(line, key=lambda m: m["demand_gpus"])
    most_committed = max(m["reserved_gpus"] for m in line)
    doc = Document(
        "fleet",
        f"Fleet {title.lower()}: {d['name']}",
        f"{d['start']}, {d['horizon_months']} months, {len(d['workloads'])} workloads",
    )
    doc.decision = (
        f"commit up to {most_committed:,.0f} GPUs ({_kinds(d['purchases'])}), burst up to "
        f"{max(m['burst_gpus'] for m in line):,.0f} GPUs to the cloud; pooled {units.usd(c['pooled_usd'])} against "
        f"{units.usd(c['dedicated_usd'])} with each workload on its own ({_saving_text(c)}); "
        f"solver {solver_headline(d['solver'])}"
    )
    met = sum(1 for x in d["deadlines"] if x["met"])
    doc.key_numbers = [
        ("pooled cost", units.usd(c["pooled_usd"])),
        ("dedicated cost", units.usd(c["dedicated_usd"])),
        ("saving", _saving_text(c)),
        ("peak demand", f"{peak['demand_gpus']:,.0f} GPUs in {peak['month']}"),
        ("committed pool busy", _pct(d["utilisation"]["overall_fraction"])),
        ("deadlines met", f"{met} of {len(d['deadlines'])}"),
        ("solver", f"HiGHS MILP, {d['solver']['variables']:,} variables, " + solver_headline(d["solver"])),
    ]
    doc.sections = [
        _workloads(d),
        _timeline(d),
        _typical_day(d),
        _holders(d),
        _utilisation(d),
        _cost(d),
        _purchases(d),
        _deadlines(d),
        _shared(d),
        _quotas(d),
    ]
    fs = findings_section(plan.findings)
    fs.brief = True
    doc.sections.insert(1, fs)
    a = Section("assumptions", "Assumptions and solver")
    a.bullets = list(d["assumptions"])
    s = d["solver"]
    a.text.append(
        f"{s['method']}: {s['variables']:,} variables ({s['integer_variables']} integer), {s['constraints']:,} "
        f"constraints on {s['grid']}; {s['status']}; {solver_headline(s)}; one thread, random seed "
        f"{s['random_seed']}."
    )
    doc.sections.append(a)
    return _in_pool_terms(doc, list(d["pools"]))


def _in_pool_terms(doc: Document, accs: list[str]) -> Document:
    """The fleet in its platform's words where every pool's accelerator has the same one (a
    fleet of TPU pools speaks of chips); a fleet mixing GPUs and chips keeps "GPUs"."""
    from rightsize.catalog.platforms import unit_noun
    from rightsize.report.platform_terms import in_platform_terms

    nouns = {unit_noun(a) for a in accs}
    return in_platform_terms(doc, accs[0]) if len(nouns) == 1 and accs else doc


def _kinds(purchases: list[dict[str, Any]]) -> str:
    kinds: dict[str, int] = {}
    for p in purchases:
        if "node_days" in p:  # a capacity block: days, not a commitment
            continue
        kinds[p["kind"]] = kinds.get(p["kind"], 0) + p["gpus"]
    blocks = max((p["gpus"] for p in purchases if "node_days" in p), default=0)
    text = ", ".join(f"{k} {v:,}" for k, v in kinds.items()) or "nothing committed"
    return text + (f"; up to {blocks:,} GPUs on capacity blocks of days" if blocks else "")


def _workloads(d: dict[str, Any]) -> Section:
    s = Section("workloads", "Workloads, each with its own plan", brief=True)
    rows = []
    for w in d["workloads"]:
        p = w["plan"]
        flags = ("deferrable" if w["deferrable"] else "fixed") + (", preemptible" if w["preemptible"] else "")
        rows.append(
            [
                w["name"],
                w["kind"],
                f"{p['gpus']} x {p['accelerator']}",
                p["layout"],
                f"{w['start']} to {w['end']}",
                flags,
                units.usd(w["dedicated_usd"]),
            ]
        )
    s.tables.append(
        Table(
            ["workload", "kind", "own plan", "layout", "runs", "scheduling", "alone"],
            rows,
            "workloads",
            ["l"] * 6 + ["r"],
            [0, 2, 4, 6],
        )
    )
    s.bullets += [f"{w['name']}: {w['note']}" for w in d["workloads"] if w.get("note")]
    return s


def _timeline(d: dict[str, Any]) -> Section:
    s = Section("timeline", "Timeline: demand, committed and burst GPUs by month", brief=True)
    rows = [
        [
            m["month"],
            _g(m["demand_gpus"]),
            _g(m["reserved_gpus"]),
            _g(m["burst_gpus"]),
            _g(m["on_demand_gpus"]),
            _g(m["spot_gpus"]),
            _pct(m["reserved_utilisation_fraction"]),
            units.usd(m["cost_usd"]),
        ]
        for m in d["timeline"]
    ]
    s.tables.append(
        Table(
            ["month", "demand", "committed", "burst", "on-demand", "spot", "pool busy", "cost"],
            rows,
            "timeline (GPUs at the busiest hour)",
            brief_columns=[0, 1, 2, 3, 7],
        )
    )
    xs = list(range(len(d["timeline"])))
    # Demand equals committed + burst whenever the pool covers it, so it is drawn last, dark,
    # thick and dashed: on top, still seen where the other lines run along it.
    series = [
        ("committed", xs, [m["reserved_gpus"] for m in d["timeline"]]),
        ("committed + burst", xs, [m["reserved_gpus"] + m["burst_gpus"] for m in d["timeline"]]),
        ("demand (peak hour)", xs, [m["demand_gpus"] for m in d["timeline"]]),
    ]
    styles = {"demand (peak hour)": svg.LineStyle(color="#1d232b", width=3, dash="8 4", on_top=True)}
    months = [m["month"] for m in d["timeline"]]
    s.charts.append(
        Chart(
            "fleet-timeline",
            "GPUs by month",
            svg.lines(
                "fleet-timeline",
                "GPUs by month",
                series,
                "month",
                "GPUs",
                lambda v: months[int(v)] if float(v).is_integer() and 0 <= int(v) < len(months) else "",
                lambda v: f"{v:,.0f}",
                styles=styles,
            ),
        )
    )
    stacked = [
        (m["month"], [(n, x["gpus"]) for n, x in m["by_workload"].items()], m["reserved_gpus"])
        for m in d["timeline"]
    ]
    s.charts.append(
        Chart(
            "fleet-by-workload",
            _BY_WORKLOAD_TITLE,
            svg.stacked_hbars(
                "fleet-by-workload",
                _BY_WORKLOAD_TITLE,
                stacked,
                lambda v: f"{v:,.0f}",
            ),
        )
    )
    return s


def _typical_day(d: dict[str, Any]) -> Section:
    prof = d["hourly_profile"]
    s = Section("typical_day", f"A typical day in the busiest month ({prof['month']})")
    names = sorted({n for h in prof["hours"] for n in h["by_workload_gpus"]})
    rows = [
        [
            f"{h['hour']:02d}:00",
            *(_g(h["by_workload_gpus"].get(n, 0.0)) for n in names),
            _g(h["reserved_used_gpus"]),
            _g(h["on_demand_gpus"]),
            _g(h["spot_gpus"]),
            _g(h["reserved_idle_gpus"]),
        ]
        for h in prof["hours"]
    ]
    s.tables.append(
        Table(["hour", *names, "committed used", "on-demand", "spot", "committed idle"], rows, "GPUs by hour")
    )
    hours = list(range(24))
    series = [(n, hours, [h["by_workload_gpus"].get(n, 0.0) for h in prof["hours"]]) for n in names]
    series.append(("total", hours, [sum(h["by_workload_gpus"].values()) for h in prof["hours"]]))
    s.charts.append(
        Chart(
            "fleet-day",
            "GPUs over the day",
            svg.lines(
                "fleet-day",
                "GPUs over the day",
                series,
                "hour",
                "GPUs",
                _hour,
                lambda v: f"{v:,.0f}",
                hlines=[(prof["reserved_gpus"], "committed")],
            ),
        )
    )
    return s


def _utilisation(d: dict[str, Any]) -> Section:
    u = d["utilisation"]
    s = Section("utilisation", "Utilisation of the committed pool")
    s.text.append(
        f"Over the horizon the committed GPUs are busy {_pct(u['overall_fraction'])} of their hours."
    )
    by_h = [x if x is not None else 0.0 for x in u["by_hour_fraction"]]
    s.charts.append(
        Chart(
            "fleet-utilisation",
            "Committed pool busy by hour of day",
            svg.lines(
                "fleet-utilisation",
                "Committed pool busy by hour of day",
                [("busy", list(range(24)), by_h)],
                "hour",
                "busy",
                _hour,
                lambda v: f"{v:.0%}",
            ),
        )
    )
    s.tables.append(
        Table(
            ["hour", "busy"],
            [[f"{h:02d}:00", _pct(x)] for h, x in enumerate(u["by_hour_fraction"])],
            "by hour of day",
        )
    )
    return s


def _cost(d: dict[str, Any]) -> Section:
    c = d["cost"]
    s = Section("cost", "Cost: pooled against dedicated", brief=True)
    rows = [[k, units.usd(v)] for k, v in c["pooled_by_kind_usd"].items()]
    rows += [
        ["pooled total", units.usd(c["pooled_usd"])],
        ["dedicated total", units.usd(c["dedicated_usd"])],
        ["saving", f"{units.usd(c['saving_usd'])} ({_pct(c['saving_fraction'])})"],
    ]
    s.tables.append(Table(["what", "USD over the horizon"], rows, "cost", ["l", "r"]))
    s.tables.append(
        Table(
            ["workload alone", "USD"],
            [[n, units.usd(v)] for n, v in c["dedicated_by_workload_usd"].items()],
            "dedicated, each workload on its own capacity",
            ["l", "r"],
        )
    )
    s.text.append("Cost is " + c["what"] + ".")
    if c.get("owned_capital_usd"):
        s.text.append(
            f"Owned nodes: {units.usd(c['owned_capital_usd'])} of capital, of which "
            f"{units.usd(c['owned_residual_value_usd'])} is life left after the horizon (straight line)."
        )
    s.charts.append(
        Chart(
            "fleet-cost",
            "Pooled against dedicated",
            svg.hbars(
                "fleet-cost",
                "Pooled against dedicated",
                [("pooled", c["pooled_usd"]), ("dedicated", c["dedicated_usd"])],
                units.usd,
            ),
        )
    )
    return s


def _purchases(d: dict[str, Any]) -> Section:
    s = Section("purchases", "Purchases and commitments", brief=True)
    rows = [
        [
            p["month"],
            p["pool"],
            p["kind"],
            f"{p['nodes']} nodes ({p['gpus']} GPUs)",
            f"{p['days']:.1f} days" if "days" in p else f"{p['term_months']} months",
            units.usd(p["usd_in_horizon"]),
        ]
        for p in d["purchases"]
    ]
    s.tables.append(
        Table(["from", "pool", "kind", "what", "term", "in horizon"], rows, "schedule", ["l"] * 5 + ["r"])
    )
    if not rows:
        s.bullets.append("Nothing is owned or reserved: on-demand and spot are cheaper for this demand.")
    owed = sum(p.get("usd_beyond_horizon", 0.0) for p in d["purchases"])
    if owed > 0:
        s.bullets.append(
            f"Reservations run past the horizon: {units.usd(owed)} more is owed for their remaining months "
            "(not in the totals above, which cover the horizon)."
        )
    return s


def _deadlines(d: dict[str, Any]) -> Section:
    s = Section("deadlines", "Deadlines of deferrable jobs")
    missed = [x for x in d["deadlines"] if not x["met"]]
    s.text.append(
        f"{len(d['deadlines']) - len(missed)} of {len(d['deadlines'])} job periods meet their deadline."
    )
    rows = [
        [
            x["workload"],
            x["window"],
            _g(x["gpu_hours_needed"]),
            _g(x["gpu_hours_missed"]),
            "met" if x["met"] else "MISSED",
            x["finished"] or "",
        ]
        for x in d["deadlines"]
        if not x["met"] or x["window"].split(" to ")[0] != x["window"].split(" to ")[-1]
    ]
    if rows:
        s.tables.append(
            Table(
                ["workload", "window", "GPU-hours", "missed", "status", "finished"], rows, "runs and misses"
            )
        )
    return s


def _shared(d: dict[str, Any]) -> Section:
    sh = d["shared"]
    s = Section("shared", "Shared parts, sized once for the pool")
    f = sh["fabric"]
    if f.get("for_workload"):
        s.bullets.append(
            f"Fabric for {f['for_workload']} ({f['nodes']} nodes): {f['kind']} {f['topology']}, {f['tiers']} tiers, "
            f"{f['nic_gbps_per_gpu']:g} Gb/s per GPU, {f['switches']} switches, {units.usd(f['capex_usd'])}."
        )
    else:
        s.bullets.append("Fabric: " + f["reason"] + ".")
    st = sh["storage"]
    s.bullets.append(
        f"Storage: {units.nbytes(st['total_bytes'])} for every dataset, checkpoint and model, of which datasets "
        f"{units.nbytes(st['datasets_bytes'])}."
    )
    for o in sh["owned"]:
        s.bullets.append(
            f"Owned {o['pool']}: {o['gpus']} GPUs in {o['nodes']} nodes, {o['racks']} racks at {o['kw_per_rack']:.0f} kW "
            f"({o['cooling']}); facility power {units.watts(o['facility_power_w'])}"
            + ("" if o["within_power_limit"] else " (over the power limit)")
            + "."
        )
    return s


def _holders(d: dict[str, Any]) -> Section:
    """Who holds what in the busiest month: whole GPUs by kind of capacity at its busiest hour."""
    peak = max(d["timeline"], key=lambda m: m["demand_gpus"])
    s = Section("holders", f"Who holds what in the busiest month ({peak['month']})", brief=True)
    rows = []
    ranked = sorted(peak["by_workload"].items(), key=lambda kv: (-kv[1]["gpus"], kv[0]))
    for name, e in ranked[:HOLDERS_SHOWN]:
        hours = e["hours_of_day"]
        span = (
            "all day"
            if len(hours) == 24
            else ", ".join(f"{h:02d}" for h in hours[:6]) + (" ..." if len(hours) > 6 else "")
        )
        flav = ", ".join(f"{k.replace('_', '-')} {v}" for k, v in e["by_flavor_gpus"].items())
        rows.append([name, str(e["gpus"]), f"{e['unit_gpus']} ({e['nodes_per_unit']} node(s))", flav, span])
    s.tables.append(
        Table(
            ["workload", "GPUs held", "one unit (gang or replica)", "by capacity", "hours"], rows, "holders"
        )
    )
    more = f"{len(ranked) - HOLDERS_SHOWN} more workloads hold less; " if len(ranked) > HOLDERS_SHOWN else ""
    s.text.append(
        more + "whole units only: each copy of a gang and each replica sits on one kind of capacity; the "
        "JSON `holdings` has every workload at every hour of every month."
    )
    return s


def _quotas(d: dict[str, Any]) -> Section:
    q = d["quotas"]
    s = Section("quotas", f"Kueue quotas (cohort {q['cohort']})")
    rows = [
        [
            cq["name"],
            fl["name"],
            str(fl["nominal_quota"]),
            str(fl["borrowing_limit"]),
            str(fl.get("lending_limit", "")),
        ]
        for cq in q["cluster_queues"]
        for fl in cq["flavors"]
    ]
    s.tables.append(
        Table(["ClusterQueue", "flavor", "nominal GPUs", "borrowing limit", "lending limit"], rows, "quotas")
    )
    return s
