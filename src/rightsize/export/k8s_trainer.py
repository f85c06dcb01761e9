"""One shape for a torchrun trainer on Kubernetes (vision and recommendation training): the
trainer container (image, script, env, GPU/CPU/memory requests, RDMA and IPC_LOCK when the
plan's fabric is RDMA, mounts) and the JobSet of indexed pods, one per node, with restarts
sized to the run's expected interruptions and the Kueue queue label. The trainers differ in
their script, image, volumes and notes, which the callers pass in."""

from __future__ import annotations

import math
from typing import Any

from rightsize.export.header import comment_block, dump_yaml_all
from rightsize.export.k8s_common import meta, pod_requests, shm
from rightsize.export.k8s_platform import rdma
from rightsize.export.k8s_training import pod_quotas
from rightsize.export.kueue import queue_objects
from rightsize.export.names import k8s_name
from rightsize.export.plan_view import Header
from rightsize.export.slurm import RDZV_PORT


def trainer_container(
    image: str,
    script: str,
    env: dict[str, str],
    requests: tuple[int, float, float, str],
    rdma_fabric: bool,
    mounts: list[dict[str, Any]],
) -> dict[str, Any]:
    """The container: `requests` is (GPUs, CPU cores, host memory bytes, the GPU resource name)."""
    gpus, cpus, memory_bytes, resource = requests
    extra: dict[str, int] = {}
    c: dict[str, Any] = {
        "name": "trainer",
        "image": image,
        "command": ["/bin/bash", "-c"],
        "args": [script],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [{"containerPort": RDZV_PORT}],
    }
    if rdma_fabric:
        r = rdma()
        extra[r.resource] = r.per_pod
        c["securityContext"] = {"capabilities": {"add": [r.capability]}}
    c["resources"] = pod_requests(gpus, cpus, memory_bytes, resource, extra)
    c["volumeMounts"] = [shm()[1], *mounts]
    return c


def restarts(run_s: float, mtbf_s: float | None) -> int:
    """JobSet restarts: twice the run's expected interruptions, at least 3."""
    return max(3, math.ceil(2 * run_s / mtbf_s)) if mtbf_s else 3


def indexed_jobset(
    header: Header, name: str, queue: str, nodes: int, max_restarts: int, pod: dict[str, Any]
) -> dict[str, Any]:
    """A JobSet of `nodes` indexed pods (torchrun's node rank is the completion index) with a
    headless subdomain for the rendezvous host, labelled for its Kueue queue."""
    job = {"parallelism": nodes, "completions": nodes, "completionMode": "Indexed", "backoffLimit": 0,
           "template": {"spec": pod}}  # fmt: skip
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {**meta(name, header), "labels": {"app.kubernetes.io/part-of": name,
                                                      "kueue.x-k8s.io/queue-name": queue}},
        "spec": {"failurePolicy": {"maxRestarts": max_restarts},
                 "network": {"enableDNSHostnames": True, "subdomain": name},
                 "replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": job}}]},
    }  # fmt: skip


def trainer_pod(
    container: dict[str, Any],
    volumes: list[dict[str, Any]],
    selector: dict[str, str],
    grace_s: int | None = None,
) -> dict[str, Any]:
    """The pod: never restarted in place (the JobSet restarts the group), /dev/shm first."""
    pod: dict[str, Any] = {"restartPolicy": "Never"}
    if grace_s is not None:
        pod["terminationGracePeriodSeconds"] = grace_s
    pod["containers"] = [container]
    pod["volumes"] = [shm()[0], *volumes]
    if selector:
        pod["nodeSelector"] = selector
    return pod


def fabric_note(fabric_kind: str | None) -> str:
    """The header line on what the pods ask of the network."""
    if fabric_kind:
        return f"{fabric_kind} fabric: each pod requests {rdma().resource} and IPC_LOCK"
    return "one node: no RDMA device, NCCL_IB_DISABLE=1"


def kueue_file(
    header: Header,
    queue: str,
    accelerator: str,
    selector: dict[str, str],
    container: dict[str, Any],
    nodes: int,
) -> str:
    """`kueue.yaml`: the queue objects whose nominal quota is every resource the pods request,
    with a flavor that selects the nodes the pods are placed on."""
    flavor = k8s_name(accelerator, what="accelerator")
    quotas = pod_quotas(container, nodes)
    where = ", ".join(f"{k}={val}" for k, val in selector.items()) or (
        "any node (no cloud instance was priced: add nodeLabels your nodes carry)"
    )
    head = comment_block(header, "Kueue quota for this job", [
        "nominal quota = every resource the pods request: " + ", ".join(f"{q} {k}" for k, q in quotas.items()),
        f"flavor {flavor} selects {where}",
    ])  # fmt: skip
    return head + dump_yaml_all(queue_objects(header, queue, flavor, selector, quotas))
