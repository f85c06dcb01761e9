"""Slurm and Kubernetes jobs for a recommendation training plan: TorchRec's DLRM trainer
(`export.fw_recsys`) on the plan's GPUs, one process per GPU, in the shape every single-trainer
export shares (`export.single_trainer`); this module supplies the trainer, its notes, set-up,
arguments and data volume, and the one-job time limit (the trainer cannot resume).

- Slurm (`train.sbatch`): nodes, GPUs per node, CPUs per task from the plan's host needs (the
  whole node's memory, `--exclusive --mem=0`, after checking the needs fit it); one srun task
  per GPU with RANK / LOCAL_RANK / WORLD_SIZE / LOCAL_WORLD_SIZE from Slurm's own variables
  (dlrm_main.py reads LOCAL_RANK, TorchRec's planner LOCAL_WORLD_SIZE); `--time` the planned
  run with its safety margin and start-up, within one partition limit (the trainer cannot
  resume, so the run is not split); NCCL settings for the planned fabric.
- Kubernetes (`training.yaml`, `kueue.yaml`): a JobSet of one indexed Job, a pod per node
  running torchrun; the data on a PersistentVolumeClaim sized from the plan; the trainer
  fetched at its pinned commit and its packages installed at start; RDMA device and IPC_LOCK
  when the fabric is RDMA; a Kueue flavor, ClusterQueue (every resource the pods request) and
  the LocalQueue the JobSet names.

NVIDIA GPUs only: FBGEMM's ROCm builds are experimental and no ROCm image is pinned, and
TPU, Trainium and Gaudi have no TorchRec; those plans are refused with the reason (no NVIDIA
resource, CUDA image or NCCL setting is ever written for them).
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.export import fw_recsys, single_trainer
from rightsize.export.k8s_common import object_name
from rightsize.export.names import ShellExpr, shell_args, shell_word
from rightsize.export.recsys_view import RecsysTrainingView
from rightsize.export.shell_words import arg_words, word
from rightsize.export.slurm import _fit_node
from rightsize.export.slurm_segments import SEGMENT_MAX_S, time_limit

DLRM_MOUNT = "/opt/dlrm"
FETCH_FILE = "fetch_dlrm.py"
WHY_NOT = {
    "amd": "FBGEMM-GPU's ROCm builds are experimental (FBGEMM release table: ROCm 6.1-6.3 for 1.2.0) and no "
    "ROCm image with TorchRec is pinned here",
    "google": "TorchRec and FBGEMM run on CUDA (and experimentally ROCm); a TPU trains recommendation models "
    "with JAX/TensorFlow embedding stacks (TPU embedding API), which this export does not write",
    "aws": "TorchRec's FBGEMM kernels have no Neuron (Trainium) build",
    "intel": "TorchRec's FBGEMM kernels have no Gaudi build",
}


def _check_vendor(v: RecsysTrainingView, target: str) -> None:
    """NVIDIA only: the reason for every other part names what it would need."""
    single_trainer.require_nvidia(
        v,
        f"The plan trains DLRM on {v.hw.accelerator} ({v.hw.vendor}); the {target} recommendation export "
        "writes TorchRec jobs for NVIDIA GPUs only.",
        WHY_NOT.get(v.hw.vendor, f"TorchRec's FBGEMM kernels have no {v.hw.vendor} build") + ".",
        "Plan for NVIDIA GPUs, or run the vendor's own recommendation stack with the plan's figures.",
    )


def _start_s(v: RecsysTrainingView) -> float:
    """Start-up to add to the plan's run: none when the plan has its own "job start" line."""
    return 0.0 if v.planned_start_s else fw_recsys.STARTUP_S


def _limit_s(v: RecsysTrainingView) -> int:
    """The job's time: the planned run with its safety margin, plus start-up."""
    limit = math.ceil(v.run_s * (1.0 + v.safety_margin) + _start_s(v))
    if limit > SEGMENT_MAX_S:
        raise BadInput(
            f"The planned run needs {limit / 3600:.1f} h; a partition allows {SEGMENT_MAX_S / 3600:g} h.",
            "dlrm_main.py cannot resume from a checkpoint, so the run cannot be split into requeued segments.",
            "Plan more GPUs (a shorter run), or fewer samples or epochs per job.",
        )
    return limit


def _common(v: RecsysTrainingView, target: str) -> tuple[int, int, list[tuple[str, Any]], list[str]]:
    _check_vendor(v, target)
    gpn = single_trainer.gpus_per_node(v)
    cpus = _fit_node(v.hw, gpn, v.cpu_cores_need_per_gpu, v.host_memory_need_bytes_per_gpu)
    args = fw_recsys.dlrm_arg_list(v, ShellExpr("$DATA_PATH"))
    return gpn, cpus, args, [single_trainer.chosen(v, fw_recsys.VERSION), *fw_recsys.notes(v)]


def train_sbatch(v: RecsysTrainingView) -> dict[str, str]:
    gpn, cpus, args, notes = _common(v, "slurm")
    limit = _limit_s(v)
    dlrm = f"${fw_recsys.DLRM_DIR_VAR}"
    missing = f"install them: {' '.join(fw_recsys.PIP_COMMAND)}"
    notes += [
        f"host: {cpus} CPU(s) per GPU; memory: the whole node (--exclusive --mem=0, "
        f"{v.hw.host_memory_bytes_per_node / GiB:.0f} GiB), the plan needs "
        f"{v.host_memory_need_bytes_per_gpu * gpn / GiB:.0f} GiB per node",
        f"time: planned {v.run_s / 3600:.2f} h + {v.safety_margin:.0%} safety margin + "
        f"{_start_s(v):.0f} s start-up (beyond the plan's own {v.planned_start_s:.0f} s) = {time_limit(limit)} (one job: the trainer cannot resume; a "
        "requeue after preemption starts over)",
        f"before submitting: git clone {fw_recsys.DLRM_REPOSITORY} && git -C dlrm checkout "
        f"{fw_recsys.DLRM_COMMIT}; export {fw_recsys.DLRM_DIR_VAR}=$PWD/dlrm DATA_PATH=/path/to/multi-hot",
    ]  # fmt: skip
    setup = [
        single_trainer.require_data("the MLPerf v2 materialized multi-hot Criteo dataset"),
        *single_trainer.require_checkout(
            fw_recsys.DLRM_DIR_VAR,
            fw_recsys.DLRM_REPOSITORY,
            f"commit {fw_recsys.DLRM_COMMIT}",
            fw_recsys.DLRM_SCRIPT,
        ),
        f"python -c 'import torchrec, fbgemm_gpu' || {{ echo {word('TorchRec is missing: ' + missing)} >&2; exit 2; }}",
    ]
    launch = ["python", f'"{dlrm}/{fw_recsys.DLRM_SCRIPT}"', *arg_words(shell_args(args))]
    job = single_trainer.SlurmJob("Slurm recommendation training job", notes, gpn, cpus, limit, setup, launch)
    return {"train.sbatch": single_trainer.sbatch(v, job)}


def dlrm_fetch_script() -> str:
    url = f"{fw_recsys.DLRM_REPOSITORY}/archive/{fw_recsys.DLRM_COMMIT}.tar.gz"
    what = f"{fw_recsys.DLRM_SCRIPT} and its folder at commit {fw_recsys.DLRM_COMMIT}"
    return single_trainer.fetch_script(url, "torchrec_dlrm/", DLRM_MOUNT, what)


def training_files(v: RecsysTrainingView, node_labels: dict[str, str] | None = None) -> dict[str, str]:
    gpn, _, args, notes = _common(v, "kubernetes")
    data = single_trainer.Claim("data", single_trainer.DATA_MOUNT, v.dataset_bytes, read_only=True)
    pod = single_trainer.Pod(
        image=fw_recsys.PYTORCH_IMAGE,
        code=("dlrm", DLRM_MOUNT),
        setup=[" ".join(shell_word(p) for p in fw_recsys.PIP_COMMAND), f"python /config/{FETCH_FILE}"],
        program=f"{DLRM_MOUNT}/{fw_recsys.DLRM_SCRIPT}",
        args=args,
        env={"DATA_PATH": single_trainer.DATA_MOUNT},
        cpus_per_gpu=v.cpu_cores_need_per_gpu,
        config={FETCH_FILE: dlrm_fetch_script()},
        claims=[data],
    )
    name = object_name(v.header)
    title = f"Kubernetes recommendation training (JobSet v0.13, Kueue v1beta1, {fw_recsys.VERSION})"
    return single_trainer.kubernetes_files(v, gpn, pod, title, [
        *notes,
        f"at start each pod installs the packages and fetches the trainer ({FETCH_FILE}): it needs PyPI and GitHub",
        f"data: claim {name}-data {single_trainer.volume_size(v, data.n_bytes)} (ReadWriteMany, with the plan's "
        f"safety margin; put the dataset there) mounted at DATA_PATH={single_trainer.DATA_MOUNT}; no checkpoint volume (the trainer writes none)",
    ], node_labels)  # fmt: skip
