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

from rightsize.export.header import comment_block, dump_yaml_all, k8s_annotations
from rightsize.export.plan_view import Header, TrainingView, fleet_quotas, header

API = "kueue.x-k8s.io/v1beta1"


def _gpu_resource(vendor: str) -> str:
    return "amd.com/gpu" if vendor == "amd" else "nvidia.com/gpu"


def _meta(name: str, h: Header) -> dict[str, Any]:
    return {"name": name, "annotations": k8s_annotations(h)}


def queue_objects(
    h: Header, queue: str, flavor: str, node_label: dict[str, str], quotas: dict[str, Any]
) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": API,
            "kind": "ResourceFlavor",
            "metadata": _meta(flavor, h),
            "spec": {"nodeLabels": node_label},
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
            "metadata": {**_meta(queue, h), "namespace": "default"},
            "spec": {"clusterQueue": queue},
        },
    ]


def training_queue(v: TrainingView, queue: str) -> str:
    gpu = _gpu_resource(v.hw.vendor)
    quotas = {
        "cpu": str(math.ceil(v.cpu_cores_need_per_gpu * v.gpus)),
        "memory": f"{math.ceil(v.host_memory_need_bytes_per_gpu * v.gpus / 2**30)}Gi",
        gpu: v.gpus,
    }
    label = {"node.kubernetes.io/instance-type": v.hw.node}
    docs = queue_objects(v.header, queue, v.hw.accelerator, label, quotas)
    head = comment_block(
        v.header,
        "Kueue quota for this job",
        [
            f"nominal quota: {v.gpus} {gpu}, {quotas['cpu']} CPUs, {quotas['memory']} (the plan's per-GPU host needs)"
        ],
    )
    return head + dump_yaml_all(docs)


def fleet_files(plan: dict[str, Any]) -> dict[str, str]:
    """`kueue-fleet.yaml`: the fleet plan's quotas as Kueue objects, exactly as planned."""
    h = header(plan)
    q = fleet_quotas(plan)
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": API,
            "kind": "ResourceFlavor",
            "metadata": _meta(f["name"], h),
            "spec": {"nodeLabels": dict(f.get("node_labels") or {})},
        }
        for f in q["resource_flavors"]
    ]
    lines = []
    for cq in q["cluster_queues"]:
        docs.append(_fleet_cluster_queue(cq, q["cohort"], h))
        lines.append(
            f"{cq['name']}: "
            + ", ".join(f"{f['name']} nominal {f['nominal_quota']}" for f in cq["flavors"])
            + f" (workloads: {', '.join(cq['workloads'])})"
        )
        docs += [
            {
                "apiVersion": API,
                "kind": "LocalQueue",
                "metadata": {**_meta(w, h), "namespace": "default"},
                "spec": {"clusterQueue": cq["name"]},
            }
            for w in cq["workloads"]
        ]
    head = comment_block(h, f"Kueue quotas for the fleet's shared pool (cohort {q['cohort']})", lines)
    return {"kueue-fleet.yaml": head + dump_yaml_all(docs)}


def _fleet_cluster_queue(cq: dict[str, Any], cohort: str, h: Header) -> dict[str, Any]:
    resource = str(cq.get("resource") or "nvidia.com/gpu")
    flavors = []
    for f in cq["flavors"]:
        r: dict[str, Any] = {"name": resource, "nominalQuota": int(f["nominal_quota"])}
        if f.get("borrowing_limit") is not None:
            r["borrowingLimit"] = int(f["borrowing_limit"])
        if f.get("lending_limit") is not None:
            r["lendingLimit"] = int(f["lending_limit"])
        flavors.append({"name": f["name"], "resources": [r]})
    pre = cq.get("preemption") or {}
    return {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": _meta(cq["name"], h),
        "spec": {
            "cohort": cohort,
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": [resource], "flavors": flavors}],
            "preemption": {
                "reclaimWithinCohort": pre.get("reclaim_within_cohort", "Never"),
                "withinClusterQueue": pre.get("within_cluster_queue", "LowerPriority"),
            },
        },
    }
