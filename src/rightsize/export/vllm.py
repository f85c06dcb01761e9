"""vLLM server arguments from a serving plan (vLLM v0.10, `vllm serve`; engine arguments of
vllm/engine/arg_utils.py). The limits are the plan's:

- `--tensor-parallel-size`: the plan's TP.
- `--max-model-len`: the longest prompt plus the longest output the traffic spec allows,
  capped at the model's context.
- `--max-num-seqs`: `engine.max_batch` when the spec fixes it, else the number of mean-length
  requests whose whole KV cache fits the planned KV capacity (what the planner's simulator
  admits), at most 1024.
- `--gpu-memory-utilization`: the planned weights plus KV cache per GPU over its HBM, plus
  a 3% workspace allowance, at most 0.95.
- `--kv-cache-dtype` / `--quantization`: the planned KV and weight precisions.
"""

from __future__ import annotations

import math

from rightsize.export.names import Arg, ShellExpr, shell_args
from rightsize.export.plan_view import ServingView

VLLM_VERSION = "vLLM v0.10"
WORKSPACE_FRACTION = 0.03  # activations, CUDA graphs and sampler buffers beyond weights + KV
MAX_NUM_SEQS_CAP = 1024


def max_num_seqs(v: ServingView) -> int:
    if v.max_batch:
        return v.max_batch
    per_request = v.mean_prompt_tokens + v.mean_output_tokens
    fit = int(v.kv_capacity_tokens // per_request) if per_request > 0 else MAX_NUM_SEQS_CAP
    return max(1, min(MAX_NUM_SEQS_CAP, fit))


def gpu_memory_utilization(v: ServingView) -> float:
    kv_per_gpu = v.kv_capacity_tokens * v.kv_bytes_per_token / v.tp
    frac = (v.weights_bytes_per_gpu + kv_per_gpu) / v.hw.hbm_bytes + WORKSPACE_FRACTION
    return round(min(0.95, max(0.1, frac)), 2)


def vllm_arg_list(v: ServingView) -> list[Arg]:
    """The engine arguments as (flag, value) pairs, the port left out. `--served-model-name`
    carries the model name as given (a user string): write it with `names.shell_args` into a
    script, or `names.argv` into an argument vector, never pasted."""
    args: list[Arg] = [
        ("--served-model-name", v.model.name),
        ("--tensor-parallel-size", v.tp),
        ("--max-model-len", v.max_model_len),
        ("--max-num-seqs", max_num_seqs(v)),
        ("--gpu-memory-utilization", gpu_memory_utilization(v)),
        ("--block-size", v.block_tokens),
        ("--kv-cache-dtype", "fp8" if v.kv_precision.startswith("fp8") else "auto"),
    ]
    if v.weight_precision == "fp8":
        args.append(("--quantization", "fp8"))
    return args


def vllm_args(v: ServingView, port: int | str | ShellExpr = 8000) -> list[str]:
    """`vllm_arg_list` and `--port` as shell text (`names.shell_args`: one quoted
    `--flag WORD` per entry), ready to join into a script. `port` is a number or a code-made
    shell expression such as `ShellExpr("$((8000 + SLURM_ARRAY_TASK_ID))")` (a str is taken
    as one; `ShellExpr` refuses quotes, backslashes and backticks)."""
    value = ShellExpr(port) if isinstance(port, str) and not port.isdigit() else port
    return shell_args([*vllm_arg_list(v), ("--port", value)])


def replicas_for(rate_rps: float, v: ServingView) -> int:
    """Replicas for `rate_rps` with each replica at most at its utilisation target."""
    return max(1, math.ceil(rate_rps / (v.replica_capacity_rps * v.utilisation_target)))
