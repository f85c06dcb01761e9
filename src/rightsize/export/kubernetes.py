"""Kubernetes manifests from a plan.

Serving (`serving.yaml`): vLLM with the plan's tensor parallelism, replicas, accelerator
requests and KV / batch limits (`export.vllm`), on the accelerator's own stack
(`export.k8s_platform`: `nvidia.com/gpu` + the CUDA vLLM image, `amd.com/gpu` + ROCm's,
`aws.amazon.com/neuron` + the Neuron vLLM image, `google.com/tpu` + vLLM TPU on a GKE
single-host slice; Gaudi refused with the reason), images pinned by exact tag, pods placed
on the instance type the plan priced: a Deployment when a replica fits one node, a
LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, LWS v0.10) when it spans GPU nodes (Ray
across the group, as LWS's vLLM example does); startup, liveness and readiness probes on
vLLM's `/health`; a Service; a KEDA ScaledObject (keda.sh/v1alpha1, KEDA v2.20) scaling on
`vllm:num_requests_waiting` with the target, floor and ceiling from `export.thresholds`; a
PodDisruptionBudget below the autoscaler's floor, so node drains proceed. An interactive
service (scenario `serving`) serves the model's instruction-tuned release when one is known.

Training (`training.yaml`, `kueue.yaml`): `export.k8s_training`.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.header import comment_block
from rightsize.export.k8s_common import dump, meta, object_name, pod_requests, shm
from rightsize.export.k8s_platform import Image, Stack, instruct_model, node_selector, serving_stack
from rightsize.export.k8s_training import training_files
from rightsize.export.names import Arg, argv, promql_string, shell_args
from rightsize.export.plan_view import ServingView
from rightsize.export.thresholds import autoscale_waiting_target, replica_bounds
from rightsize.export.vllm import VLLM_VERSION, vllm_arg_list

PROMETHEUS_URL = "http://prometheus-operated.monitoring.svc:9090"
PORT = 8000
STARTUP_BUDGET_S = 1800  # weights download and load, compilation: the startup probe's patience
GPU_ONLY_FLAGS = ("--kv-cache-dtype", "--quantization", "--block-size")  # CUDA/ROCm kernel choices

__all__ = ["object_name", "serving_files", "training_files"]


def served_model(v: ServingView) -> tuple[str, str]:
    """(model to load, why): the instruct release for an interactive service when known,
    else the planned checkpoint."""
    base = v.model.hf_id or v.model.name
    if v.scenario != "serving":
        return base, f"the planned checkpoint {base} (scenario {v.scenario})"
    instruct = instruct_model(v.model.hf_id)
    if instruct:
        return instruct, f"{instruct}: the instruction-tuned release of {base} (an interactive service)"
    return base, (
        f"{base}: no instruction-tuned release is known for it; set MODEL to your chat checkpoint "
        "(same architecture) before serving users"
    )


def _devices(v: ServingView) -> int:
    return min(v.tp, v.hw.gpus_per_node)


def _engine_args(v: ServingView, st: Stack, image: Image) -> list[Arg]:
    """vLLM's arguments with the port, as (flag, value) pairs; the model comes from $(MODEL)."""
    args = vllm_arg_list(v)
    if image.engine != "vllm":
        args = [(f, val) for f, val in args if f not in GPU_ONLY_FLAGS]
    if image.engine == "vllm-neuron":  # Neuron's TP counts logical NeuronCores, not devices
        cores = v.tp * st.neuron_cores_per_device
        args = [(f, cores if f == "--tensor-parallel-size" else val) for f, val in args]
    return [*args, ("--port", PORT)]


def _probes() -> dict[str, Any]:
    health = {"httpGet": {"path": "/health", "port": PORT}}
    return {
        "startupProbe": {**health, "periodSeconds": 10, "failureThreshold": STARTUP_BUDGET_S // 10},
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**health, "periodSeconds": 5, "failureThreshold": 2},
    }


def _vllm_container(
    v: ServingView, st: Stack, image: Image, model: str, args: list[str], command: list[str] | None = None
) -> dict[str, Any]:
    n = _devices(v)
    c: dict[str, Any] = {
        "name": "vllm",
        "image": image.image,
        "ports": [{"containerPort": PORT, "name": "http"}],
        "env": [
            {"name": "MODEL", "value": model},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}},
        ],
        "resources": pod_requests(n, v.cpu_cores_need_per_gpu * n, v.host_memory_need_bytes_per_gpu * n, st.resource),
        "volumeMounts": [shm()[1]],
    }  # fmt: skip
    if command:
        c["command"] = command
    c["args"] = args
    return c


def _pod_spec(containers: list[dict[str, Any]], selector: dict[str, str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers, "volumes": [shm()[0]]}
    if selector:
        spec["nodeSelector"] = selector
    return spec


def _serving_workload(
    v: ServingView, name: str, labels: dict[str, str], model: str, selector: dict[str, str]
) -> dict[str, Any]:
    st, image = serving_stack(v.hw)
    engine = _engine_args(v, st, image)
    if v.nodes_per_replica == 1:
        args = ["--model", "$(MODEL)", *argv(engine)]  # Kubernetes expands $(MODEL) from the env
        container = {**_vllm_container(v, st, image, model, args), **_probes()}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(name, v.header, labels),
            "spec": {
                "replicas": v.replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": _pod_spec([container], selector)},
            },
        }
    if image.engine != "vllm":
        raise BadInput(
            f"A replica of TP{v.tp} spans {v.nodes_per_replica} {v.hw.node} nodes; {image.engine} is exported "
            "for one node per replica.",
            "Multi-node replicas are written as Ray groups of the CUDA/ROCm vLLM image only.",
            f"Re-plan with at most {v.hw.gpus_per_node} devices per replica (targets.max_tp).",
        )
    # "$MODEL": the container's env (the served model); the rest quoted by names.shell_args
    words = ['"$MODEL"', *shell_args([*engine, ("--distributed-executor-backend", "ray")])]
    leader_cmd = "ray start --head --port=6379 && vllm serve " + " ".join(words)
    worker_cmd = "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"
    leader = {**_vllm_container(v, st, image, model, [leader_cmd], ["/bin/sh", "-c"]), **_probes()}
    worker = _vllm_container(v, st, image, model, [worker_cmd], ["/bin/sh", "-c"])
    worker["name"] = "vllm-worker"
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": meta(name, v.header, labels),
        "spec": {
            "replicas": v.replicas,
            "leaderWorkerTemplate": {
                "size": v.nodes_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": {"labels": {**labels, "role": "leader"}}, "spec": _pod_spec([leader], selector)},
                "workerTemplate": {"spec": _pod_spec([worker], selector)},
            },
        },
    }  # fmt: skip


def disruption_budget(v: ServingView, autoscale_floor: int) -> tuple[dict[str, Any], str]:
    """The PDB spec and why: keep the replicas the design rate needs, but always fewer than
    the autoscaler's floor, so a drain can evict one (maxUnavailable 1 when the floor is 1)."""
    need = max(1, math.ceil(v.design_rate_rps / v.replica_capacity_rps)) if v.design_rate_rps else 1
    keep = min(need, autoscale_floor - 1)
    if keep < 1:
        return {"maxUnavailable": 1}, "at most 1 replica down at a time (the autoscaler's floor is 1)"
    return {"minAvailable": keep}, (
        f"at least {keep} replica(s): the design rate {v.design_rate_rps:.1f} req/s needs {need} at "
        f"{v.replica_capacity_rps:.2f} req/s each, capped below the autoscaler's floor of {autoscale_floor} "
        "so a drain at the floor can still evict one"
    )


def _scaled_object(
    v: ServingView, name: str, labels: dict[str, str], workload: dict[str, Any], lo: int, hi: int, target: int
) -> dict[str, Any]:
    query = f"sum(vllm:num_requests_waiting{{model_name={promql_string(v.model.name)}}})"
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": meta(name, v.header, labels),
        "spec": {
            "scaleTargetRef": {"apiVersion": workload["apiVersion"], "kind": workload["kind"], "name": name},
            "minReplicaCount": lo,
            "maxReplicaCount": hi,
            "pollingInterval": 15,
            "cooldownPeriod": 300,
            "triggers": [{"type": "prometheus", "metricType": "AverageValue",
                          "metadata": {"serverAddress": PROMETHEUS_URL, "query": query, "threshold": str(target)}}],
        },
    }  # fmt: skip


def serving_files(v: ServingView, node_labels: dict[str, str] | None = None) -> dict[str, str]:
    st, image = serving_stack(v.hw)
    name = object_name(v.header)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "vllm"}
    model, model_why = served_model(v)
    selector = node_selector(v.hw, v.priced_instance, node_labels, tpu_chips=v.tp)
    workload = _serving_workload(v, name, labels, model, selector)
    lo, hi = replica_bounds(v)
    target = autoscale_waiting_target(v)
    pdb, pdb_why = disruption_budget(v, lo)
    pod_labels = labels if workload["kind"] == "Deployment" else {**labels, "role": "leader"}
    docs = [
        workload,
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, v.header, labels),
         "spec": {"selector": pod_labels, "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]}},
        _scaled_object(v, name, labels, workload, lo, hi, target),
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta(name, v.header, labels),
         "spec": {**pdb, "selector": {"matchLabels": pod_labels}}},
    ]  # fmt: skip
    where = (
        ", ".join(f"{k}={val}" for k, val in selector.items())
        or "any node with the device (no cloud instance priced)"
    )
    head = comment_block(
        v.header,
        f"Kubernetes serving manifests ({VLLM_VERSION}, KEDA v2.20, LWS v0.10)",
        [
            f"{v.replicas} replica(s) x TP{v.tp} on {v.hw.accelerator} ({st.resource}): {workload['kind']}"
            + (f" of {v.nodes_per_replica} pods per replica" if v.nodes_per_replica > 1 else ""),
            f"image {image.image} ({image.source})",
            f"model: {model_why}",
            f"nodes: {where}",
            f"autoscaling: {lo}-{hi} replicas, target {target} waiting request(s) per replica "
            f"(TTFT slack x replica capacity x utilisation target {v.utilisation_target:.0%})",
            f"disruption budget: {pdb_why}",
        ],
    )
    return {"serving.yaml": dump(head, docs)}
