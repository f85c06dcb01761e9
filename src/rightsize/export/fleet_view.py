"""The fleet plan's Kueue quotas as typed, read-only views (`fleet_quotas`), read from the plan
dict the way `export.plan_view` reads a workload's plan: every field checked for type and range."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.names import choice
from rightsize.export.plan_fields import Fields, check_text
from rightsize.export.plan_view import MAX_GPUS, PREEMPTION


@dataclass(frozen=True)
class ResourceQuota:
    """One resource's limits in one flavor: GPUs and CPU cores as counts, memory in bytes."""

    nominal: float
    borrowing_limit: float | None
    lending_limit: float | None


@dataclass(frozen=True)
class FlavorQuota:
    name: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None
    resources: dict[str, ResourceQuota]  # every resource the pods request (empty: the GPU only)


@dataclass(frozen=True)
class QueueQuota:
    """One ClusterQueue of a fleet plan: its workloads, resource and per-flavor limits."""

    name: str
    workloads: list[str]
    resource: str
    covered: list[str]  # the resources the queue covers (GPU, cpu, memory); [resource] alone when absent
    flavors: list[FlavorQuota]
    reclaim_within_cohort: str
    within_cluster_queue: str


@dataclass(frozen=True)
class FleetQuotas:
    cohort: str
    flavors: list[tuple[str, dict[str, str]]]  # ResourceFlavor name, node labels
    queues: list[QueueQuota]


def _flavor_quota(f: Fields) -> FlavorQuota:
    return FlavorQuota(
        name=f.text("name"),
        nominal=f.integer("nominal_quota", 0, MAX_GPUS),
        borrowing_limit=f.integer("borrowing_limit", 0, MAX_GPUS, default=None),
        lending_limit=f.integer("lending_limit", 0, MAX_GPUS, default=None),
        resources={
            check_text(r, f.where, "resources", 320): _resource_quota(Fields(v, f"{f.where}.resources.{r}"))
            for r, v in f.sub("resources", False).d.items()
        },
    )


def _resource_quota(r: Fields) -> ResourceQuota:
    top = 1e18  # bytes of memory in a pool are the largest figure here
    return ResourceQuota(
        nominal=r.num("nominal_quota", 0.0, top),
        borrowing_limit=r.num("borrowing_limit", 0.0, top) if r.has("borrowing_limit") else None,
        lending_limit=r.num("lending_limit", 0.0, top) if r.has("lending_limit") else None,
    )


def _queue_quota(cq: Fields) -> QueueQuota:
    pre = cq.sub("preemption", False)
    return QueueQuota(
        name=cq.text("name"),
        workloads=[check_text(w, cq.where, "workloads") for w in cq.items("workloads")],
        resource=cq.text("resource", default="nvidia.com/gpu", max_len=320),
        covered=[
            check_text(r, cq.where, "covered_resources", 320) for r in cq.items("covered_resources", False)
        ],
        flavors=[_flavor_quota(Fields(f, f"{cq.where}.flavors")) for f in cq.items("flavors")],
        reclaim_within_cohort=choice(
            pre.text("reclaim_within_cohort", default="Never", max_len=40),
            PREEMPTION,
            "reclaim_within_cohort",
        ),
        within_cluster_queue=choice(
            pre.text("within_cluster_queue", default="LowerPriority", max_len=40),
            PREEMPTION,
            "within_cluster_queue",
        ),
    )


def fleet_quotas(plan: dict[str, Any]) -> FleetQuotas:
    """The Kueue quotas a fleet plan computed (`quotas` in its JSON): flavors, the cohort and
    one ClusterQueue per workload group with nominal, borrowing and lending limits."""
    q = plan.get("quotas")
    if not isinstance(q, dict) or not q.get("cluster_queues") or not q.get("resource_flavors"):
        raise BadInput(
            "The fleet plan carries no Kueue quotas.",
            "A fleet plan's `quotas` section (resource_flavors, cluster_queues) is what export writes.",
            "Re-plan the fleet with this rightsize (`rightsize plan FLEET.yaml --format json`).",
        )
    fq = Fields(q, "quotas")
    flavors = []
    for f in fq.items("resource_flavors"):
        ff = Fields(f, "quotas.resource_flavors")
        labels = ff.sub("node_labels", False)
        flavors.append(
            (ff.text("name"), {check_text(k, labels.where, "key"): labels.text(k) for k in labels.d})
        )
    queues = [_queue_quota(Fields(cq, "quotas.cluster_queues")) for cq in fq.items("cluster_queues")]
    return FleetQuotas(cohort=fq.text("cohort"), flavors=flavors, queues=queues)
