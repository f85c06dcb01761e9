"""The parts a pool shares, sized once with the `sizing` package's own functions.

- Fabric: for the largest job that needs one (its own Demand, the fleet's fabric settings).
- Storage: every workload's datasets and checkpoints with its retention, as its own plan sized
  them (`sizing.storage` already counts `checkpoints_retained`), added up: they coexist on the pool.
- Nodes, racks, power and cooling: for the most owned (on-premises) GPUs in any month, with the
  pool's average busy share as the duty cycle, plus the shared fabric and nothing else.
- Growth: the purchase schedule itself (owned nodes and commitments by month) is the growth plan.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from rightsize.catalog import get_node
from rightsize.fleet.workload_view import WorkloadView
from rightsize.sizing.fabric import size_fabric
from rightsize.sizing.nodes_racks import size_nodes_racks
from rightsize.sizing.power import size_power
from rightsize.spec.infrastructure import Infrastructure

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.fleet.plan import FleetPlan


def pool_fabric(views: list[WorkloadView], infra: Infrastructure) -> tuple[WorkloadView, Any] | None:
    """The pool's scale-out fabric: sized for the largest job that spans nodes; None if none does."""
    jobs = [v for v in views if v.needs_fabric and v.demand is not None]
    if not jobs:
        return None
    big = max(jobs, key=lambda v: (v.fabric_nodes, v.name))
    assert big.demand is not None
    return big, size_fabric(big.demand, get_node(big.node), max(big.fabric_nodes, 1), infra.fabric)


def shared_parts(plan: FleetPlan, infra: Infrastructure) -> dict[str, Any]:
    out: dict[str, Any] = {"storage": _storage(plan)}
    found = pool_fabric(plan.views, infra)
    fabric_w = 0.0
    if found is not None:
        big, fab = found
        fabric_w = fab.power_w
        out["fabric"] = {
            "for_workload": big.name,
            "nodes": fab.nodes,
            "kind": fab.kind,
            "topology": fab.topology,
            "tiers": fab.tiers,
            "nic_gbps_per_gpu": fab.nic_gbps_per_gpu,
            "switches": fab.switches,
            "leaves": fab.leaves,
            "spines": fab.spines,
            "transceivers": fab.transceivers,
            "capex_usd": fab.capex_usd,
            "power_w": fab.power_w,
            "max_nodes": fab.max_nodes,
        }
    else:
        out["fabric"] = {"for_workload": None, "reason": "no workload spans more than one node"}
    out["owned"] = _owned(plan, infra, fabric_w)
    return out


def _storage(plan: FleetPlan) -> dict[str, Any]:
    by = {v.name: v.storage_bytes for v in plan.views}
    return {
        "total_bytes": sum(by.values()),
        "by_workload_bytes": by,
        "datasets_bytes": sum(v.dataset_bytes for v in plan.views),
        "checkpoint_bytes_each": {v.name: v.checkpoint_bytes for v in plan.views if v.checkpoint_bytes},
        "what": "file system + object store of each workload's own plan (datasets, scratch, retained "
        "checkpoints, model weights), kept side by side",
    }


def _owned(plan: FleetPlan, infra: Infrastructure, fabric_w: float) -> list[dict[str, Any]]:
    """Racks, power and cooling of the owned nodes of each pool at their most."""
    out = []
    for acc, pr in plan.pools.items():
        peak = max(
            (sum(p.get("gpus", 0) for p in plan.purchases if p["pool"] == acc and p["kind"] == "onprem"), 0)
        )
        if peak <= 0:
            continue
        base = next(v.demand for v in plan.views if v.accelerator == acc and v.demand is not None)
        used = [
            m["reserved_utilisation_fraction"] for m in plan.timeline if m["reserved_utilisation_fraction"]
        ]
        duty = sum(used) / len(used) if used else 1.0
        demand = dataclasses.replace(
            base, gpus=int(peak), duty_cycle=min(1.0, duty), run_s=None, runs_per_month=None
        )
        node = get_node(pr.node)
        nr = size_nodes_racks(demand, node, infra.facility)
        pw = size_power(
            demand, node, nr.nodes, nr.racks, fabric_w, 0.0, infra.facility, None, cooling=nr.cooling
        )
        out.append(
            {
                "pool": acc,
                "gpus": int(peak),
                "nodes": nr.nodes,
                "racks": nr.racks,
                "kw_per_rack": pw.kw_per_rack,
                "cooling": pw.cooling,
                "it_power_max_w": pw.it_power_max_w,
                "facility_power_w": pw.facility_power_w,
                "facility_power_typical_w": pw.facility_power_typical_w,
                "energy_per_month_mwh": pw.energy_per_month_mwh,
                "within_power_limit": plan.policy.power_limit_w is None
                or pw.facility_power_w <= plan.policy.power_limit_w,
            }
        )
    return out
