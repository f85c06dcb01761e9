"""Kubernetes manifests from a plan.

Serving (`serving.yaml`): vLLM with the plan's tensor parallelism, replicas, accelerator
requests and KV / batch limits (`export.vllm`), on the accelerator's own stack
(`export.k8s_platform`: `nvidia.com/gpu` + the CUDA vLLM image, `amd.com/gpu` + ROCm's,
`aws.amazon.com/neuron` + the Neuron vLLM image, `google.com/tpu` + vLLM TPU on a GKE
slice, one host or a multi-host slice; `habana.ai/gaudi` + Intel's vLLM fork for Gaudi,
`export.k8s_gaudi`), images pinned by exact tag, pods placed on the
instance type the plan priced: a Deployment when a replica fits one node, a LeaderWorkerSet
(leaderworkerset.x-k8s.io/v1, LWS v0.10) when it spans GPU nodes or the hosts of a
multi-host TPU slice (Ray across the group, as LWS's vLLM example and tpu-inference's GKE
multi-host example do); startup, liveness and readiness probes on
vLLM's `/health`; a Service; a KEDA ScaledObject (keda.sh/v1alpha1, KEDA v2.20) scaling on
`vllm:num_requests_waiting` with the target, floor and ceiling from `export.thresholds`; a
PodDisruptionBudget below the autoscaler's floor, so node drains proceed. An interactive
service (scenario `serving`) serves the model's instruction-tuned release when one is known.

Training (`training.yaml`, `kueue.yaml`): `export.k8s_training`.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from rightsize.catalog.tpu_slices import tpu_slices
from rightsize.errors import BadInput
from rightsize.export import k8s_gaudi
from rightsize.export.header import comment_block
from rightsize.export.k8s_common import dump, meta, object_name, pod_requests, shm
from rightsize.export.k8s_platform import (
    Image,
    Stack,
    instruct_model,
    node_selector,
    tpu_pod_memory_cap_bytes,
    tpu_precision_notes,
)
from rightsize.export.k8s_training import training_files
from rightsize.export.names import Arg, argv, promql_string, shell_args
from rightsize.export.plan_view import ServingView
from rightsize.export.serve_engines import engine_image, pick_engine
from rightsize.export.sglang import COMMAND as SGLANG_COMMAND
from rightsize.export.sglang import DIST_PORT, SGLANG_VERSION, sglang_arg_list
from rightsize.export.thresholds import autoscale_waiting_target, replica_bounds
from rightsize.export.trtllm import COMMAND as TRTLLM_COMMAND
from rightsize.export.trtllm import OPTIONS_FILE as TRTLLM_OPTIONS_FILE
from rightsize.export.trtllm import TRTLLM_VERSION, llm_api_options, trtllm_arg_list, weights_note
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
    return min(v.gpus_per_replica, v.gpus_per_node_used)


def _engine_args(v: ServingView, st: Stack, image: Image) -> list[Arg]:
    """vLLM's arguments with the port, as (flag, value) pairs; the model comes from $(MODEL)."""
    args = vllm_arg_list(v)
    if image.engine != "vllm":
        args = [(f, val) for f, val in args if f not in GPU_ONLY_FLAGS]
    if image.engine == "vllm-neuron":  # Neuron's TP counts logical NeuronCores, not devices
        cores = v.tp * st.neuron_cores_per_device
        args = [(f, cores if f == "--tensor-parallel-size" else val) for f, val in args]
    slices = tpu_slices(v.hw.accelerator) if image.engine == "vllm-tpu" else None
    if slices is not None and slices.devices_per_chip > 1:  # vLLM TPU counts JAX devices (TPU7x: 2 a chip)
        devices = v.tp * slices.devices_per_chip
        args = [(f, devices if f == "--tensor-parallel-size" else val) for f, val in args]
    return [*args, ("--port", PORT)]


def _probes() -> dict[str, Any]:
    health = {"httpGet": {"path": "/health", "port": PORT}}
    return {
        "startupProbe": {**health, "periodSeconds": 10, "failureThreshold": STARTUP_BUDGET_S // 10},
        "livenessProbe": {**health, "periodSeconds": 10, "failureThreshold": 3},
        "readinessProbe": {**health, "periodSeconds": 5, "failureThreshold": 2},
    }


def _vllm_container(
    v: ServingView,
    st: Stack,
    image: Image,
    model: str,
    args: list[str],
    command: list[str] | None = None,
    name: str = "vllm",
) -> dict[str, Any]:
    n = _devices(v)
    mem = v.host_memory_need_bytes_per_gpu * n
    cap = tpu_pod_memory_cap_bytes(v.hw, n) if v.hw.vendor == "google" else None
    c: dict[str, Any] = {
        "name": name,
        "image": image.image,
        "ports": [{"containerPort": PORT, "name": "http"}],
        "env": [
            {"name": "MODEL", "value": model},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}},
        ],
        "resources": pod_requests(n, v.cpu_cores_need_per_gpu * n, min(mem, cap or mem), st.resource),
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


def _deployment(
    v: ServingView,
    name: str,
    labels: dict[str, str],
    container: dict[str, Any],
    selector: dict[str, str],
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec = _pod_spec([container], selector)
    spec["volumes"] = [*spec["volumes"], *(volumes or [])]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(name, v.header, labels),
        "spec": {
            "replicas": v.replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def _leader_worker_set(
    v: ServingView,
    name: str,
    labels: dict[str, str],
    leader: dict[str, Any],
    worker: dict[str, Any],
    selector: dict[str, str],
) -> dict[str, Any]:
    """One group of `nodes_per_replica` pods per replica (LWS injects LWS_LEADER_ADDRESS,
    LWS_GROUP_SIZE and LWS_WORKER_INDEX into every container of the group)."""
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


SGLANG_LEADER_ADDR = f"$(LWS_LEADER_ADDRESS):{DIST_PORT}"
TRTLLM_OPTIONS_DIR = "/etc/rightsize"


def _sglang_workload(
    v: ServingView,
    st: Stack,
    image: Image,
    name: str,
    labels: dict[str, str],
    model: str,
    selector: dict[str, str],
) -> dict[str, Any]:
    """SGLang: one server per replica; a replica over several nodes runs SGLang's own
    multi-node launch in a LeaderWorkerSet (same command, rank from LWS_WORKER_INDEX)."""
    command = list(SGLANG_COMMAND)
    tail = ["--host", "0.0.0.0", "--port", str(PORT)]
    if v.nodes_per_replica == 1:
        args = ["--model-path", "$(MODEL)", *argv(sglang_arg_list(v)), *tail]
        container = {**_vllm_container(v, st, image, model, args, command, "sglang"), **_probes()}
        return _deployment(v, name, labels, container, selector)
    lead = sglang_arg_list(v, node_rank=0, dist_addr=SGLANG_LEADER_ADDR)
    work = sglang_arg_list(v, node_rank="$(LWS_WORKER_INDEX)", dist_addr=SGLANG_LEADER_ADDR)
    leader = {
        **_vllm_container(
            v, st, image, model, ["--model-path", "$(MODEL)", *argv(lead), *tail], command, "sglang"
        ),
        **_probes(),
    }
    worker = _vllm_container(
        v, st, image, model, ["--model-path", "$(MODEL)", *argv(work), *tail], command, "sglang-worker"
    )
    return _leader_worker_set(v, name, labels, leader, worker, selector)


def _trtllm_workload(
    v: ServingView,
    st: Stack,
    image: Image,
    name: str,
    labels: dict[str, str],
    model: str,
    selector: dict[str, str],
) -> dict[str, Any]:
    """trtllm-serve with its LLM API options from a ConfigMap (mounted read-only)."""
    if v.nodes_per_replica > 1:
        raise BadInput(
            f"A replica of {v.gpus_per_replica} GPUs spans {v.nodes_per_replica} {v.hw.node} nodes; the Kubernetes "
            "export writes TensorRT-LLM for one node per replica.",
            "Multi-node trtllm-serve is launched by MPI (trtllm-llmapi-launch under mpirun/srun), which these "
            "manifests do not set up.",
            "Export with --target slurm (srun + trtllm-llmapi-launch), or --engine vllm / sglang (LeaderWorkerSet).",
        )
    path = f"{TRTLLM_OPTIONS_DIR}/{TRTLLM_OPTIONS_FILE}"
    args = ["$(MODEL)", "--host", "0.0.0.0", "--port", str(PORT), *argv(trtllm_arg_list(v, path))]
    container = {**_vllm_container(v, st, image, model, args, list(TRTLLM_COMMAND), "trtllm"), **_probes()}
    container["volumeMounts"] = [
        *container["volumeMounts"],
        {"name": "llm-api-options", "mountPath": TRTLLM_OPTIONS_DIR, "readOnly": True},
    ]
    volume = {"name": "llm-api-options", "configMap": {"name": name}}
    return _deployment(v, name, labels, container, selector, [volume])


# vLLM TPU (tpu-inference) runs one replica over the hosts of a multi-host slice as a Ray
# cluster when this is set: vllm-project/tpu-inference examples/offload/gke/benchmarks/multi-host/
# deploy-baseline.yaml (LeaderWorkerSet, a pod per 4-chip host, google.com/tpu 4, the slice's
# topology label, TPU_MULTIHOST_BACKEND=ray on leader and workers), read 2026-11.
TPU_MULTIHOST_ENV = "TPU_MULTIHOST_BACKEND"


def _serving_workload(
    v: ServingView,
    name: str,
    labels: dict[str, str],
    model: str,
    selector: dict[str, str],
    engine_name: str = "vllm",
) -> dict[str, Any]:
    st, image = engine_image(v, engine_name)
    if engine_name == "sglang":
        return _sglang_workload(v, st, image, name, labels, model, selector)
    if engine_name == "trtllm":
        return _trtllm_workload(v, st, image, name, labels, model, selector)
    if image.engine == "vllm-gaudi":  # Intel's fork: its own arguments, environment and INC volume
        container = {
            **k8s_gaudi.container(v, _vllm_container(v, st, image, model, [], name="vllm"), PORT),
            **_probes(),
        }
        return _deployment(v, name, labels, container, selector, k8s_gaudi.volumes(v, name))
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
    if image.engine not in ("vllm", "vllm-tpu"):
        raise BadInput(
            f"A replica of TP{v.tp} spans {v.nodes_per_replica} {v.hw.node} nodes; {image.engine} is exported "
            "for one node per replica.",
            "Multi-node replicas are written as Ray groups of the CUDA/ROCm and TPU vLLM images only.",
            f"Re-plan with at most {v.hw.gpus_per_node} devices per replica (targets.max_tp).",
        )
    # "$MODEL": the container's env (the served model); the rest quoted by names.shell_args
    words = ['"$MODEL"', *shell_args([*engine, ("--distributed-executor-backend", "ray")])]
    leader_cmd = "ray start --head --port=6379 && vllm serve " + " ".join(words)
    worker_cmd = "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"
    leader = {**_vllm_container(v, st, image, model, [leader_cmd], ["/bin/sh", "-c"]), **_probes()}
    worker = _vllm_container(v, st, image, model, [worker_cmd], ["/bin/sh", "-c"])
    worker["name"] = "vllm-worker"
    if image.engine == "vllm-tpu":  # one pod per host of the slice, Ray across them
        for c in (leader, worker):
            c["env"].append({"name": TPU_MULTIHOST_ENV, "value": "ray"})
    return _leader_worker_set(v, name, labels, leader, worker, selector)


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


QUEUE_METRICS = {"vllm": "vllm:num_requests_waiting", "sglang": "sglang:num_queue_reqs"}
ENGINE_VERSIONS = {"vllm": VLLM_VERSION, "sglang": SGLANG_VERSION, "trtllm": TRTLLM_VERSION}


def _scaled_object(
    v: ServingView,
    name: str,
    labels: dict[str, str],
    workload: dict[str, Any],
    lo: int,
    hi: int,
    target: int,
    metric: str = QUEUE_METRICS["vllm"],
) -> dict[str, Any]:
    query = f"sum({metric}{{model_name={promql_string(v.model.name)}}})"
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


def _refuse_disaggregated(v: ServingView) -> None:
    if v.disaggregated is not None:
        raise BadInput(
            "The plan serves prefill and decode in separate pools; this export writes aggregated replicas.",
            "Disaggregated pools need per-pod KV-transfer addresses and a router (no pinned router image yet).",
            "Export with --target slurm --engine sglang (prefill and decode servers and SGLang's router), "
            "or export an aggregated plan.",
        )


def serving_files(
    v: ServingView, node_labels: dict[str, str] | None = None, engine: str | None = None
) -> dict[str, str]:
    _refuse_disaggregated(v)
    engine_name = pick_engine(v, engine)
    st, image = engine_image(v, engine_name)
    name = object_name(v.header)
    labels = {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": image.engine if engine_name != "vllm" else "vllm",
    }
    model, model_why = served_model(v)
    tpu_notes = (
        tpu_precision_notes(v.hw, v.weight_precision, v.kv_precision) if image.engine == "vllm-tpu" else []
    )
    selector = node_selector(
        v.hw, v.priced_instance, node_labels, tpu_chips=v.gpus_per_replica, tpu_hosts=v.nodes_per_replica
    )
    workload = _serving_workload(v, name, labels, model, selector, engine_name)
    lo, hi = replica_bounds(v)
    target = autoscale_waiting_target(v)
    pdb, pdb_why = disruption_budget(v, lo)
    pod_labels = labels if workload["kind"] == "Deployment" else {**labels, "role": "leader"}
    docs: list[dict[str, Any]] = []
    if engine_name == "trtllm":
        options = yaml.safe_dump(llm_api_options(v), sort_keys=False)
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name, v.header, labels),
                     "data": {TRTLLM_OPTIONS_FILE: options}})  # fmt: skip
    docs += [
        *k8s_gaudi.claims(v, name, image),
        workload,
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(name, v.header, labels),
         "spec": {"selector": pod_labels, "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]}},
    ]  # fmt: skip
    metric = QUEUE_METRICS.get(engine_name)
    if metric:
        docs.append(_scaled_object(v, name, labels, workload, lo, hi, target, metric))
        scaling = (
            f"autoscaling: {lo}-{hi} replicas on {metric}, target {target} waiting request(s) per replica "
            f"(TTFT slack x replica capacity x utilisation target {v.utilisation_target:.0%})"
        )
    else:
        scaling = (
            f"autoscaling: none written ({engine_name} exports no queue-length metric the export relies on); "
            f"scale between {lo} and {hi} replicas by hand"
        )
    docs.append(
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta(name, v.header, labels),
         "spec": {**pdb, "selector": {"matchLabels": pod_labels}}}
    )  # fmt: skip
    where = (
        ", ".join(f"{k}={val}" for k, val in selector.items())
        or "any node with the device (no cloud instance priced)"
    )
    layout = f"TP{v.tp}" + (f" x PP{v.pp}" if v.pp > 1 else "") + (f", EP{v.ep}" if v.ep > 1 else "")
    lines = [
        f"{v.replicas} replica(s) x {layout} on {v.hw.accelerator} ({st.resource}): {workload['kind']}"
        + (f" of {v.nodes_per_replica} pods per replica" if v.nodes_per_replica > 1 else ""),
        f"image {image.image} ({image.source})",
        f"model: {model_why}",
        f"nodes: {where}",
        scaling,
        f"disruption budget: {pdb_why}",
    ]
    if engine_name == "trtllm":
        lines.append(weights_note(v))
    lines += k8s_gaudi.header_lines(v, image)
    lines += tpu_notes
    head = comment_block(
        v.header,
        f"Kubernetes serving manifests ({k8s_gaudi.version(image) or ENGINE_VERSIONS[engine_name]}, KEDA v2.20, "
        "LWS v0.10)",
        lines,
    )
    return {"serving.yaml": dump(head, docs)}
