"""vLLM server arguments from a serving plan (vLLM v0.10, `vllm serve`; engine arguments of
vllm/engine/arg_utils.py). The limits are the plan's:

- `--tensor-parallel-size`: the plan's TP; `--pipeline-parallel-size` its PP when above 1;
  `--enable-expert-parallel` when the plan shards MoE experts (EP = TP x DP in vLLM); a
  wide expert-parallel plan (attention data-parallel on each of its `ep` GPUs) adds
  `--data-parallel-size`, within one node (vLLM's multi-node data parallelism needs a
  launcher per node that these exports do not write: refused, SGLang named instead).
- `--max-model-len`: the longest prompt plus the longest output the traffic spec allows,
  capped at the model's context.
- `--max-num-seqs`: `engine.max_batch` when the spec fixes it, a fixed-batch plan's
  `serving.batch`, else the number of mean-length
  requests whose whole KV cache fits the planned KV capacity (what the planner's simulator
  admits), at most 1024.
- `--gpu-memory-utilization`: what one GPU holds over its HBM (`memory_per_gpu`): the
  planned weights, the KV cache (the planned KV capacity; for offline and fixed-batch plans,
  which carry no KV figures, `--max-num-seqs` full-length sequences at the model's KV bytes
  per token), the activations of one profiled forward pass (vLLM profiles a batch of
  `max_num_batched_tokens`, 8192 on the OpenAI server, plus the sampler's fp32 logits), and
  a fixed 2 GiB for the CUDA/ROCm context, graphs and communicator buffers (vLLM counts
  non-torch memory in the budget) plus a 3% workspace allowance; kept within [0.3, 0.95]:
  below 0.3 nothing is saved (vLLM only preallocates), above 0.95 the runtime has no room.
- `--kv-cache-dtype` / `--quantization`: the planned KV and weight precisions.
"""

from __future__ import annotations

import math

from rightsize.errors import BadInput
from rightsize.export.names import Arg, ShellExpr, shell_args
from rightsize.export.plan_view import ServingView

VLLM_VERSION = "vLLM v0.10"
WORKSPACE_FRACTION = 0.03  # allocator fragmentation and sampler buffers beyond the terms below
MAX_NUM_SEQS_CAP = 1024
PROFILE_TOKENS = 8192  # vLLM's max_num_batched_tokens for the OpenAI server on >= 70 GiB GPUs (EngineArgs)
RUNTIME_BYTES = 2 * 2**30  # CUDA/ROCm context, CUDA graphs, NCCL buffers: outside torch, inside the budget
UTILISATION_FLOOR, UTILISATION_CEILING = 0.3, 0.95
ACT_BYTES = 2  # bf16 activations
KV_ELEMENT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5, "fp4": 0.5}


def max_num_seqs(v: ServingView) -> int:
    if v.max_batch:
        return v.max_batch
    if v.scenario == "fixed_batch" and v.stream_batch:
        return min(MAX_NUM_SEQS_CAP, v.stream_batch)  # the spec's concurrent streams
    per_request = v.mean_prompt_tokens + v.mean_output_tokens
    fit = int(v.kv_capacity_tokens // per_request) if per_request > 0 else MAX_NUM_SEQS_CAP
    return max(1, min(MAX_NUM_SEQS_CAP, fit))


def kv_bytes_per_token_per_gpu(v: ServingView) -> float:
    """KV cache bytes one token takes on one GPU: the plan's figure split over TP when it has
    one, else from the model (K and V per layer per KV head, or the MLA latent), KV heads
    replicated when there are fewer than TP ranks."""
    if v.kv_bytes_per_token:
        return v.kv_bytes_per_token / v.tp
    m, elem = v.model, KV_ELEMENT_BYTES[v.kv_precision]
    if m.kv_lora_rank:  # multi-head latent attention: one compressed latent per layer, on every rank
        return m.layers * (m.kv_lora_rank + (m.qk_rope_head_dim or 0)) * elem
    return 2 * m.layers * math.ceil(m.kv_heads / v.tp) * m.head_dim * elem


def activation_bytes_per_gpu(v: ServingView) -> float:
    """One profiled forward pass: PROFILE_TOKENS tokens of hidden states and the MLP's
    intermediate (split over TP), plus fp32 logits for every running sequence."""
    m = v.model
    hidden = PROFILE_TOKENS * (4 * m.hidden + 2 * m.ffn_hidden / v.tp) * ACT_BYTES
    return hidden + max_num_seqs(v) * m.vocab * 4


def gpu_memory_bytes(v: ServingView) -> float:
    """What one GPU holds while serving the plan (weights, KV, activations, runtime)."""
    if v.kv_bytes_per_token and v.kv_capacity_tokens:
        kv_tokens = v.kv_capacity_tokens  # the planned KV capacity of a replica
    else:
        kv_tokens = max_num_seqs(v) * v.max_model_len  # every planned sequence at full length
    kv = kv_tokens * kv_bytes_per_token_per_gpu(v)
    return v.weights_bytes_per_gpu + kv + activation_bytes_per_gpu(v) + RUNTIME_BYTES


def gpu_memory_utilization(v: ServingView) -> float:
    frac = gpu_memory_bytes(v) / v.hw.hbm_bytes + WORKSPACE_FRACTION
    return round(min(UTILISATION_CEILING, max(UTILISATION_FLOOR, frac)), 2)


def vllm_arg_list(v: ServingView) -> list[Arg]:
    """The engine arguments as (flag, value) pairs, the port left out. `--served-model-name`
    carries the model name as given (a user string): write it with `names.shell_args` into a
    script, or `names.argv` into an argument vector, never pasted."""
    if v.attention_dp > 1 and v.nodes_per_replica > 1:
        raise BadInput(
            f"The plan spreads a replica's experts over {v.ep} GPUs on {v.nodes_per_replica} "
            f"{v.hw.node} nodes, attention data-parallel on each; the vLLM export writes data "
            "parallelism within one node.",
            f"{VLLM_VERSION} runs multi-node data parallelism with one launcher per node "
            "(--data-parallel-size-local, --data-parallel-start-rank, --headless), which these "
            "files do not set up.",
            "Export with --engine sglang (DP attention over nodes), or plan serving.expert_parallel "
            f"of at most {v.hw.gpus_per_node}.",
        )
    args: list[Arg] = [
        ("--served-model-name", v.model.name),
        ("--tensor-parallel-size", v.tp),
        *([("--pipeline-parallel-size", v.pp)] if v.pp > 1 else []),
        *([("--data-parallel-size", v.attention_dp)] if v.attention_dp > 1 else []),
        *([("--enable-expert-parallel", None)] if v.ep > 1 else []),
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
