"""vLLM server arguments and environment for Intel Gaudi: Intel's vLLM fork for Gaudi
(HabanaAI/vllm-fork, release `FORK_TAG`, forked from vLLM v0.9.0.1, the vLLM of Intel Gaudi
software 1.22.0), launched as `vllm serve` (arguments checked in the tests against the fork's
own `make_arg_parser`, tests/data/engine_args/vllm_fork_gaudi_v0.9.0.1_engine_args.json).

What differs from CUDA/ROCm vLLM (`export.vllm`), each from the fork's own code or its
README_GAUDI.md at the tag:

- `--gpu-memory-utilization` is a fraction of the device memory still free after the
  weights are loaded and a profiling pass has run (vllm/worker/hpu_worker.py:
  `available = free * gpu_memory_utilization`), of which `VLLM_GRAPH_RESERVED_MEM` (0.1,
  exported explicitly) goes to HPU graphs and the rest to the KV cache. The value written
  is the plan's KV bytes per device over that, at most `UTILISATION_CEILING`; where the
  plan's KV capacity does not fit what the fork allocates, `--max-num-seqs` is cut to the
  mean-length requests whose KV the fork holds and the header says so.
- `--block-size 128`: README_GAUDI's recommended block size on Gaudi (16 or 32 leave the
  matrix engines underused); the plan's KV capacity is in tokens, so only paging granularity
  changes.
- FP8 weights or KV cache run through Intel Neural Compressor (`--quantization inc`,
  `--kv-cache-dtype fp8_inc`, README_GAUDI "Quantization, FP8 Inference and Model Calibration
  Process"), which needs the model's calibration measurements: `QUANT_CONFIG` names the
  quantization config file written by Intel's calibration procedure; the export requires it.
- Environment (README_GAUDI "Environment Variables", and the docker run line of its
  installation section): `PT_HPU_ENABLE_LAZY_COLLECTIVES=true` for tensor parallelism,
  `OMPI_MCA_btl_vader_single_copy_mechanism=none`, never `HABANA_VISIBLE_DEVICES` (set by
  Intel's Slurm GRES plugin or the Kubernetes device plugin to the devices allocated).
- A replica spanning nodes (Ray + HCCL over the hosts' interfaces) is not written.
"""

from __future__ import annotations

from rightsize.constants import GiB
from rightsize.errors import BadInput
from rightsize.export.k8s_platform import data
from rightsize.export.names import Arg
from rightsize.export.plan_view import ServingView
from rightsize.export.vllm import (
    MAX_NUM_SEQS_CAP,
    RUNTIME_BYTES,
    activation_bytes_per_gpu,
    kv_bytes_per_token_per_gpu,
    max_num_seqs,
)

FORK_TAG = str(data()["stacks"]["intel"]["serving"]["fork_tag"])  # catalog kubernetes.yaml, with its source
VLLM_GAUDI_VERSION = f"Intel's vLLM fork for Gaudi {FORK_TAG} (vLLM v0.9.0.1, Intel Gaudi software 1.22.0)"
BLOCK_TOKENS = 128  # README_GAUDI "Recommended vLLM Parameters"
GRAPH_RESERVED = 0.1  # VLLM_GRAPH_RESERVED_MEM, the fork's default (hpu_worker.py), exported explicitly
UTILISATION_CEILING = 0.95  # keep 5% of the free memory as margin (the fork's default is 0.9)
QUANT_CONFIG_DIR = "/mnt/inc"  # Kubernetes: where the INC calibration volume is mounted
QUANT_CONFIG_FILE = "maxabs_quant_g3.json"  # README_GAUDI's example name for Gaudi 3


def uses_inc(v: ServingView) -> bool:
    """FP8 weights or KV cache: Intel Neural Compressor with calibration measurements."""
    return v.weight_precision == "fp8" or v.kv_precision.startswith("fp8")


def free_bytes_after_profile(v: ServingView) -> float:
    """What one device has free when the fork sizes its KV cache: HBM less the weights, one
    profiled forward pass and the runtime (the same terms as `export.vllm`)."""
    return v.hw.hbm_bytes - v.weights_bytes_per_gpu - activation_bytes_per_gpu(v) - RUNTIME_BYTES


def planned_kv_bytes(v: ServingView) -> float:
    """The plan's KV cache on one device (its KV capacity, or every planned sequence at full
    length for plans that carry none)."""
    tokens = (
        v.kv_capacity_tokens
        if v.kv_bytes_per_token and v.kv_capacity_tokens
        else (max_num_seqs(v) * v.max_model_len)
    )
    return tokens * kv_bytes_per_token_per_gpu(v)


def memory_utilization(v: ServingView) -> float:
    """`--gpu-memory-utilization` in the fork's sense: the share of the free memory whose
    (1 - GRAPH_RESERVED) part holds the plan's KV cache, at most UTILISATION_CEILING."""
    free = free_bytes_after_profile(v)
    if free <= 0:
        raise BadInput(
            f"The plan's weights ({v.weights_bytes_per_gpu / GiB:.1f} GiB per device) leave no memory on a "
            f"{v.hw.accelerator} ({v.hw.hbm_bytes / GiB:.0f} GiB) for vLLM's profiling pass.",
            "vLLM on Gaudi sizes its KV cache from the memory left after loading weights and profiling.",
            "Re-plan with this rightsize (a higher tensor-parallel degree).",
        )
    need = planned_kv_bytes(v) / ((1 - GRAPH_RESERVED) * free)
    return round(min(UTILISATION_CEILING, need + 0.005), 2)


def held_kv_tokens(v: ServingView) -> float:
    """KV tokens one device's cache holds at `memory_utilization`."""
    held = memory_utilization(v) * (1 - GRAPH_RESERVED) * free_bytes_after_profile(v)
    return held / kv_bytes_per_token_per_gpu(v)


def gaudi_max_num_seqs(v: ServingView) -> int:
    """The plan's concurrency, at most the mean-length requests (prompt plus output, as
    `export.vllm.max_num_seqs` counts them) whose KV the fork's cache holds."""
    per_request = v.mean_prompt_tokens + v.mean_output_tokens
    fit = int(held_kv_tokens(v) // per_request) if per_request > 0 else MAX_NUM_SEQS_CAP
    return max(1, min(max_num_seqs(v), fit))


def refuse_multi_node(v: ServingView) -> None:
    if v.nodes_per_replica > 1:
        raise BadInput(
            f"A replica of TP{v.tp}" + (f" x PP{v.pp}" if v.pp > 1 else "") + f" spans {v.nodes_per_replica} "
            f"{v.hw.node} nodes; vLLM on Gaudi is exported for one node per replica.",
            "Multi-node vLLM on Gaudi runs Ray over HCCL with the hosts' scale-out interfaces named "
            "(HCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME) and every Gaudi NIC port up, which these files do not set up.",
            f"Re-plan with at most {v.hw.gpus_per_node} devices per replica (targets.max_tp).",
        )
    if v.attention_dp > 1 or v.disaggregated is not None:
        raise BadInput(
            "The plan uses attention data parallelism or separate prefill and decode pools; vLLM on Gaudi is "
            "exported for tensor- and pipeline-parallel replicas.",
            f"{VLLM_GAUDI_VERSION} is exported without data-parallel or disaggregated serving.",
            "Re-plan without serving.expert_parallel / disaggregation, or plan for GPUs.",
        )


def gaudi_arg_list(v: ServingView) -> list[Arg]:
    """The fork's `vllm serve` arguments as (flag, value) pairs, the model and port left out."""
    refuse_multi_node(v)
    args: list[Arg] = [
        ("--served-model-name", v.model.name),
        ("--tensor-parallel-size", v.tp),
        *([("--pipeline-parallel-size", v.pp)] if v.pp > 1 else []),
        *([("--enable-expert-parallel", None)] if v.ep > 1 else []),
        ("--dtype", "bfloat16"),
        ("--max-model-len", v.max_model_len),
        ("--max-num-seqs", gaudi_max_num_seqs(v)),
        ("--gpu-memory-utilization", memory_utilization(v)),
        ("--block-size", BLOCK_TOKENS),
    ]
    if uses_inc(v):
        args += [("--quantization", "inc")]
        args += [("--kv-cache-dtype", "fp8_inc" if v.kv_precision.startswith("fp8") else "auto")]
    return args


def gaudi_env(v: ServingView) -> list[tuple[str, str, str]]:
    """(variable, value, why) every replica sets."""
    env = [
        ("OMPI_MCA_btl_vader_single_copy_mechanism", "none", "as Intel's docker run line for vLLM on Gaudi sets it"),
        ("VLLM_GRAPH_RESERVED_MEM", str(GRAPH_RESERVED), "HPU graphs' share of the usable memory, as "
         "--gpu-memory-utilization was computed with it"),
    ]  # fmt: skip
    if v.tp * v.pp > 1:
        env.append(("PT_HPU_ENABLE_LAZY_COLLECTIVES", "true", "README_GAUDI: required for tensor-parallel inference "
                    "with HPU graphs"))  # fmt: skip
    return env


def header_lines(v: ServingView) -> list[str]:
    """What the header of a Gaudi serving file says about the engine's memory and precision."""
    free = free_bytes_after_profile(v)
    util = memory_utilization(v)
    lines = [
        f"engine: {VLLM_GAUDI_VERSION}; --gpu-memory-utilization {util} of the {free / GiB:.1f} GiB free after "
        f"weights and profiling, {1 - GRAPH_RESERVED:.0%} of it KV cache "
        f"({planned_kv_bytes(v) / GiB:.1f} GiB planned per device)",
    ]
    if gaudi_max_num_seqs(v) < max_num_seqs(v):
        lines.append(
            f"the fork keeps {GRAPH_RESERVED:.0%} of its usable memory for HPU graphs and "
            f"{1 - UTILISATION_CEILING:.0%} as margin: its KV cache holds {held_kv_tokens(v):,.0f} tokens per "
            f"device, {gaudi_max_num_seqs(v)} mean-length requests, so --max-num-seqs is {gaudi_max_num_seqs(v)} "
            f"(planned {max_num_seqs(v)})"
        )
    if uses_inc(v):
        lines.append(
            "FP8 through Intel Neural Compressor: QUANT_CONFIG must name the model's quantization config, "
            "written by Intel's calibration procedure (docs.habana.ai 'vLLM FP8 Inference')"
        )
    return lines
