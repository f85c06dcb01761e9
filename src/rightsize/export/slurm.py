"""Slurm job scripts from a plan.

- `train.sbatch`: the training (or fine-tuning) job. Nodes and GPUs per node from the plan;
  one task per GPU (`srun`; rank, local rank and world size from Slurm's own variables, so
  every signal reaches the training processes themselves, not a launcher with its own
  grace period); CPUs per task from the sizing's per-GPU host needs; the whole node's
  memory (`--exclusive --mem=0`) after checking the plan's host memory fits it; time in
  requeued segments with a checkpoint before each ends (`export.slurm_segments`); the
  framework's own arguments from `export.frameworks`; NCCL/RCCL settings for the fabric.
- `profile.sbatch`: measures what the allocation delivers: `rightsize profile comms` as
  one task per GPU (both tiers, see `profile.dist_comms`) and `rightsize profile train`
  under srun + torchrun; the records land in `profiles/` for `rightsize calibrate`.
- `serve.sbatch`: a job array, one vLLM server per replica with the plan's TP and limits;
  on Gaudi, Intel's vLLM fork (`export.vllm_gaudi`) on the GPU GRES of Intel's Slurm fork.

Scripts are lists of lines: fixed shell text written here, and plan data only as quoted
words (`export.shell_words`): names become safe tokens in `#SBATCH` lines and escaped text
in comments. NVIDIA and AMD plans export (CUDA or ROCm: gres `gpu`, NCCL or RCCL), and Gaudi
plans (Intel's Slurm fork: GresTypes=gpu, docs.habana.ai "Using Slurm Workload Manager with
Intel Gaudi"; Intel's vLLM and Megatron-LM forks); TPU and Trainium plans are refused with the
stack they need.
"""

from __future__ import annotations

import math
import shlex
from typing import Protocol

import yaml

from rightsize.catalog.platforms import platform_for
from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.export import slurm_topology
from rightsize.export.frameworks import Launch, launch_for, save_interval_steps
from rightsize.export.header import header_lines
from rightsize.export.names import Arg, ShellExpr, shell_args
from rightsize.export.plan_view import HardwareView, Header, ServingView, TrainingView
from rightsize.export.serve_engines import pick_engine
from rightsize.export.sglang import BOOTSTRAP_PORT as SGLANG_BOOTSTRAP_PORT
from rightsize.export.sglang import COMMAND as SGLANG_COMMAND
from rightsize.export.sglang import DIST_PORT as SGLANG_DIST_PORT
from rightsize.export.sglang import ROUTER_COMMAND as SGLANG_ROUTER_COMMAND
from rightsize.export.sglang import ROUTER_VERSION, SGLANG_VERSION, nodes_per_server, sglang_arg_list
from rightsize.export.sglang import SERVER_PORT as SGLANG_SERVER_PORT
from rightsize.export.shell_words import arg_variables, arg_words, command, comment_lines, safe_token, word
from rightsize.export.slurm_segments import (
    control_lines,
    finish_lines,
    plan_segments,
    progress_function,
    time_limit,
)
from rightsize.export.slurm_segments import (
    header_lines as segment_lines,
)
from rightsize.export.topology import placement
from rightsize.export.trtllm import COMMAND as TRTLLM_COMMAND
from rightsize.export.trtllm import MULTI_NODE_LAUNCHER as TRTLLM_LAUNCHER
from rightsize.export.trtllm import OPTIONS_FILE as TRTLLM_OPTIONS_FILE
from rightsize.export.trtllm import TRTLLM_VERSION, llm_api_options, trtllm_arg_list
from rightsize.export.vllm import VLLM_VERSION, vllm_args
from rightsize.export.vllm_gaudi import FORK_TAG, VLLM_GAUDI_VERSION, gaudi_arg_list, gaudi_env, uses_inc
from rightsize.export.vllm_gaudi import header_lines as gaudi_header_lines

ENGINE_VERSIONS = {"vllm": VLLM_VERSION, "sglang": SGLANG_VERSION, "trtllm": TRTLLM_VERSION}

RDZV_PORT = 29500
GPU_VENDORS = ("nvidia", "amd")
# Sets the script itself defines (the rest of the frameworks' $VARS must be set by the user).
_DEFINED = {
    "CKPT_DIR",
    "DATA_PATH",
    "MEGATRON_DIR",
    "MASTER_ADDR",
    "MASTER_PORT",
    "PORT",
    "MODEL",
    "EXIT_MIN",
}
_RANK_ENV = (
    "export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS "
    'LOCAL_WORLD_SIZE=$SLURM_NTASKS_PER_NODE; exec "$@"'
)
_STACKS = {
    "google": ("TPU", "JAX/XLA on TPU VMs (MaxText), not CUDA/ROCm frameworks under Slurm gres",
               "Export with --target kubernetes (GKE TPU node pools), or plan for GPUs."),
    "aws": ("Trainium", "the AWS Neuron SDK (torch-neuronx, neuronx-distributed) and its launcher",
            "Run with the Neuron stack's own Slurm examples (AWS ParallelCluster), or plan for GPUs."),
    "intel": ("Gaudi", "Habana's stack (SynapseAI, HCCL; training through Intel's Megatron-LM fork, "
              "serving through Intel's vLLM fork); rightsize profile measures CUDA/ROCm devices only",
              "Export train.sbatch or serve.sbatch (written for Gaudi), or plan for GPUs."),
}  # fmt: skip


def nccl_env(
    fabric_kind: str | None, rails: int | None, vendor: str, nic: str | None = None
) -> list[tuple[str, str, str]]:
    """(variable, value, why) for the planned fabric. NCCL's environment variables
    (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, NCCL 2.2x); RCCL (AMD)
    reads the same names. `NCCL_IB_HCA=mlx5` only for ConnectX NICs: the catalog's NVIDIA
    nodes carry them; for others only when the plan names a ConnectX NIC."""
    env = [
        ("NCCL_DEBUG", "WARN", "errors and warnings in the job log"),
        ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", "a failed collective aborts the job instead of hanging it"),
        ("NCCL_SOCKET_IFNAME", "^lo,docker0", "bootstrap over the host network, never loopback"),
    ]
    if vendor == "nvidia":
        env.append(("CUDA_DEVICE_MAX_CONNECTIONS", "1", "Megatron's TP/SP communication overlap needs it"))
    if fabric_kind is None:
        env.append(("NCCL_IB_DISABLE", "1", "one node: no scale-out fabric planned"))
        return env
    if vendor == "nvidia" or (nic or "").lower().startswith("connectx"):
        env.append(("NCCL_IB_HCA", "mlx5", f"the ConnectX HCAs: {rails or 'one'} rail(s), one NIC per GPU"))
    if rails and rails > 1:
        env.append(("NCCL_CROSS_NIC", "0", "rail-optimised fabric: keep each ring on its own rail"))
    if fabric_kind == "roce":
        env += [
            ("NCCL_IB_GID_INDEX", "3", "RoCE v2 GID"),
            ("NCCL_IB_TC", "106", "lossless traffic class (DSCP 26) configured for RoCE"),
        ]
    return env


def plan_nic(v: TrainingView) -> str | None:
    """The plan's scale-out NIC (`sizing.fabric.nic`, e.g. connectx-7) when the view carries it."""
    nic = getattr(v, "nic", None)
    return str(nic) if nic else None


def check_stack(hw: HardwareView) -> None:
    """Refuse accelerators whose software stack this export does not write."""
    if hw.vendor in GPU_VENDORS:
        return
    part, stack, fix = _STACKS.get(
        hw.vendor, (hw.vendor, "its vendor's own stack", "Plan for NVIDIA or AMD GPUs to export a Slurm job.")
    )
    raise BadInput(
        f"The plan runs on {hw.accelerator} ({part}); the Slurm export writes GPU jobs only.",
        f"{part} needs {stack}; Slurm GPU gres, srun + PyTorch and NCCL/RCCL do not drive it.",
        fix,
    )


def _sbatch(opts: list[tuple[str, str]]) -> list[str]:
    return [f"#SBATCH --{k}={v}" if v else f"#SBATCH --{k}" for k, v in opts]


def _head(h: Header, what: str, extra: list[str]) -> tuple[str, list[str]]:
    """(job name, comment lines): the job name a safe token, said when it differs."""
    name = safe_token(h.name)
    lines = header_lines(h, what, extra)
    if name != h.name:
        lines.append(f"job name {name}: the plan's name made safe for Slurm (letters, digits, . _ - only)")
    return name, comment_lines(lines)


def _fit_node(hw: HardwareView, gpus_per_node: int, cpus_per_gpu: float, mem_per_gpu: float) -> int:
    """CPUs per GPU as a whole number, after checking the plan's host needs fit the node."""
    cpus = max(1, math.ceil(cpus_per_gpu))
    if (
        cpus * gpus_per_node > hw.cpu_cores_per_node
        or mem_per_gpu * gpus_per_node > hw.host_memory_bytes_per_node
    ):
        raise BadInput(
            f"The plan's host needs per node ({cpus * gpus_per_node} CPU cores, "
            f"{mem_per_gpu * gpus_per_node / GiB:.0f} GiB) exceed a {hw.node} "
            f"({hw.cpu_cores_per_node} cores, {hw.host_memory_bytes_per_node / GiB:.0f} GiB).",
            "Slurm would refuse the job (more than the node has).",
            "Re-plan with this rightsize, or lower the host needs in the spec.",
        )
    return cpus


class _Spread(Protocol):
    """A training view's GPUs over its nodes (plan_view.TrainingView, trainer_view.TrainerView)."""

    @property
    def hw(self) -> HardwareView: ...
    @property
    def gpus(self) -> int: ...
    @property
    def nodes(self) -> int: ...


def gpus_per_node(v: _Spread, job: str = "A Slurm job") -> int:
    """GPUs per node of a job that asks for the same number on every node (`job` names it)."""
    gpn = min(v.gpus, v.hw.gpus_per_node)
    if gpn * v.nodes != v.gpus:
        raise BadInput(
            f"The plan spreads {v.gpus} GPUs over {v.nodes} nodes of {v.hw.gpus_per_node}.",
            f"{job} asks for the same number of GPUs on every node.",
            "Plan a GPU count that fills whole nodes (a multiple of the GPUs per node).",
        )
    return gpn


def _launch_lines(launch: Launch, gpn: int, cpus: int, block: bool = False) -> list[str]:
    """srun: one task per GPU; each task sets the rank variables from Slurm's (a fixed
    `bash -c` text) and execs the framework, whose words are its arguments."""
    args = arg_words(launch.args)
    if launch.framework == "megatron":
        args += ["--exit-duration-in-mins", '"$EXIT_MIN"']
    cmd = command(["python", *arg_words([launch.entry]), *args])
    dist = " --distribution=block:block" if block else ""
    return [
        f"srun --kill-on-bad-exit=1 --ntasks-per-node={gpn} --cpus-per-task={cpus}{dist} \\",
        f"    bash -c {shlex.quote(_RANK_ENV)} rank \\",
        *["    " + line for line in cmd[:-1]],
        "    " + cmd[-1] + " &",
        "SRUN_PID=$!",
    ]


def _train_env(v: TrainingView, launch: Launch) -> list[str]:
    lines = [
        "# Rendezvous: the first host of the allocation.",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"MASTER_PORT=${{MASTER_PORT:-{RDZV_PORT}}}",
        "export MASTER_ADDR MASTER_PORT",
        f"CKPT_NAME={word(safe_token(v.header.name))}",
        'export CKPT_DIR="${CKPT_DIR:-$PWD/checkpoints/$CKPT_NAME}"',
        'export DATA_PATH="${DATA_PATH:?set DATA_PATH to the tokenized dataset prefix}"',
    ]
    if launch.framework == "megatron":
        lines.append('export MEGATRON_DIR="${MEGATRON_DIR:-$HOME/Megatron-LM}"')
    for var in sorted(arg_variables([*launch.args, launch.entry]) - _DEFINED):
        lines.append(f': "${{{var}:?set {var} (the framework arguments use it)}}"')
    fabric = v.fabric_kind or "none (one node)"
    noun = platform_for(v.hw.accelerator).unit_noun  # Gaudi: chips
    per_gpu = f", {v.nic_gbps_per_gpu:g} Gb/s per {noun}" if v.nic_gbps_per_gpu else ""
    lines += ["", *comment_lines([f"Fabric: {fabric}{per_gpu}"])]
    own = {k for k, _, _ in launch.env}  # the framework's own needs win over the fabric's defaults
    fabric_env = [] if v.hw.vendor == "intel" else nccl_env(v.fabric_kind, v.rails, v.hw.vendor, plan_nic(v))
    for k, val, why in fabric_env:  # Gaudi: HCCL over the on-chip RoCE ports, no NCCL settings
        lines += [] if k in own else [f"export {k}={word(val)}  # {why}"]
    for k, value, why in launch.env:
        lines.append(f"unset {k}  # {why}" if value is None else f"export {k}={word(value)}  # {why}")
    return lines


def train_sbatch(v: TrainingView, framework: str) -> dict[str, str]:
    """The training job script and the framework files beside it."""
    if v.hw.vendor != "intel":  # Gaudi: Intel's Megatron-LM fork (frameworks.launch_for)
        check_stack(v.hw)
    launch = launch_for(v, framework)
    gpn = gpus_per_node(v)
    cpus = _fit_node(v.hw, gpn, v.cpu_cores_need_per_gpu, v.host_memory_need_bytes_per_gpu)
    seg = plan_segments(v, launch.framework)
    place = placement(v)
    noun = platform_for(v.hw.accelerator).unit_noun  # the job's words: chips on Gaudi
    layout = (
        f"TP{v.tp} PP{v.pp}" + (f"x{v.vpp}v" if v.vpp > 1 else "") + f" DP{v.dp} CP{v.cp} EP{v.ep}, "
        f"micro-batch {v.micro_batch}, global batch {v.global_batch}, recompute {v.recompute}, ZeRO-{v.zero_stage}"
    )
    name, head = _head(v.header, "Slurm training job", [
        f"chosen: {v.gpus} x {v.hw.accelerator} on {v.nodes} x {v.hw.node}; {layout}",
        f"framework: {launch.version}; one task per {noun} under srun",
        *launch.notes,
        f"host: {cpus} CPU(s) per {noun}; memory: the whole node (--exclusive --mem=0, "
        f"{v.hw.host_memory_bytes_per_node / GiB:.0f} GiB), the plan needs "
        f"{v.host_memory_need_bytes_per_gpu * gpn / GiB:.0f} GiB per node",
        f"checkpoint every {save_interval_steps(v)} steps = {v.checkpoint_interval_s / 60:.1f} min "
        f"(Young/Daly, cluster MTBF {((v.mtbf_s or 0) / 3600):.1f} h)",
        *segment_lines(v, seg, launch.framework),
        *(slurm_topology.header_lines(place) if place else []),
    ])  # fmt: skip
    opts = [("job-name", name), ("nodes", str(v.nodes)), ("ntasks-per-node", str(gpn)),
            ("gpus-per-node", str(gpn)), ("cpus-per-task", str(cpus)), ("mem", "0"), ("exclusive", ""),
            ("time", time_limit(seg.limit_s)), ("requeue", ""), ("signal", f"B:USR1@{seg.lead_s}"),
            ("open-mode", "append"), ("output", "%x-%j.out")]  # fmt: skip
    opts += slurm_topology.sbatch_options(place) if place else []
    lines = [
        "#!/bin/bash",
        *_sbatch(opts),
        *head,
        "set -euo pipefail",
        'cd "${SLURM_SUBMIT_DIR:-.}"',
        "",
        *_train_env(v, launch),
        "",
        *progress_function(launch),
        *control_lines(seg, v.steps, launch.framework),
        "",
        *(slurm_topology.check_lines(place) if place else []),
        *_launch_lines(launch, gpn, cpus, block=place is not None),
        *finish_lines(seg),
    ]
    files = {"train.sbatch": "\n".join(lines) + "\n", **launch.files}
    if place:
        files["topology.conf.example"] = slurm_topology.topology_conf(place, v.hw.node)
    return files


def profile_model_yaml(v: TrainingView, device: str) -> str:
    """The model the profiling job trains: the plan's layer shapes, two layers (GPU), or a
    tiny decoder (CPU, to check the allocation and the launcher only)."""
    m = v.model
    if device == "cpu":
        dims = {"layers": 2, "hidden": 256, "heads": 8, "kv_heads": 2, "ffn_hidden": 704, "vocab": 2048}
    else:
        dims = {"layers": 2, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads,
                "ffn_hidden": m.ffn_hidden, "vocab": m.vocab}  # fmt: skip
    what = "two of the plan's layers" if device != "cpu" else "a tiny decoder (checks the launcher only)"
    lines = [
        *comment_lines(header_lines(v.header, f"Profiling model: {what}")),
        f"name: {word(safe_token(m.name))}-profile",
    ]
    lines += [f"{k}: {int(val)}" for k, val in dims.items()]
    lines += [
        "mlp: swiglu",
        "norm: rmsnorm",
        "tied_embeddings: false",
        f"max_seq_len: {max(v.seq_len, 1024)}",
    ]
    return "\n".join(lines) + "\n"


def _collectives(vendor: str) -> str:
    """The collective library PyTorch's distributed backend runs on the vendor's GPUs."""
    return "RCCL" if vendor == "amd" else "NCCL"


def profile_sbatch(v: TrainingView, device: str = "gpu") -> dict[str, str]:
    """The profiling job on the plan's node type: comms on every GPU of up to two nodes (so
    both tiers are measured), then data-parallel training steps under srun + torchrun."""
    gpu = device == "gpu"
    if gpu:
        check_stack(v.hw)
    nodes = min(v.nodes, 2)
    per_node = min(v.gpus, v.hw.gpus_per_node) if gpu else 2
    seq = min(v.seq_len, 2048) if gpu else 32
    cpus = _fit_node(v.hw, per_node, v.cpu_cores_need_per_gpu, 0.0) if gpu else 1
    name, head = _head(v.header, "Slurm profiling job", [
        f"measures {nodes} x {v.hw.node} ({per_node} {'GPUs' if gpu else 'CPU ranks'} per node): collectives "
        f"and point-to-point per tier, then DDP training steps ({_collectives(v.hw.vendor) if gpu else 'gloo'})",
        "then: rightsize calibrate profiles/*.jsonl && rightsize plan SPEC --calibration calibration.json",
    ])  # fmt: skip
    opts = [
        ("job-name", safe_token(name + "-profile")),
        ("nodes", str(nodes)),
        ("ntasks-per-node", str(per_node)),
    ]
    opts += [("gpus-per-node", str(per_node)), ("exclusive", ""), ("mem", "0")] if gpu else []
    opts += [("cpus-per-task", str(cpus)), ("time", "00:30:00"), ("output", "%x-%j.out")]
    env = [
        f"export {k}={word(val)}"
        for k, val, _ in nccl_env(v.fabric_kind if nodes > 1 else None, v.rails, v.hw.vendor, plan_nic(v))
    ]
    backend, dev = (
        ("nccl", "cuda") if gpu else ("gloo", "cpu")
    )  # ROCm's PyTorch names RCCL "nccl", HIP "cuda"
    sizes = ["--max-bytes", "1GiB"] if gpu else ["--sizes", "1024,65536,1048576"]
    comms = ["srun", "--kill-on-bad-exit=1", '"$RIGHTSIZE"', "profile", "comms", "--backend", backend, *sizes,
             "--iters", "5", "--out", '"profiles/comms-$SLURM_JOB_ID.jsonl"', "--format", "json",
             "-o", '"profiles/comms-$SLURM_JOB_ID.json"']  # fmt: skip
    train = ["srun", "--kill-on-bad-exit=1", '--ntasks="$SLURM_JOB_NUM_NODES"', "--ntasks-per-node=1",
             "torchrun", '--nnodes="$SLURM_JOB_NUM_NODES"', f"--nproc-per-node={per_node}",
             '--rdzv-id="$SLURM_JOB_ID"', "--rdzv-backend=c10d", '--rdzv-endpoint="$MASTER_ADDR:$PROFILE_PORT"',
             "--no-python", '"$RIGHTSIZE"', "profile", "train", "--model", "profile-model.yaml", "--device", dev,
             "--batch", "1,2", "--seq", str(seq), "--steps", "3", "--warmup", "1",
             *(["--dtype", "bf16"] if gpu else ["--threads", "1"]),
             "--out", '"profiles/train-$SLURM_JOB_ID.jsonl"', "--format", "json",
             "-o", '"profiles/train-$SLURM_JOB_ID.json"']  # fmt: skip
    lines = ["#!/bin/bash", *_sbatch(opts), *head, "set -euo pipefail", 'cd "${SLURM_SUBMIT_DIR:-.}"',
             "mkdir -p profiles", 'RIGHTSIZE="${RIGHTSIZE:-rightsize}"', *env, "",
             f"# 1. Collectives and point-to-point: one task per {'GPU' if gpu else 'rank'}; rank/world from srun.",
             *command(comms), "",
             "# 2. Data-parallel training steps: one torchrun per node, rendezvous on the first host.",
             'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
             f'PROFILE_PORT="${{PROFILE_PORT:-{RDZV_PORT + 1}}}"', *command(train)]  # fmt: skip
    return {"profile.sbatch": "\n".join(lines) + "\n", "profile-model.yaml": profile_model_yaml(v, device)}


SERVE_LAUNCH = {
    "vllm": "vLLM (vllm serve; Ray across the nodes of a multi-node replica)",
    "sglang": "SGLang (python3 -m sglang.launch_server; its own --nnodes/--node-rank launch across nodes)",
    "trtllm": "TensorRT-LLM (trtllm-serve; srun --mpi=pmix + trtllm-llmapi-launch across nodes)",
}
RAY_PORT = 6379
GAUDI_INSTALL = (
    f"on the nodes: Intel Gaudi software 1.22.0 and the fork at tag {FORK_TAG} (README_GAUDI: git checkout "
    f"{FORK_TAG}; pip install -r requirements-hpu.txt; python setup.py develop), or Intel's vllm-installer image for 1.22.0 (catalog kubernetes.yaml)"
)


def _engine_lines(v: ServingView, engine: str) -> tuple[list[str], dict[str, str]]:
    """The launch lines of one replica (the array task) and any extra files."""
    nodes = v.nodes_per_replica
    per_node = v.gpus_per_node_used
    port: Arg = ("--port", ShellExpr("$PORT"))
    if engine == "trtllm":
        args = shell_args([("--host", "0.0.0.0"), port, *trtllm_arg_list(v, TRTLLM_OPTIONS_FILE)])
        opts_file = {TRTLLM_OPTIONS_FILE: yaml.safe_dump(llm_api_options(v), sort_keys=False)}
        if nodes == 1:
            return command(["srun", *TRTLLM_COMMAND, '"$MODEL"', *args]), opts_file
        # --ntasks as well: inside the allocation (one task per node) srun takes SLURM_NTASKS
        # and would start one rank per node (Slurm 22.05 here); --cpus-per-task splits the
        # node's CPUs over the ranks (srun reads SLURM_CPUS_PER_TASK again from 23.11).
        cpus = _fit_node(v.hw, per_node, v.cpu_cores_need_per_gpu, v.host_memory_need_bytes_per_gpu)
        launch = ["srun", f"--nodes={nodes}", f"--ntasks={nodes * per_node}", f"--ntasks-per-node={per_node}",
                  f"--cpus-per-task={cpus}", "--mpi=pmix", TRTLLM_LAUNCHER, *TRTLLM_COMMAND, '"$MODEL"',
                  *args]  # fmt: skip
        return [
            "# One MPI rank per GPU over every node of the replica; rank 0 serves HTTP.",
            *command(launch),
        ], opts_file
    if engine == "sglang":
        tail = [("--host", "0.0.0.0"), port]
        if nodes == 1:
            return command(
                [
                    "srun",
                    *SGLANG_COMMAND,
                    "--model-path",
                    '"$MODEL"',
                    *shell_args([*sglang_arg_list(v), *tail]),
                ]
            ), {}
        multi = sglang_arg_list(
            v, node_rank=ShellExpr("$NODE_RANK"), dist_addr=ShellExpr(f"$MASTER_ADDR:{SGLANG_DIST_PORT}")
        )
        return [
            "# One srun per node, the same command with its rank; node 0 serves HTTP.",
            'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
            'MASTER_ADDR="${NODES[0]}"',
            f"for NODE_RANK in $(seq 0 {nodes - 1}); do",
            *command(["  srun", "--nodes=1", "--ntasks=1", '--nodelist="${NODES[$NODE_RANK]}"', *SGLANG_COMMAND,
                      "--model-path", '"$MODEL"', *shell_args([*multi, *tail]), "&"], indent="      "),
            "done",
            "wait",
        ], {}  # fmt: skip
    if v.hw.vendor == "intel":  # Intel's vLLM fork for Gaudi, one node per replica (export.vllm_gaudi)
        env = [f"export {k}={word(val)}  # {why}" for k, val, why in gaudi_env(v)]
        need = [': "${QUANT_CONFIG:?set QUANT_CONFIG to the INC quantization config from Intel calibration}"']
        args = arg_words(shell_args([*gaudi_arg_list(v), port]))
        return [
            *env,
            *(need if uses_inc(v) else []),
            *command(["srun", "vllm", "serve", '"$MODEL"', *args]),
        ], {}
    args_v = vllm_args(v, port="$PORT")
    if nodes == 1:
        return command(["srun", "vllm", "serve", '"$MODEL"', *arg_words(args_v)]), {}
    ray = arg_words(shell_args([("--distributed-executor-backend", "ray")]))
    return [
        "# A Ray cluster over the replica's nodes (head on the first), then vllm serve on the head.",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'MASTER_ADDR="${NODES[0]}"',
        f'srun --nodes=1 --ntasks=1 --nodelist="$MASTER_ADDR" ray start --head --port={RAY_PORT} --block &',
        "sleep 10",
        f"for NODE_RANK in $(seq 1 {nodes - 1}); do",
        f'  srun --nodes=1 --ntasks=1 --nodelist="${{NODES[$NODE_RANK]}}" ray start --address="$MASTER_ADDR:{RAY_PORT}" --block &',
        "done",
        "sleep 20",
        *command(["srun", "--overlap", "--nodes=1", "--ntasks=1", '--nodelist="$MASTER_ADDR"', "vllm", "serve",
                  '"$MODEL"', *arg_words(args_v), *ray]),
    ], {}  # fmt: skip


def serve_sbatch(v: ServingView, engine: str | None = None) -> dict[str, str]:
    """A job array: one server per replica (array task), on `nodes_per_replica` nodes each."""
    gaudi = v.hw.vendor == "intel"  # Intel's vLLM fork; other engines refused by pick_engine
    if not gaudi:
        check_stack(v.hw)
    engine_name = pick_engine(v, engine)
    if v.disaggregated is not None:
        return _disaggregated_sbatch(v, engine_name)
    nodes, per_node = v.nodes_per_replica, v.gpus_per_node_used
    cpus = _fit_node(v.hw, per_node, v.cpu_cores_need_per_gpu, v.host_memory_need_bytes_per_gpu)
    mem_gib = max(8, math.ceil(v.host_memory_need_bytes_per_gpu * per_node / GiB))
    mem_gib = min(mem_gib, int(v.hw.host_memory_bytes_per_node // GiB))
    layout = f"TP{v.tp}" + (f" x PP{v.pp}" if v.pp > 1 else "") + (f", EP{v.ep}" if v.ep > 1 else "")
    version = VLLM_GAUDI_VERSION if gaudi else ENGINE_VERSIONS[engine_name]
    name, head = _head(v.header, f"Slurm serving job ({version})", [
        f"chosen: {v.replicas} replica(s) x {layout} on {v.hw.accelerator} ({v.hw.node}"
        + (f", {nodes} nodes per replica" if nodes > 1 else "") + f"), weights "
        f"{v.weight_precision}, KV cache {v.kv_precision}",
        f"each replica sustains {v.replica_capacity_rps:.2f} req/s within the SLOs; sized for "
        f"{v.design_rate_rps:.1f} req/s; one array task per replica, port 8000 + task id",
        *(gaudi_header_lines(v) + [GAUDI_INSTALL] if gaudi else [f"engine: {SERVE_LAUNCH[engine_name]}"]),
        "no --time: the partition's default limit applies to a long-running server",
    ])  # fmt: skip
    opts = [("job-name", name), ("array", f"0-{v.replicas - 1}"), ("nodes", str(nodes)),
            ("ntasks-per-node", "1"), ("gpus-per-node", str(per_node)), ("cpus-per-task", str(cpus * per_node)),
            ("mem", f"{mem_gib}G"), ("output", "%x-%A_%a.out")]  # fmt: skip
    launch, extra = _engine_lines(v, engine_name)
    if engine_name == "vllm" and not gaudi:
        need = sorted(arg_variables(vllm_args(v, port="$PORT")) - _DEFINED)
        checks = [f': "${{{x}:?set {x} (the vLLM arguments use it)}}"' for x in need]
    else:
        checks = []
    lines = [
        "#!/bin/bash",
        *_sbatch(opts),
        *head,
        "set -euo pipefail",
        *(['cd "${SLURM_SUBMIT_DIR:-.}"'] if extra else []),
        f"DEFAULT_MODEL={word(v.model.hf_id or '')}",
        'MODEL="${MODEL:-$DEFAULT_MODEL}"',
        ': "${MODEL:?set MODEL to the Hugging Face model id or a local path}"',
        "PORT=$((8000 + SLURM_ARRAY_TASK_ID))",
        *checks,
        *launch,
    ]
    return {"serve.sbatch": "\n".join(lines) + "\n", **extra}


def _disaggregated_sbatch(v: ServingView, engine: str) -> dict[str, str]:
    """One job over every server of both pools (node order: prefill servers, then decode
    servers), each server on the nodes its TP x PP (or EP group) spans, a server over several
    nodes launched per node with its rank (SGLang's --nnodes/--node-rank, rendezvous on the
    server's first node), and SGLang's router on the first node in front of them."""
    d = v.disaggregated
    assert d is not None
    if engine != "sglang":
        raise BadInput(
            f"The plan serves prefill and decode in separate pools; the {engine} export writes aggregated replicas.",
            "Disaggregated serving is written for SGLang (its prefill/decode modes, KV transfer and router).",
            "Export with --engine sglang.",
        )
    n_p, n_d = d.prefill.replicas, d.decode.replicas
    span = {"prefill": nodes_per_server(v, "prefill"), "decode": nodes_per_server(v, "decode")}
    per_node = max(-(-d.prefill.gpus // span["prefill"]), -(-d.decode.gpus // span["decode"]))
    cpus = _fit_node(v.hw, per_node, v.cpu_cores_need_per_gpu, v.host_memory_need_bytes_per_gpu)
    mem_gib = min(max(8, math.ceil(v.host_memory_need_bytes_per_gpu * per_node / GiB)),
                  int(v.hw.host_memory_bytes_per_node // GiB))  # fmt: skip
    total = n_p * span["prefill"] + n_d * span["decode"]
    name, head = _head(v.header, f"Slurm disaggregated serving job ({SGLANG_VERSION}, {ROUTER_VERSION})", [
        f"prefill pool: {n_p} server(s) x {d.prefill.gpus} GPUs ({span['prefill']} node(s) each); decode pool: "
        f"{n_d} server(s) x {d.decode.gpus} GPUs ({span['decode']} node(s) each); on {v.hw.accelerator} "
        f"({v.hw.node}), {total} nodes; KV over {d.transfer_backend}",
        f"the router on the first node serves port 8000 (servers on {SGLANG_SERVER_PORT}, prefill bootstrap "
        f"{SGLANG_BOOTSTRAP_PORT}); each server's memory limits from the plan's per-GPU figures",
        "no --time: the partition's default limit applies to a long-running server",
    ])  # fmt: skip
    opts = [("job-name", name), ("nodes", str(total)), ("ntasks-per-node", "1"),
            ("gpus-per-node", str(per_node)), ("cpus-per-task", str(cpus * per_node)), ("mem", f"{mem_gib}G"),
            ("output", "%x-%j.out")]  # fmt: skip
    lines = ["#!/bin/bash", *_sbatch(opts), *head, "set -euo pipefail",
             f"DEFAULT_MODEL={word(v.model.hf_id or '')}", 'MODEL="${MODEL:-$DEFAULT_MODEL}"',
             ': "${MODEL:?set MODEL to the Hugging Face model id or a local path}"',
             'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")']  # fmt: skip
    router: list[str] = []
    first = 0  # the server's first node
    for role, k in [("prefill", i) for i in range(n_p)] + [("decode", j) for j in range(n_d)]:
        lead = f"${{NODES[{first}]}}"
        lines += [
            f"# {role} server {k}"
            + (f" over nodes {first}-{first + span[role] - 1}" if span[role] > 1 else "")
        ]
        if span[role] > 1:
            lines.append(f'SERVER_ADDR="{lead}"')  # the rendezvous of this server's ranks
        for rank in range(span[role]):
            args = sglang_arg_list(
                v, role=role, node_rank=rank, dist_addr=ShellExpr(f"$SERVER_ADDR:{SGLANG_DIST_PORT}")
            )
            words = shell_args([*args, ("--host", "0.0.0.0"), ("--port", SGLANG_SERVER_PORT)])
            lines += command(["srun", "--nodes=1", "--ntasks=1", f'--nodelist="${{NODES[{first + rank}]}}"',
                              *SGLANG_COMMAND, "--model-path", '"$MODEL"', *words, "&"])  # fmt: skip
        url = f'"http://{lead}:{SGLANG_SERVER_PORT}"'
        router += [f"--prefill {url} {SGLANG_BOOTSTRAP_PORT}" if role == "prefill" else f"--decode {url}"]
        first += span[role]
    lines += ["# The router: requests to port 8000, prefill then decode, KV handed over between them.",
              *command(["srun", "--overlap", "--nodes=1", "--ntasks=1", '--nodelist="${NODES[0]}"',
                        *SGLANG_ROUTER_COMMAND, "--pd-disaggregation", *router, "--host 0.0.0.0", "--port 8000", "&"]),
              "wait"]  # fmt: skip
    return {"serve.sbatch": "\n".join(lines) + "\n"}


__all__ = ["nccl_env", "profile_sbatch", "serve_sbatch", "time_limit", "train_sbatch"]
