"""Under-provisioning rules: what the plan is short of (memory, fabric, cooling, time, SLO
headroom, room to grow)."""

from __future__ import annotations

from typing import Any

from rightsize.advise.findings.base import Finding, _deadline, _nic_gbps, _num, _step_by_nic
from rightsize.advise.findings.thresholds import (
    DEADLINE_MAX_SHARE,
    DEADLINE_MIN_PROBABILITY,
    MEMORY_HEADROOM_MIN,
    MIN_SAVING,
    REBUILD_IMPACT,
    SERVING_WEIGHTS_MAX_SHARE,
    SLO_GOODPUT_MIN,
    SLO_HEADROOM_MIN,
    THROTTLE_MAX_SLOWDOWN,
)
from rightsize.advise.view import PlanView
from rightsize.catalog.platforms import platform_for
from rightsize.constants import DAY_S, GiB


def memory_headroom(v: PlanView) -> Finding | None:
    b = v.best
    if b is None:
        return None
    if v.kind in ("training", "vision"):
        total, cap = b.memory.get("total_bytes"), b.memory.get("capacity_bytes")
        if not total or not cap:
            return None
        headroom = 1.0 - total / cap
        if headroom >= MEMORY_HEADROOM_MIN:
            return None
        return Finding(
            "memory_headroom",
            "under-provisioning",
            MEMORY_HEADROOM_MIN - headroom,
            f"Thin memory headroom: {headroom:.0%} of HBM left ({total / GiB:,.1f} of {cap / GiB:,.1f} GiB)",
            {"total_bytes": total, "capacity_bytes": cap, "headroom_fraction": headroom},
            "Leave room for fragmentation and spikes: selective recomputation, one more pipeline stage, "
            "a smaller micro-batch, or ZeRO-1/2 to shard optimizer state and gradients."
            if v.kind == "training"
            else "Leave room for fragmentation and spikes: a smaller batch per GPU, or activation checkpointing.",
        )
    if v.kind == "serving" and v.acc is not None:
        weights = (b.memory or {}).get("weights_bytes_per_gpu")
        if not weights:
            return None
        share = weights / v.acc.hbm_bytes
        if share <= SERVING_WEIGHTS_MAX_SHARE:
            return None
        return Finding(
            "memory_headroom",
            "under-provisioning",
            share - SERVING_WEIGHTS_MAX_SHARE,
            f"Weights fill {share:.0%} of each GPU's memory: little room for the KV cache",
            {
                "weights_bytes_per_gpu": weights,
                "hbm_bytes": v.acc.hbm_bytes,
                "kv_capacity_tokens": (b.memory or {}).get("kv_capacity_tokens", 0.0),
            },
            f"Use tp {b.tp * 2} per replica or quantise the weights further, so the KV cache holds more "
            "concurrent sequences.",
        )
    return None


def fabric_too_slow(v: PlanView) -> Finding | None:
    if v.step is None:
        return None
    by_nic, now = _step_by_nic(v), _nic_gbps(v)
    if not by_nic or not now:
        return None
    cur = min(by_nic, key=lambda g: abs(g - now))
    faster = [g for g in by_nic if g > cur]
    if not faster:
        return None
    g = min(faster, key=lambda x: by_nic[x])
    gain = 1.0 - by_nic[g] / by_nic[cur]
    if gain < MIN_SAVING:
        return None
    fab = v.section("fabric")
    if fab.get("operated_by") == "provider" and not fab.get("crosses_network"):
        return None  # the job stays inside one TPU slice / UltraServer: no network between them to speed up
    fix = f"Provision {g:,.0f} Gb/s per GPU (or more NICs per node), or change the layout to move less over the fabric."
    plat = platform_for(v.acc.id, v.acc.vendor) if v.acc is not None else None
    if plat is not None and plat.nics_on_chip:  # Gaudi: the scale-out ports are the chip's own
        fix = (
            f"The scale-out ports are on the chip itself, {plat.scaleout_name}: no NIC can be added, so keep "
            "more of the traffic inside each node (a larger tensor or expert group there) or change the "
            "layout to move less over the fabric."
        )
    if fab.get("operated_by") == "provider":  # Google's DCN, AWS's EFA: the provider sets the rate per host
        fix = (
            f"The provider sets the network's rate per host, so it cannot be bought faster: keep more of the "
            f"traffic inside each {fab.get('scaleup_group', 'scale-up group')} (a larger one, fewer of them) "
            "or change the layout to move less between them."
        )
    return Finding(
        "fabric_too_slow",
        "under-provisioning",
        gain,
        f"The fabric is under-provisioned: {g:,.0f} Gb/s per GPU would cut the step by {gain:.0%}",
        {
            "nic_gbps_per_gpu": cur,
            "step_s": by_nic[cur],
            "faster_nic_gbps_per_gpu": g,
            "faster_step_s": by_nic[g],
        },
        fix,
    )


def thermal_limit(v: PlanView) -> Finding | None:
    pw = v.section("power")
    if pw.get("facility_operated_by") == "provider":
        return None  # the cloud provider's halls (TPU, Trainium): not our racks to cool
    throttle = _num(pw, "throttle_slowdown", "throttle_slowdown_fraction")
    kw = _num(pw, "kw_per_rack")
    limit = _num(pw, "cooling_max_rack_kw", "rack_limit_kw", "max_kw_per_rack", "rack_power_limit_kw")
    over = kw is not None and limit is not None and kw > limit
    if not over and (throttle is None or throttle < THROTTLE_MAX_SLOWDOWN):
        return None
    ev: dict[str, Any] = {"throttle_slowdown_fraction": throttle or 0.0}
    if kw is not None:
        ev["kw_per_rack"] = kw
    if limit is not None:
        ev["rack_limit_kw"] = limit
    title = (
        f"Thermal limit: racks draw {kw:,.1f} kW against a {limit:,.1f} kW limit"
        if over and kw is not None and limit is not None
        else f"Thermal limit: power capping slows the GPUs by {throttle:.0%}"
    )
    return Finding(
        "thermal_limit",
        "under-provisioning",
        max(throttle or 0.0, 1.0 - limit / kw if over and kw and limit else 0.0),
        title,
        ev,
        "Spread the nodes over more racks, move to liquid cooling, or raise the rack power budget.",
    )


def deadline_risk(v: PlanView) -> Finding | None:
    b = v.best
    deadline = _deadline(v)
    if not v.is_job or not deadline or b is None or getattr(b, "time_to_train_s", None) is None:
        return None
    d = (v.uncertainty or {}).get("deadline") or {}
    p = d.get("probability_met")
    share = b.time_to_train_s / deadline
    if p is not None:
        if p >= DEADLINE_MIN_PROBABILITY:
            return None
        impact, title = (
            1.0 - p,
            f"Deadline at risk: a {p:.0%} chance of finishing in {_span(deadline)}",
        )
    else:
        if share <= DEADLINE_MAX_SHARE:
            return None
        impact, title = (
            share - DEADLINE_MAX_SHARE,
            f"Deadline at risk: the run uses {share:.0%} of the window",
        )
    return Finding(
        "deadline_risk",
        "under-provisioning",
        impact,
        title,
        {
            "time_to_train_s": b.time_to_train_s,
            "deadline_s": deadline,
            "deadline_used_fraction": share,
            "probability_met_fraction": p,
        },
        "Add GPUs (the next step on the Pareto front), or extend the deadline; measure the step on one node "
        "before committing (`rightsize profile`).",
    )


def _span(seconds: float) -> str:
    return f"{seconds / DAY_S:.0f} days" if seconds >= 2 * DAY_S else f"{seconds / 3600:.1f} h"


def slo_headroom(v: PlanView) -> Finding | None:
    b = v.best
    if v.kind in ("vision", "recommendation"):
        return _latency_headroom(v)
    if v.kind != "serving" or b is None or not b.slo_headroom:
        return None
    worst = min(b.slo_headroom, key=lambda k: b.slo_headroom[k])
    h = b.slo_headroom[worst]
    low_goodput = b.goodput is not None and b.goodput < SLO_GOODPUT_MIN
    if h >= SLO_HEADROOM_MIN and not low_goodput:
        return None
    return Finding(
        "slo_headroom",
        "under-provisioning",
        max(SLO_HEADROOM_MIN - h, (SLO_GOODPUT_MIN - (b.goodput or 1.0))),
        f"Thin SLO headroom: {worst.removesuffix('_s')} is within {h:.2f}x of its limit",
        {f"{worst.removesuffix('_s')}_headroom": h, "goodput_fraction": b.goodput},
        f"Add a replica ({b.replicas} -> {b.replicas + 1}) or lower policy.utilisation_target so each replica runs further from its SLO capacity.",
    )


def growth_limits(v: PlanView) -> Finding | None:
    stages = [s for s in (v.section("growth").get("stages") or []) if isinstance(s, dict)]
    bad = [s for s in stages if s.get("fabric_ok") is False or s.get("power_ok") is False]
    if not bad:
        return None
    s = bad[0]
    year = s.get("year", s.get("needed_at_years"))
    what = " and ".join(
        w for w, k in (("the fabric", "fabric_ok"), ("the power budget", "power_ok")) if s.get(k) is False
    )
    return Finding(
        "growth_limits",
        "under-provisioning",
        REBUILD_IMPACT,
        f"Growth outruns {what} "
        + (
            "with the first purchase, due now"
            if isinstance(year, int | float) and year < 0.05
            else f"with the purchase due in year {year:g}"
            if isinstance(year, int | float)
            else f"in year {year}"
        )
        + f" ({s.get('gpus'):,} GPUs)",
        {"year": year, "gpus": s.get("gpus"), "stages_over_limit": len(bad)},
        "Build the day-one fabric for the final stage (spine ports, an extra tier) and reserve facility power "
        "for it now: adding them later means re-cabling and downtime.",
    )


def _latency_headroom(v: PlanView) -> Finding | None:
    """A vision or recommendation service whose p99 latency sits close to its target."""
    b = v.best
    target = (getattr(v.plan, "targets", None) or {}).get("latency_p99_s")
    got = getattr(b, "latency_p99_s", None)
    if b is None or not target or not got:
        return None
    h = target / got
    if h >= SLO_HEADROOM_MIN:
        return None
    return Finding(
        "slo_headroom",
        "under-provisioning",
        SLO_HEADROOM_MIN - h,
        f"Thin latency headroom: p99 {got * 1e3:.1f} ms is within {h:.2f}x of the {target * 1e3:.0f} ms target",
        {"latency_p99_s": got, "latency_target_s": target, "latency_headroom": h},
        "Use a smaller batch per replica (lower latency, more replicas), a faster accelerator, or relax the "
        "latency target.",
    )
