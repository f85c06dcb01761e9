"""Kubernetes training manifests (`training.yaml`, `kueue.yaml`) from a training plan.

A JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.13) of one indexed Job with a pod per node:
torchrun in each, the node rank from the completion index and the rendezvous on pod 0 of
the JobSet's headless service, the framework's arguments (`export.frameworks`) and files in
a ConfigMap; restarts allowed for the interruptions the reliability model expects over the
run (twice that, at least 3). So that it runs as planned:

- Checkpoints and data live on PersistentVolumeClaims (ReadWriteMany: every pod writes its
  shards and reads the data), sized from the plan's storage sizing (retained checkpoints,
  preprocessed data, each with the plan's safety margin) and mounted where `CKPT_DIR` and
  `DATA_PATH` point; a restart resumes from the last checkpoint instead of from scratch.
- When the plan's fabric is RDMA (InfiniBand, RoCE) each pod requests the RDMA device
  (`k8s_platform.rdma`) and the IPC_LOCK capability; NCCL is told to use IB only then, and a
  one-node job disables it. RCCL (AMD) reads the same variables; other parts get none.
- Images are pinned by exact tag per vendor (`k8s_platform`); TPU training is JAX + MaxText
  (`export.k8s_maxtext`); Trainium and Gaudi training is refused with what is missing.
- Kueue (`kueue.yaml`): a ResourceFlavor selecting the nodes the plan priced, a ClusterQueue
  whose quota covers every resource the pods request (CPU, memory, the accelerator, RDMA),
  and the LocalQueue the JobSet names. No liveness probe: a training step has no endpoint,
  and a hung collective aborts the job (TORCH_NCCL_ASYNC_ERROR_HANDLING).
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.frameworks import launch_for
from rightsize.export.fw_common import TOKENIZER_VAR
from rightsize.export.header import comment_block, dump_yaml_all
from rightsize.export.k8s_common import dump, gib, meta, object_name, pod_requests, shm
from rightsize.export.k8s_platform import Image, Stack, node_selector, rdma, training_stack
from rightsize.export.k8s_topology import annotate, describe, levels
from rightsize.export.kueue import queue_objects, topology_object
from rightsize.export.names import DNS_1035, k8s_name, shell_args, shell_word
from rightsize.export.plan_view import TrainingView
from rightsize.export.slurm import nccl_env
from rightsize.export.slurm_segments import checkpoint_write_s
from rightsize.export.topology import Placement, placement

RDZV_PORT = 29500
CKPT_MOUNT = "/checkpoints"
DATA_MOUNT = "/data"
MIN_VOLUME_BYTES = 2**30

# NVIDIA GPU Operator, controllers/state_manager.go (commonGPULabelKey/Value): every GPU node
# it manages is labelled nvidia.com/gpu.present=true.
GPU_NODE_LABEL = ("nvidia.com/gpu.present", "true")


def _torchrun_script(
    v: TrainingView, framework: str, name: str, st: Stack, image: Image
) -> tuple[str, dict[str, str]]:
    """The container's bash script. `name` is a `k8s_name` (a-z, 0-9, '-'), a shell word as it
    is; the framework's arguments are quoted by `names.shell_args`. `CKPT_DIR` and `DATA_PATH`
    come from the container's environment (the volumes)."""
    launch = launch_for(v, framework)
    if image.frameworks and launch.framework not in image.frameworks:
        raise BadInput(
            f"The {launch.framework} export needs an image that carries it; {image.image} carries "
            f"{', '.join(image.frameworks)} only.",
            f"{v.hw.accelerator} jobs run in that vendor image ({image.source}).",
            f"Export with --framework {image.frameworks[0]}.",
        )
    entry = launch.entry.replace('"$MEGATRON_DIR/pretrain_gpt.py"', f"{image.megatron_dir}/pretrain_gpt.py")
    if not launch.torchrun:
        entry = f"/config/{launch.entry}"
    config_files = {f: f"/config/{f}" for f in launch.files}
    pairs = [
        (flag, config_files.get(val, val) if isinstance(val, str) else val) for flag, val in launch.arg_list
    ]
    args = " ".join(shell_args(pairs))
    gpn = min(v.gpus, v.hw.gpus_per_node)
    assert DNS_1035.fullmatch(name), name
    env = ""
    own = {k for k, _, _ in launch.env}  # the framework's own needs win over the fabric's defaults
    if st.collectives in ("nccl", "rccl"):
        env = (
            "export "
            + " ".join(
                f"{k}={shell_word(val)}"
                for k, val, _ in nccl_env(v.fabric_kind, v.rails, v.hw.vendor)
                if k not in own
            )
            + "\n"
        )
    for k, value, _ in launch.env:
        env += f"unset {k}\n" if value is None else f"export {k}={shell_word(value)}\n"
    script = (
        f"{env}"
        'mkdir -p "$CKPT_DIR"\n'
        f"exec torchrun --nnodes={v.nodes} --nproc-per-node={gpn} --node-rank=$JOB_COMPLETION_INDEX "
        f"--rdzv-id={name} --rdzv-backend=static --master-addr={name}-workers-0-0.{name} --master-port={RDZV_PORT} "
        f"{entry} {args}\n"
    )  # fmt: skip
    return script, launch.files


def grace_s(v: TrainingView) -> int:
    """Seconds between SIGTERM (preemption, eviction, a drain) and SIGKILL: the plan's
    checkpoint write, two steps (the one in flight and the save's barrier) and a minute."""
    return math.ceil(checkpoint_write_s(v) + 2 * v.step_time_s + 60)


def _volume_size(n_bytes: float, margin: float) -> str:
    return gib(max(MIN_VOLUME_BYTES, n_bytes * (1.0 + margin)))


def volume_claims(v: TrainingView, name: str) -> list[dict[str, Any]]:
    """The checkpoint and data PVCs, sized from the plan's storage with its safety margin."""
    sizes = {
        f"{name}-checkpoints": _volume_size(v.checkpoints_bytes, v.safety_margin),
        f"{name}-data": _volume_size(v.dataset_bytes, v.safety_margin),
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta(claim, v.header),
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}},
        }
        for claim, size in sizes.items()
    ]


def _container(v: TrainingView, st: Stack, image: str, script: str, name: str) -> dict[str, Any]:
    gpn = min(v.gpus, v.hw.gpus_per_node)
    extra: dict[str, int] = {}
    c: dict[str, Any] = {
        "name": "trainer",
        "image": image,
        "command": ["/bin/bash", "-c"],
        "args": [script],
        "env": [
            {"name": "CKPT_DIR", "value": f"{CKPT_MOUNT}/{name}"},
            {"name": "DATA_PATH", "value": DATA_MOUNT},
            {"name": TOKENIZER_VAR, "value": f"{DATA_MOUNT}/tokenizer"},
        ],
        "ports": [{"containerPort": RDZV_PORT}],
    }
    if v.fabric_kind is not None:  # RDMA fabric planned: the device and the right to pin memory
        r = rdma()
        extra[r.resource] = r.per_pod
        c["securityContext"] = {"capabilities": {"add": [r.capability]}}
    c["resources"] = pod_requests(
        gpn, v.cpu_cores_need_per_gpu * gpn, v.host_memory_need_bytes_per_gpu * gpn, st.resource, extra
    )
    c["volumeMounts"] = [
        shm()[1],
        {"name": "config", "mountPath": "/config"},
        {"name": "checkpoints", "mountPath": CKPT_MOUNT},
        {"name": "data", "mountPath": DATA_MOUNT, "readOnly": True},
    ]
    return c  # fmt: skip


def _jobset(
    v: TrainingView,
    name: str,
    queue: str,
    container: dict[str, Any],
    selector: dict[str, str],
    restarts: int,
    place: Placement | None = None,
) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [
            shm()[0],
            {"name": "config", "configMap": {"name": f"{name}-config"}},
            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": f"{name}-checkpoints"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data", "readOnly": True}},
        ],
    }
    if selector:
        pod_spec["nodeSelector"] = selector
    pod_spec["terminationGracePeriodSeconds"] = grace_s(v)
    pod_template: dict[str, Any] = {"spec": pod_spec}
    if place:
        annotate(pod_template, place, v.nodes)
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {**meta(name, v.header), "labels": {"app.kubernetes.io/part-of": name, "kueue.x-k8s.io/queue-name": queue}},
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
                            "template": pod_template,
                        }
                    },
                }
            ],
        },
    }  # fmt: skip


def pod_quotas(container: dict[str, Any], pods: int) -> dict[str, Any]:
    """Kueue nominal quota = what `pods` such pods request, resource by resource (CPU and
    memory quantities are whole numbers and whole GiB as written by `pod_requests`)."""
    out: dict[str, Any] = {}
    for res, q in container["resources"]["requests"].items():
        if res == "memory":
            out[res] = f"{int(str(q).removesuffix('Gi')) * pods}Gi"
        elif res == "cpu":
            out[res] = str(int(q) * pods)
        else:
            out[res] = int(q) * pods
    return out


def kueue_file(
    v: TrainingView,
    queue: str,
    quotas: dict[str, Any],
    selector: dict[str, str],
    place: Placement | None = None,
) -> str:
    flavor = k8s_name(v.hw.accelerator, what="accelerator")
    topology = f"{flavor}-topology" if place else None
    # Kueue refuses a topology-aware flavor without node labels (ResourceFlavor CEL rule "at
    # least one nodeLabel is required when topology is set"): with no instance type to
    # select, it selects the GPU nodes by the label the NVIDIA GPU Operator puts on each
    # (the operator whose DRA driver sets the clique label the Topology uses).
    labels = selector or (dict([GPU_NODE_LABEL]) if topology else {})
    docs = queue_objects(v.header, queue, flavor, labels, quotas, topology)
    if topology and place:
        docs.insert(0, topology_object(v.header, topology, levels(place)))
    where = ", ".join(f"{k}={val}" for k, val in labels.items()) or (
        "any node (no cloud instance was priced: add nodeLabels your nodes carry)"
    )
    head = comment_block(
        v.header,
        "Kueue quota for this job",
        [
            "nominal quota = every resource the pods request: "
            + ", ".join(f"{q} {k}" for k, q in quotas.items()),
            f"flavor {flavor} selects {where}",
            *([describe(place, v.nodes)] if place else []),
        ],
    )
    return head + dump_yaml_all(docs)


def training_files(
    v: TrainingView, framework: str = "auto", node_labels: dict[str, str] | None = None
) -> dict[str, str]:
    st, image = training_stack(v.hw)
    interruptions = v.run_s / v.mtbf_s if v.mtbf_s else 0.0
    restarts = max(3, math.ceil(2 * interruptions))
    if image.engine == "maxtext":  # TPU: JAX + MaxText over GKE slices, not torchrun
        from rightsize.export.k8s_maxtext import tpu_training_files

        return tpu_training_files(v, st, image, restarts, node_labels)
    name = object_name(v.header)
    script, files = _torchrun_script(v, framework, name, st, image)
    container = _container(v, st, image.image, script, name)
    selector = node_selector(v.hw, v.priced_instance, node_labels)
    queue = f"{name}-queue"
    place = placement(v)
    jobset = _jobset(v, name, queue, container, selector, restarts, place)
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(f"{name}-config", v.header),
        "data": files,
    }
    gpn = min(v.gpus, v.hw.gpus_per_node)
    claims = volume_claims(v, name)
    head = comment_block(
        v.header,
        f"Kubernetes training manifests (JobSet v0.13, Kueue v1beta1, {launch_for(v, framework).version})",
        [
            f"{v.gpus} x {v.hw.accelerator} as {v.nodes} pods of {gpn} {st.resource}; TP{v.tp} PP{v.pp} DP{v.dp} CP{v.cp} EP{v.ep}",
            f"image {image.image} ({image.source})",
            f"restarts allowed: {restarts} (2 x the {interruptions:.1f} interruptions expected over the run, at least 3)",
            "volumes (ReadWriteMany; the cluster's default class unless you set storageClassName): "
            + ", ".join(f"{c['metadata']['name']} {c['spec']['resources']['requests']['storage']}" for c in claims)
            + f"; CKPT_DIR={CKPT_MOUNT}/{name}, DATA_PATH={DATA_MOUNT} (put the preprocessed data there), "
            f"{TOKENIZER_VAR}={DATA_MOUNT}/tokenizer (the model's Hugging Face tokenizer folder)",
            f"stopping: torchrun runs as the container's process 1 (exec) and gets SIGTERM first; the pods have "
            f"{grace_s(v)} s before SIGKILL (the plan's checkpoint write, two steps, a minute); torchrun gives its "
            "workers 30 s after forwarding it, so a framework without a stop handler loses at most one checkpoint interval",
            (f"{v.fabric_kind} fabric: each pod requests {rdma().resource} and IPC_LOCK" if v.fabric_kind
             else "one node: no RDMA device, NCCL_IB_DISABLE=1"),
            *([describe(place, v.nodes)] if place else []),
        ],
    )  # fmt: skip
    return {
        "training.yaml": dump(head, [config, jobset, *claims]),
        "kueue.yaml": kueue_file(v, queue, pod_quotas(container, v.nodes), selector, place),
    }
