"""From a solution to what the reports show: usage per workload, the monthly timeline, the typical
day, the pool's utilisation, the purchases and the deadlines.

Usage of a workload in a slot is its fixed load, its placed work on the pool or on-demand, and its
spot work times the spot slowdown (the GPUs spot takes). Which of the pool's GPUs serve whom is not
a decision the program needs; for quotas and the split by workload the committed pool goes first to
workloads that may not be preempted, then by priority, the rest of each slot is on-demand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.fleet.blocks import KIND as BLOCK
from rightsize.fleet.demand import HOURS, Calendar, WorkloadDemand
from rightsize.fleet.gangs import Holdings, flavor_totals, month_holders
from rightsize.fleet.prices import COMMITTED, PoolPrices
from rightsize.fleet.solver import Solution, _active
from rightsize.spec.fleet import month_text

EPS = 1e-6
HOURS_PER_MONTH = 365.25 * 24 / 12  # a term's months past the horizon, at the average month


@dataclass
class Usage:
    """Per-slot GPUs ([months, 24]) by workload and by source of capacity."""

    total: dict[str, np.ndarray]  # workload -> GPUs in use
    on_pool: dict[str, np.ndarray]  # workload -> GPUs from the committed pool
    on_demand: dict[str, np.ndarray]  # workload -> on-demand GPUs
    spot: dict[str, np.ndarray]  # workload -> spot GPUs
    committed: dict[str, dict[str, np.ndarray]]  # pool -> kind -> GPUs committed per month
    usable: dict[str, np.ndarray]  # pool -> committed GPUs x utilisation target, per month
    block: dict[str, np.ndarray] = field(default_factory=dict)  # workload -> GPUs on capacity blocks


def usage(
    sol: Solution,
    cal: Calendar,
    pools: dict[str, PoolPrices],
    work: list[WorkloadDemand],
    utilisation_target: float,
) -> Usage:
    shape = (cal.months, HOURS)
    total, pool_use, od_use, spot_use, block_use = {}, {}, {}, {}, {}
    committed: dict[str, dict[str, np.ndarray]] = {}
    usable: dict[str, np.ndarray] = {}
    for acc, pr in pools.items():
        committed[acc] = {}
        for kind in COMMITTED:
            n = sol.values.get(f"n:{acc}:{kind}")
            if n is not None:
                committed[acc][kind] = pr.gpus_per_node * (n @ _active(pr.term_months[kind], cal.months))
        usable[acc] = utilisation_target * sum(committed[acc].values(), np.zeros(cal.months))
    for w in work:
        placed = sol.get(f"x:{w.name}", shape)
        spot = sol.get(f"xs:{w.name}", shape) * (w.spot_factor or 1.0)
        spot_use[w.name] = spot
        block_use[w.name] = sol.get(f"xb:{w.name}", shape)
        total[w.name] = w.fixed + placed + spot + block_use[w.name]
    for acc in pools:
        left = np.repeat(usable[acc][:, None], HOURS, axis=1)
        order = sorted((w for w in work if w.pool == acc), key=lambda w: (w.preemptible, -w.priority))
        for w in order:
            want = total[w.name] - spot_use[w.name] - block_use[w.name]
            got = np.minimum(want, np.maximum(left, 0.0))
            pool_use[w.name] = got
            od_use[w.name] = want - got
            left = left - got
    return Usage(total, pool_use, od_use, spot_use, committed, usable, block_use)


def timeline(
    u: Usage,
    cal: Calendar,
    work: list[WorkloadDemand],
    pools: dict[str, PoolPrices],
    sol: Solution,
    h: Holdings,
) -> list[dict[str, Any]]:
    """One entry per month: whole GPUs held (busiest hour) in all and by flavor, GPU-hours, cost, and
    which workload holds what (`fleet.gangs`)."""
    days = cal.days
    demand = sum(u.total.values(), np.zeros((cal.months, HOURS)))
    od = sum(u.on_demand.values(), np.zeros_like(demand))
    sp = sum(u.spot.values(), np.zeros_like(demand)) + sum(u.block.values(), np.zeros_like(demand))
    used = sum(u.on_pool.values(), np.zeros_like(demand))
    held = flavor_totals(h, [w.name for w in work], cal.months)
    burst_held = held["on_demand"] + held["spot"] + held[BLOCK]
    all_held = held["reserved"] + burst_held
    costs = month_costs(sol, cal, pools)
    out = []
    for m in range(cal.months):
        reserved = sum(float(k[m]) for p in u.committed.values() for k in p.values())
        res_h = reserved * days[m] * HOURS
        by_kind = {
            kind: sum(float(p[kind][m]) for p in u.committed.values() if kind in p) for kind in COMMITTED
        }
        holders = month_holders(h, m)
        for name, entry in holders.items():
            entry["gpu_hours"] = float(u.total[name][m].sum() * days[m])
        out.append(
            {
                "month": month_text(cal.start_month + m),
                "demand_gpus": int(round(float(all_held[m].max()))),
                "reserved_gpus": reserved,
                "burst_gpus": int(round(float(burst_held[m].max()))),
                "reserved_by_kind_gpus": {k: v for k, v in by_kind.items() if v > 0},
                "reserved_held_gpus": int(round(float(held["reserved"][m].max()))),
                "on_demand_gpus": int(round(float(held["on_demand"][m].max()))),
                "spot_gpus": int(round(float(held["spot"][m].max()))),
                "capacity_block_gpus": int(round(float(held[BLOCK][m].max()))),
                "demand_gpu_hours": float(demand[m].sum() * days[m]),
                "reserved_gpu_hours": res_h,
                "reserved_used_gpu_hours": float(used[m].sum() * days[m]),
                "burst_gpu_hours": float((od[m] + sp[m]).sum() * days[m]),
                "reserved_utilisation_fraction": float(used[m].sum() * days[m] / res_h) if res_h else None,
                "cost_usd": costs[m],
                "by_workload": holders,
            }
        )
    return out


def month_costs(sol: Solution, cal: Calendar, pools: dict[str, PoolPrices]) -> list[float]:
    """Capacity cost of each month: committed hours, on-demand and spot hours."""
    days = cal.days
    out = np.zeros(cal.months)
    for acc, pr in pools.items():
        for kind in COMMITTED:
            n = sol.values.get(f"n:{acc}:{kind}")
            if n is None:
                continue
            gpus = pr.gpus_per_node * (n @ _active(pr.term_months[kind], cal.months))
            if kind == "onprem" and pr.onprem_capex_usd_per_node > 0:  # bought: capital when bought
                term = pr.term_months[kind]
                left = np.maximum(0, np.arange(cal.months) + term - cal.months) / term
                capital = n * pr.capital_counted(left)
                out += capital + gpus * pr.onprem_opex_usd_per_gpu_hour * days * HOURS
            else:
                out += gpus * pr.usd_per_gpu_hour[kind] * days * HOURS
        od = sol.values.get(f"od:{acc}")
        if od is not None:
            out += od.sum(axis=1) * days * pr.usd_per_gpu_hour["on_demand"]
        gpu_days = sol.block_gpu_days.get(acc)
        if gpu_days is not None:
            out += gpu_days * HOURS * pr.usd_per_gpu_hour[BLOCK]
    return list(out + _spot_month_costs(sol, cal))


def _spot_month_costs(sol: Solution, cal: Calendar) -> np.ndarray:
    out = np.zeros(cal.months)
    for name, price in sol.spot_prices.items():
        out += sol.values[name].sum(axis=1) * cal.days * price
    return out


def hourly_profile(u: Usage, cal: Calendar, m: int, h: Holdings) -> dict[str, Any]:
    """The typical day of month m: per hour, whole GPUs held by workload and by flavor, idle committed GPUs."""
    committed = sum(float(k[m]) for p in u.committed.values() for k in p.values())
    names = list(h.gpus)
    held = flavor_totals(h, names, cal.months)
    hours = []
    for hr in range(HOURS):
        by = {n: int(round(float(h.total(n)[m, hr]))) for n in names}
        hours.append(
            {
                "hour": hr,
                "by_workload_gpus": {n: v for n, v in by.items() if v > 0},
                "reserved_used_gpus": int(round(float(held["reserved"][m, hr]))),
                "on_demand_gpus": int(round(float(held["on_demand"][m, hr]))),
                "spot_gpus": int(round(float(held["spot"][m, hr]))),
                "reserved_idle_gpus": max(0.0, committed - float(held["reserved"][m, hr])),
            }
        )
    return {"month": month_text(cal.start_month + m), "reserved_gpus": committed, "hours": hours}


def utilisation_by_hour(u: Usage, cal: Calendar) -> list[float | None]:
    """Share of the committed GPUs busy at each hour of the day, over the whole horizon."""
    days = cal.days
    committed = sum((k for p in u.committed.values() for k in p.values()), np.zeros(cal.months))
    used = sum(u.on_pool.values(), np.zeros((cal.months, HOURS)))
    denom = float(committed @ days)
    return [float(used[:, h] @ days / denom) if denom else None for h in range(HOURS)]


def purchases(sol: Solution, cal: Calendar, pools: dict[str, PoolPrices]) -> list[dict[str, Any]]:
    out = []
    for acc, pr in pools.items():
        for kind in COMMITTED:
            n = sol.values.get(f"n:{acc}:{kind}")
            if n is None:
                continue
            for s in (int(i) for i in np.flatnonzero(n > 0.5)):
                term = pr.term_months[kind]
                last = min(cal.months, s + term) - 1
                hours = float(cal.days[s : last + 1].sum() * HOURS)
                gpus = int(round(n[s])) * pr.gpus_per_node
                out.append(
                    {
                        "month": month_text(cal.start_month + int(s)),
                        "pool": acc,
                        "kind": kind,
                        "nodes": int(round(n[s])),
                        "gpus": gpus,
                        "term_months": term,
                        "ends": month_text(cal.start_month + int(s) + term - 1),
                        **_paid(pr, kind, int(round(n[s])), hours, term, last - s + 1),
                    }
                )
        out += _block_bookings(sol, cal, acc, pr)
    return sorted(out, key=lambda p: (p["month"], p["pool"], p["kind"]))


def _block_bookings(sol: Solution, cal: Calendar, acc: str, pr: PoolPrices) -> list[dict[str, Any]]:
    """Each month's capacity blocks: the GPUs the gangs on them hold at once, for whole days, at the
    block price for every hour of those days."""
    gpu_days = sol.block_gpu_days.get(acc)
    if gpu_days is None or BLOCK not in pr.usd_per_gpu_hour:
        return []
    out = []
    held = sol.block_gpus.get(acc, np.zeros(len(gpu_days)))
    for m in (int(i) for i in np.flatnonzero(gpu_days > 0.5)):
        gpus = max(float(held[m]), 1.0)
        nodes = math.ceil(gpus / pr.gpus_per_node - 1e-9)
        out.append(
            {
                "month": month_text(cal.start_month + m),
                "pool": acc,
                "kind": BLOCK,
                "nodes": nodes,
                "gpus": int(round(gpus)),
                "gpu_days": float(gpu_days[m]),
                "work_gpu_hours": float(sol.block_work_gpu_hours.get(acc, gpu_days)[m]),
                "node_days": float(gpu_days[m]) / pr.gpus_per_node,
                "days": float(gpu_days[m]) / gpus,
                "term_months": 0,
                "ends": month_text(cal.start_month + m),
                "offer": pr.block_offer,
                "usd_in_horizon": float(gpu_days[m]) * HOURS * pr.usd_per_gpu_hour[BLOCK],
                "capex_usd": None,
            }
        )
    return out


def _paid(pr: PoolPrices, kind: str, nodes: int, hours: float, term: int, months_in: int) -> dict[str, Any]:
    """What a purchase costs inside the horizon; an owned node is bought outright (capital in full,
    running cost for its hours), with its life beyond the horizon and the value left stated."""
    gpus = nodes * pr.gpus_per_node
    if kind != "onprem" or pr.onprem_capex_usd_per_node <= 0:
        beyond_months = max(0, term - months_in)  # a reservation is owed for its whole term
        return {
            "usd_in_horizon": gpus * pr.usd_per_gpu_hour[kind] * hours,
            "capex_usd": None,
            "beyond_horizon_months": beyond_months,
            "usd_beyond_horizon": gpus * pr.usd_per_gpu_hour[kind] * beyond_months * HOURS_PER_MONTH,
        }
    capex = nodes * pr.onprem_capex_usd_per_node
    beyond = max(0, term - months_in)
    counted = nodes * float(pr.capital_counted(beyond / term if term else 0.0))
    return {
        "usd_in_horizon": counted + gpus * pr.onprem_opex_usd_per_gpu_hour * hours,
        "capital_counted": pr.owned_capital,
        "capex_usd": capex,
        "opex_usd_in_horizon": gpus * pr.onprem_opex_usd_per_gpu_hour * hours,
        "life_months": term,
        "life_beyond_horizon_months": beyond,
        "residual_value_usd": capex * beyond / term if term else 0.0,
    }


def deadlines(sol: Solution, cal: Calendar, work: list[WorkloadDemand], u: Usage) -> list[dict[str, Any]]:
    """Each job period: GPU-hours needed and placed, when it finished, and whether it met its deadline."""
    out = []
    for w in work:
        miss = sol.values.get(f"miss:{w.name}")
        for q, (ms, need) in enumerate(w.periods):
            missed = float(miss[q]) if miss is not None else 0.0
            ran = [m for m in ms if u.total[w.name][m].max() > EPS]
            out.append(
                {
                    "workload": w.name,
                    "window": f"{month_text(cal.start_month + ms[0])} to {month_text(cal.start_month + ms[-1])}",
                    "gpu_hours_needed": float(need),
                    "gpu_hours_missed": missed,
                    "met": bool(missed <= 1e-6 * max(float(need), 1.0)),
                    "finished": month_text(cal.start_month + ran[-1]) if ran else None,
                }
            )
        if w.turnaround is not None:
            out.append(_turnaround_entry(w.name, w.gang_gpus, *w.turnaround))
        for note in w.notes:
            out.append(
                {
                    "workload": w.name,
                    "window": "fixed schedule",
                    "gpu_hours_needed": None,
                    "gpu_hours_missed": None,
                    "met": False,
                    "finished": None,
                    "note": note,
                }
            )
    return out


def _duration_text(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} d"


def _turnaround_entry(name: str, gang: int, turnaround_s: float, run_s: float) -> dict[str, Any]:
    """Whether one run, on the GPUs its own plan gives it, finishes within its turnaround."""
    met = run_s <= turnaround_s * (1 + 1e-9)
    entry: dict[str, Any] = {
        "workload": name,
        "window": f"each run within {_duration_text(turnaround_s)}",
        "gpu_hours_needed": None,
        "gpu_hours_missed": None,
        "met": met,
        "finished": None,
        "turnaround_s": turnaround_s,
        "run_s": run_s,
    }
    if not met:
        entry["note"] = (
            f"one run takes {_duration_text(run_s)} on its {gang} GPUs, longer than its "
            f"{_duration_text(turnaround_s)} turnaround"
        )
        entry["fix"] = (
            "Plan the job on more GPUs (a deadline or gpus in its spec's targets) or allow a longer "
            "turnaround; pooling cannot shorten one run."
        )
    return entry
