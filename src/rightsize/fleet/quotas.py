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
    margin = plan.policy.safety_margin
    groups: dict[str, list[str]] = {}
    for d in plan.demands:
        groups.setdefault(d.kind, []).append(d.name)
    queues: list[dict[str, Any]] = []
    flavors: list[dict[str, Any]] = []
    per_group: dict[str, dict[str, list[dict[str, Any]]]] = {g: {} for g in groups}
    for acc in plan.pools:
        committed = sum((v for v in u.committed[acc].values()), np.zeros(plan.horizon_months))
        reserved = int(round(float(committed.max()))) if committed.size else 0
        peaks = {}
        for g, names in groups.items():
            pool = sum(
                (u.on_pool[n] for n in names if n in u.on_pool and _pool_of(plan, n) == acc),
                np.zeros((plan.horizon_months, 24)),
            )
            peaks[g] = (float(pool.max()), float(pool[pool > 0].min()) if (pool > 0).any() else 0.0)
        total = sum(p for p, _ in peaks.values())
        scale = min(1.0, reserved / total) if total else 0.0
        for g, names in groups.items():
            mine = [n for n in names if _pool_of(plan, n) == acc]
            if not mine:
                continue
            peak, low = peaks[g]
            nominal = int(math.floor(peak * scale))
            od = max((float(u.on_demand[n].max()) for n in mine), default=0.0)
            sp = max((float(u.spot[n].max()) for n in mine), default=0.0)
            service = g == "serving"
            entry = [
                {
                    "name": _flavor(acc, "reserved"),
                    "nominal_quota": nominal,
                    "borrowing_limit": max(0, reserved - nominal),
                    "lending_limit": max(0, nominal - int(math.ceil(low * scale))) if service else nominal,
                },
                {
                    "name": _flavor(acc, "on-demand"),
                    "nominal_quota": int(math.ceil(od * (1 + margin))),
                    "borrowing_limit": 0,
                },
            ]
            if sp > 0:
                entry.append(
                    {
                        "name": _flavor(acc, "spot"),
                        "nominal_quota": int(math.ceil(sp * (1 + margin))),
                        "borrowing_limit": 0,
                    }
                )
            per_group[g][acc] = entry
        flavors += [
            {
                "name": _flavor(acc, "reserved"),
                "node_labels": {"rightsize/pool": acc, "rightsize/capacity": "reserved"},
                "gpus": reserved,
            },
            {
                "name": _flavor(acc, "on-demand"),
                "node_labels": {"rightsize/pool": acc, "rightsize/capacity": "on-demand"},
            },
            {
                "name": _flavor(acc, "spot"),
                "node_labels": {"rightsize/pool": acc, "rightsize/capacity": "spot"},
            },
        ]
    for g, names in groups.items():
        prio = max(d.priority for d in plan.demands if d.name in names)
        preemptible = all(d.preemptible for d in plan.demands if d.name in names)
        queues.append(
            {
                "name": f"{g.replace('_', '-')}-queue",
                "cohort": f"{plan.name}-pool",
                "workloads": names,
                "priority": prio,
                "resource": RESOURCE,
                "flavors": [f for acc in plan.pools for f in per_group[g].get(acc, [])],
                "preemption": {
                    "reclaim_within_cohort": "Any" if not preemptible else "Never",
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


def _pool_of(plan: FleetPlan, name: str) -> str:
    return next(d.pool for d in plan.demands if d.name == name)
