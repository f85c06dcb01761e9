"""Kueue quota objects (kueue.x-k8s.io/v1beta1, Kueue v0.13+): a ResourceFlavor per
accelerator, a ClusterQueue whose nominal quota is what the plan needs (GPUs, and the CPUs
and memory the sizing asks per GPU), and a LocalQueue that jobs name.

For one training plan the quota is that job's allocation. A fleet plan (many workloads on
one pool, issue #16) would export its pooled quotas; the fleet planner has not landed on
this branch, so a fleet plan is refused with a clear message.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.header import comment_block, dump_yaml_all, k8s_annotations
from rightsize.export.plan_view import Header, TrainingView

API = "kueue.x-k8s.io/v1beta1"


def _gpu_resource(vendor: str) -> str:
    return "amd.com/gpu" if vendor == "amd" else "nvidia.com/gpu"


def _meta(name: str, h: Header, namespaced: bool = False) -> dict[str, Any]:
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
    raise BadInput(
        "Fleet plans cannot be exported yet.",
        "The fleet planner (issue #16) had not landed when export was built, so its quota fields are unknown here.",
        "Export each workload's own plan (`rightsize export WORKLOAD.yaml --target kubernetes` writes its Kueue queue).",
    )
