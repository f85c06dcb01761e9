"""The SCALE and DEPLOY checklists for the vision and recommendation workloads: the same
questions as for LLM training and serving, answered from the plan's own numbers (the
Demand's work unit and rate, the sizing, the uncertainty)."""

from __future__ import annotations

import math

from rightsize.advise.checklists import ANSWERED, TO_DECIDE, Item, _count, _days, _economics, _growth, _pct
from rightsize.advise.view import PlanView


def _unit(v: PlanView) -> str:
    return str(getattr(v.demand, "work_unit", "unit") or "unit")


def _span(seconds: float) -> str:
    return _days(seconds) if seconds >= 2 * 86400 else f"{seconds / 3600:.1f} h"


def scale_other(v: PlanView) -> list[Item]:
    b, d = v.best, v.demand
    gpn = v.node.gpus_per_node if v.node else 8
    unit = _unit(v)
    if v.is_job:
        size = f"{v.plan.name} on {b.gpus:,} GPUs" + (
            f" for {_span(b.time_to_train_s)}" if b.time_to_train_s else ""
        )
    else:
        size = (
            f"{v.plan.name}, sized for {d.design_rate_rps:,.0f} {unit}s/s (peak plus headroom)"
            if d
            else v.plan.name
        )
    items = [Item("SCALE", "scale", "How big is the workload?", ANSWERED, size + ".")]
    status, text = _growth(v)
    items.append(Item("SCALE", "scale", "How will it grow?", status, text))
    rate = getattr(d, "work_units_per_s", None)
    busy = f"MFU {b.mfu:.0%}, " if getattr(b, "mfu", None) is not None else ""
    items.append(
        Item(
            "SCALE",
            "compute",
            "Which accelerator, how many, how busy?",
            ANSWERED,
            f"{b.gpus:,} x {b.accelerator} ({math.ceil(b.gpus / gpn):,} x {b.node}); {busy}"
            + (f"{_count(rate)} {unit}s/s in all." if rate else "throughput as sized."),
        )
    )
    st = v.section("storage")
    need = getattr(d, "data_read_bytes_per_s", None)
    items.append(
        Item(
            "SCALE",
            "latency and locality",
            "Where do the data and checkpoints live?" if v.is_job else "Where do the inputs come from?",
            ANSWERED if st else TO_DECIDE,
            (f"Storage sized for {need / 1e6:,.0f} MB/s of reads." if need else "Storage sized.")
            if st
            else "Decide the storage tier and its read rate.",
        )
    )
    if not v.is_job and getattr(b, "latency_p99_s", None):
        items.append(
            Item(
                "SCALE",
                "latency and locality",
                "What latency do users see?",
                ANSWERED,
                f"p99 {b.latency_p99_s * 1e3:,.1f} ms.",
            )
        )
    status, text = _economics(v)
    items.append(Item("SCALE", "economics", "What does it cost, rented or bought?", status, text))
    return items


def deploy_other(v: PlanView) -> list[Item]:
    b, p = v.best, v.plan
    gpn = v.node.gpus_per_node if v.node else 8
    targets = ", ".join(
        f"{k} {val:g}" for k, val in (getattr(p, "targets", {}) or {}).items() if isinstance(val, int | float)
    )
    items = [
        Item(
            "DEPLOY",
            "define",
            "Are the workload, targets and SLOs defined?",
            ANSWERED,
            f"{p.model}: objective {p.objective}" + (f", {targets}" if targets else "") + ".",
        ),
        _estimate(v),
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
        _load_test(v),
        Item(
            "DEPLOY",
            "observe",
            "What to monitor, against which numbers?",
            TO_DECIDE,
            f"Watch {_unit(v)}s/s per GPU against the plan ({_rate_per_gpu(v)}); wire the alerts to the telemetry.",
        ),
    ]
    if v.is_job and b.time_to_train_s:
        text = f"After {_span(b.time_to_train_s)} the {b.gpus:,} GPUs are free: queue the next job or end the reservation."
        items.append(Item("DEPLOY", "yield plan", "When is the capacity given back?", ANSWERED, text))
    else:
        text = "Decide the scale-down policy: how many replicas off peak, and when reserved capacity ends."
        items.append(Item("DEPLOY", "yield plan", "When is the capacity given back?", TO_DECIDE, text))
    return items


def _estimate(v: PlanView) -> Item:
    m = _pct(v.uncertainty, "time_to_train_s" if v.is_job else "replicas")
    if not m:
        text = f"Point estimate only ({v.best.gpus} GPUs); no spread computed."
        return Item("DEPLOY", "estimate", "Is there an estimate with a range?", TO_DECIDE, text)
    fmt = _span if v.is_job else (lambda x: f"{x:,.0f}")
    label = "time to train" if v.is_job else "replicas"
    text = f"{label}: P10 {fmt(m['p10'])}, P50 {fmt(m['p50'])}, P90 {fmt(m['p90'])}."
    return Item("DEPLOY", "estimate", "Is there an estimate with a range?", ANSWERED, text)


def _load_test(v: PlanView) -> Item:
    b = v.best
    step = b.step.get("step_s") if isinstance(b.step, dict) else None
    test = (
        f"Profile one node: a step should take {step * 1e3:,.1f} ms at the planned batch"
        if v.is_job and step
        else "Replay the traffic against one replica"
    )
    if not v.is_job and getattr(b, "latency_p99_s", None):
        test += f"; p99 latency should stay near {b.latency_p99_s * 1e3:,.1f} ms"
    return Item("DEPLOY", "load-test", "What must a load test confirm?", TO_DECIDE, test + ".")


def _rate_per_gpu(v: PlanView) -> str:
    b = v.best
    for key in ("images_per_s_per_gpu", "samples_per_s_per_gpu"):
        x = getattr(b, key, None)
        if x:
            return f"{_count(x)}/s per GPU"
    return "as sized"
