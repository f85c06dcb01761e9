"""Whole jobs on whole capacity: what each workload holds, hour by hour, in whole GPUs, and where.

The program places GPU-hours (an hour of the representative day is the average over the month's
days) and holds whole gangs (`c`, `cs` in `fleet.solver`). Here each hour's work becomes what a
scheduler would run: a job holds whole copies of its gang (its GPU count, on whole nodes when it
spans nodes) in every hour it runs, on the days it runs, and a service whole replicas. Each copy
and each replica sits on ONE kind of capacity (Kueue places a pod set on one flavor): spot work on
spot; the rest goes first to the committed pool, non-preemptible and higher priority first, bigger
units first, whole units only, and what does not fit goes on demand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.catalog.tpu_slices import book_slices
from rightsize.fleet.blocks import KIND as BLOCK
from rightsize.fleet.demand import HOURS, Calendar, WorkloadDemand
from rightsize.fleet.prices import PoolPrices
from rightsize.fleet.solver import Solution

FLAVORS = ("reserved", "on_demand", "spot", BLOCK)
EPS = 1e-6


@dataclass
class Holdings:
    """Whole GPUs per workload, per flavor, per [month, hour]; and the burst caps they respect."""

    unit: dict[str, int]  # workload -> GPUs of one unit (a job's gang, a service's replica)
    nodes_per_unit: dict[str, int]
    gpus: dict[str, dict[str, np.ndarray]]  # workload -> flavor -> [months, 24] whole GPUs
    run_gang_hours: dict[str, np.ndarray]  # workload -> [months] hours its gang (one copy) runs
    caps: dict[str, dict[str, float]] = field(default_factory=dict)  # pool -> kind -> GPUs
    over_caps: list[dict[str, Any]] = field(default_factory=list)

    def total(self, name: str) -> np.ndarray:
        return sum(self.gpus[name].values(), np.zeros_like(self.gpus[name]["reserved"]))


def _whole(x: np.ndarray, unit: int) -> np.ndarray:
    """GPUs held to run x GPUs of work: whole units (0 where nothing runs)."""
    return unit * np.ceil(np.maximum(x, 0.0) / unit - EPS)


def _unit(w: WorkloadDemand, pr: PoolPrices) -> tuple[int, int]:
    """A job's gang on whole nodes (a gang larger than a node takes whole nodes); a service's replica.
    On TPU, whole slices and their host VMs (`catalog.tpu_slices`: 1,024 v6e chips are 4 slices
    of 256 on 256 four-chip VMs, not 128 eight-chip hosts)."""
    g = max(1, int(round(w.gang_gpus)))
    booking = book_slices(w.pool, g)
    if booking is not None:
        return booking.chips, booking.hosts
    if g > pr.gpus_per_node:
        nodes = math.ceil(g / pr.gpus_per_node)
        return nodes * pr.gpus_per_node, nodes
    return g, 1


def holdings(
    sol: Solution,
    cal: Calendar,
    pools: dict[str, PoolPrices],
    work: list[WorkloadDemand],
    usable: dict[str, np.ndarray],
) -> Holdings:
    shape = (cal.months, HOURS)
    h = Holdings({}, {}, {}, {}, {acc: dict(pr.burst_caps_gpus) for acc, pr in pools.items()})
    want: dict[str, np.ndarray] = {}
    for w in work:
        unit, nodes = _unit(w, pools[w.pool])
        h.unit[w.name], h.nodes_per_unit[w.name] = unit, nodes
        placed = sol.get(f"x:{w.name}", shape)
        spot = sol.get(f"xs:{w.name}", shape) * (w.spot_factor or 1.0)
        block = sol.get(f"xb:{w.name}", shape)
        want[w.name] = _whole(w.fixed + placed, unit)
        h.gpus[w.name] = {
            "reserved": np.zeros(shape),
            "on_demand": np.zeros(shape),
            "spot": _whole(spot, unit),
            BLOCK: _whole(block, unit),
        }
        work_gpus = w.fixed + placed + spot + block
        h.run_gang_hours[w.name] = (work_gpus.sum(axis=1) * cal.days) / max(w.gang_gpus, 1)
    for acc in pools:
        mine = [w for w in work if w.pool == acc]
        left = np.floor(np.repeat(usable[acc][:, None], HOURS, axis=1) + EPS)
        left = _assign(h, sol, mine, want, left)
        _check_caps(h, cal, acc, [w.name for w in mine])
    return h


def _assign(
    h: Holdings, sol: Solution, mine: list[WorkloadDemand], want: dict[str, np.ndarray], left: np.ndarray
) -> np.ndarray:
    """Whole units to the committed pool, in three passes: the gangs the program put there (they fit:
    it counted them), the fixed load (services, runs that may not wait), then any other gang that
    still fits whole; the rest on demand."""
    key = {w.name: (w.preemptible, -w.priority, -h.unit[w.name], w.name) for w in mine}
    placed = sorted((w for w in mine if w.placed), key=lambda w: key[w.name])
    fixed = sorted((w for w in mine if not w.placed), key=lambda w: key[w.name])
    units = {w.name: np.round(want[w.name] / h.unit[w.name]) for w in mine}
    on_pool = {w.name: np.zeros_like(left) for w in mine}
    for w in placed:
        cr = sol.values.get(f"cr:{w.name}")
        planned = np.zeros_like(left) if cr is None else np.repeat(np.round(cr)[:, None], HOURS, axis=1)
        on_pool[w.name] = np.minimum(units[w.name], planned)
        left = left - on_pool[w.name] * h.unit[w.name]
    for w in [*fixed, *placed]:
        u = h.unit[w.name]
        more = np.minimum(units[w.name] - on_pool[w.name], np.floor(np.maximum(left, 0.0) / u))
        on_pool[w.name] = on_pool[w.name] + more
        left = left - more * u
    for w in mine:
        u = h.unit[w.name]
        h.gpus[w.name]["reserved"] = on_pool[w.name] * u
        h.gpus[w.name]["on_demand"] = (units[w.name] - on_pool[w.name]) * u
    return left


def _check_caps(h: Holdings, cal: Calendar, acc: str, names: list[str]) -> None:
    """Where whole units pack worse than the program's GPUs, burst can pass a cap: say where."""
    for kind in ("on_demand", "spot", BLOCK):
        cap = h.caps[acc].get(kind)
        if cap is None or not names:
            continue
        used = sum((h.gpus[n][kind] for n in names), np.zeros((cal.months, HOURS)))
        for m in np.flatnonzero(used.max(axis=1) > cap + EPS):
            h.over_caps.append(
                {"pool": acc, "kind": kind, "month": int(m), "gpus": float(used[m].max()), "cap_gpus": cap}
            )


def month_holders(h: Holdings, m: int) -> dict[str, dict[str, Any]]:
    """Per workload in month m: whole GPUs held at its busiest hour by flavor, its unit and nodes."""
    out: dict[str, dict[str, Any]] = {}
    for name, fl in h.gpus.items():
        total = sum(fl[k][m] for k in FLAVORS)
        if total.max() <= EPS:
            continue
        out[name] = {
            "gpus": int(round(float(total.max()))),
            "unit_gpus": h.unit[name],
            "nodes_per_unit": h.nodes_per_unit[name],
            "hours_of_day": [int(x) for x in np.flatnonzero(total > EPS)],
            "gang_hours": float(h.run_gang_hours[name][m]),
            "by_flavor_gpus": {k: int(round(float(fl[k][m].max()))) for k in FLAVORS if fl[k][m].max() > EPS},
        }
    return out


def hourly_holders(h: Holdings, cal: Calendar) -> list[dict[str, Any]]:
    """For every month: per workload and flavor, the whole GPUs it holds at each hour 0-23."""
    from rightsize.spec.fleet import month_text

    out = []
    for m in range(cal.months):
        by: dict[str, dict[str, list[int]]] = {}
        for name, fl in h.gpus.items():
            row = {k: [int(round(float(v))) for v in fl[k][m]] for k in FLAVORS if fl[k][m].max() > EPS}
            if row:
                by[name] = row
        out.append({"month": month_text(cal.start_month + m), "holders_gpus": by})
    return out


def flavor_totals(h: Holdings, names: list[str], months: int) -> dict[str, np.ndarray]:
    """Whole GPUs held per flavor per [month, hour] by the named workloads together."""
    return {k: sum((h.gpus[n][k] for n in names), np.zeros((months, HOURS))) for k in FLAVORS}
