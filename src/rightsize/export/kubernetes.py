"""Kubernetes manifests from a plan.

Serving (`serving.yaml`): vLLM with the plan's tensor parallelism, replicas, GPU requests
and KV / batch limits (`export.vllm`): a Deployment when a replica fits one node, a
LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, LWS v0.10) when it spans nodes (Ray across
the group, as LWS's vLLM example does); a Service; a KEDA ScaledObject (keda.sh/v1alpha1,
KEDA v2.20) scaling on `vllm:num_requests_waiting` with the target, floor and ceiling
from `export.thresholds`; a PodDisruptionBudget keeping enough replicas for the design rate.

Training (`training.yaml`): a JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.13) of one
indexed Job with a pod per node, torchrun in each with the node rank from the completion
index and the rendezvous on pod 0 of the JobSet's headless service, the framework's
arguments (`export.frameworks`) and its files in a ConfigMap; restarts allowed for the
interruptions the reliability model expects over the run (twice that, at least 3); and
Kueue (`kueue.yaml`: ResourceFlavor, ClusterQueue with the plan's GPUs, CPUs and memory as
nominal quota, LocalQueue) which the JobSet is queued in.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.export.frameworks import launch_for
from rightsize.export.header import comment_block, dump_yaml_all, k8s_annotations
from rightsize.export.kueue import gpu_resource, training_queue
from rightsize.export.names import DNS_1035, Arg, argv, k8s_name, promql_string, shell_args, shell_word
from rightsize.export.plan_view import Header, ServingView, TrainingView
from rightsize.export.slurm import nccl_env
from rightsize.export.thresholds import autoscale_waiting_target, replica_bounds
from rightsize.export.vllm import VLLM_VERSION, vllm_arg_list

VLLM_IMAGE = "vllm/vllm-openai:v0.10.1"
TRAIN_IMAGE = "nvcr.io/nvidia/nemo:25.04"  # ships Megatron-LM core, NeMo 2.0, PyTorch and torchrun
PROMETHEUS_URL = "http://prometheus-operated.monitoring.svc:9090"
PORT = 8000
RDZV_PORT = 29500


NAME_MAX = 40  # the plan's object name; JobSet pods are `<name>-workers-<i>-<j>` (a 63-character label)


def object_name(h: Header) -> str:
    """The objects' name: the plan name through `names.k8s_name` (kept when valid, else a slug
    with a hash), short enough for the suffixes added to it (`-config`, `-queue`, pod names)."""
    return k8s_name(h.name, NAME_MAX, what="plan name")


def _meta(name: str, h: Header, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": name, "labels": {"app.kubernetes.io/part-of": object_name(h), **(labels or {})},
            "annotations": k8s_annotations(h)}  # fmt: skip


def _resources(gpus: int, cpus: float, mem_bytes: float, vendor: str) -> dict[str, Any]:
    cpu = str(max(1, math.ceil(cpus)))
    mem = f"{max(1, math.ceil(mem_bytes / 2**30))}Gi"
    g = gpu_resource(vendor)
    return {"requests": {"cpu": cpu, "memory": mem, g: gpus}, "limits": {"memory": mem, g: gpus}}


def _shm() -> tuple[dict[str, Any], dict[str, Any]]:
    """/dev/shm in memory: NCCL and PyTorch workers exchange through it."""
    return {"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "dshm", "mountPath": "/dev/shm"}


def _dump(head: str, docs: list[dict[str, Any]]) -> str:
    return head + dump_yaml_all(docs)


def _vllm_container(v: ServingView, args: list[str], command: list[str] | None = None) -> dict[str, Any]:
    vol_mount = _shm()[1]
    c: dict[str, Any] = {
        "name": "vllm",
        "image": VLLM_IMAGE,
        "ports": [{"containerPort": PORT, "name": "http"}],
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}}}],
        "resources": _resources(min(v.tp, v.hw.gpus_per_node), v.cpu_cores_need_per_gpu * min(v.tp, v.hw.gpus_per_node),
                                v.host_memory_need_bytes_per_gpu * min(v.tp, v.hw.gpus_per_node), v.hw.vendor),
        "volumeMounts": [vol_mount],
    }  # fmt: skip
    if command:
        c["command"] = command
    c["args"] = args
    return c


def _engine_args(v: ServingView) -> list[Arg]:
    """vLLM's arguments with the model to load and the port, as (flag, value) pairs."""
    return [("--model", v.model.hf_id or v.model.name), *vllm_arg_list(v), ("--port", PORT)]


def _serving_workload(v: ServingView, name: str, labels: dict[str, str]) -> dict[str, Any]:
    vol = _shm()[0]
    if v.nodes_per_replica == 1:
        probe = {"httpGet": {"path": "/health", "port": PORT}, "periodSeconds": 10, "failureThreshold": 60}
        container = {**_vllm_container(v, argv(_engine_args(v))), "readinessProbe": probe}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(name, v.header, labels),
            "spec": {
                "replicas": v.replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [container], "volumes": [vol]},
                },
            },
        }
    model, *engine = _engine_args(v)  # `vllm serve MODEL`: the model is positional
    words = [shell_word(str(model[1])), *shell_args([*engine, ("--distributed-executor-backend", "ray")])]
    leader_cmd = "ray start --head --port=6379 && vllm serve " + " ".join(words)
    worker_cmd = "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"
    leader = _vllm_container(v, [leader_cmd], ["/bin/sh", "-c"])
    worker = _vllm_container(v, [worker_cmd], ["/bin/sh", "-c"])
    worker["name"] = "vllm-worker"
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": _meta(name, v.header, labels),
        "spec": {
            "replicas": v.replicas,
            "leaderWorkerTemplate": {
                "size": v.nodes_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": {"labels": {**labels, "role": "leader"}},
                                   "spec": {"containers": [leader], "volumes": [vol]}},
                "workerTemplate": {"spec": {"containers": [worker], "volumes": [vol]}},
            },
        },
    }  # fmt: skip


def serving_files(v: ServingView) -> dict[str, str]:
    name = object_name(v.header)
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "vllm"}
    workload = _serving_workload(v, name, labels)
    lo, hi = replica_bounds(v)
    target = autoscale_waiting_target(v)
    floor_replicas = min(v.replicas, max(1, math.ceil(v.design_rate_rps / v.replica_capacity_rps)))
    pod_labels = labels if workload["kind"] == "Deployment" else {**labels, "role": "leader"}
    docs = [
        workload,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(name, v.header, labels),
            "spec": {"selector": pod_labels, "ports": [{"name": "http", "port": PORT, "targetPort": PORT}]},
        },
        {
            "apiVersion": "keda.sh/v1alpha1",
            "kind": "ScaledObject",
            "metadata": _meta(name, v.header, labels),
            "spec": {
                "scaleTargetRef": {
                    "apiVersion": workload["apiVersion"],
                    "kind": workload["kind"],
                    "name": name,
                },
                "minReplicaCount": lo,
                "maxReplicaCount": hi,
                "pollingInterval": 15,
                "cooldownPeriod": 300,
                "triggers": [
                    {
                        "type": "prometheus",
                        "metricType": "AverageValue",
                        "metadata": {
                            "serverAddress": PROMETHEUS_URL,
                            "query": f"sum(vllm:num_requests_waiting{{model_name={promql_string(v.model.name)}}})",
                            "threshold": str(target),
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(name, v.header, labels),
            "spec": {"minAvailable": floor_replicas, "selector": {"matchLabels": pod_labels}},
        },
    ]
    head = comment_block(
        v.header,
        f"Kubernetes serving manifests ({VLLM_VERSION}, KEDA v2.20, LWS v0.10)",
        [
            f"{v.replicas} replica(s) x TP{v.tp} on {v.hw.accelerator}: {workload['kind']}"
            + (f" of {v.nodes_per_replica} pods per replica" if v.nodes_per_replica > 1 else ""),
            f"autoscaling: {lo}-{hi} replicas, target {target} waiting request(s) per replica "
            f"(TTFT slack x replica capacity x utilisation target {v.utilisation_target:.0%})",
            f"disruption budget: at least {floor_replicas} replica(s), enough for the design rate "
            f"{v.design_rate_rps:.1f} req/s at {v.replica_capacity_rps:.2f} req/s each",
        ],
    )
    return {"serving.yaml": _dump(head, docs)}


def _torchrun_script(v: TrainingView, framework: str, name: str) -> tuple[str, dict[str, str]]:
    """The container's bash script. `name` is a `k8s_name` (a-z, 0-9, '-'), a shell word as it
    is; the framework's arguments are quoted by `names.shell_args`."""
    launch = launch_for(v, framework)
    entry = launch.entry.replace('"$MEGATRON_DIR/pretrain_gpt.py"', "/opt/megatron-lm/pretrain_gpt.py")
    if not launch.torchrun:
        entry = f"/config/{launch.entry}"
    config_files = {f: f"/config/{f}" for f in launch.files}
    pairs = [
        (flag, config_files.get(val, val) if isinstance(val, str) else val) for flag, val in launch.arg_list
    ]
    args = " ".join(shell_args(pairs))
    gpn = min(v.gpus, v.hw.gpus_per_node)
    env = " ".join(f"{k}={shell_word(val)}" for k, val, _ in nccl_env(v.fabric_kind, v.rails, v.hw.vendor))
    assert DNS_1035.fullmatch(name), name
    script = (
        f"export {env}\n"
        f"export CKPT_DIR=${{CKPT_DIR:-/checkpoints/{name}}}\n"
        f"torchrun --nnodes={v.nodes} --nproc-per-node={gpn} --node-rank=$JOB_COMPLETION_INDEX "
        f"--rdzv-id={name} --rdzv-backend=static --master-addr={name}-workers-0-0.{name} --master-port={RDZV_PORT} "
        f"{entry} {args}\n"
    )
    return script, launch.files


def training_files(v: TrainingView, framework: str = "auto") -> dict[str, str]:
    name = object_name(v.header)
    script, files = _torchrun_script(v, framework, name)
    gpn = min(v.gpus, v.hw.gpus_per_node)
    interruptions = v.run_s / v.mtbf_s if v.mtbf_s else 0.0
    restarts = max(3, math.ceil(2 * interruptions))
    vol, mount = _shm()
    container = {
        "name": "trainer",
        "image": TRAIN_IMAGE,
        "command": ["/bin/bash", "-c"],
        "args": [script],
        "ports": [{"containerPort": RDZV_PORT}],
        "resources": _resources(gpn, v.cpu_cores_need_per_gpu * gpn, v.host_memory_need_bytes_per_gpu * gpn, v.hw.vendor),
        "volumeMounts": [mount, {"name": "config", "mountPath": "/config"}],
    }  # fmt: skip
    queue = f"{name}-queue"
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {**_meta(name, v.header), "labels": {"app.kubernetes.io/part-of": name, "kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "failurePolicy": {"maxRestarts": restarts},
            "network": {"enableDNSHostnames": True, "subdomain": name},
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": v.nodes,
                            "completions": v.nodes,
                            "completionMode": "Indexed",
                            "backoffLimit": 0,
                            "template": {"spec": {"restartPolicy": "Never", "containers": [container],
                                                  "volumes": [vol, {"name": "config", "configMap": {"name": f"{name}-config"}}]}},
                        }
                    },
                }
            ],
        },
    }  # fmt: skip
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(f"{name}-config", v.header),
        "data": files,
    }
    head = comment_block(
        v.header,
        f"Kubernetes training manifests (JobSet v0.13, Kueue v1beta1, {launch_for(v, framework).version})",
        [
            f"{v.gpus} x {v.hw.accelerator} as {v.nodes} pods of {gpn} GPUs; TP{v.tp} PP{v.pp} DP{v.dp} CP{v.cp} EP{v.ep}",
            f"restarts allowed: {restarts} (2 x the {interruptions:.1f} interruptions expected over the run, at least 3)",
        ],
    )
    return {"training.yaml": _dump(head, [config, jobset]), "kueue.yaml": training_queue(v, queue)}
