"""Quotas for a shared scheduler, as data: one Kueue ClusterQueue per workload group in one cohort.

Groups are workload kinds (serving, pretraining, fine_tuning, batch_inference). Each pool gives
ResourceFlavors: `<accelerator>-reserved` (the committed pool), `<accelerator>-on-demand` and
`<accelerator>-spot`. A group's nominal quota on the reserved flavor is what it uses of the pool at
its own busiest hour, scaled down together if the groups' peaks add up to more than the pool (peaks
that never coincide); its borrowing limit is the rest of the pool, so idle reserved GPUs go to
whoever has work (Kueue borrows within a cohort). Services lend only what they leave idle at their
quietest hour. Cloud flavors get the group's burst peak plus the policy's safety margin. An export
turns these into ClusterQueue / ResourceFlavor / WorkloadPriorityClass objects.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from rightsize.fleet.timeline import Usage

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.fleet.plan import FleetPlan

RESOURCE = "nvidia.com/gpu"


def _flavor(acc: str, kind: str) -> str:
    return f"{acc}-{kind}"


def kueue_quotas(plan: FleetPlan, u: Usage) -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for d in plan.demands:
        groups.setdefault(d.kind, []).append(d.name)
    flavors: list[dict[str, Any]] = []
    per_group: dict[str, list[dict[str, Any]]] = {g: [] for g in groups}
    for acc in plan.pools:
        reserved, entries = _pool_quotas(plan, u, acc, groups)
        for g, entry in entries.items():
            per_group[g] += entry
        flavors += [
            {"name": _flavor(acc, kind), "node_labels": {"rightsize/pool": acc, "rightsize/capacity": kind}}
            for kind in ("reserved", "on-demand", "spot")
        ]
        flavors[-3]["gpus"] = reserved
    queues = []
    for g, names in groups.items():
        members = [d for d in plan.demands if d.name in names]
        queues.append(
            {
                "name": f"{g.replace('_', '-')}-queue",
                "cohort": f"{plan.name}-pool",
                "workloads": names,
                "priority": max(d.priority for d in members),
                "resource": RESOURCE,
                "flavors": per_group[g],
                "preemption": {
                    "reclaim_within_cohort": "Never" if all(d.preemptible for d in members) else "Any",
                    "within_cluster_queue": "LowerPriority",
                },
            }
        )
    return {
        "api_version": "kueue.x-k8s.io/v1beta1",
        "cohort": f"{plan.name}-pool",
        "resource_flavors": flavors,
        "cluster_queues": queues,
    }


def _pool_quotas(
    plan: FleetPlan, u: Usage, acc: str, groups: dict[str, list[str]]
) -> tuple[int, dict[str, list[dict[str, Any]]]]:
    """The committed GPUs of pool `acc` and each group's flavor quotas there."""
    margin = plan.policy.safety_margin
    committed = sum((v for v in u.committed[acc].values()), np.zeros(plan.horizon_months))
    reserved = int(round(float(committed.max()))) if committed.size else 0
    mine = {g: [n for n in names if _pool_of(plan, n) == acc] for g, names in groups.items()}
    peaks = {}
    for g, names in mine.items():
        pool = sum((u.on_pool[n] for n in names), np.zeros((plan.horizon_months, 24)))
        peaks[g] = (float(pool.max()), float(pool[pool > 0].min()) if (pool > 0).any() else 0.0)
    total = sum(p for p, _ in peaks.values())
    scale = min(1.0, reserved / total) if total else 0.0  # peaks that never coincide share the pool
    out: dict[str, list[dict[str, Any]]] = {}
    for g, names in mine.items():
        if not names:
            continue
        peak, low = peaks[g]
        nominal = int(math.floor(peak * scale))
        od = max(float(u.on_demand[n].max()) for n in names)
        sp = max(float(u.spot[n].max()) for n in names)
        lend = max(0, nominal - int(math.ceil(low * scale))) if g == "serving" else nominal
        out[g] = [
            {
                "name": _flavor(acc, "reserved"),
                "nominal_quota": nominal,
                "borrowing_limit": max(0, reserved - nominal),
                "lending_limit": lend,
            },
            {
                "name": _flavor(acc, "on-demand"),
                "nominal_quota": math.ceil(od * (1 + margin)),
                "borrowing_limit": 0,
            },
        ]
        if sp > 0:
            out[g].append(
                {
                    "name": _flavor(acc, "spot"),
                    "nominal_quota": math.ceil(sp * (1 + margin)),
                    "borrowing_limit": 0,
                }
            )
    return reserved, out


def _pool_of(plan: FleetPlan, name: str) -> str:
    return next(d.pool for d in plan.demands if d.name == name)
