"""Quotas for a shared scheduler, as data: Kueue ResourceFlavors, one ClusterQueue per workload
group in one cohort, and each workload's pod sets, under which every planned job is admissible.

Flavors: per pool `<accelerator>-reserved` (the committed pool), `<accelerator>-on-demand` and
`<accelerator>-spot`, each labelled so a pod's node selector picks it. Kueue places a pod set on
ONE flavor, so each copy of a gang (and each service replica) is a pod set that names its flavor
(`rightsize/capacity`), as the plan's holdings (`fleet.gangs`) put it. A pod takes one whole node
of GPUs (or a gang smaller than a node), and the CPU and memory of that share of the node.

Quotas, in whole nodes and for every resource a pod requests (GPU, cpu, memory): a flavor's
capacity is what the plan holds on it at its busiest hour (the committed pool: the most committed
nodes; burst: within the provider's caps). Each group's nominal quota is its own peak there, scaled
down together so the nominal quotas add up to the capacity (peaks that never coincide share it);
its borrowing limit is the rest of the capacity; it lends all of its nominal quota except, for a
service, what it always holds (the replicas it never gives up). Then at every hour of the plan the
groups' use fits: each within its nominal plus what the cohort lends, the cohort within its
capacity. `tests/test_fleet_kueue_admission.py` checks this with a model of Kueue's admission.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from rightsize.catalog import get_node
from rightsize.catalog.devices import accelerator_resource
from rightsize.catalog.tpu_slices import book_slices, slice_host
from rightsize.fleet.gangs import FLAVORS
from rightsize.fleet.timeline import Usage

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.fleet.plan import FleetPlan

RESOURCE = "nvidia.com/gpu"
FLAVOR_SUFFIX = {"reserved": "reserved", "on_demand": "on-demand", "spot": "spot", "capacity_block": "block"}
CAPACITY_LABEL = "rightsize/capacity"
POOL_LABEL = "rightsize/pool"


def _flavor(acc: str, kind: str) -> str:
    return f"{acc}-{FLAVOR_SUFFIX.get(kind, kind)}"


def gpu_resource(acc: str) -> str:
    """The extended resource a pod of pool `acc` requests (the vendor's device plugin:
    `catalog.devices`); the common GPU resource for an id the catalog does not know."""
    return accelerator_resource(acc) or RESOURCE


def _node_share(plan: FleetPlan, acc: str, unit: int | None = None) -> tuple[int, float, float]:
    """GPUs per node, and the CPU cores and memory bytes that go with one GPU of that node; on
    TPU the host VM of the unit's slices (or of the pool's), from the VM machine types."""
    pr = plan.pools[acc]
    node = get_node(pr.node)
    booking = book_slices(acc, unit if unit is not None else pr.gpus_per_node)
    if booking is not None:
        node = slice_host(node, booking.chips_per_slice)
    gpn = node.gpus_per_node
    return gpn, node.cpu_cores / gpn, node.host_memory_bytes / gpn


def pod_sets(plan: FleetPlan) -> list[dict[str, Any]]:
    """Each workload's pod set: pods per copy (one a node), each pod's requests, its group."""
    h = plan.holdings
    assert h is not None
    out = []
    for d in plan.demands:
        unit = h.unit[d.name]
        gpn, cpu, mem = _node_share(plan, d.pool, unit)
        per_pod = min(unit, gpn)
        res = gpu_resource(d.pool)
        out.append(
            {
                "workload": d.name,
                "group": d.kind,
                "pool": d.pool,
                "priority": d.priority,
                "unit_gpus": unit,
                "pods_per_unit": math.ceil(unit / per_pod),
                "pod_requests": {res: per_pod, "cpu": per_pod * cpu, "memory": per_pod * mem},
                "node_selector_label": CAPACITY_LABEL,
            }
        )
    return out


def kueue_quotas(plan: FleetPlan, u: Usage) -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for d in plan.demands:
        groups.setdefault(d.kind, []).append(d.name)
    flavors: list[dict[str, Any]] = []
    per_group: dict[str, list[dict[str, Any]]] = {g: [] for g in groups}
    for acc in plan.pools:
        for kind in FLAVORS:
            capacity, entries = _flavor_quotas(plan, u, acc, kind, groups)
            gpn, cpu, mem = _node_share(plan, acc)
            flavors.append(
                {
                    "name": _flavor(acc, kind),
                    "node_labels": {POOL_LABEL: acc, CAPACITY_LABEL: FLAVOR_SUFFIX[kind]},
                    "gpus": capacity,
                    "nodes": capacity // gpn,
                    "resources": {
                        gpu_resource(acc): capacity,
                        "cpu": capacity * cpu,
                        "memory": capacity * mem,
                    },
                }
            )
            for g, entry in entries.items():
                per_group[g].append(entry)
    queues = []
    for g, names in groups.items():
        members = [d for d in plan.demands if d.name in names]
        queues.append(
            {
                "name": f"{g.replace('_', '-')}-queue",
                "cohort": f"{plan.name}-pool",
                "workloads": names,
                "priority": max(d.priority for d in members),
                "resource": gpu_resource(members[0].pool),
                "covered_resources": sorted({gpu_resource(d.pool) for d in members} | {"cpu", "memory"}),
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
        "pod_sets": pod_sets(plan),
        "what": "nominal quotas in whole nodes for every resource a pod requests; each gang copy and "
        "replica is one pod set on one flavor (its node selector), admissible at every planned hour",
    }


def _group_use(plan: FleetPlan, acc: str, kind: str, names: list[str]) -> np.ndarray:
    h = plan.holdings
    assert h is not None
    mine = [n for n in names if _pool_of(plan, n) == acc]
    return sum((h.gpus[n][kind] for n in mine), np.zeros((plan.horizon_months, 24)))


def _flavor_quotas(
    plan: FleetPlan, u: Usage, acc: str, kind: str, groups: dict[str, list[str]]
) -> tuple[int, dict[str, dict[str, Any]]]:
    """The flavor's capacity (whole nodes of GPUs) and each group's quotas on it."""
    gpn, cpu, mem = _node_share(plan, acc)
    use = {g: _group_use(plan, acc, kind, names) for g, names in groups.items()}
    total = sum(use.values(), np.zeros((plan.horizon_months, 24)))
    held = gpn * math.ceil(float(total.max()) / gpn - 1e-9)
    if kind == "reserved":
        committed = sum((v for v in u.committed[acc].values()), np.zeros(plan.horizon_months))
        capacity = max(held, int(round(float(committed.max()))) if committed.size else 0)
    else:
        capacity = held
    nominal = _shares(plan, {g: float(v.max()) for g, v in use.items()}, capacity, gpn)
    res = gpu_resource(acc)
    out: dict[str, dict[str, Any]] = {}
    for g, names in groups.items():
        if not any(_pool_of(plan, n) == acc for n in names):
            continue
        n = nominal[g]
        keep = 0
        if g == "serving":  # a service keeps what it always holds; it lends the rest
            keep = gpn * math.floor(float(use[g].min()) / gpn + 1e-9)
        lend = max(0, n - min(keep, n))
        out[g] = {
            "name": _flavor(acc, kind),
            "nominal_quota": n,
            "borrowing_limit": capacity - n,
            "lending_limit": lend,
            "resources": {
                r: {"nominal_quota": n * f, "borrowing_limit": (capacity - n) * f, "lending_limit": lend * f}
                for r, f in ((res, 1.0), ("cpu", cpu), ("memory", mem))
            },
        }
    return capacity, out


def _shares(plan: FleetPlan, peaks: dict[str, float], capacity: int, gpn: int) -> dict[str, int]:
    """Whole-node nominal quotas: each group's peak, scaled so they add up to the capacity at most."""
    nodes = {g: math.ceil(p / gpn - 1e-9) for g, p in peaks.items()}
    cap_nodes = capacity // gpn
    if sum(nodes.values()) <= cap_nodes:
        return {g: n * gpn for g, n in nodes.items()}
    scale = cap_nodes / sum(nodes.values())
    base = {g: math.floor(n * scale) for g, n in nodes.items()}
    rest = cap_nodes - sum(base.values())
    for g in sorted(nodes, key=lambda g: (-(nodes[g] * scale - base[g]), g))[:rest]:
        base[g] += 1
    return {g: n * gpn for g, n in base.items()}


def _pool_of(plan: FleetPlan, name: str) -> str:
    return next(d.pool for d in plan.demands if d.name == name)
