"""TensorRT-LLM server configuration from a serving plan (`trtllm-serve`, TensorRT-LLM 1.0,
PyTorch backend). The command carries the model, host, port and backend; the sizing goes in
the `--extra_llm_api_options` YAML, whose keys are the LLM API's arguments
(tensorrt_llm/llmapi/llm_args.py, `TorchLlmArgs`):

- `tensor_parallel_size`, `pipeline_parallel_size`, `moe_expert_parallel_size` (MoE only):
  the plan's parallelism. TensorRT-LLM's world is tensor x pipeline (x context) ranks and its
  MoE splits the tensor-parallel ranks into moe_tp x moe_ep (tensorrt_llm/mapping.py: "world_size
  must equal to tp_size * pp_size * cp_size", "moe_tp_size * moe_ep_size ... must equal to
  moe_world_size"). EP within TP (ep <= tp, ep | tp) is written as is; the planner's wide
  expert parallelism (TP1 x EP n: attention data-parallel, experts over n GPUs) is
  `tensor_parallel_size: n`, `moe_expert_parallel_size: n`, `enable_attention_dp: true`
  (attention runs with TP 1 on each rank, as planned). EP wider than a TP above 1 (attention
  TP t x DP) has no TensorRT-LLM mapping (attention DP means attention TP 1): refused.
- `max_batch_size`: the vLLM export's `--max-num-seqs` (same admission rule);
  `max_num_tokens`: the tokens one forward pass schedules, the vLLM export's profiled batch;
  `max_seq_len`: the longest prompt plus the longest output the traffic allows.
- `kv_cache_config.free_gpu_memory_fraction`: TensorRT-LLM sizes the KV pool as a fraction
  of the memory still *free* once the weights and activation buffers are loaded, so it is the
  planned KV cache over (HBM - weights - what the engine keeps besides: its measured runtime,
  communication buffers and profiling activations, `perf.engine_memory`), in [0.05, 0.95];
  `kv_cache_config.dtype: fp8` for an FP8 KV cache.
FP8 weights come from an FP8 checkpoint (ModelOpt), not from a flag: the header says so.
"""

from __future__ import annotations

from typing import Any

from rightsize.catalog.engines import get_engine
from rightsize.errors import BadInput
from rightsize.export.names import Arg
from rightsize.export.plan_view import ServingView
from rightsize.export.vllm import (
    PROFILE_TOKENS,
    RUNTIME_BYTES,
    activation_bytes_per_gpu,
    kv_bytes_per_token_per_gpu,
    max_num_seqs,
)
from rightsize.perf.engine_memory import engine_memory

TRTLLM_VERSION = "TensorRT-LLM 1.0.0"
COMMAND = ("trtllm-serve",)
MULTI_NODE_LAUNCHER = "trtllm-llmapi-launch"  # wraps trtllm-serve under srun/mpirun: one rank per GPU
OPTIONS_FILE = "extra-llm-api-options.yaml"
FREE_FRACTION_FLOOR, FREE_FRACTION_CEILING = 0.05, 0.95


def check_vendor(v: ServingView) -> None:
    if v.hw.vendor != "nvidia":
        raise BadInput(
            f"TensorRT-LLM cannot serve this plan: it runs on {v.hw.accelerator} ({v.hw.vendor}).",
            "TensorRT-LLM runs on NVIDIA GPUs only (CUDA, TensorRT and its own kernels).",
            "Export with --engine vllm (or sglang on NVIDIA/AMD GPUs), or plan for NVIDIA GPUs.",
        )


def engine_reserved_bytes(v: ServingView) -> float:
    """What TensorRT-LLM keeps on each GPU besides weights and KV cache with the exported
    `max_num_tokens`: its measured runtime, communication buffers and profiling activations
    (perf.engine_memory, the figures the planner sizes TensorRT-LLM's KV cache with)."""
    mem = get_engine("tensorrt-llm").memory
    if mem is None:
        return activation_bytes_per_gpu(v) + RUNTIME_BYTES
    return engine_memory(mem, v.model, v.tp, v.hw.accelerator, PROFILE_TOKENS).total_bytes


def free_gpu_memory_fraction(v: ServingView) -> float:
    """The planned KV cache over the memory free after weights, activations and runtime."""
    kv_tokens = (
        v.kv_capacity_tokens
        if v.kv_bytes_per_token and v.kv_capacity_tokens
        else max_num_seqs(v) * v.max_model_len
    )
    kv = kv_tokens * kv_bytes_per_token_per_gpu(v)
    free = v.hw.hbm_bytes - v.weights_bytes_per_gpu - engine_reserved_bytes(v)
    if free <= 0:
        return FREE_FRACTION_FLOOR
    return round(min(FREE_FRACTION_CEILING, max(FREE_FRACTION_FLOOR, kv / free)), 2)


def _parallel(v: ServingView) -> dict[str, Any]:
    """TensorRT-LLM's parallel sizes for the plan's replica (see the module docstring)."""
    if v.ep <= 1:
        return {"tensor_parallel_size": v.tp, "pipeline_parallel_size": v.pp}
    if v.ep <= v.tp:
        if v.tp % v.ep:
            raise BadInput(
                f"TensorRT-LLM cannot split TP{v.tp} into expert-parallel groups of {v.ep}.",
                "Its MoE layers run moe_tp x moe_ep = tensor_parallel_size ranks (tensorrt_llm/mapping.py).",
                f"Re-plan with serving.expert_parallel a divisor of {v.tp}, or export with --engine vllm.",
            )
        return {
            "tensor_parallel_size": v.tp,
            "pipeline_parallel_size": v.pp,
            "moe_expert_parallel_size": v.ep,
        }
    if v.tp > 1:
        raise BadInput(
            f"TensorRT-LLM cannot run this plan's attention TP{v.tp} with expert parallelism over {v.ep} GPUs.",
            "Wider expert than tensor parallelism needs attention data parallelism, which in TensorRT-LLM "
            "runs attention with TP 1 on every rank (enable_attention_dp), not the plan's TP groups.",
            "Re-plan with tp 1 (wide EP) or ep at most tp, or export with --engine sglang.",
        )
    return {
        "tensor_parallel_size": v.ep,
        "pipeline_parallel_size": v.pp,
        "moe_expert_parallel_size": v.ep,
        "enable_attention_dp": True,
    }


def llm_api_options(v: ServingView) -> dict[str, Any]:
    """The `--extra_llm_api_options` mapping (serialise with yaml.safe_dump)."""
    kv: dict[str, Any] = {"free_gpu_memory_fraction": free_gpu_memory_fraction(v)}
    if v.kv_precision.startswith("fp8"):
        kv["dtype"] = "fp8"
    par = _parallel(v)
    opts: dict[str, Any] = {
        "tensor_parallel_size": par.pop("tensor_parallel_size"),
        "pipeline_parallel_size": par.pop("pipeline_parallel_size"),
        "max_batch_size": max_num_seqs(v),
        "max_num_tokens": PROFILE_TOKENS,
        "max_seq_len": v.max_model_len,
        "kv_cache_config": kv,
        **par,
    }
    return opts


def trtllm_arg_list(v: ServingView, options_path: str) -> list[Arg]:
    """`trtllm-serve`'s arguments after the model (host and port left out)."""
    check_vendor(v)
    return [("--backend", "pytorch"), ("--extra_llm_api_options", options_path)]


def weights_note(v: ServingView) -> str:
    if v.weight_precision == "fp8":
        return "FP8 weights: serve an FP8 checkpoint (ModelOpt-quantised, e.g. the model's -FP8 release)"
    return f"weights {v.weight_precision} as in the checkpoint"
