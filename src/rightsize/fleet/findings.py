"""Fleet findings, each from the plan's own numbers, in the advisor's `Finding` form.

- Peaks that never coincide: the sum of the workloads' own peaks against the pool's peak.
- A committed pool idle at night: hours of the day when the pool is mostly idle.
- Jobs that miss a deadline (the month, how much is left undone).
- Spot suitability per workload: preemptible, and how much longer spot makes it.
- What pooling saves against each workload on its own capacity.
- Each capacity block booked: what it costs, and what on demand and a 1-year reservation of the
  same GPUs would (why the plan chose it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rightsize.advise import Finding
from rightsize.fleet.timeline import Usage

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.fleet.plan import FleetPlan

IDLE_BELOW = 0.5  # an hour when less than this share of the committed pool is busy is idle
SPOT_SUITS_BELOW = 1.25  # spot suits a workload whose work takes at most this much longer on it


def fleet_findings(plan: FleetPlan, u: Usage) -> list[Finding]:
    out = [f for f in (_peaks(plan, u), _idle(plan), _saving(plan), _solver(plan)) if f is not None]
    out += _misses(plan) + _spot(plan) + _blocks(plan)
    return sorted(out, key=lambda f: -f.impact)


def _peaks(plan: FleetPlan, u: Usage) -> Finding | None:
    own = {n: float(v.max()) for n, v in u.total.items()}
    together = float(sum(u.total.values(), np.zeros_like(next(iter(u.total.values())))).max())
    summed = sum(own.values())
    if summed <= together + 1e-6 or len(own) < 2:
        return None
    share = 1.0 - together / summed
    return Finding(
        "fleet_peaks_do_not_coincide",
        "over-provisioning",
        share,
        f"Peaks never coincide: the workloads' own peaks add up to {summed:,.0f} GPUs, the pool peaks at {together:,.0f}",
        {
            "sum_of_peaks_gpus": summed,
            "pooled_peak_gpus": together,
            **{f"{n}_peak_gpus": v for n, v in own.items()},
        },
        "Size shared capacity for the pooled peak, not the sum: let Kueue lend idle quota across queues "
        "(the borrowing limits in the quotas) instead of giving each workload its own peak.",
    )


def _solver(plan: FleetPlan) -> Finding | None:
    """A solve stopped at its time limit is said, with the gap it reached: never a silent limit."""
    late = [n for n, s in plan.dedicated.items() if s.stopped_at_time_limit]
    sol = plan.solution
    if not sol.stopped_at_time_limit and not late:
        return None
    gap = sol.mip_gap
    return Finding(
        "fleet_solver_time_limit",
        "under-provisioning",
        max(0.2, min(1.0, gap or 1.0)),
        "The solver stopped at its time limit: the plan is feasible but may cost more than the best "
        + (f"(pooled gap {gap:.2%})" if gap is not None else "(gap unknown)"),
        {
            "time_limit_s": plan.policy.solver.time_limit_s,
            "pooled_stopped": "yes" if sol.stopped_at_time_limit else "no",
            "pooled_mip_gap": gap,
            "dedicated_stopped": ", ".join(late) or "none",
        },
        "Raise policy.solver.time_limit_s (or the gap, policy.solver.mip_gap) and plan again.",
    )


def _idle(plan: FleetPlan) -> Finding | None:
    util = [(h, x) for h, x in enumerate(plan.utilisation_by_hour) if x is not None]
    idle = [h for h, x in util if x < IDLE_BELOW]
    if not util or not idle:
        return None
    lowest = min(util, key=lambda t: t[1])
    return Finding(
        "fleet_pool_idle_hours",
        "over-provisioning",
        len(idle) / 24.0 * (1.0 - lowest[1]) * 0.5,
        f"The committed pool is under {IDLE_BELOW:.0%} busy for {len(idle)} hours a day (lowest {lowest[1]:.0%} at {lowest[0]:02d}:00)",
        {
            "idle_hours": ", ".join(f"{h:02d}:00" for h in idle),
            "lowest_utilisation_fraction": lowest[1],
            "lowest_hour": f"{lowest[0]:02d}:00",
        },
        "Move deferrable work (batch inference, fine-tunes, evaluations) into these hours: give them "
        "windows there, or mark them deferrable so the plan can place them.",
    )


def _usd(x: float) -> str:
    """Money as the report writes it: $2.44M, never $2,441,148."""
    return f"${x / 1e6:,.2f}M" if abs(x) >= 1e6 else f"${x:,.0f}"


def _saving(plan: FleetPlan) -> Finding | None:
    if plan.dedicated_usd <= 0:
        return None
    saving = plan.dedicated_usd - plan.pooled_usd
    share = saving / plan.dedicated_usd
    if saving >= 0.5 and share >= 0.005:
        title = f"Pooling saves {_usd(saving)} ({share:.0%}) against each workload on its own capacity"
        fix = "Run the workloads on one pool with shared quotas (see the Kueue quotas)."
    elif saving > -0.5:
        title = "Pooling makes no saving against each workload on its own capacity"
        fix = "Keep each workload on its own capacity, or pool them only for the shared operations."
    else:
        title = f"Pooling costs {_usd(-saving)} ({-share:.0%}) more than each workload on its own capacity"
        fix = "Keep each workload on its own capacity; the pooled plan's commitments do not pay off here."
    return Finding(
        "fleet_pooling_saving",
        "over-provisioning",
        max(0.0, share),
        title,
        {"pooled_usd": plan.pooled_usd, "dedicated_usd": plan.dedicated_usd},
        fix,
    )


def _misses(plan: FleetPlan) -> list[Finding]:
    out = []
    for d in plan.deadlines:
        if d["met"]:
            continue
        need, missed = d.get("gpu_hours_needed"), d.get("gpu_hours_missed")
        share = (missed / need) if need and missed else 1.0
        out.append(
            Finding(
                "fleet_deadline_missed",
                "under-provisioning",
                max(0.15, min(1.0, share)),
                f"{d['workload']} misses its deadline ({d['window']}): "
                + (f"{missed:,.0f} of {need:,.0f} GPU-hours left undone" if need else d.get("note", "")),
                {k: v for k, v in d.items() if not isinstance(v, bool) and k != "fix"},
                d.get("fix")
                or "In that busy month allow burst capacity (policy.capacity: on_demand or spot), raise the "
                "budget or power limit, widen the job's window (end), or give it a higher priority than "
                "deferrable work.",
            )
        )
    return out


def _spot(plan: FleetPlan) -> list[Finding]:
    out = []
    for e in plan.entries:
        factor = e["spot_slowdown_factor"]
        if e["kind"] == "serving":
            continue
        suits = e["preemptible"] and factor is not None and factor <= SPOT_SUITS_BELOW
        why = (
            "not preemptible"
            if not e["preemptible"]
            else "no spot price"
            if factor is None
            else f"spot makes its work {factor:.2f}x longer"
        )
        out.append(
            Finding(
                "fleet_spot_suitability",
                "wrong-workload",
                0.02 if suits else 0.011,
                f"{e['name']}: spot {'suits' if suits else 'does not suit'} it ({why})",
                {
                    "workload": e["name"],
                    "spot_slowdown_factor": factor,
                    "preemptible": "yes" if e["preemptible"] else "no",
                    "suits_spot": "yes" if suits else "no",
                },
                "Let it run on spot (preemptible: true, spot in policy.capacity) with frequent checkpoints."
                if suits
                else "Keep it on committed or on-demand capacity.",
            )
        )
    return out


def _blocks(plan: FleetPlan) -> list[Finding]:
    """Why each capacity block: its price against on demand for the same GPU-hours (where the cap
    allows that many GPUs at once) and against reserving the same GPUs for a year."""
    out = []
    for p in plan.purchases:
        if "node_days" not in p:
            continue
        pr = plan.pools[p["pool"]]
        hours = p["work_gpu_hours"]  # on demand pays the work's hours only
        alt = {}
        od = pr.usd_per_gpu_hour.get("on_demand")
        if od is not None:
            alt["on_demand_usd"] = hours * od
        r1 = pr.usd_per_gpu_hour.get("reserved_1y")
        if r1 is not None:
            alt["reserved_1y_usd"] = p["gpus"] / plan.policy.utilisation_target * r1 * 8760.0
        cap = pr.burst_caps_gpus.get("on_demand", float("inf"))
        why = (
            [
                f"on demand {_usd(alt['on_demand_usd'])}"
                + (f" (but capped at {cap:,.0f} GPUs at once)" if p["gpus"] > cap else "")
            ]
            if "on_demand_usd" in alt
            else []
        )
        if "reserved_1y_usd" in alt:
            why.append(f"a 1-year reservation of the same GPUs {_usd(alt['reserved_1y_usd'])}")
        out.append(
            Finding(
                "fleet_capacity_block",
                "over-provisioning",
                0.03,
                f"{p['month']}: {p['gpus']:,} {p['pool']} GPUs on capacity blocks for {p['days']:.1f} days, "
                f"{_usd(p['usd_in_horizon'])}; " + ("; ".join(why) or "no other kind priced"),
                {
                    "pool": p["pool"],
                    "month": p["month"],
                    "node_days": p["node_days"],
                    "offer": p["offer"],
                    "block_usd": p["usd_in_horizon"],
                    **alt,
                },
                f"Book it ahead ({p['offer']}; AWS: start up to 8 weeks ahead, 1-14 days in 1-day steps, "
                "then 7-day steps to 182 days, paid up front); set policy.burst_caps.capacity_block_gpus to "
                "what the provider offers you.",
            )
        )
    return out
