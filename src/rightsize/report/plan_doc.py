"""Documents for training and serving plans: the decision and its numbers, the step and
memory breakdowns, the alternatives and the Pareto front, then the shared sections
(uncertainty, findings, sizing, checklists)."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from rightsize.advise import advise, checklists
from rightsize.advise.view import sizing_dict
from rightsize.constants import DAY_S, GiB
from rightsize.report import disagg_rows, family_rows, money_rows, svg, units
from rightsize.report import sections as common
from rightsize.report.document import Chart, Document, Section, Table
from rightsize.report.platform_terms import in_platform_terms
from rightsize.report.text import _MEM_LABELS, _STEP_LABELS, layout
from rightsize.report.whole_run_section import far_from_ground_note, whole_run_section

if TYPE_CHECKING:
    from rightsize.search.candidates import Candidate
    from rightsize.search.serving import ServingCandidate, ServingPlan
    from rightsize.search.train import TrainingPlan


def _gpn(node_id: str, chips: int) -> int:
    """Accelerators per node; on TPU per host VM of the slice shape `chips` run on (as the bill)."""
    from rightsize.catalog import get_node
    from rightsize.catalog.tpu_slices import slice_host

    try:
        return slice_host(get_node(node_id), chips).gpus_per_node
    except Exception:  # an unknown node in a hand-made plan: assume the common 8
        return 8


def _days(s: float | None) -> str:
    return units.duration(s)


def _range(unc: dict[str, Any] | None, key: str, fmt: Any) -> str:
    m = ((unc or {}).get("metrics") or {}).get(key)
    return f" (P10-P90 {fmt(m['p10'])} to {fmt(m['p90'])})" if m else ""


def _shared(doc: Document, plan: Any) -> None:
    money_rows.place(doc, plan)  # a stale price next to its cost, unpriced parts dropped
    family_rows.place(doc, plan)  # how well the chosen accelerator's family is validated
    unc = getattr(plan, "uncertainty", None)
    sizing = sizing_dict(plan)
    margins = sizing.get("margins") if isinstance(sizing.get("margins"), list) else None
    sec = common.uncertainty_section(unc, margins)
    if sec:
        doc.sections.append(sec)
    doc.sections.append(common.findings_section(advise(plan)))
    doc.sections.extend(common.sizing_sections(sizing))
    doc.sections.extend(common.checklist_sections(checklists(plan)))


# --- training -----------------------------------------------------------------------------------


def _step_section(c: Candidate) -> Section:
    sec = Section("step", "Step time breakdown", brief=True)
    total = c.step_time_s
    rows = [(label, c.step.get(k, 0.0)) for k, label in _STEP_LABELS.items() if c.step.get(k, 0.0) > 0]
    sec.tables.append(
        Table(
            ["component", "time", "share"],
            [[lab, units.seconds(v), units.pct(v / total)] for lab, v in rows]
            + [["step", units.seconds(total), "100.0%"]],
            "step breakdown",
        )
    )
    title = f"Step time breakdown ({total:.3f} s per step)"
    sec.charts.append(
        Chart("step-breakdown", title, svg.hbars("step-breakdown", title, rows, units.seconds, total))
    )
    return sec


def _memory_section(plan: TrainingPlan) -> Section:
    c = plan.best
    sec = Section("memory", "Memory per GPU", brief=True)
    rows = [[label, units.gib(c.memory.get(k, 0.0))] for k, label in _MEM_LABELS.items()]
    rows.append(["total", f"{units.gib(c.memory['total_bytes'])} of {units.gib(c.memory['capacity_bytes'])}"])
    if c.memory.get("host_offload_bytes", 0.0) > 0:  # offload policies: what leaves the device
        rows.append(["in host memory (offloaded)", units.gib(c.memory["host_offload_bytes"])])
    sec.tables.append(Table(["part", "GiB"], rows, "memory per GPU"))
    devices: list[tuple[str, Candidate]] = [(f"chosen: {c.accelerator}", c)]
    if plan.runner_up_layout:
        devices.append((f"runner-up layout: {c.accelerator}", plan.runner_up_layout[0]))
    devices += [(a.accelerator, a) for a, _ in plan.alternatives]
    chart_rows = [
        (
            name,
            [(label, d.memory.get(k, 0.0) / GiB) for k, label in _MEM_LABELS.items()],
            d.memory.get("capacity_bytes", 0.0) / GiB,
        )
        for name, d in devices
    ]
    title = "Memory per GPU against capacity (GiB; dashed line: HBM)"
    sec.charts.append(
        Chart("memory", title, svg.stacked_hbars("memory", title, chart_rows, lambda v: f"{v:,.0f} GiB"))
    )
    return sec


def _alternatives_section(plan: TrainingPlan) -> Section:
    sec = Section("alternatives", "Alternatives", brief=True)
    rows = []
    cands: list[tuple[str, Candidate, str]] = [("chosen", plan.best, "")]
    est = (getattr(plan, "extra", None) or {}).get("search_estimate")
    if (
        est
        and est.get("gpu_hours")
        and plan.best.gpu_hours
        and abs(plan.best.gpu_hours / est["gpu_hours"] - 1) > 0.005
    ):
        # the alternatives carry the search's estimate: show the chosen one on that basis too
        as_searched = dataclasses.replace(
            plan.best,
            time_to_train_s=est["time_to_train_s"],
            gpu_hours=est["gpu_hours"],
            cost_usd=est["cost_usd"],
        )
        cands.append(("chosen, as searched", as_searched, f"the basis of the rows below: {est['basis']}"))
    if plan.runner_up_layout:
        cands.append(("runner-up layout", *plan.runner_up_layout))
    cands += [("alternative", c, why) for c, why in plan.alternatives]
    for role, c, why in cands:
        rows.append(
            [
                role,
                f"{c.gpus:,} x {c.accelerator}",
                layout(c).split(" (")[0],
                _days(c.time_to_train_s),
                units.pct(c.mfu),
                units.count(c.gpu_hours) if c.gpu_hours is not None else "-",
                units.usd(c.cost_usd) if c.cost_usd is not None else "-",
                why,
            ]
        )
    sec.tables.append(
        Table(
            ["", "hardware", "layout", "time to train", "MFU", "GPU-hours", "cost", "why not"],
            rows,
            align=["l", "l", "l", "r", "r", "r", "r", "l"],
            brief_columns=[0, 1, 2, 3, 4, 5, 6],
        )
    )
    if plan.rejected:
        sec.bullets = [f"rejected {r.accelerator}: {r.reason}" for r in plan.rejected]
    return sec


def _days_tick(v: float) -> str:
    return f"{units.short(v)} d"


def _usd_tick(v: float) -> str:
    return "$" + units.short(v)


def _pareto_section(plan: TrainingPlan) -> Section:
    """Time to train against cost (GPU-hours where a candidate has no price): the axes say
    what is plotted, and the section's title says the same."""
    best = plan.best
    cands: list[Candidate] = []
    for c in [best, *plan.pareto, *(a for a, _ in plan.alternatives)]:
        if all(c is not x for x in cands):
            cands.append(c)
    use_cost = all(c.cost_usd is not None for c in cands)
    use_hours = not use_cost and all(c.gpu_hours is not None for c in cands)
    has_ttt = best.time_to_train_s is not None
    what = "cost" if use_cost else "GPU-hours" if use_hours else "GPU time per token"
    sec = Section("pareto", f"Pareto front: {'time' if has_ttt else 'step time'} against {what}")

    def xy(c: Candidate) -> tuple[float, float] | None:
        x = c.time_to_train_s / DAY_S if c.time_to_train_s is not None else c.step_time_s
        y = c.cost_usd if use_cost else c.gpu_hours if use_hours else 1.0 / c.tokens_per_s_per_gpu
        return (x, y) if y is not None and x is not None else None

    pts: list[svg.Point] = []
    front_ids = {id(c) for c in plan.pareto}
    for c in cands:
        p = xy(c)
        if p is not None:
            pts.append(
                svg.Point(
                    p[0], p[1], f"{c.gpus:,} x {c.accelerator}", c.accelerator, c is best, id(c) in front_ids
                )
            )
    ylabel = (
        "cost per run (USD, on demand)" if use_cost else "GPU-hours" if use_hours else "GPU-seconds per token"
    )
    xlabel = "time to train (days)" if has_ttt else "step time (s)"
    title = f"Pareto front: {'time to train' if has_ttt else 'step time'} against {what}; the choice ringed"
    sec.charts.append(
        Chart(
            "pareto",
            title,
            svg.scatter(
                "pareto",
                title,
                pts,
                xlabel,
                ylabel,
                _days_tick if has_ttt else units.seconds,
                _usd_tick if use_cost else units.short,
                vlines=[(plan.deadline_s / DAY_S, "deadline")] if plan.deadline_s and has_ttt else [],
            ),
        )
    )
    rows = [
        [
            f"{c.gpus:,} x {c.accelerator}",
            _days(c.time_to_train_s),
            units.count(c.gpu_hours) if c.gpu_hours else "-",
            units.usd(c.cost_usd) if c.cost_usd else "-",
            "chosen" if c is best else "",
        ]
        for c in plan.pareto
    ]
    sec.tables.append(Table(["hardware", "time to train", "GPU-hours", "cost", ""], rows, "Pareto front"))
    return sec


def _power_text(plan: Any) -> str | None:
    """The power the site must supply, and what the IT load draws on a typical hour."""
    pw = sizing_dict(plan).get("power")
    if not isinstance(pw, dict) or not isinstance(pw.get("facility_power_w"), int | float):
        return None
    typ = pw.get("it_power_typical_w")
    return f"{units.watts(pw['facility_power_w'])} facility" + (
        f" ({units.watts(typ)} IT typical)" if isinstance(typ, int | float) else ""
    )


def headline_numbers(best: dict[str, Any], plan: Any) -> list[tuple[str, str]]:
    """The summary's first cards for a plan read from its JSON (vision, recommendation): the
    hardware, the time (or the p99 latency of a service), GPU-hours, cost and power."""
    kn: list[tuple[str, str]] = []
    gpus, acc = best.get("gpus"), best.get("accelerator")
    if isinstance(gpus, int | float) and acc:
        kn.append(("GPUs", f"{units.count(gpus)} x {acc}"))
    job = isinstance(best.get("time_to_train_s"), int | float)
    if job:
        kn.append(("time to train", units.duration(best["time_to_train_s"])))
    elif isinstance(best.get("latency_p99_s"), int | float):
        kn.append(("p99 latency", units.seconds(best["latency_p99_s"])))
    if isinstance(best.get("gpu_hours"), int | float):
        kn.append(
            (
                "GPU-hours",
                units.count(best["gpu_hours"]) if best["gpu_hours"] >= 10 else f"{best['gpu_hours']:.3g}",
            )
        )
    if isinstance(best.get("cost_usd"), int | float):  # per run for a job, per hour for a service
        kn.append(("cost (on demand)", units.usd(best["cost_usd"]) + ("" if job else "/h")))
    power = _power_text(plan)
    if power:
        kn.append(("power", power))
    return kn


def _search_summary(plan: TrainingPlan) -> str:
    """What the search did, its counts in the report's units (4.52M configurations)."""
    timed = (
        f": each checked against memory, the {units.count(plan.configs_timed)} that fit timed"
        if plan.configs_timed
        else ""
    )
    return f"Searched {units.count(plan.configs_evaluated)} configurations in {plan.search_seconds:.2f} s{timed}."


def training_document(plan: TrainingPlan, title: str = "Plan") -> Document:
    b = plan.best
    unc = getattr(plan, "uncertainty", None)
    nodes = math.ceil(b.gpus / _gpn(b.node, b.gpus))
    sub = f"model {plan.model}, objective {plan.objective}"
    bare = plan.extra.get("bare_deadline_s")
    if bare and plan.deadline_s and bare > plan.deadline_s:
        sub += f", deadline {bare / DAY_S:,.0f} d, planned to {plan.deadline_s / DAY_S:,.0f} d with the safety margin"
    elif plan.deadline_s:
        sub += f", deadline {plan.deadline_s / DAY_S:,.0f} d"
    decision = f"{b.gpus:,} x {b.accelerator} ({nodes:,} x {b.node} {'node' if nodes == 1 else 'nodes'}), layout {layout(b)}"
    if b.time_to_train_s is not None:
        decision += f": {_days(b.time_to_train_s)} to train"
    decision += far_from_ground_note(unc)
    doc = Document("training_plan", f"{title}: {plan.name}", sub, decision)
    kn = doc.key_numbers  # what a manager reads first: hardware, time, GPU-hours, cost, power
    kn.append(("GPUs", f"{b.gpus:,} x {b.accelerator} ({units.plural(nodes, 'node')})"))
    if b.time_to_train_s is not None:
        kn.append(("time to train", _days(b.time_to_train_s) + _range(unc, "time_to_train_s", _days)))
    if b.gpu_hours is not None:
        kn.append(("GPU-hours", units.count(b.gpu_hours) + _range(unc, "gpu_hours", units.count)))
    if b.cost_usd is not None:
        kn.append(("cost (on demand)", units.usd(b.cost_usd) + _range(unc, "cost_usd", units.usd)))
    power = _power_text(plan)
    if power:
        kn.append(("power", power))
    kn.append(("step time", f"{b.step_time_s:.3f} s{_range(unc, 'step_time_s', lambda v: f'{v:.3f} s')}"))
    kn.append(("MFU / HFU", f"{b.mfu:.1%} / {b.hfu:.1%}"))
    kn.append(("tokens/s per GPU", f"{b.tokens_per_s_per_gpu:,.0f}"))
    if b.reliability.get("goodput"):
        kn.append(("goodput", f"{b.reliability['goodput']:.1%}"))
    kn.append(
        ("memory per GPU", f"{units.gib(b.memory['total_bytes'])} of {units.gib(b.memory['capacity_bytes'])}")
    )
    whole = whole_run_section(plan)
    doc.sections += [
        *([whole] if whole is not None else []),
        _step_section(b),
        _memory_section(plan),
        _alternatives_section(plan),
        _pareto_section(plan),
    ]
    _shared(doc, plan)
    if plan.assumptions:
        doc.sections.append(Section("assumptions", "Assumptions", bullets=list(plan.assumptions)))
    doc.sections.append(
        Section(
            "search",
            "Search",
            text=[_search_summary(plan)],
        )
    )
    return in_platform_terms(doc, b.accelerator)  # chips where the platform's unit is a chip


# --- serving ----------------------------------------------------------------------------------


def _serving_memory(plan: ServingPlan) -> Section | None:
    from rightsize.catalog import get_accelerator
    from rightsize.perf.inference import ENGINE_MEMORY_UTILISATION, ENGINE_WORKSPACE_BYTES

    sec = Section("memory", "Memory per GPU", brief=False)
    rows = []
    for name, c in [(f"chosen: {plan.best.accelerator}", plan.best)] + [
        (a.accelerator, a) for a, _ in plan.alternatives
    ]:
        try:
            hbm = get_accelerator(c.accelerator).hbm_bytes
        except Exception:  # an accelerator outside the catalog: no capacity to draw against
            continue
        weights = c.memory.get("weights_bytes_per_gpu", 0.0)
        workspace = c.memory.get("engine_reserved_bytes_per_gpu", ENGINE_WORKSPACE_BYTES)  # the plan's own
        kv = c.memory.get("kv_bytes_per_gpu", max(0.0, hbm * ENGINE_MEMORY_UTILISATION - workspace - weights))
        reserve = max(0.0, hbm - weights - kv - workspace)
        rows.append(
            (
                f"{name} {c.replica_shape}",
                [
                    ("weights", weights / GiB),
                    ("KV cache", kv / GiB),
                    ("workspace", workspace / GiB),
                    ("engine reserve", reserve / GiB),
                ],
                hbm / GiB,
            )
        )
    if not rows:
        return None
    b = plan.best
    sec.tables.append(
        Table(
            ["what", "value"],
            [
                ["weights per GPU", units.gib(b.memory.get("weights_bytes_per_gpu", 0.0))],
                ["KV cache per replica", f"{units.count(b.memory.get('kv_capacity_tokens', 0.0))} tokens"],
            ],
        )
    )
    title = "Memory per GPU against capacity (GiB; dashed line: HBM)"
    sec.charts.append(
        Chart("memory", title, svg.stacked_hbars("memory", title, rows, lambda v: f"{v:,.0f} GiB"))
    )
    return sec


def _ms_tick(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 10 or v == 0 else f"{v:,.2g}"


def _latency_section(plan: ServingPlan) -> Section:
    b = plan.best
    sec = Section("latency", "Latency", brief=True)
    lat = b.latency_s or {}
    pcts = [p for p in (50, 90, 95, 99) if any(f"{m}_p{p}_s" in lat for m in ("ttft", "tpot", "e2e"))]
    rows = []
    for m in ("ttft", "tpot", "e2e"):
        vals = [lat.get(f"{m}_p{p}_s") for p in pcts]
        if any(v is not None for v in vals):
            rows.append([m] + [units.seconds(v) if v is not None else "-" for v in vals])
    if rows:
        sec.tables.append(Table(["metric"] + [f"p{p}" for p in pcts], rows, "latency"))
    if b.slo_headroom:
        sec.bullets.append(
            "SLO headroom (limit / achieved): "
            + ", ".join(f"{k.removesuffix('_s')} {v:.2f}x" for k, v in b.slo_headroom.items())
        )
    if b.goodput is not None:
        sec.bullets.append(f"Goodput (requests meeting every SLO): {b.goodput:.1%}")
    # TTFT (hundreds of ms) and TPOT (tens of ms) each on its own axis and scale: on one axis
    # the smaller is a flat line along the bottom. Percentiles are categories, evenly spaced.
    names = {"ttft": "time to first token (TTFT)", "tpot": "time per output token (TPOT)"}
    row = []
    for m in ("ttft", "tpot"):
        idx = [i for i, p in enumerate(pcts) if f"{m}_p{p}_s" in lat]
        if idx:
            ms = [lat[f"{m}_p{pcts[i]}_s"] * 1e3 for i in idx]
            row.append(svg.Panel(names[m], [(m.upper(), [float(i) for i in idx], ms)], "ms", _ms_tick))
    if row:

        def pct_tick(v: float) -> str:
            return f"p{pcts[int(v)]}" if float(v).is_integer() and 0 <= v < len(pcts) else ""

        title = "Latency percentiles at the design load, each on its own scale (ms)"
        sec.charts.append(Chart("latency", title, svg.panels("latency", title, row, "percentile", pct_tick)))
    unc = getattr(plan, "uncertainty", None) or {}
    share = unc.get("prefill_share_of_gpu_time")
    if isinstance(share, int | float):
        title = "GPU time per request: prefill against decode"
        sec.charts.append(
            Chart(
                "step-breakdown",
                title,
                svg.hbars("step-breakdown", title, [("prefill", share), ("decode", 1 - share)], units.pct),
            )
        )
    return sec


def _serving_alternatives(plan: ServingPlan) -> Section:
    sec = Section("alternatives", "Alternatives", brief=True)
    rows = []
    for role, c, why in [("chosen", plan.best, "")] + [("alternative", a, w) for a, w in plan.alternatives]:
        rows.append(
            [
                role,
                disagg_rows.replicas_text(c),
                f"{c.gpus:,}",
                c.weight_precision,
                units.usd(c.cost_usd_per_hour) + "/h" if c.cost_usd_per_hour is not None else "-",
                f"{c.output_tokens_per_s:,.0f}",
                why,
            ]
        )
    sec.tables.append(
        Table(
            ["", "replicas", "GPUs", "weights", "cost", "output tok/s", "why not"],
            rows,
            align=["l", "l", "r", "l", "r", "r", "l"],
            brief_columns=[0, 1, 2, 3, 4, 5],
        )
    )
    if plan.rejected:
        sec.bullets = [f"rejected {a}: {r}" for a, r in plan.rejected]
    return sec


def _serving_pareto(plan: ServingPlan) -> Section | None:
    best = plan.best

    def lat(c: ServingCandidate) -> float | None:
        for k in ("e2e_p95_s", "e2e_p50_s", "tpot_p50_s"):
            if k in c.latency_s:
                return c.latency_s[k]
        return None

    use_cost = best.cost_usd_per_hour is not None
    front = {id(c) for c in plan.pareto}
    pts, seen = [], set()
    for c in [best, *plan.pareto, *(a for a, _ in plan.alternatives)]:
        x = lat(c)
        y = c.cost_usd_per_hour if use_cost else float(c.gpus)
        if id(c) in seen or x is None or y is None:
            continue
        seen.add(id(c))
        pts.append(
            svg.Point(
                x,
                y,
                f"{c.replicas} x {c.replica_shape} {c.accelerator}",
                c.accelerator,
                c is best,
                id(c) in front,
            )
        )
    if len(pts) < 1:
        return None
    sec = Section("pareto", "Pareto front: latency against cost")
    key = (
        next(k for k in ("e2e_p95_s", "e2e_p50_s", "tpot_p50_s") if k in best.latency_s)
        if best.latency_s
        else "latency"
    )
    xlabel = f"{key.removesuffix('_s').replace('_', ' ')} latency"
    ylabel = "cost per hour (USD, on demand)" if use_cost else "GPUs"
    title = f"Pareto front: {key[:3]} latency against {'cost' if use_cost else 'GPUs'}; the choice ringed"
    sec.charts.append(
        Chart(
            "pareto",
            title,
            svg.scatter(
                "pareto",
                title,
                pts,
                xlabel,
                ylabel,
                units.seconds,
                _usd_tick if use_cost else units.short,
                logy=True,
            ),
        )
    )
    sec.tables.append(
        Table(
            ["configuration", xlabel, ylabel, ""],
            [
                [
                    p.label,
                    units.seconds(p.x),
                    units.usd(p.y) + "/h" if use_cost else units.count(p.y),
                    "chosen" if p.chosen else "",
                ]
                for p in pts
            ],
            "points on the chart",
        )
    )
    return sec


def serving_document(plan: ServingPlan, title: str = "Serving plan") -> Document:
    b = plan.best
    unc = getattr(plan, "uncertainty", None)
    sub = f"model {plan.model}, scenario {plan.scenario}, objective {plan.objective}"
    disagg = disagg_rows.chosen(b)
    decision = (
        disagg_rows.decision(b, disagg)
        if disagg
        else f"{units.plural(b.replicas, 'replica')} x {b.replica_shape} on {b.accelerator} = "
        f"{units.plural(b.gpus, 'GPU')} (weights {b.weight_precision}, KV cache {b.kv_precision})"
    )
    doc = Document("serving_plan", f"{title}: {plan.name}", sub, decision)
    kn = doc.key_numbers
    shape = f"disaggregated {disagg.ratio}" if disagg else f"{b.replicas} x {b.replica_shape}"
    kn.append(("GPUs", f"{b.gpus:,} x {b.accelerator} ({shape})"))
    if disagg:
        kn.extend(disagg_rows.key_rows(disagg, unc))
    elif plan.scenario == "serving":
        kn.append(
            (
                "capacity per replica",
                f"{b.replica_capacity_rps:,.2f} req/s within the SLOs"
                + _range(unc, "replica_capacity_rps", lambda v: f"{v:,.2f}"),
            )
        )
        kn.append(("sized for", f"{b.design_rate_rps:,.1f} req/s"))
        if _range(unc, "replicas", str):
            kn.append(("replicas needed", f"{b.replicas}" + _range(unc, "replicas", lambda v: f"{v:,.0f}")))
    kn.append(("output throughput", f"{b.output_tokens_per_s:,.0f} tokens/s"))
    if b.cost_usd_per_hour is not None:
        kn.append(("cost", f"{units.usd(b.cost_usd_per_hour)}/h on demand"))
    if b.cost_usd_per_m_output_tokens is not None:
        kn.append(("per 1M output tokens", units.usd(b.cost_usd_per_m_output_tokens)))
    power = _power_text(plan)
    if power:
        kn.append(("power", power))
    for k in ("ttft_p95_s", "tpot_p95_s", "ttft_p50_s", "tpot_p50_s"):
        if k in b.latency_s and not any(x[0].startswith(k[:4]) for x in kn):
            kn.append(
                (
                    k[:4].upper() + " " + k[5:8],
                    units.seconds(b.latency_s[k]) + _range(unc, f"latency_{k}", units.seconds),
                )
            )
    if b.goodput is not None:
        kn.append(("goodput", f"{b.goodput:.1%}"))
    if b.output_tokens_per_joule is not None:
        kn.append(("output tokens per joule", f"{b.output_tokens_per_joule:,.2f}"))
    if getattr(b, "disaggregation", None) is not None:
        doc.sections.append(disagg_rows.section(b.disaggregation))
    doc.sections.append(_latency_section(plan))
    mem = _serving_memory(plan)
    if mem:
        doc.sections.append(mem)
    doc.sections.append(_serving_alternatives(plan))
    par = _serving_pareto(plan)
    if par:
        doc.sections.append(par)
    _shared(doc, plan)
    if plan.assumptions:
        doc.sections.append(Section("assumptions", "Assumptions", bullets=list(plan.assumptions)))
    doc.sections.append(Section("search", "Search", text=[f"Planned in {plan.seconds:.1f} s."]))
    return in_platform_terms(doc, b.accelerator)  # chips where the platform's unit is a chip
