"""Alert and autoscaling thresholds derived from a plan (never fixed numbers).

Serving (per replica, at the plan's SLO percentile):
- queue limit: a request that finds Q requests waiting is admitted after about Q / mu,
  mu the replica's SLO capacity (req/s). The plan leaves `ttft_slo - ttft_planned` of the
  TTFT budget for queueing beyond what it already predicts, so Q_max = mu x that slack
  (at least 1). No TTFT SLO: one second of queueing (`DEFAULT_QUEUE_BUDGET_S`).
- autoscaling target: scale out before the limit, at the plan's utilisation target of it.
- replica bounds: min = replicas for the mean rate at the utilisation target; max = the
  planned replicas (sized for the peak with headroom) plus the recommended spares.
- KV-cache limit: requests in flight per replica at design load by Little's law
  (lambda x median end-to-end latency, the median standing in for the mean), each holding
  its prompt and on average half its output; their tokens over the replica's KV capacity
  is the planned occupancy. Alert above it times (1 + headroom), at most 0.95 (vLLM
  preempts requests as the cache fills).
- memory: vLLM preallocates `--gpu-memory-utilization` of HBM; alert 2% above it.

Training and both kinds:
- GPU activity: below the planned engine activity x the utilisation target.
- power per GPU: above the planned typical draw by 10%, at most TDP (warning), and above
  TDP (critical).
- memory per GPU (training): above the planned peak + 5% for allocator fragmentation.
"""

from __future__ import annotations

import math

from rightsize.export.plan_view import ServingView, TrainingView
from rightsize.export.vllm import gpu_memory_utilization, replicas_for

DEFAULT_QUEUE_BUDGET_S = 1.0
KV_USAGE_CAP = 0.95
POWER_WARNING_MARGIN = 0.10
ALLOCATOR_SLACK = 0.05
VLLM_PREALLOC_SLACK = 0.02


def queue_limit(v: ServingView) -> float:
    slack = (v.ttft_slo_s - v.ttft_planned_s) if v.ttft_slo_s else DEFAULT_QUEUE_BUDGET_S
    return max(1.0, v.replica_capacity_rps * max(0.0, slack))


def autoscale_waiting_target(v: ServingView) -> int:
    return max(1, math.floor(queue_limit(v) * v.utilisation_target))


def replica_bounds(v: ServingView) -> tuple[int, int]:
    low = min(v.replicas, replicas_for(v.mean_rate_rps, v))
    return low, v.replicas + v.spare_replicas


def kv_planned_fraction(v: ServingView) -> float:
    if v.kv_capacity_tokens <= 0:
        return KV_USAGE_CAP
    in_flight = v.design_rate_rps / v.replicas * v.e2e_p50_s
    tokens = in_flight * (v.mean_prompt_tokens + v.mean_output_tokens / 2.0)
    return min(1.0, tokens / v.kv_capacity_tokens)


def kv_usage_limit(v: ServingView) -> float:
    return round(min(KV_USAGE_CAP, max(0.05, kv_planned_fraction(v) * (1.0 + v.headroom))), 3)


def activity_floor(v: TrainingView | ServingView) -> float:
    return round(v.gpu_activity_fraction * v.utilisation_target, 3)


def power_warning_w(v: TrainingView | ServingView) -> float:
    return round(min(v.hw.tdp_w, v.gpu_power_typical_w * (1.0 + POWER_WARNING_MARGIN)), 1)


def memory_limit_bytes(v: TrainingView | ServingView) -> float:
    if isinstance(v, TrainingView):
        return v.memory_per_gpu_bytes * (1.0 + ALLOCATOR_SLACK)
    return (gpu_memory_utilization(v) + VLLM_PREALLOC_SLACK) * v.hw.hbm_bytes
