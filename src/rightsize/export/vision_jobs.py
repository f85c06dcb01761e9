"""Slurm and Kubernetes jobs for a vision training plan: torchvision's classification reference
(`export.fw_vision`) on the plan's GPUs, one process per GPU, its DataLoader workers on the
plan's decode cores, in the shape every single-trainer export shares (`export.single_trainer`);
this module supplies the trainer and its resume launcher, notes, set-up, arguments, checkpoint
and data volumes, and the requeued segments (the trainer resumes from its last epoch).

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

from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.export import fw_vision, single_trainer
from rightsize.export.k8s_common import object_name
from rightsize.export.names import Arg, ShellExpr, shell_args
from rightsize.export.shell_words import arg_words, safe_token, word
from rightsize.export.slurm import _fit_node
from rightsize.export.slurm_segments import MIN_LEAD_S, SEGMENT_MAX_S, time_limit
from rightsize.export.vision_view import VisionTrainingView

CKPT_MOUNT = "/checkpoints"
VISION_MOUNT = "/opt/vision"
FETCH_FILE = "fetch_vision.py"
STACKS = {
    "amd": "the ROCm build of PyTorch and torchvision (a rocm/pytorch image), amd.com/gpu and RCCL",
    "google": "JAX or PyTorch/XLA on TPU VMs (google.com/tpu), not CUDA",
    "aws": "the Neuron SDK (torch-neuronx) and aws.amazon.com/neuron",
    "intel": "Habana's PyTorch (SynapseAI) and habana.ai/gaudi",
}


def _check(v: VisionTrainingView, target: str) -> int:
    """GPUs per node, after refusing a part this export has no stack for."""
    single_trainer.require_nvidia(
        v,
        f"The plan trains on {v.hw.accelerator} ({v.hw.vendor}); the {target} vision export writes "
        "CUDA jobs for NVIDIA GPUs only.",
        f"{v.hw.accelerator} needs {STACKS.get(v.hw.vendor, 'its vendor stack')}; no image of it is pinned here.",
        "Plan for NVIDIA GPUs, or run the reference with the vendor's stack and the plan's figures.",
    )
    return single_trainer.gpus_per_node(v)


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
    notes = [
        single_trainer.chosen(v, fw_vision.VERSION),
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
    ]  # fmt: skip
    setup = [
        single_trainer.require_data("the ImageFolder root (train/ and val/ inside)"),
        f"CKPT_NAME={word(safe_token(v.header.name))}",
        'export CKPT_DIR="${CKPT_DIR:-$PWD/checkpoints/$CKPT_NAME}"',
        'mkdir -p "$CKPT_DIR"',
        *single_trainer.require_checkout(
            fw_vision.VISION_DIR_VAR,
            fw_vision.TV_REPOSITORY,
            f"tag v{fw_vision.TV_VERSION}",
            fw_vision.TRAIN_SCRIPT,
        ),
    ]
    launch = ["python", f'"$SLURM_SUBMIT_DIR/{fw_vision.RESUME_FILE}"', f'"{tv}/{fw_vision.TRAIN_SCRIPT}"',
              *arg_words(shell_args(args))]  # fmt: skip
    job = single_trainer.SlurmJob(
        "Slurm vision training job", notes, gpn, cpus, limit, setup, launch, requeue_lead_s=lead
    )
    return {"train.sbatch": single_trainer.sbatch(v, job), fw_vision.RESUME_FILE: fw_vision.resume_script()}


def grace_s(v: VisionTrainingView) -> int:
    """SIGTERM to SIGKILL: the plan's checkpoint write, two steps and a minute."""
    return math.ceil(v.checkpoint_write_s + 2 * v.step_time_s + 60)


def checkpoint_volume_bytes(v: VisionTrainingView) -> float:
    """train.py keeps every epoch's model_N.pth and checkpoint.pth: epochs + 1 checkpoints of
    the plan's size (the plan's own retained count when that is larger)."""
    return max(v.checkpoints_bytes, v.checkpoint_bytes * (round(v.epochs) + 1))


def training_files(v: VisionTrainingView, node_labels: dict[str, str] | None = None) -> dict[str, str]:
    """The Kubernetes files of a vision training plan: a JobSet of torchrun pods, the reference
    script fetched by a ConfigMap, checkpoint and data volumes, and the Kueue quota."""
    gpn = _check(v, "kubernetes")
    name = object_name(v.header)
    url = f"{fw_vision.TV_REPOSITORY}/archive/refs/tags/v{fw_vision.TV_VERSION}.tar.gz"
    claims = [
        single_trainer.Claim("checkpoints", CKPT_MOUNT, checkpoint_volume_bytes(v)),
        single_trainer.Claim("data", single_trainer.DATA_MOUNT, v.dataset_bytes, read_only=True),
    ]
    pod = single_trainer.Pod(
        image=fw_vision.IMAGE,
        code=("vision", VISION_MOUNT),
        setup=[f"python /config/{FETCH_FILE}", 'mkdir -p "$CKPT_DIR"'],
        program=f"/config/{fw_vision.RESUME_FILE} {VISION_MOUNT}/{fw_vision.TRAIN_SCRIPT}",
        args=_args(v),
        env={"CKPT_DIR": f"{CKPT_MOUNT}/{name}", "DATA_PATH": single_trainer.DATA_MOUNT},
        # the plan's CPU need (its decode cores): a request for every core of the node would not fit
        # its allocatable CPUs (the kubelet reserves some); the training process shares them
        cpus_per_gpu=max(v.cpu_cores_need_per_gpu, fw_vision.workers(v)),
        config={FETCH_FILE: single_trainer.fetch_script(url, "references/", VISION_MOUNT,
                                                        f"torchvision's references at tag v{fw_vision.TV_VERSION}"),
                fw_vision.RESUME_FILE: fw_vision.resume_script()},
        claims=claims,
        grace_s=grace_s(v),
    )  # fmt: skip
    title = f"Kubernetes vision training (JobSet v0.13, Kueue v1beta1, {fw_vision.VERSION})"
    return single_trainer.kubernetes_files(v, gpn, pod, title, [
        *fw_vision.notes(v),
        f"at start each pod fetches the reference ({FETCH_FILE}): it needs GitHub",
        "volumes (ReadWriteMany, with the plan's safety margin): " + ", ".join(
            f"{name}-{c.volume} {single_trainer.volume_size(v, c.n_bytes)}" for c in claims)
        + f"; CKPT_DIR={CKPT_MOUNT}/{name}, DATA_PATH={single_trainer.DATA_MOUNT} (put the ImageFolder dataset there)",
        f"stopping: {grace_s(v)} s between SIGTERM and SIGKILL (the plan's checkpoint write, two steps, a minute); "
        "a restart resumes from the last epoch's checkpoint",
    ], node_labels)  # fmt: skip
