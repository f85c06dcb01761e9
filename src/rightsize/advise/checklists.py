"""The SCALE review and the DEPLOY checklist, filled from the plan's own numbers.

SCALE: scale, compute, accelerator interconnect, latency and locality, economics.
DEPLOY: define, estimate, pick platform, load-test, observe, yield plan.
Each item is "answered" (with the plan's numbers) or "to_decide" (with what the user still
has to decide, and the numbers that decision should meet).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from rightsize.advise.findings.terms import speak
from rightsize.advise.view import PlanView, view
from rightsize.catalog.platforms import platform_for
from rightsize.constants import DAY_S

ANSWERED = "answered"
TO_DECIDE = "to_decide"


@dataclass(frozen=True)
class Item:
    checklist: str  # "SCALE" | "DEPLOY"
    step: str
    question: str
    status: str  # ANSWERED | TO_DECIDE
    answer: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pct(u: dict[str, Any] | None, metric: str) -> dict[str, Any] | None:
    m = ((u or {}).get("metrics") or {}).get(metric)
    return m if isinstance(m, dict) else None


def _days(s: float) -> str:
    return f"{s / DAY_S:,.1f} days"


def _rate(bytes_per_s: float) -> str:
    for div, unit in ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s")):
        if bytes_per_s >= div:
            return f"{bytes_per_s / div:,.1f} {unit}"
    return f"{bytes_per_s / 1e3:,.1f} kB/s"


def _usd(x: float) -> str:
    if x >= 1e6:  # as the report writes money: $23.56M, never $23,560,345
        return f"${x / 1e6:,.2f}M"
    return f"${x:,.0f}" if x >= 100 else f"${x:,.2f}"


def _count(x: float) -> str:
    """A count as the report writes it: 452,760 below a million, 1.65M above."""
    return f"{x / 1e6:,.3g}M" if abs(x) >= 1e6 else f"{x:,.0f}"


def _growth(v: PlanView) -> tuple[str, str]:
    g = v.section("growth")
    stages = [s for s in g.get("stages") or [] if isinstance(s, dict)]
    if not stages:
        return (
            TO_DECIDE,
            "No growth plan: decide the horizon and how the workload grows (infrastructure.growth).",
        )
    last = stages[-1]
    year = last.get("year", last.get("needed_at_years", "?"))
    return ANSWERED, (
        f"{len(stages)} stage(s) over {g.get('horizon_years', '?')} years, reaching {last.get('gpus', '?')} GPUs "
        f"in year {year}."
    )


def _fabric(v: PlanView) -> str | None:
    f = v.section("fabric")
    if not f:
        return None
    parts = [str(f.get(k)) for k in ("kind", "topology") if f.get(k)]
    if f.get("nic_gbps_per_gpu"):
        parts.append(f"{float(f['nic_gbps_per_gpu']):,.0f} Gb/s per GPU")
    for k in ("leaf_switches", "spine_switches", "core_switches"):
        if f.get(k):
            parts.append(f"{f[k]} {k.replace('_', ' ')}")
    return ", ".join(parts)


def _economics(v: PlanView) -> tuple[str, str]:
    c = v.section("cost")
    b = v.best
    bits = []
    if v.is_job and getattr(b, "cost_usd", None) is not None and getattr(b, "gpu_hours", None) is not None:
        bits.append(f"{_usd(b.cost_usd)} per run on demand ({_count(b.gpu_hours)} GPU-hours)")
    if v.kind in ("vision", "recommendation") and not v.is_job and b.cost_usd is not None:
        bits.append(f"{_usd(b.cost_usd)}/h on demand")
    if v.kind == "serving" and b.cost_usd_per_hour is not None:
        per_m = (
            f", {_usd(b.cost_usd_per_m_output_tokens)} per 1M output tokens"
            if b.cost_usd_per_m_output_tokens is not None
            else ""
        )
        bits.append(f"{_usd(b.cost_usd_per_hour)}/h on demand{per_m}")
    be = c.get("breakeven_utilisation_fraction", c.get("breakeven_utilisation"))
    if isinstance(be, dict):
        be = be.get("on_demand")
    if isinstance(be, int | float) and be > 1.0:
        bits.append("renting on demand is cheaper than owning even at full utilisation")
    elif isinstance(be, int | float):
        bits.append(f"owning beats on-demand above {be:.0%} utilisation")
    if not bits:
        return (
            TO_DECIDE,
            "No price for this accelerator: decide the price per GPU-hour or the purchase price.",
        )
    if not c:
        return TO_DECIDE, "; ".join(bits) + ". Still to decide: rent or buy (reserved, spot, on premises)."
    return ANSWERED, "; ".join(bits) + "."


def _scale(v: PlanView) -> list[Item]:
    """The SCALE checklist: size, growth, compute, interconnect, locality, economics."""
    growth_status, growth_text = _growth(v)
    items = [_scale_size(v), Item("SCALE", "scale", "How will it grow?", growth_status, growth_text)]
    items += _scale_training(v) if v.kind == "training" else _scale_serving(v)
    status, text = _economics(v)
    items.append(Item("SCALE", "economics", "What does it cost, rented or bought?", status, text))
    return items


def _scale_size(v: PlanView) -> Item:
    b, p = v.best, v.plan
    if v.kind == "training":
        d = v.demand
        what = f"{d.params / 1e9:,.0f}B-parameter " if d is not None and getattr(d, "params", None) else ""
        run = f" for {_days(b.time_to_train_s)}" if b.time_to_train_s else ""
        text = f"{what}{p.model} on {b.gpus:,} GPUs{run}."
    elif b.design_rate_rps:
        text = (
            f"{p.model}, sized for {b.design_rate_rps:,.1f} req/s (peak plus headroom) with "
            f"{b.replicas} replica{'' if b.replicas == 1 else 's'}."
        )
    else:
        text = f"{p.model}, {p.scenario} scenario, {b.output_tokens_per_s:,.0f} output tokens/s."
    return Item("SCALE", "scale", "How big is the workload?", ANSWERED, text)


def _scaleup_words(v: PlanView) -> str:
    """The node's scale-up link in the vendor's word, and the platform's larger group where there
    is one ("NeuronLink domain (one Trn2 UltraServer holds up to 64)")."""
    if v.acc is None:
        return "scale-up domain"
    words = f"{v.acc.scaleup_name} scale-up domain"
    plat = platform_for(v.acc.id, v.acc.vendor)
    most = plat.domain_max_units.get(v.acc.id, 0)
    if most > v.acc.scaleup_domain_gpus and plat.scaleup_domain != "node":
        words += f" (one {plat.scaleup_domain} holds up to {most:,})"
    return words


def _scale_training(v: PlanView) -> list[Item]:
    """Compute, interconnect and storage locality of a training plan."""
    b = v.best
    gpn = v.node.gpus_per_node if v.node else 8
    compute = Item(
        "SCALE",
        "compute",
        "Which accelerator, how many, how busy?",
        ANSWERED,
        f"{b.gpus:,} x {b.accelerator} ({math.ceil(b.gpus / gpn):,} x {b.node}); MFU {b.mfu:.0%}, "
        f"{b.tokens_per_s_per_gpu:,.0f} tokens/s per GPU.",
    )
    exposed = sum(b.step.get(k, 0.0) for k in b.step if k.endswith("_comm_exposed_s")) / b.step_time_s
    domain = v.acc.scaleup_domain_gpus if v.acc else gpn
    fab = _fabric(v)
    text = f"tp{b.parallel['tp']} inside the {domain}-GPU {_scaleup_words(v)}; {exposed:.0%} of the step is exposed communication"
    if fab:
        text += f"; fabric: {fab}."
    elif not v.spans_nodes:
        text += "."
    else:
        text += "; still to decide: the fabric topology and NIC rate."
    interconnect = Item(
        "SCALE",
        "accelerator interconnect",
        "Does the layout fit the scale-up domain and the fabric?",
        ANSWERED if fab or not v.spans_nodes else TO_DECIDE,
        text,
    )
    where = "Where do the data and checkpoints live?"
    st = v.section("storage")
    if st:
        tiers = ", ".join(
            str(t.get("name") or t.get("tier") or t.get("kind"))
            for t in st.get("tiers", [])
            if isinstance(t, dict)
        )
        locality = Item(
            "SCALE", "latency and locality", where, ANSWERED, f"Storage tiers: {tiers or 'sized'}."
        )
    else:
        need = getattr(v.demand, "data_read_bytes_per_s", None)
        rate = f" of at least {_rate(need)}" if need else ""
        locality = Item(
            "SCALE",
            "latency and locality",
            where,
            TO_DECIDE,
            f"Decide the storage tier next to the GPUs: sustained reads{rate} and checkpoint writes.",
        )
    return [compute, interconnect, locality]


def _shape(b: Any) -> str:
    shape = getattr(b, "replica_shape", None)
    return shape if isinstance(shape, str) else f"tp{b.tp}"


def _serving_interconnect(b: Any, domain_gpus: int | None) -> str:
    """What the plan's replica layout asks of the interconnect: one node's scale-up domain,
    or, for a replica spanning nodes, which of its traffic crosses the scale-out fabric."""
    lay = getattr(b, "layout", None)
    if lay is None or lay.nodes <= 1:
        return (
            f"Each replica's {_shape(b)} stays inside one node's scale-up domain; replicas exchange no traffic, so a "
            "front-end network suffices."
        )
    if lay.ep > 1:  # over the scale-up domain while the replica fits in it, else the NICs
        inside = domain_gpus is not None and lay.gpus <= domain_gpus
        traffic, link = f"its expert all-to-all (ep{lay.ep}) runs", lay.tp_link if inside else "the RDMA NICs"
    elif lay.tp_spans_nodes:
        traffic, link = f"its tensor-parallel all-reduces (tp{lay.tp}) run", lay.tp_link
    else:
        traffic, link = (
            f"the activations between its {lay.pp} pipeline stages run",
            lay.pp_link or lay.tp_link,
        )
    if "RDMA" in link:
        need = "the nodes of a replica need that scale-out fabric between them"
    else:
        need = "one scale-up domain spans the nodes, so no scale-out fabric is needed inside a replica"
    return (
        f"Each replica spans {lay.nodes} nodes as {_shape(b).split(' (')[0]} ({lay.gpus_per_node} GPUs per node): {traffic} over "
        f"{link}; {need}. Its nodes are scheduled together (LeaderWorkerSet, or one Slurm job); replicas "
        "exchange no traffic."
    )


def _scale_serving(v: PlanView) -> list[Item]:
    """Compute, interconnect, latency and user locality of a serving plan."""
    b = v.best
    items = [
        Item(
            "SCALE",
            "compute",
            "Which accelerator, how many, how busy?",
            ANSWERED,
            f"{b.gpus:,} x {b.accelerator}: {b.replicas} replica{'' if b.replicas == 1 else 's'} of {_shape(b)}, each "
            f"serving {b.replica_capacity_rps:,.2f} req/s within the SLOs.",
        ),
        Item(
            "SCALE",
            "accelerator interconnect",
            "Does the layout fit the scale-up domain and the fabric?",
            ANSWERED,
            _serving_interconnect(b, getattr(v.acc, "scaleup_domain_gpus", None)),
        ),
    ]
    lat = b.latency_s or {}
    if lat:
        parts = [
            f"{m} p95 {lat[f'{m}_p95_s'] * 1e3:,.0f} ms"
            for m in ("ttft", "tpot", "e2e")
            if f"{m}_p95_s" in lat
        ]
        if not parts:
            parts = [f"{k.removesuffix('_s')} {x * 1e3:,.1f} ms" for k, x in lat.items()]
        items.append(
            Item(
                "SCALE",
                "latency and locality",
                "What latency do users see?",
                ANSWERED,
                ", ".join(parts) + ".",
            )
        )
    items.append(
        Item(
            "SCALE",
            "latency and locality",
            "Where are the users, and where do the replicas run?",
            TO_DECIDE,
            "Decide the regions: network round trips add to every TTFT above; keep replicas near their users.",
        )
    )
    return items


def _deploy(v: PlanView) -> list[Item]:
    """The DEPLOY checklist: goal, estimate, platform, load test, monitoring, yield."""
    b = v.best
    gpn = v.node.gpus_per_node if v.node else 8
    return [
        _deploy_goal(v),
        _deploy_estimate(v),
        Item(
            "DEPLOY",
            "pick platform",
            "Which platform?",
            ANSWERED,
            f"{math.ceil(b.gpus / gpn):,} x {b.node} ({b.gpus:,} x {b.accelerator}).",
        ),
        Item(
            "DEPLOY",
            "pick platform",
            "Which provider and region?",
            TO_DECIDE,
            "Decide the provider (or own data centre) and region; check capacity is available at this size.",
        ),
        _deploy_load_test(v, gpn),
        _deploy_observe(v),
        _deploy_yield(v),
    ]


def _deploy_goal(v: PlanView) -> Item:
    b, p = v.best, v.plan
    if v.kind == "training":
        goal = f"objective {p.objective}" + (f", deadline {_days(p.deadline_s)}" if p.deadline_s else "")
    else:
        goal = f"objective {p.objective}, scenario {p.scenario}"
        if b.slo_headroom:
            goal += ", SLOs on " + ", ".join(k.removesuffix("_s") for k in b.slo_headroom)
    return Item(
        "DEPLOY", "define", "Are the workload, targets and SLOs defined?", ANSWERED, f"{p.model}: {goal}."
    )


def _deploy_estimate(v: PlanView) -> Item:
    b = v.best
    key = "time_to_train_s" if v.kind == "training" else "replicas"
    m = _pct(v.uncertainty, key)
    if m:
        fmt = _days if key == "time_to_train_s" else (lambda x: f"{x:,.0f}")
        text = f"{key.removesuffix('_s').replace('_', ' ')}: P10 {fmt(m['p10'])}, P50 {fmt(m['p50'])}, P90 {fmt(m['p90'])}."
        return Item("DEPLOY", "estimate", "Is there an estimate with a range?", ANSWERED, text)
    est = _days(b.time_to_train_s) if v.kind == "training" and b.time_to_train_s else f"{b.gpus} GPUs"
    return Item(
        "DEPLOY",
        "estimate",
        "Is there an estimate with a range?",
        TO_DECIDE,
        f"Point estimate only ({est}); no spread computed.",
    )


def _deploy_load_test(v: PlanView, gpn: int) -> Item:
    b = v.best
    if v.kind == "training":
        st = _pct(v.uncertainty, "step_time_s")
        bound = f"{st['p90']:.2f} s (P90)" if st else f"{b.step_time_s * 1.1:.2f} s (+10%)"
        text = (
            f"Profile one node with the chosen layout (`rightsize profile`): the step should take {b.step_time_s:.2f} s, "
            f"at most {bound}; then a scale test on {min(b.gpus, 8 * gpn)} GPUs before the full run."
        )
    else:
        lim = ", ".join(
            f"{k.removesuffix('_s')} headroom {h:.2f}x" for k, h in (b.slo_headroom or {}).items()
        )
        text = (
            f"Replay the traffic against one replica: it should sustain {b.replica_capacity_rps:,.2f} req/s within the SLOs"
            + (f" ({lim})" if lim else "")
            + "."
        )
    return Item("DEPLOY", "load-test", "What must a load test confirm?", TO_DECIDE, text)


def _deploy_observe(v: PlanView) -> Item:
    b = v.best
    if v.kind == "training":
        gp = (b.reliability or {}).get("goodput")
        text = f"Alert when MFU falls below {b.mfu * 0.9:.0%} (plan {b.mfu:.0%})" + (
            f" or goodput below {gp * 0.98:.0%} (plan {gp:.1%})" if gp else ""
        )
    else:
        lat = b.latency_s or {}
        pct = "p95" if any(k.endswith("_p95_s") for k in lat) else "p50"
        alerts = [
            f"{m} {pct} above {lat[f'{m}_{pct}_s'] * 1e3 * 1.2:,.0f} ms"
            for m in ("ttft", "tpot")
            if f"{m}_{pct}_s" in lat
        ]
        text = ("Alert on " + ", ".join(alerts) + "; w" if alerts else "W") + (
            f"atch load per replica against {b.replica_capacity_rps:,.2f} req/s"
        )
    return Item(
        "DEPLOY",
        "observe",
        "What to monitor, against which numbers?",
        TO_DECIDE,
        text + "; wire the alerts to the telemetry.",
    )


def _deploy_yield(v: PlanView) -> Item:
    b = v.best
    question = "When is the capacity given back?"
    if v.kind == "training" and b.time_to_train_s:
        return Item(
            "DEPLOY",
            "yield plan",
            question,
            ANSWERED,
            f"After {_days(b.time_to_train_s)} ({_count(b.gpu_hours)} GPU-hours) the {b.gpus:,} GPUs are free: "
            "queue the next job or end the reservation.",
        )
    duty = getattr(v.demand, "duty_cycle", None)
    if duty and v.kind == "serving":
        low = max(1, math.ceil(b.replicas * duty))
        text = (
            f"Off peak, {low} replica{'' if low == 1 else 's'} carry the average load; autoscale between {low} and {b.replicas}."
            if low < b.replicas
            else f"The load is steady: all {b.replicas} replica{'' if b.replicas == 1 else 's'} stay up; revisit when the traffic changes."
        )
        return Item("DEPLOY", "yield plan", question, ANSWERED, text)
    return Item(
        "DEPLOY",
        "yield plan",
        question,
        TO_DECIDE,
        "Decide the scale-down policy: how many replicas off peak, and when reserved capacity ends.",
    )


def checklists(plan: Any) -> dict[str, list[Item]]:
    """{"SCALE": [...], "DEPLOY": [...]} for any plan with a chosen configuration, in the
    vendor's words (chips where they are not GPUs, its own profiler)."""
    v = plan if isinstance(plan, PlanView) else view(plan)
    if v.best is None:
        return {"SCALE": [], "DEPLOY": []}
    if v.kind in ("vision", "recommendation"):
        from rightsize.advise.checklists_other import deploy_other, scale_other

        out = {"SCALE": scale_other(v), "DEPLOY": deploy_other(v)}
    elif v.kind in ("training", "serving"):
        out = {"SCALE": _scale(v), "DEPLOY": _deploy(v)}
    else:
        return {"SCALE": [], "DEPLOY": []}
    if v.acc is None:
        return out
    plat = platform_for(v.acc.id, v.acc.vendor)
    return {k: [replace(i, answer=speak(i.answer, plat)) for i in items] for k, items in out.items()}
