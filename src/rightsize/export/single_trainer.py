"""One shape for the jobs of a single pinned PyTorch trainer, one process per GPU: the vision
export (torchvision's classification reference, `export.vision_jobs`) and the recommendation
export (TorchRec's DLRM trainer, `export.recsys_jobs`). Each kind supplies only what differs:
its trainer and image, its notes, its arguments, its volumes, and whether it resumes.

- Checks: NVIDIA GPUs only (the kind says why another part is refused); the same GPUs on every
  node; NCCL settings for the planned fabric, less Megatron's own.
- Slurm (`sbatch`): nodes, GPUs per node, CPUs per task, the whole node's memory
  (`--exclusive --mem=0`), `--time`; the kind's set-up lines; the rendezvous on the first host;
  one srun task per GPU with RANK / LOCAL_RANK / WORLD_SIZE / LOCAL_WORLD_SIZE from Slurm's own
  variables. A resumable trainer's job also requeues itself at `--signal=B:USR1@lead`.
- Kubernetes (`kubernetes_files`): a ConfigMap of the kind's files (the fetch script first), a
  JobSet of one indexed Job with a pod per node running torchrun (`export.k8s_trainer`), the
  trainer fetched into an emptyDir, PersistentVolumeClaims sized from the plan with its safety
  margin, and the Kueue flavor, ClusterQueue and LocalQueue (`kueue.yaml`).
- `fetch_script`: the Python file that fetches the trainer's folder from a source archive (the
  PyTorch images have Python, not git).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from rightsize.errors import BadInput
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
from rightsize.export.names import Arg, python_literal, shell_args, shell_word
from rightsize.export.shell_words import command, word
from rightsize.export.slurm import _RANK_ENV, RDZV_PORT, _head, _sbatch, nccl_env
from rightsize.export.slurm import gpus_per_node as slurm_gpus_per_node
from rightsize.export.slurm_segments import time_limit
from rightsize.export.trainer_view import TrainerView

DATA_MOUNT = "/data"
MIN_VOLUME_BYTES = 2**30
MEGATRON_ONLY = {"CUDA_DEVICE_MAX_CONNECTIONS"}  # nccl_env's setting for Megatron's TP overlap


def require_nvidia(v: TrainerView, what: str, why: str, fix: str) -> None:
    """Refuse every part but an NVIDIA GPU (the kind's what, why and fix name what it needs)."""
    if v.hw.vendor != "nvidia":
        raise BadInput(what, why, fix)


def gpus_per_node(v: TrainerView) -> int:
    return slurm_gpus_per_node(v, job="The job")


def nccl(v: TrainerView) -> list[tuple[str, str, str]]:
    """(variable, value, why) for the planned fabric, without Megatron's own setting."""
    return [e for e in nccl_env(v.fabric_kind, v.rails, v.hw.vendor) if e[0] not in MEGATRON_ONLY]


def chosen(v: TrainerView, version: str) -> str:
    return f"chosen: {v.gpus} x {v.hw.accelerator} on {v.nodes} x {v.hw.node}; {version}"


def require_data(what: str) -> str:
    """The line that stops the job when DATA_PATH is not set, saying what it must hold."""
    return f'export DATA_PATH="${{DATA_PATH:?set DATA_PATH to {what}}}"'


def require_checkout(var: str, repository: str, at: str, script: str) -> list[str]:
    """The lines that stop the job unless `var` names a checkout of `repository` (`at` its
    commit or tag) holding `script`."""
    return [
        f': "${{{var}:?set {var} to a checkout of {repository} at {at}}}"',
        f'test -f "${var}/{script}" || {{ echo "no {script} in {var}=${var}" >&2; exit 2; }}',
    ]


@dataclass(frozen=True)
class SlurmJob:
    """What a kind's `train.sbatch` holds beyond the shared skeleton."""

    title: str  # the header's first line, e.g. "Slurm vision training job"
    notes: list[str]  # header comment lines
    gpus_per_node: int
    cpus_per_task: int
    limit_s: int  # --time
    setup: list[str]  # shell lines before the rendezvous (data, checkout, folders)
    launch: list[str]  # the words each srun task runs
    requeue_lead_s: int | None = None  # resumable: USR1 this long before the limit requeues the job


def sbatch(v: TrainerView, job: SlurmJob) -> str:
    """The `train.sbatch` text: options, header, the kind's set-up, rendezvous, NCCL settings,
    and srun of one task per GPU (in the background, waited on, when the job requeues itself)."""
    gpn, cpus, lead = job.gpus_per_node, job.cpus_per_task, job.requeue_lead_s
    name, head = _head(v.header, job.title, job.notes)
    opts = [("job-name", name), ("nodes", str(v.nodes)), ("ntasks-per-node", str(gpn)),
            ("gpus-per-node", str(gpn)), ("cpus-per-task", str(cpus)), ("mem", "0"), ("exclusive", ""),
            ("time", time_limit(job.limit_s)), ("requeue", "")]  # fmt: skip
    if lead is not None:
        opts += [("signal", f"B:USR1@{lead}"), ("open-mode", "append")]
    cmd = ["    " + line for line in command(job.launch)]
    srun = [
        f"srun --kill-on-bad-exit=1 --ntasks-per-node={gpn} --cpus-per-task={cpus} \\",
        f"    bash -c {shlex.quote(_RANK_ENV)} rank \\",
    ]
    if lead is None:
        srun += cmd
    else:
        srun = [
            "# Near the time limit: requeue; the next segment resumes from the last epoch's checkpoint.",
            'trap \'echo "time limit near: requeue" >&2; scontrol requeue "$SLURM_JOB_ID"\' USR1',
            *srun, *cmd[:-1], cmd[-1] + " &", "SRUN_PID=$!", "set +e", 'wait "$SRUN_PID"; RC=$?',
            'while [ "$RC" -gt 128 ] && kill -0 "$SRUN_PID" 2>/dev/null; do wait "$SRUN_PID"; RC=$?; done',
            'exit "$RC"',
        ]  # fmt: skip
    lines = [
        "#!/bin/bash",
        *_sbatch([*opts, ("output", "%x-%j.out")]),
        *head,
        "set -euo pipefail",
        'cd "${SLURM_SUBMIT_DIR:-.}"',
        "",
        *job.setup,
        "",
        "# Rendezvous: the first host of the allocation.",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"MASTER_PORT=${{MASTER_PORT:-{RDZV_PORT}}}",
        "export MASTER_ADDR MASTER_PORT",
        *[f"export {k}={word(val)}  # {why}" for k, val, why in nccl(v)],
        "",
        *srun,
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Claim:
    """A PersistentVolumeClaim `<job>-<volume>` mounted at `mount`, sized from the plan."""

    volume: str
    mount: str
    n_bytes: float
    read_only: bool = False


@dataclass(frozen=True)
class Pod:
    """What a kind's Kubernetes pod runs beyond the shared JobSet, volumes and queue."""

    image: str
    code: tuple[str, str]  # (emptyDir volume, mount path): where the fetch script puts the trainer
    setup: list[str]  # script lines before torchrun (install, fetch, folders)
    program: str  # what torchrun runs: the trainer (after its launcher, if any)
    args: list[Arg]
    env: dict[str, str]
    cpus_per_gpu: float  # the CPU request per GPU
    config: dict[str, str]  # the ConfigMap's files, mounted at /config
    claims: list[Claim] = field(default_factory=list)
    grace_s: int | None = None  # SIGTERM to SIGKILL (None: the default)


def volume_size(v: TrainerView, n_bytes: float) -> str:
    """A claim's size: the bytes with the plan's safety margin, at least 1 GiB."""
    return gib(max(MIN_VOLUME_BYTES, n_bytes * (1.0 + v.safety_margin)))


def _script(v: TrainerView, name: str, gpn: int, pod: Pod) -> str:
    env = " ".join(f"{k}={shell_word(val)}" for k, val, _ in nccl(v))
    return (
        "set -euo pipefail\n"
        + "".join(f"{line}\n" for line in pod.setup)
        + f"export {env}\n"
        f"exec torchrun --nnodes={v.nodes} --nproc-per-node={gpn} --node-rank=$JOB_COMPLETION_INDEX "
        f"--rdzv-id={name} --rdzv-backend=static --master-addr={name}-workers-0-0.{name} --master-port={RDZV_PORT} "
        f"{pod.program} {' '.join(shell_args(pod.args))}\n"
    )  # fmt: skip


def _volumes(name: str, pod: Pod) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the container's mounts, the pod's volumes): /config, the trainer's folder, the claims."""
    mounts: list[dict[str, Any]] = [
        {"name": "config", "mountPath": "/config"},
        {"name": pod.code[0], "mountPath": pod.code[1]},
    ]
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": f"{name}-config"}},
        {"name": pod.code[0], "emptyDir": {}},
    ]
    for c in pod.claims:
        ro = {"readOnly": True} if c.read_only else {}
        mounts.append({"name": c.volume, "mountPath": c.mount, **ro})
        volumes.append({"name": c.volume, "persistentVolumeClaim": {"claimName": f"{name}-{c.volume}", **ro}})
    return mounts, volumes


def _claim(v: TrainerView, name: str, c: Claim) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta(f"{name}-{c.volume}", v.header),
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": volume_size(v, c.n_bytes)}}}}  # fmt: skip


def kubernetes_files(
    v: TrainerView, gpn: int, pod: Pod, title: str, notes: list[str], node_labels: dict[str, str] | None
) -> dict[str, str]:
    """`training.yaml` (the ConfigMap, the JobSet of torchrun pods, the claims, under a header of
    `title` and `notes`) and `kueue.yaml`."""
    name = object_name(v.header)
    requests = (gpn, pod.cpus_per_gpu * gpn, v.host_memory_need_bytes_per_gpu * gpn, stack(v.hw).resource)
    mounts, volumes = _volumes(name, pod)
    c = trainer_container(
        pod.image, _script(v, name, gpn, pod), pod.env, requests, v.fabric_kind is not None, mounts
    )
    selector = node_selector(v.hw, v.priced_instance, node_labels)
    queue = f"{name}-queue"
    jobset = indexed_jobset(
        v.header,
        name,
        queue,
        v.nodes,
        restarts(v.run_s, v.mtbf_s),
        trainer_pod(c, volumes, selector, pod.grace_s),
    )
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{name}-config", v.header),
              "data": pod.config}  # fmt: skip
    head = comment_block(v.header, title, [
        f"{v.gpus} x {v.hw.accelerator} as {v.nodes} pods of {gpn} GPUs, torchrun in each", *notes,
        fabric_note(v.fabric_kind),
    ])  # fmt: skip
    return {
        "training.yaml": dump(head, [config, jobset, *(_claim(v, name, x) for x in pod.claims)]),
        "kueue.yaml": kueue_file(v.header, queue, v.hw.accelerator, selector, c, v.nodes),
    }


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
