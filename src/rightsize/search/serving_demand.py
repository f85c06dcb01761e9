"""From a chosen serving configuration to the `Demand` it puts on the infrastructure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rightsize.perf.params import count_params
from rightsize.search.demand import Demand
from rightsize.search.serving_costs import llm_served
from rightsize.spec.inference import InferenceSpec

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.search.serving_plan import ServingCandidate

# While a replica is busy, LLM decode keeps the GPU's memory system saturated: measured
# boards draw most of their TDP (MLPerf Inference v4.x power results: 8x H100 SXM systems
# at ~5-6 kW of ~10 kW maximum under the offline Llama 2 70B load). 0.7 of the way from idle
# to TDP is the intensity assumed while busy.
SERVING_BUSY_INTENSITY = 0.7
# Host side of a serving replica: the engine's scheduler, tokeniser and HTTP front end
# (vLLM recommends at least 2 physical cores per GPU); host memory holds the model files
# for a fast reload and swap space for preempted KV blocks (vLLM swap_space 4 GiB per GPU
# by default; budgeted here at 2x the GPU's weights share, at least 64 GiB).
SERVING_CPU_CORES_PER_GPU = 2.0
SERVING_MIN_HOST_MEMORY_BYTES_PER_GPU = 64.0 * 2**30
# Bytes kept per request for logs and replay: prompt and output token ids as uint32.
LOG_BYTES_PER_TOKEN = 4.0


def serving_demand(spec: InferenceSpec, c: ServingCandidate) -> Demand:
    tr = spec.traffic
    gpus = int(c.gpus)
    design = float(c.design_rate_rps or 0.0)
    capacity = float(c.replica_capacity_rps or 0.0) * c.replicas
    average = tr.rate_per_s or tr.peak_rate_per_s
    # the work actually served: the traffic's average rate x mean output tokens (one owner)
    _, out_tps = llm_served(spec, float(c.output_tokens_per_s))
    if spec.serving.scenario == "serving" and average and design:
        duty = min(1.0, average / capacity) if capacity else 1.0
        base = tr.peak_rate_per_s or average
    else:  # offline / fixed batch: the engine runs flat out
        duty, base = 1.0, None
    weights = float(c.memory.get("weights_bytes_per_gpu", 0.0)) * c.gpus_per_replica
    mean_tokens = tr.prompt_tokens.mean_tokens + tr.output_tokens.mean_tokens
    out_per_req = max(tr.output_tokens.mean_tokens, 1.0)
    log_rate = out_tps / out_per_req * mean_tokens * LOG_BYTES_PER_TOKEN
    return Demand(
        workload="serving" if spec.serving.scenario == "serving" else "batch_inference",
        name=spec.name or spec.model.name,
        accelerator=c.accelerator,
        node=c.node,
        gpus=gpus,
        compute_utilisation=SERVING_BUSY_INTENSITY,
        duty_cycle=duty,
        run_s=None,
        runs_per_month=None,
        work_unit="output_token",
        work_units_per_s=out_tps,
        work_units_total=None,
        dataset_bytes=0.0,
        data_read_bytes_per_s=log_rate,
        bytes_per_work_unit=LOG_BYTES_PER_TOKEN,
        params=count_params(spec.model).total,
        weights_bytes=weights,
        checkpoint_bytes=0.0,
        host_memory_bytes_per_gpu=max(SERVING_MIN_HOST_MEMORY_BYTES_PER_GPU, 2.0 * weights / max(gpus, 1)),
        cpu_cores_per_gpu=SERVING_CPU_CORES_PER_GPU,
        replicas=int(c.replicas),
        gpus_per_replica=int(c.gpus_per_replica),
        design_rate_rps=design or None,
        base_rate_rps=base,
        kv_transfer_bytes_per_s=_kv_over_nics_bytes_per_s(c, design),
    )


def _kv_over_nics_bytes_per_s(c: ServingCandidate, design_rps: float) -> float:
    """The KV-cache stream of a disaggregated plan over the scale-out NICs at the design rate
    (0 when aggregated, or when the pools share a scale-up domain and the KV cache stays on it)."""
    d = c.disaggregation
    if d is None or d.chosen != "disaggregated" or d.kv_transfer is None:
        return 0.0
    if d.kv_transfer.link.endswith("(scale-up)"):
        return 0.0
    return float(d.kv_transfer.bytes_per_request_mean) * design_rps
