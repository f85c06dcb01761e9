"""Slurm and Kubernetes jobs for a recommendation training plan: TorchRec's DLRM trainer
(`export.fw_recsys`) on the plan's GPUs, one process per GPU.

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
import shlex
from typing import Any

from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.export import fw_recsys
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
from rightsize.export.names import ShellExpr, python_literal, shell_args, shell_word
from rightsize.export.recsys_view import RecsysTrainingView
from rightsize.export.shell_words import arg_words, command, word
from rightsize.export.slurm import _RANK_ENV, RDZV_PORT, _fit_node, _head, _sbatch, nccl_env
from rightsize.export.slurm_segments import SEGMENT_MAX_S, time_limit

DATA_MOUNT = "/data"
DLRM_MOUNT = "/opt/dlrm"
FETCH_FILE = "fetch_dlrm.py"
MIN_VOLUME_BYTES = 2**30
MEGATRON_ONLY = {"CUDA_DEVICE_MAX_CONNECTIONS"}  # nccl_env's setting for Megatron's TP overlap


def _nccl(v: RecsysTrainingView) -> list[tuple[str, str, str]]:
    return [e for e in nccl_env(v.fabric_kind, v.rails, v.hw.vendor) if e[0] not in MEGATRON_ONLY]


def _check_vendor(v: RecsysTrainingView, target: str) -> None:
    """NVIDIA only: the reason for every other part names what it would need."""
    if v.hw.vendor == "nvidia":
        return
    why = {
        "amd": "FBGEMM-GPU's ROCm builds are experimental (FBGEMM release table: ROCm 6.1-6.3 for 1.2.0) and no "
        "ROCm image with TorchRec is pinned here",
        "google": "TorchRec and FBGEMM run on CUDA (and experimentally ROCm); a TPU trains recommendation models "
        "with JAX/TensorFlow embedding stacks (TPU embedding API), which this export does not write",
        "aws": "TorchRec's FBGEMM kernels have no Neuron (Trainium) build",
        "intel": "TorchRec's FBGEMM kernels have no Gaudi build",
    }.get(v.hw.vendor, f"TorchRec's FBGEMM kernels have no {v.hw.vendor} build")
    raise BadInput(
        f"The plan trains DLRM on {v.hw.accelerator} ({v.hw.vendor}); the {target} recommendation export "
        "writes TorchRec jobs for NVIDIA GPUs only.",
        why + ".",
        "Plan for NVIDIA GPUs, or run the vendor's own recommendation stack with the plan's figures.",
    )


def _gpus_per_node(v: RecsysTrainingView) -> int:
    gpn = min(v.gpus, v.hw.gpus_per_node)
    if gpn * v.nodes != v.gpus:
        raise BadInput(
            f"The plan spreads {v.gpus} GPUs over {v.nodes} nodes of {v.hw.gpus_per_node}.",
            "The job asks for the same number of GPUs on every node.",
            "Plan a GPU count that fills whole nodes (a multiple of the GPUs per node).",
        )
    return gpn


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
    gpn = _gpus_per_node(v)
    cpus = _fit_node(v.hw, gpn, v.cpu_cores_need_per_gpu, v.host_memory_need_bytes_per_gpu)
    args = fw_recsys.dlrm_arg_list(v, ShellExpr("$DATA_PATH"))
    head = [
        f"chosen: {v.gpus} x {v.hw.accelerator} on {v.nodes} x {v.hw.node}; {fw_recsys.VERSION}",
        *fw_recsys.notes(v),
    ]
    return gpn, cpus, args, head


def train_sbatch(v: RecsysTrainingView) -> dict[str, str]:
    gpn, cpus, args, notes = _common(v, "slurm")
    limit = _limit_s(v)
    dlrm = f"${fw_recsys.DLRM_DIR_VAR}"
    name, head = _head(v.header, "Slurm recommendation training job", [
        *notes,
        f"host: {cpus} CPU(s) per GPU; memory: the whole node (--exclusive --mem=0, "
        f"{v.hw.host_memory_bytes_per_node / GiB:.0f} GiB), the plan needs "
        f"{v.host_memory_need_bytes_per_gpu * gpn / GiB:.0f} GiB per node",
        f"time: planned {v.run_s / 3600:.2f} h + {v.safety_margin:.0%} safety margin + "
        f"{_start_s(v):.0f} s start-up (beyond the plan's own {v.planned_start_s:.0f} s) = {time_limit(limit)} (one job: the trainer cannot resume; a "
        "requeue after preemption starts over)",
        f"before submitting: git clone {fw_recsys.DLRM_REPOSITORY} && git -C dlrm checkout "
        f"{fw_recsys.DLRM_COMMIT}; export {fw_recsys.DLRM_DIR_VAR}=$PWD/dlrm DATA_PATH=/path/to/multi-hot",
    ])  # fmt: skip
    opts = [("job-name", name), ("nodes", str(v.nodes)), ("ntasks-per-node", str(gpn)),
            ("gpus-per-node", str(gpn)), ("cpus-per-task", str(cpus)), ("mem", "0"), ("exclusive", ""),
            ("time", time_limit(limit)), ("requeue", ""), ("output", "%x-%j.out")]  # fmt: skip
    missing = f"install them: {' '.join(fw_recsys.PIP_COMMAND)}"
    lines = [
        "#!/bin/bash",
        *_sbatch(opts),
        *head,
        "set -euo pipefail",
        'cd "${SLURM_SUBMIT_DIR:-.}"',
        "",
        'export DATA_PATH="${DATA_PATH:?set DATA_PATH to the MLPerf v2 materialized multi-hot Criteo dataset}"',
        f': "${{{fw_recsys.DLRM_DIR_VAR}:?set {fw_recsys.DLRM_DIR_VAR} to a checkout of '
        f'{fw_recsys.DLRM_REPOSITORY} at commit {fw_recsys.DLRM_COMMIT}}}"',
        f'test -f "{dlrm}/{fw_recsys.DLRM_SCRIPT}" || '
        f'{{ echo "no {fw_recsys.DLRM_SCRIPT} in {fw_recsys.DLRM_DIR_VAR}={dlrm}" >&2; exit 2; }}',
        f"python -c 'import torchrec, fbgemm_gpu' || {{ echo {word('TorchRec is missing: ' + missing)} >&2; exit 2; }}",
        "",
        "# Rendezvous: the first host of the allocation.",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"MASTER_PORT=${{MASTER_PORT:-{RDZV_PORT}}}",
        "export MASTER_ADDR MASTER_PORT",
        *[f"export {k}={word(val)}  # {why}" for k, val, why in _nccl(v)],
        "",
        f"srun --kill-on-bad-exit=1 --ntasks-per-node={gpn} --cpus-per-task={cpus} \\",
        f"    bash -c {shlex.quote(_RANK_ENV)} rank \\",
        *["    " + line for line in command(["python", f'"{dlrm}/{fw_recsys.DLRM_SCRIPT}"',
                                             *arg_words(shell_args(args))])],
    ]  # fmt: skip
    return {"train.sbatch": "\n".join(lines) + "\n"}


def fetch_script(url: str, keep: str, dest: str, what: str) -> str:
    """The Python file that puts the folder `keep` of a source archive (`url`, a tar.gz whose
    members sit under one top folder) in `dest`: the PyTorch images have Python, not git."""
    return "\n".join([
        f'"""Fetch {what} (written by rightsize)."""',
        "import io",
        "import tarfile",
        "import urllib.request",
        "",
        f"URL = {python_literal(url)}",
        f"KEEP = {python_literal(keep)}",
        f"DEST = {python_literal(dest)}",
        "with urllib.request.urlopen(URL, timeout=300) as response:",
        "    archive = tarfile.open(fileobj=io.BytesIO(response.read()), mode='r:gz')",
        "members = []",
        "for member in archive.getmembers():",
        "    parts = member.name.split('/', 1)",
        "    if len(parts) == 2 and parts[1].startswith(KEEP):",
        "        member.name = parts[1]",
        "        members.append(member)",
        "safe = {'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}",
        "archive.extractall(DEST, members=members, **safe)",
        "",
    ])  # fmt: skip


def dlrm_fetch_script() -> str:
    url = f"{fw_recsys.DLRM_REPOSITORY}/archive/{fw_recsys.DLRM_COMMIT}.tar.gz"
    what = f"{fw_recsys.DLRM_SCRIPT} and its folder at commit {fw_recsys.DLRM_COMMIT}"
    return fetch_script(url, "torchrec_dlrm/", DLRM_MOUNT, what)


def _script(v: RecsysTrainingView, name: str, gpn: int, args: list[tuple[str, Any]]) -> str:
    env = " ".join(f"{k}={shell_word(val)}" for k, val, _ in _nccl(v))
    pip = " ".join(shell_word(p) for p in fw_recsys.PIP_COMMAND)
    return (
        "set -euo pipefail\n"
        f"{pip}\n"
        f"python /config/{FETCH_FILE}\n"
        f"export {env}\n"
        f"exec torchrun --nnodes={v.nodes} --nproc-per-node={gpn} --node-rank=$JOB_COMPLETION_INDEX "
        f"--rdzv-id={name} --rdzv-backend=static --master-addr={name}-workers-0-0.{name} --master-port={RDZV_PORT} "
        f"{DLRM_MOUNT}/{fw_recsys.DLRM_SCRIPT} {' '.join(shell_args(args))}\n"
    )  # fmt: skip


def _container(v: RecsysTrainingView, gpn: int, script: str) -> dict[str, Any]:
    requests = (
        gpn,
        v.cpu_cores_need_per_gpu * gpn,
        v.host_memory_need_bytes_per_gpu * gpn,
        stack(v.hw).resource,
    )
    mounts: list[dict[str, Any]] = [{"name": "config", "mountPath": "/config"}, {"name": "dlrm", "mountPath": DLRM_MOUNT},
              {"name": "data", "mountPath": DATA_MOUNT, "readOnly": True}]  # fmt: skip
    return trainer_container(
        fw_recsys.PYTORCH_IMAGE,
        script,
        {"DATA_PATH": DATA_MOUNT},
        requests,
        v.fabric_kind is not None,
        mounts,
    )


def _jobset(v: RecsysTrainingView, name: str, queue: str, c: dict[str, Any], selector: dict[str, str]) -> Any:
    volumes: list[dict[str, Any]] = [{"name": "config", "configMap": {"name": f"{name}-config"}}, {"name": "dlrm", "emptyDir": {}},
               {"name": "data", "persistentVolumeClaim": {"claimName": f"{name}-data", "readOnly": True}}]  # fmt: skip
    pod = trainer_pod(c, volumes, selector)
    return indexed_jobset(v.header, name, queue, v.nodes, restarts(v.run_s, v.mtbf_s), pod)


def training_files(v: RecsysTrainingView, node_labels: dict[str, str] | None = None) -> dict[str, str]:
    gpn, _, args, notes = _common(v, "kubernetes")
    name = object_name(v.header)
    c = _container(v, gpn, _script(v, name, gpn, args))
    selector = node_selector(v.hw, v.priced_instance, node_labels)
    queue = f"{name}-queue"
    size = gib(max(MIN_VOLUME_BYTES, v.dataset_bytes * (1.0 + v.safety_margin)))
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta(f"{name}-data", v.header),
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}},
    }
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{name}-config", v.header),
              "data": {FETCH_FILE: dlrm_fetch_script()}}  # fmt: skip
    head = comment_block(v.header, f"Kubernetes recommendation training (JobSet v0.13, Kueue v1beta1, {fw_recsys.VERSION})", [
        f"{v.gpus} x {v.hw.accelerator} as {v.nodes} pods of {gpn} GPUs, torchrun in each", *notes,
        f"at start each pod installs the packages and fetches the trainer ({FETCH_FILE}): it needs PyPI and GitHub",
        f"data: claim {name}-data {size} (ReadWriteMany, with the plan's safety margin; put the "
        f"dataset there) mounted at DATA_PATH={DATA_MOUNT}; no checkpoint volume (the trainer writes none)",
        fabric_note(v.fabric_kind),
    ])  # fmt: skip
    kueue = kueue_file(v.header, queue, v.hw.accelerator, selector, c, v.nodes)
    return {
        "training.yaml": dump(head, [config, _jobset(v, name, queue, c, selector), claim]),
        "kueue.yaml": kueue,
    }
