"""Slurm and Kubernetes jobs for a vision training plan: torchvision's classification reference
(`export.fw_vision`) on the plan's GPUs, one process per GPU, its DataLoader workers on the
plan's decode cores.

- Slurm (`train.sbatch`, `train_resumable.py`): nodes, GPUs per node, CPUs per task = the
  workers plus the training process (after checking they and the host memory fit the node,
  `--exclusive --mem=0`); one srun task per GPU with RANK / LOCAL_RANK / WORLD_SIZE from Slurm's
  variables (train.py's `init_distributed_mode` reads them); `--time` the planned run with its
  safety margin, start-up and a warning lead, or, when longer than a partition allows, segments
  that requeue themselves (`--signal=B:USR1@lead`, `scontrol requeue`) and resume from the last
  epoch's checkpoint; NCCL settings for the planned fabric.
- Kubernetes (`training.yaml`, `kueue.yaml`): a JobSet of one indexed Job, a pod per node
  running torchrun; checkpoints and data on PersistentVolumeClaims sized from the plan; the
  reference fetched at its tag at start; RDMA and IPC_LOCK for an RDMA fabric; a grace period
  holding the plan's checkpoint write; a Kueue flavor, ClusterQueue and the LocalQueue it names.

NVIDIA GPUs only (the image is CUDA): AMD, TPU, Trainium and Gaudi plans are refused with what
their stack would be.
"""

from __future__ import annotations

import math
import shlex
from typing import Any

from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.export import fw_vision
from rightsize.export.header import comment_block
from rightsize.export.k8s_common import dump, gib, meta, object_name
from rightsize.export.k8s_platform import node_selector, stack
from rightsize.export.k8s_trainer import (
    fabric_note,
    indexed_jobset,
    kueue_file,
    restarts,
    trainer_container,
    trainer_pod,
)
from rightsize.export.names import Arg, ShellExpr, shell_args, shell_word
from rightsize.export.recsys_jobs import MEGATRON_ONLY, fetch_script
from rightsize.export.shell_words import arg_words, command, safe_token, word
from rightsize.export.slurm import _RANK_ENV, RDZV_PORT, _fit_node, _head, _sbatch, nccl_env
from rightsize.export.slurm_segments import MIN_LEAD_S, SEGMENT_MAX_S, time_limit
from rightsize.export.vision_view import VisionTrainingView

DATA_MOUNT = "/data"
CKPT_MOUNT = "/checkpoints"
VISION_MOUNT = "/opt/vision"
FETCH_FILE = "fetch_vision.py"
MIN_VOLUME_BYTES = 2**30
STACKS = {
    "amd": "the ROCm build of PyTorch and torchvision (a rocm/pytorch image), amd.com/gpu and RCCL",
    "google": "JAX or PyTorch/XLA on TPU VMs (google.com/tpu), not CUDA",
    "aws": "the Neuron SDK (torch-neuronx) and aws.amazon.com/neuron",
    "intel": "Habana's PyTorch (SynapseAI) and habana.ai/gaudi",
}


def _check(v: VisionTrainingView, target: str) -> int:
    """GPUs per node, after refusing a part this export has no stack for."""
    if v.hw.vendor != "nvidia":
        raise BadInput(
            f"The plan trains on {v.hw.accelerator} ({v.hw.vendor}); the {target} vision export writes "
            "CUDA jobs for NVIDIA GPUs only.",
            f"{v.hw.accelerator} needs {STACKS.get(v.hw.vendor, 'its vendor stack')}; no image of it is pinned here.",
            "Plan for NVIDIA GPUs, or run the reference with the vendor's stack and the plan's figures.",
        )
    gpn = min(v.gpus, v.hw.gpus_per_node)
    if gpn * v.nodes != v.gpus:
        raise BadInput(
            f"The plan spreads {v.gpus} GPUs over {v.nodes} nodes of {v.hw.gpus_per_node}.",
            "The job asks for the same number of GPUs on every node.",
            "Plan a GPU count that fills whole nodes (a multiple of the GPUs per node).",
        )
    return gpn


def _nccl(v: VisionTrainingView) -> list[tuple[str, str, str]]:
    return [e for e in nccl_env(v.fabric_kind, v.rails, v.hw.vendor) if e[0] not in MEGATRON_ONLY]


def lead_s(v: VisionTrainingView) -> int:
    """USR1 this long before the limit: the checkpoint write, two steps and a minute."""
    return 60 * math.ceil(max(MIN_LEAD_S, v.checkpoint_write_s + 2 * v.step_time_s + 60) / 60)


def segments(v: VisionTrainingView) -> tuple[int, int]:
    """(--time in seconds, segments): one job when the run fits a partition's limit, else
    requeued segments, each long enough for at least one epoch (train.py saves per epoch)."""
    work = v.run_s * (1.0 + v.safety_margin)
    lead = lead_s(v)
    start = 0.0 if v.planned_start_s else fw_vision.STARTUP_S  # the plan's run may hold its own
    if work + start + lead <= SEGMENT_MAX_S:
        return 60 * math.ceil((work + start + lead) / 60), 1
    per = SEGMENT_MAX_S - fw_vision.STARTUP_S - lead
    if v.epoch_s > per:
        raise BadInput(
            f"An epoch takes {v.epoch_s / 3600:.1f} h; a {SEGMENT_MAX_S / 3600:g} h segment trains {per / 3600:.1f} h.",
            "train.py checkpoints at the end of each epoch: a segment that ends before it repeats the same work.",
            "Plan more GPUs (shorter epochs), or allow longer segments (a partition with a longer MaxTime).",
        )
    per_done = per - per % v.epoch_s  # whole epochs per segment
    return SEGMENT_MAX_S, math.ceil(work / per_done)


def _args(v: VisionTrainingView) -> list[Arg]:
    return fw_vision.vision_arg_list(v, ShellExpr("$DATA_PATH"), ShellExpr("$CKPT_DIR"))


def train_sbatch(v: VisionTrainingView) -> dict[str, str]:
    gpn = _check(v, "slurm")
    cpus = _fit_node(v.hw, gpn, fw_vision.workers(v) + 1, v.host_memory_need_bytes_per_gpu)
    args = _args(v)
    limit, parts = segments(v)
    lead = lead_s(v)
    tv = f"${fw_vision.VISION_DIR_VAR}"
    name, head = _head(v.header, "Slurm vision training job", [
        f"chosen: {v.gpus} x {v.hw.accelerator} on {v.nodes} x {v.hw.node}; {fw_vision.VERSION}",
        *fw_vision.notes(v),
        f"host: {cpus} CPUs per GPU ({fw_vision.workers(v)} workers + the training process); memory: the whole "
        f"node (--exclusive --mem=0, {v.hw.host_memory_bytes_per_node / GiB:.0f} GiB), the plan needs "
        f"{v.host_memory_need_bytes_per_gpu * gpn / GiB:.0f} GiB per node",
        f"time: planned {v.run_s / 3600:.2f} h (start-up {v.planned_start_s:.0f} s of it) + {v.safety_margin:.0%} "
        f"safety margin{'' if v.planned_start_s else f', start-up {fw_vision.STARTUP_S} s'} "
        f"and a {lead} s warning, as {parts} segment(s) of at most {time_limit(limit)}; at the warning a segment "
        "requeues the job, which resumes from the last epoch's checkpoint",
        f"before submitting: git clone --branch v{fw_vision.TV_VERSION} --depth 1 {fw_vision.TV_REPOSITORY}; export "
        f"{fw_vision.VISION_DIR_VAR}=$PWD/vision DATA_PATH=/path/to/imagenet; keep {fw_vision.RESUME_FILE} beside this file",
    ])  # fmt: skip
    opts = [("job-name", name), ("nodes", str(v.nodes)), ("ntasks-per-node", str(gpn)),
            ("gpus-per-node", str(gpn)), ("cpus-per-task", str(cpus)), ("mem", "0"), ("exclusive", ""),
            ("time", time_limit(limit)), ("requeue", ""), ("signal", f"B:USR1@{lead}"),
            ("open-mode", "append"), ("output", "%x-%j.out")]  # fmt: skip
    launch = ["python", f'"$SLURM_SUBMIT_DIR/{fw_vision.RESUME_FILE}"', f'"{tv}/{fw_vision.TRAIN_SCRIPT}"',
              *arg_words(shell_args(args))]  # fmt: skip
    lines = [
        "#!/bin/bash",
        *_sbatch(opts),
        *head,
        "set -euo pipefail",
        'cd "${SLURM_SUBMIT_DIR:-.}"',
        "",
        'export DATA_PATH="${DATA_PATH:?set DATA_PATH to the ImageFolder root (train/ and val/ inside)}"',
        f"CKPT_NAME={word(safe_token(v.header.name))}",
        'export CKPT_DIR="${CKPT_DIR:-$PWD/checkpoints/$CKPT_NAME}"',
        'mkdir -p "$CKPT_DIR"',
        f': "${{{fw_vision.VISION_DIR_VAR}:?set {fw_vision.VISION_DIR_VAR} to a checkout of '
        f'{fw_vision.TV_REPOSITORY} at tag v{fw_vision.TV_VERSION}}}"',
        f'test -f "{tv}/{fw_vision.TRAIN_SCRIPT}" || '
        f'{{ echo "no {fw_vision.TRAIN_SCRIPT} in {fw_vision.VISION_DIR_VAR}={tv}" >&2; exit 2; }}',
        "",
        "# Rendezvous: the first host of the allocation.",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"MASTER_PORT=${{MASTER_PORT:-{RDZV_PORT}}}",
        "export MASTER_ADDR MASTER_PORT",
        *[f"export {k}={word(val)}  # {why}" for k, val, why in _nccl(v)],
        "",
        "# Near the time limit: requeue; the next segment resumes from the last epoch's checkpoint.",
        'trap \'echo "time limit near: requeue" >&2; scontrol requeue "$SLURM_JOB_ID"\' USR1',
        f"srun --kill-on-bad-exit=1 --ntasks-per-node={gpn} --cpus-per-task={cpus} \\",
        f"    bash -c {shlex.quote(_RANK_ENV)} rank \\",
        *["    " + line for line in command(launch)[:-1]],
        "    " + command(launch)[-1] + " &",
        "SRUN_PID=$!",
        "set +e",
        'wait "$SRUN_PID"; RC=$?',
        'while [ "$RC" -gt 128 ] && kill -0 "$SRUN_PID" 2>/dev/null; do wait "$SRUN_PID"; RC=$?; done',
        'exit "$RC"',
    ]  # fmt: skip
    return {"train.sbatch": "\n".join(lines) + "\n", fw_vision.RESUME_FILE: fw_vision.resume_script()}


def grace_s(v: VisionTrainingView) -> int:
    """SIGTERM to SIGKILL: the plan's checkpoint write, two steps and a minute."""
    return math.ceil(v.checkpoint_write_s + 2 * v.step_time_s + 60)


def checkpoint_volume_bytes(v: VisionTrainingView) -> float:
    """train.py keeps every epoch's model_N.pth and checkpoint.pth: epochs + 1 checkpoints of
    the plan's size (the plan's own retained count when that is larger)."""
    return max(v.checkpoints_bytes, v.checkpoint_bytes * (round(v.epochs) + 1))


def _volume(name: str, v: VisionTrainingView, n_bytes: float) -> dict[str, Any]:
    size = gib(max(MIN_VOLUME_BYTES, n_bytes * (1.0 + v.safety_margin)))
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(name, v.header),
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}}}  # fmt: skip


def training_files(v: VisionTrainingView, node_labels: dict[str, str] | None = None) -> dict[str, str]:
    """The Kubernetes files of a vision training plan: a JobSet of torchrun pods, the reference
    script fetched by a ConfigMap, checkpoint and data volumes, and the Kueue quota.

    Longer than 80 lines for one reason: the JobSet, its pod, the ConfigMap, the volume claims
    and their header comments are one document whose fields refer to each other by name.
    """
    gpn = _check(v, "kubernetes")
    name = object_name(v.header)
    args = _args(v)
    env = " ".join(f"{k}={shell_word(val)}" for k, val, _ in _nccl(v))
    script = (
        "set -euo pipefail\n"
        f"python /config/{FETCH_FILE}\n"
        'mkdir -p "$CKPT_DIR"\n'
        f"export {env}\n"
        f"exec torchrun --nnodes={v.nodes} --nproc-per-node={gpn} --node-rank=$JOB_COMPLETION_INDEX "
        f"--rdzv-id={name} --rdzv-backend=static --master-addr={name}-workers-0-0.{name} --master-port={RDZV_PORT} "
        f"/config/{fw_vision.RESUME_FILE} {VISION_MOUNT}/{fw_vision.TRAIN_SCRIPT} {' '.join(shell_args(args))}\n"
    )  # fmt: skip
    # the plan's CPU need (its decode cores): a request for every core of the node would not fit
    # its allocatable CPUs (the kubelet reserves some); the training process shares them
    cpus = max(v.cpu_cores_need_per_gpu, fw_vision.workers(v)) * gpn
    requests = (gpn, cpus, v.host_memory_need_bytes_per_gpu * gpn, stack(v.hw).resource)
    pod_env = {"CKPT_DIR": f"{CKPT_MOUNT}/{name}", "DATA_PATH": DATA_MOUNT}
    mounts: list[dict[str, Any]] = [{"name": "config", "mountPath": "/config"}, {"name": "vision", "mountPath": VISION_MOUNT},
              {"name": "checkpoints", "mountPath": CKPT_MOUNT},
              {"name": "data", "mountPath": DATA_MOUNT, "readOnly": True}]  # fmt: skip
    c = trainer_container(fw_vision.IMAGE, script, pod_env, requests, v.fabric_kind is not None, mounts)
    volumes: list[dict[str, Any]] = [{"name": "config", "configMap": {"name": f"{name}-config"}}, {"name": "vision", "emptyDir": {}},
               {"name": "checkpoints", "persistentVolumeClaim": {"claimName": f"{name}-checkpoints"}},
               {"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data", "readOnly": True}}]  # fmt: skip
    selector = node_selector(v.hw, v.priced_instance, node_labels)
    queue = f"{name}-queue"
    jobset = indexed_jobset(
        v.header,
        name,
        queue,
        v.nodes,
        restarts(v.run_s, v.mtbf_s),
        trainer_pod(c, volumes, selector, grace_s(v)),
    )
    url = f"{fw_vision.TV_REPOSITORY}/archive/refs/tags/v{fw_vision.TV_VERSION}.tar.gz"
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{name}-config", v.header),
              "data": {FETCH_FILE: fetch_script(url, "references/", VISION_MOUNT,
                                                f"torchvision's references at tag v{fw_vision.TV_VERSION}"),
                       fw_vision.RESUME_FILE: fw_vision.resume_script()}}  # fmt: skip
    claims = [
        _volume(f"{name}-checkpoints", v, checkpoint_volume_bytes(v)),
        _volume(f"{name}-data", v, v.dataset_bytes),
    ]
    head = comment_block(v.header, f"Kubernetes vision training (JobSet v0.13, Kueue v1beta1, {fw_vision.VERSION})", [
        f"{v.gpus} x {v.hw.accelerator} as {v.nodes} pods of {gpn} GPUs, torchrun in each", *fw_vision.notes(v),
        f"at start each pod fetches the reference ({FETCH_FILE}): it needs GitHub",
        "volumes (ReadWriteMany, with the plan's safety margin): " + ", ".join(
            f"{x['metadata']['name']} {x['spec']['resources']['requests']['storage']}" for x in claims)
        + f"; CKPT_DIR={CKPT_MOUNT}/{name}, DATA_PATH={DATA_MOUNT} (put the ImageFolder dataset there)",
        f"stopping: {grace_s(v)} s between SIGTERM and SIGKILL (the plan's checkpoint write, two steps, a minute); "
        "a restart resumes from the last epoch's checkpoint",
        fabric_note(v.fabric_kind),
    ])  # fmt: skip
    kueue = kueue_file(v.header, queue, v.hw.accelerator, selector, c, v.nodes)
    return {"training.yaml": dump(head, [config, jobset, *claims]), "kueue.yaml": kueue}
