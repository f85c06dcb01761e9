"""Kueue quota objects (kueue.x-k8s.io/v1beta1, Kueue v0.13+): a ResourceFlavor per
accelerator, a ClusterQueue whose nominal quota is what the plan needs (GPUs, and the CPUs
and memory the sizing asks per GPU), and a LocalQueue that jobs name.

For one training plan the quota is that job's allocation. A fleet plan (many workloads on
one pool) exports the quotas the fleet planner computed: a ResourceFlavor per pool and
capacity kind (reserved, on-demand, spot), one ClusterQueue per workload group in one
cohort with the planned nominal, borrowing and lending limits and preemption, and a
LocalQueue per workload. Nothing is recomputed here.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.fleet_view import FlavorQuota, QueueQuota, ResourceQuota, fleet_quotas
from rightsize.export.header import comment_block, dump_yaml_all, k8s_annotations
from rightsize.export.names import k8s_name, label_value, qualified_name
from rightsize.export.plan_view import Header, header

API = "kueue.x-k8s.io/v1beta1"


def _meta(name: str, h: Header) -> dict[str, Any]:
    return {"name": name, "annotations": k8s_annotations(h)}


def topology_object(h: Header, name: str, levels: list[str]) -> dict[str, Any]:
    """A Kueue Topology (kueue.x-k8s.io/v1beta1, served by Kueue v0.14+): the node labels of
    each level, outermost first (Kueue docs, concepts/topology_aware_scheduling)."""
    return {
        "apiVersion": API,
        "kind": "Topology",
        "metadata": _meta(name, h),
        "spec": {"levels": [{"nodeLabel": label} for label in levels]},
    }


def queue_objects(
    h: Header,
    queue: str,
    flavor: str,
    node_label: dict[str, str],
    quotas: dict[str, Any],
    topology: str | None = None,
) -> list[dict[str, Any]]:
    """ResourceFlavor (naming `topology` when the job needs topology-aware scheduling),
    ClusterQueue and LocalQueue."""
    flavor_spec: dict[str, Any] = {"nodeLabels": node_label}
    if topology:
        flavor_spec["topologyName"] = topology
    return [
        {
            "apiVersion": API,
            "kind": "ResourceFlavor",
            "metadata": _meta(flavor, h),
            "spec": flavor_spec,
        },
        {
            "apiVersion": API,
            "kind": "ClusterQueue",
            "metadata": _meta(queue, h),
            "spec": {
                "namespaceSelector": {},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [
                    {
                        "coveredResources": list(quotas),
                        "flavors": [
                            {
                                "name": flavor,
                                "resources": [{"name": k, "nominalQuota": q} for k, q in quotas.items()],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": API,
            "kind": "LocalQueue",
            # no namespace: it lands where the workload does (`kubectl apply -n NS`), as the
            # JobSet's queue-name needs; a fixed one split them (or refused -n)
            "metadata": _meta(queue, h),
            "spec": {"clusterQueue": queue},
        },
    ]


def fleet_files(plan: dict[str, Any]) -> dict[str, str]:
    """`kueue-fleet.yaml`: the fleet plan's quotas as Kueue objects, exactly as planned. Every
    name (flavors, queues, cohort, one LocalQueue per workload) goes through `names.k8s_name`,
    so a queue's `clusterQueue` and a flavor's references name the same objects."""
    h = header(plan)
    q = fleet_quotas(plan)
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": API,
            "kind": "ResourceFlavor",
            "metadata": _meta(k8s_name(name, what="resource flavor"), h),
            "spec": {"nodeLabels": _node_labels(labels)},
        }
        for name, labels in q.flavors
    ]
    cohort = k8s_name(q.cohort, what="cohort")
    lines = []
    for cq in q.queues:
        queue = k8s_name(cq.name, what="cluster queue")
        docs.append(_fleet_cluster_queue(cq, queue, cohort, h))
        lines.append(
            f"{queue}: "
            + ", ".join(f"{k8s_name(f.name, what='resource flavor')} nominal {f.nominal}" for f in cq.flavors)
            + f" (workloads: {', '.join(cq.workloads)})"
        )
        docs += [
            {
                "apiVersion": API,
                "kind": "LocalQueue",
                "metadata": {**_meta(k8s_name(w, what="workload name"), h), "namespace": "default"},
                "spec": {"clusterQueue": queue},
            }
            for w in cq.workloads
        ]
    head = comment_block(h, f"Kueue quotas for the fleet's shared pool (cohort {cohort})", lines)
    return {"kueue-fleet.yaml": head + dump_yaml_all(docs)}


def _node_labels(labels: dict[str, str]) -> dict[str, str]:
    return {
        qualified_name(k, "node label key"): label_value(v, "node label value") for k, v in labels.items()
    }


def _fleet_cluster_queue(cq: QueueQuota, name: str, cohort: str, h: Header) -> dict[str, Any]:
    """One ClusterQueue: every resource its pods request covered (Kueue admits a pod set only
    when each of its requests has quota in one flavor), each flavor listing them in that order."""
    covered = [qualified_name(r, "resource name") for r in (cq.covered or [cq.resource])]
    flavors = []
    for f in cq.flavors:
        limits = {r: _limits(r, f, cq.resource) for r in covered}
        flavors.append(
            {
                "name": k8s_name(f.name, what="resource flavor"),
                "resources": [{"name": r, **limits[r]} for r in covered],
            }
        )
    return {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": _meta(name, h),
        "spec": {
            "cohort": cohort,
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
            "preemption": {
                "reclaimWithinCohort": cq.reclaim_within_cohort,
                "withinClusterQueue": cq.within_cluster_queue,
            },
        },
    }


def _quantity(resource: str, value: float) -> int | str:
    """A Kubernetes quantity: whole GPUs and CPU cores (rounded up), memory in GiB (rounded up)."""
    if resource == "memory":
        return f"{math.ceil(value / 2**30 - 1e-9)}Gi"
    if resource == "cpu":
        return str(math.ceil(value - 1e-9))
    return math.ceil(value - 1e-9)


def _limits(resource: str, f: FlavorQuota, gpu: str) -> dict[str, int | str]:
    """nominalQuota and the borrowing and lending limits of one resource in one flavor."""
    q = f.resources.get(resource)
    if q is None and resource == gpu or q is None and not f.resources:
        q = ResourceQuota(f.nominal, f.borrowing_limit, f.lending_limit)
    if q is None:
        raise BadInput(
            f"The fleet plan's flavor {f.name!r} has no quota for {resource!r}, which its queue covers.",
            "Kueue needs a quota for every covered resource in every flavor.",
            "Re-plan the fleet with this version of rightsize.",
        )
    out: dict[str, int | str] = {"nominalQuota": _quantity(resource, q.nominal)}
    if q.borrowing_limit is not None:
        out["borrowingLimit"] = _quantity(resource, q.borrowing_limit)
    if q.lending_limit is not None:
        out["lendingLimit"] = _quantity(resource, q.lending_limit)
    return out
