"""Slurm job scripts from a plan.

- `train.sbatch`: the training (or fine-tuning) job. Nodes and GPUs per node from the plan;
  CPUs and memory per task from the sizing's per-GPU host needs; the time limit is the
  planned wall time (failures and restarts included) plus the plan's safety margin;
  `srun` starts one `torchrun` per node with a c10d rendezvous on the first host of the
  allocation (NeMo: one task per GPU, Lightning reads Slurm's variables); the framework's
  own arguments come from `export.frameworks`; checkpoints every Young/Daly interval;
  `--requeue` with a signal ahead of the limit so the job checkpoints and goes back in the
  queue on preemption or timeout; NCCL settings for the planned fabric.
- `profile.sbatch`: measures what the allocation delivers: `rightsize profile comms` as
  one task per GPU (both tiers, see `profile.dist_comms`) and `rightsize profile train`
  under srun + torchrun; the records land in `profiles/` for `rightsize calibrate`.
- `serve.sbatch`: a job array, one vLLM server per replica with the plan's TP and limits.
"""

from __future__ import annotations

import math
import shlex

from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.export.frameworks import Launch, launch_for, save_interval_steps
from rightsize.export.header import comment_block
from rightsize.export.plan_view import ServingView, TrainingView
from rightsize.export.vllm import vllm_args

RDZV_PORT = 29500
MIN_SIGNAL_LEAD_S = 300  # warn the job this long before its limit (time to write a checkpoint)


def time_limit(seconds: float) -> str:
    """Slurm's D-HH:MM:SS, rounded up to the minute."""
    minutes = max(1, math.ceil(seconds / 60.0))
    d, rem = divmod(minutes, 24 * 60)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00"


def nccl_env(fabric_kind: str | None, rails: int | None, vendor: str) -> list[tuple[str, str, str]]:
    """(variable, value, why) for the planned fabric. NCCL's environment variables
    (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html, NCCL 2.2x); RCCL reads the same."""
    env = [
        ("NCCL_DEBUG", "WARN", "errors and warnings in the job log"),
        ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", "a failed collective aborts the job instead of hanging it"),
        ("NCCL_SOCKET_IFNAME", "^lo,docker0", "bootstrap over the host network, never loopback"),
    ]
    if vendor == "nvidia":
        env.append(("CUDA_DEVICE_MAX_CONNECTIONS", "1", "Megatron's TP/SP communication overlap needs it"))
    if fabric_kind is None:
        env.append(("NCCL_IB_DISABLE", "1", "one node: NVLink only, no scale-out fabric planned"))
        return env
    env.append(("NCCL_IB_HCA", "mlx5", f"the ConnectX HCAs: {rails or 'one'} rail(s), one NIC per GPU"))
    if rails and rails > 1:
        env.append(("NCCL_CROSS_NIC", "0", "rail-optimised fabric: keep each ring on its own rail"))
    if fabric_kind == "roce":
        env += [
            ("NCCL_IB_GID_INDEX", "3", "RoCE v2 GID"),
            ("NCCL_IB_TC", "106", "lossless traffic class (DSCP 26) configured for RoCE"),
        ]
    return env


def _sbatch_lines(opts: list[tuple[str, str]]) -> str:
    return "".join(f"#SBATCH --{k}={v}\n" if v else f"#SBATCH --{k}\n" for k, v in opts)


def _mem_per_cpu_mib(host_bytes_per_gpu: float, cpus_per_gpu: int) -> int:
    return max(512, math.ceil(host_bytes_per_gpu / cpus_per_gpu / 2**20))


def _requeue_block(lead_s: int) -> str:
    return f"""# Preemption or the time limit: Slurm sends USR1 {lead_s} s ahead (and TERM on preemption);
# pass it to the job so it writes a checkpoint, then requeue; the next start resumes from it.
requeue() {{
    echo "rightsize: signal received, checkpointing and requeueing job $SLURM_JOB_ID" >&2
    kill -TERM "$SRUN_PID" 2>/dev/null || true
    wait "$SRUN_PID" || true
    scontrol requeue "$SLURM_JOB_ID"
    exit 0
}}
trap requeue USR1 TERM
"""


def _launch_cmd(launch: Launch, gpn: int) -> str:
    args = " \\\n    ".join(launch.args)
    if launch.torchrun:
        return (
            'srun --kill-on-bad-exit=1 --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 \\\n'
            f'  torchrun --nnodes="$SLURM_JOB_NUM_NODES" --nproc-per-node={gpn} \\\n'
            '    --rdzv-id="$SLURM_JOB_ID" --rdzv-backend=c10d --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT" \\\n'
            f"    {launch.entry}" + (f" \\\n    {args}" if args else "") + " &\n"
        )
    return f"srun --kill-on-bad-exit=1 python {launch.entry}" + (f" \\\n    {args}" if args else "") + " &\n"


def train_sbatch(v: TrainingView, framework: str) -> dict[str, str]:
    """The training job script and the framework files beside it."""
    launch = launch_for(v, framework)
    gpn = min(v.gpus, v.hw.gpus_per_node)
    tasks = 1 if launch.torchrun else gpn
    gpus_per_task = gpn // tasks
    cpus_per_gpu = max(1, math.ceil(v.cpu_cores_need_per_gpu))
    limit_s = v.run_s * (1.0 + v.safety_margin)
    lead = max(MIN_SIGNAL_LEAD_S, 60 * math.ceil(v.step_time_s * 2 / 60))
    opts = [
        ("job-name", v.header.name),
        ("nodes", str(v.nodes)),
        ("ntasks-per-node", str(tasks)),
        ("gpus-per-node", str(gpn)),
        ("cpus-per-task", str(cpus_per_gpu * gpus_per_task)),
        ("mem-per-cpu", f"{_mem_per_cpu_mib(v.host_memory_need_bytes_per_gpu, cpus_per_gpu)}M"),
        ("time", time_limit(limit_s)),
        ("exclusive", ""),
        ("requeue", ""),
        ("signal", f"B:USR1@{lead}"),
        ("open-mode", "append"),
        ("output", "%x-%j.out"),
    ]
    layout = (
        f"TP{v.tp} PP{v.pp}" + (f"x{v.vpp}v" if v.vpp > 1 else "") + f" DP{v.dp} CP{v.cp} EP{v.ep}, "
        f"micro-batch {v.micro_batch}, global batch {v.global_batch}, recompute {v.recompute}, ZeRO-{v.zero_stage}"
    )
    head = comment_block(
        v.header,
        "Slurm training job",
        [
            f"chosen: {v.gpus} x {v.hw.accelerator} on {v.nodes} x {v.hw.node}; {layout}",
            f"framework: {launch.version}",
            f"time limit: planned {v.run_s / 3600:.1f} h (failures included) + {v.safety_margin:.0%} safety margin",
            f"checkpoint every {save_interval_steps(v)} steps = {v.checkpoint_interval_s / 60:.1f} min "
            f"(Young/Daly, cluster MTBF {((v.mtbf_s or 0) / 3600):.1f} h)",
        ],
    )
    env = "".join(
        f"export {k}={shlex.quote(val)}  # {why}\n"
        for k, val, why in nccl_env(v.fabric_kind, v.rails, v.hw.vendor)
    )
    body = f"""#!/bin/bash
{_sbatch_lines(opts)}{head}
set -euo pipefail
cd "${{SLURM_SUBMIT_DIR:-.}}"

# Rendezvous: the first host of the allocation.
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
MASTER_PORT=${{MASTER_PORT:-{RDZV_PORT}}}
export MASTER_ADDR MASTER_PORT
export CKPT_DIR=${{CKPT_DIR:-$PWD/checkpoints/{v.header.name}}}
export DATA_PATH=${{DATA_PATH:?set DATA_PATH to the tokenized dataset prefix}}
export MEGATRON_DIR=${{MEGATRON_DIR:-$HOME/Megatron-LM}}

# Fabric: {v.fabric_kind or "none (one node)"}{f", {v.nic_gbps_per_gpu:g} Gb/s per GPU" if v.nic_gbps_per_gpu else ""}
{env}
{_requeue_block(lead)}
{_launch_cmd(launch, gpn)}SRUN_PID=$!
wait "$SRUN_PID"
"""
    return {"train.sbatch": body, **launch.files}


def profile_model_yaml(v: TrainingView, device: str) -> str:
    """The model the profiling job trains: the plan's layer shapes, two layers (GPU), or a
    tiny decoder (CPU, to check the allocation and the launcher only)."""
    m = v.model
    if device == "cpu":
        dims = {"layers": 2, "hidden": 256, "heads": 8, "kv_heads": 2, "ffn_hidden": 704, "vocab": 2048}
    else:
        dims = {"layers": 2, "hidden": m.hidden, "heads": m.heads, "kv_heads": m.kv_heads,
                "ffn_hidden": m.ffn_hidden, "vocab": m.vocab}  # fmt: skip
    lines = [f"name: {m.name}-profile", *(f"{k}: {val}" for k, val in dims.items())]
    lines += [
        "mlp: swiglu",
        "norm: rmsnorm",
        "tied_embeddings: false",
        f"max_seq_len: {max(v.seq_len, 1024)}",
    ]
    what = "two of the plan's layers" if device != "cpu" else "a tiny decoder (checks the launcher only)"
    return comment_block(v.header, f"Profiling model: {what}") + "\n".join(lines) + "\n"


def profile_sbatch(v: TrainingView, device: str = "gpu") -> dict[str, str]:
    """The profiling job on the plan's node type: comms on every GPU of up to two nodes (so
    both tiers are measured), then data-parallel training steps under srun + torchrun."""
    gpu = device == "gpu"
    nodes = min(v.nodes, 2)
    per_node = min(v.gpus, v.hw.gpus_per_node) if gpu else 2
    seq = min(v.seq_len, 2048) if gpu else 32
    opts = [
        ("job-name", f"{v.header.name}-profile"),
        ("nodes", str(nodes)),
        ("ntasks-per-node", str(per_node)),
    ]
    opts += [("gpus-per-node", str(per_node))] if gpu else []
    opts += [("cpus-per-task", "1" if not gpu else str(max(1, math.ceil(v.cpu_cores_need_per_gpu))))]
    opts += [("time", "00:30:00"), ("output", "%x-%j.out")]
    head = comment_block(
        v.header,
        "Slurm profiling job",
        [
            f"measures {nodes} x {v.hw.node} ({per_node} {'GPUs' if gpu else 'CPU ranks'} per node): collectives "
            f"and point-to-point per tier, then DDP training steps ({'NCCL' if gpu else 'gloo'})",
            "then: rightsize calibrate profiles/*.jsonl && rightsize plan SPEC --calibration calibration.json",
        ],
    )
    env = (
        "".join(
            f"export {k}={shlex.quote(val)}\n"
            for k, val, _ in nccl_env(v.fabric_kind if nodes > 1 else None, v.rails, v.hw.vendor)
        )
        if gpu
        else ""
    )
    backend, dev = ("nccl", "cuda") if gpu else ("gloo", "cpu")
    sizes = "--max-bytes 1GiB" if gpu else "--sizes 1024,65536,1048576"
    return {
        "profile.sbatch": f"""#!/bin/bash
{_sbatch_lines(opts)}{head}
set -euo pipefail
cd "${{SLURM_SUBMIT_DIR:-.}}"
mkdir -p profiles
RIGHTSIZE=${{RIGHTSIZE:-rightsize}}
{env}
# 1. Collectives and point-to-point: one task per {"GPU" if gpu else "rank"}; rank/world/rendezvous from srun.
srun --kill-on-bad-exit=1 "$RIGHTSIZE" profile comms --backend {backend} {sizes} --iters 5 \\
    --out "profiles/comms-$SLURM_JOB_ID.jsonl" --format json -o "profiles/comms-$SLURM_JOB_ID.json"

# 2. Data-parallel training steps: one torchrun per node, rendezvous on the first host.
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun --kill-on-bad-exit=1 --ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 \\
  torchrun --nnodes="$SLURM_JOB_NUM_NODES" --nproc-per-node={per_node} \\
    --rdzv-id="$SLURM_JOB_ID" --rdzv-backend=c10d --rdzv-endpoint="$MASTER_ADDR:{RDZV_PORT + 1}" \\
    --no-python "$RIGHTSIZE" profile train --model profile-model.yaml --device {dev} \\
    --batch 1,2 --seq {seq} --steps 3 --warmup 1{" --threads 1" if not gpu else " --dtype bf16"} \\
    --out "profiles/train-$SLURM_JOB_ID.jsonl" --format json -o "profiles/train-$SLURM_JOB_ID.json"
""",
        "profile-model.yaml": profile_model_yaml(v, device),
    }


def serve_sbatch(v: ServingView) -> dict[str, str]:
    """A job array: one vLLM server per replica, on one node each."""
    if v.tp > v.hw.gpus_per_node:
        raise BadInput(
            f"A replica spans {v.nodes_per_replica} nodes (TP{v.tp} on {v.hw.gpus_per_node}-GPU nodes).",
            "Multi-node vLLM replicas need a Ray cluster per replica, which the Slurm export does not write yet.",
            "Export with --target kubernetes (a LeaderWorkerSet per replica), or plan with targets.tp <= GPUs per node.",
        )
    cpus = max(1, math.ceil(v.cpu_cores_need_per_gpu * v.tp))
    mem_gib = max(8, math.ceil(v.host_memory_need_bytes_per_gpu * v.tp / GiB))
    opts = [
        ("job-name", v.header.name),
        ("array", f"0-{v.replicas - 1}"),
        ("nodes", "1"),
        ("ntasks", "1"),
        ("gpus-per-node", str(v.tp)),
        ("cpus-per-task", str(cpus)),
        ("mem", f"{mem_gib}G"),
        ("output", "%x-%A_%a.out"),
    ]
    head = comment_block(
        v.header,
        "Slurm serving job (vLLM)",
        [
            f"chosen: {v.replicas} replica(s) x TP{v.tp} on {v.hw.accelerator} ({v.hw.node}), weights "
            f"{v.weight_precision}, KV cache {v.kv_precision}",
            f"each replica sustains {v.replica_capacity_rps:.2f} req/s within the SLOs; sized for "
            f"{v.design_rate_rps:.1f} req/s; one array task per replica, port 8000 + task id",
            "no --time: the partition's default limit applies to a long-running server",
        ],
    )
    args = " \\\n    ".join(vllm_args(v, port="$((8000 + SLURM_ARRAY_TASK_ID))"))
    return {
        "serve.sbatch": f"""#!/bin/bash
{_sbatch_lines(opts)}{head}
set -euo pipefail
MODEL=${{MODEL:-{v.model.hf_id or ""}}}
: "${{MODEL:?set MODEL to the Hugging Face model id or a local path}}"
srun vllm serve "$MODEL" \\
    {args}
"""
    }
