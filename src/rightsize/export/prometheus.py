"""Prometheus rule files from a plan: recording rules and alerts whose thresholds come from
the plan (`export.thresholds`), and a `promtool test rules` file with synthetic series that
break each threshold (every alert must fire) and series as planned (none may fire).

Metric names come from the sourced, dated map in `catalog/data/metric_names.yaml`: where a
quantity has had several names (vLLM's KV-cache gauge and inter-token histogram were
renamed; dcgm-exporter's 1.x-compatibility names), the rule reads all of them with `or`,
converting each name's unit, so one file serves every listed version. The header lists the
names and the versions they cover.
"""

from __future__ import annotations

from typing import Any

from rightsize.catalog.metric_names import MetricName, metric_spec
from rightsize.errors import BadInput
from rightsize.export.header import comment_block, dump_yaml
from rightsize.export.names import promql_string
from rightsize.export.plan_view import ServingView, TrainingView
from rightsize.export.thresholds import (
    activity_floor,
    kv_usage_limit,
    memory_limit_bytes,
    power_warning_w,
    queue_limit,
)

GPU_BY = "Hostname, gpu"
VLLM_BY = "model_name, instance"
RULES_FILE = "rightsize-rules.yml"
TEST_FILE = "rightsize-rules.test.yml"


def _names(key: str) -> list[MetricName]:
    seen: dict[str, MetricName] = {}
    for e in metric_spec(key).names:
        seen.setdefault(e.name, e)
    return list(seen.values())


def _gauge(key: str, agg: str, by: str, selector: str = "") -> str:
    """`agg by (by) (name)` for every name of `key`, each scaled to SI, joined with `or`."""
    parts = []
    for e in _names(key):
        scale = f" * {e.to_si:.12g}" if e.to_si != 1.0 else ""
        parts.append(f"{agg} by ({by}) ({e.name}{selector}){scale}")
    return "\n  or\n".join(parts)


def _quantile(key: str, q: float, selector: str) -> str:
    inner = "\n    or\n".join(
        f"sum by (le, model_name) (rate({e.name}_bucket{selector}[5m]))" for e in _names(key)
    )
    return f"histogram_quantile({q:g},\n    {inner}\n)"


def _versions(keys: list[str]) -> list[str]:
    out = ["metric names (catalog/data/metric_names.yaml; `or` joins renamed series):"]
    for key in keys:
        for e in _names(key):
            span = f"{e.exporter} {e.since}" + (f" until {e.until}" if e.until else " onwards")
            out.append(f"  {key}: {e.name} [{e.unit}] ({span}; as of {e.as_of})")
    return out


def _alert(name: str, expr: str, for_: str, severity: str, summary: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": severity, "source": "rightsize"},
        "annotations": {"summary": summary},
    }


def _gpu_rules(v: TrainingView | ServingView) -> list[dict[str, Any]]:
    floor, warn, mem = activity_floor(v), power_warning_w(v), memory_limit_bytes(v)
    return [
        {"record": "rightsize:gpu_engine_active:ratio", "expr": _gauge("gr_engine_active", "avg", GPU_BY)},
        {"record": "rightsize:gpu_power:watts", "expr": _gauge("power_usage", "max", GPU_BY)},
        {"record": "rightsize:gpu_fb_used:bytes", "expr": _gauge("fb_used", "max", GPU_BY)},
        _alert(
            "RightsizeGPUActivityBelowPlan",
            f"rightsize:gpu_engine_active:ratio < {floor:g}",
            "30m",
            "warning",
            f"GPU engine activity below {floor:.0%} (planned {v.gpu_activity_fraction:.0%} x utilisation "
            f"target {v.utilisation_target:.0%}): the GPUs are idler than planned",
        ),
        _alert(
            "RightsizeGPUPowerAboveBudget",
            f"rightsize:gpu_power:watts > {warn:g}",
            "15m",
            "warning",
            f"GPU power above {warn:g} W (planned typical {v.gpu_power_typical_w:.0f} W + 10%, at most TDP)",
        ),
        _alert(
            "RightsizeGPUPowerAboveTDP",
            f"rightsize:gpu_power:watts > {v.hw.tdp_w:g}",
            "5m",
            "critical",
            f"GPU power above its {v.hw.tdp_w:g} W TDP, the plan's power budget per GPU",
        ),
        _alert(
            "RightsizeGPUMemoryAbovePlan",
            f"rightsize:gpu_fb_used:bytes > {mem:.6g}",
            "10m",
            "warning",
            f"GPU memory above the planned peak ({mem / 2**30:.1f} GiB)",
        ),
    ]


AGGREGATES = {  # recorded series -> expression over the per-GPU records (one series per node or cluster)
    "rightsize:node_gpu_engine_active:avg": "avg by (Hostname) (rightsize:gpu_engine_active:ratio)",
    "rightsize:node_gpu_power:watts": "sum by (Hostname) (rightsize:gpu_power:watts)",
    "rightsize:cluster_gpu_engine_active:avg": "avg(rightsize:gpu_engine_active:ratio)",
    "rightsize:cluster_gpu_engine_active:min": "min(rightsize:gpu_engine_active:ratio)",
    "rightsize:cluster_gpu_engine_active:max": "max(rightsize:gpu_engine_active:ratio)",
    "rightsize:cluster_gpus_reporting:count": "count(rightsize:gpu_engine_active:ratio)",
    "rightsize:cluster_gpu_power:watts": "sum(rightsize:gpu_power:watts)",
}


def _aggregate_rules() -> list[dict[str, Any]]:
    """Per node and cluster-wide aggregates, recorded by Prometheus: a dashboard or `rightsize
    monitor` over thousands of GPUs reads a few series instead of one per GPU."""
    return [{"record": name, "expr": expr} for name, expr in AGGREGATES.items()]


def _pct_name(pct: float) -> str:
    return f"p{pct:g}".replace(".", "_")


def _serving_rules(v: ServingView) -> list[dict[str, Any]]:
    sel = f"{{model_name={promql_string(v.model.name)}}}"
    p = _pct_name(v.slo_percentile)
    q = v.slo_percentile / 100.0
    rules: list[dict[str, Any]] = [
        {"record": f"rightsize:vllm_ttft_seconds:{p}", "expr": _quantile("time_to_first_token", q, sel)},
        {"record": f"rightsize:vllm_itl_seconds:{p}", "expr": _quantile("inter_token_latency", q, sel)},
        {
            "record": "rightsize:vllm_kv_cache_usage:ratio",
            "expr": _gauge("kv_cache_usage", "max", VLLM_BY, sel),
        },
        {
            "record": "rightsize:vllm_requests_waiting:max",
            "expr": _gauge("num_requests_waiting", "max", VLLM_BY, sel),
        },
    ]
    if v.ttft_slo_s:
        rules.append(
            _alert(
                "RightsizeTTFTAboveSLO",
                f"rightsize:vllm_ttft_seconds:{p} > {v.ttft_slo_s:g}",
                "5m",
                "critical",
                f"{p} time to first token above the {v.ttft_slo_s * 1e3:g} ms SLO",
            )
        )
    if v.tpot_slo_s:
        rules.append(
            _alert(
                "RightsizeITLAboveSLO",
                f"rightsize:vllm_itl_seconds:{p} > {v.tpot_slo_s:g}",
                "5m",
                "critical",
                f"{p} inter-token latency above the {v.tpot_slo_s * 1e3:g} ms SLO",
            )
        )
    kv, ql = kv_usage_limit(v), queue_limit(v)
    rules += [
        _alert(
            "RightsizeKVCacheAbovePlan",
            f"rightsize:vllm_kv_cache_usage:ratio > {kv:g}",
            "10m",
            "warning",
            f"KV cache above {kv:.0%} of capacity (planned occupancy at design load + headroom)",
        ),
        _alert(
            "RightsizeQueueAbovePlan",
            f"rightsize:vllm_requests_waiting:max > {ql:.3g}",
            "5m",
            "warning",
            f"more than {ql:.3g} requests waiting on a replica: new requests will miss the TTFT SLO",
        ),
    ]
    return rules


def _doc(v: TrainingView | ServingView, rules: list[dict[str, Any]], keys: list[str]) -> str:
    lines = _versions(keys)
    if not has_device_rules(v):
        own = _OWN_EXPORTER.get(v.hw.vendor, "its vendor's own exporter")
        lines.append(
            f"no device rules: {v.hw.accelerator} reports through {own}, whose metric names are not "
            "in the sourced metric map (catalog/data/metric_names.yaml)"
        )
    head = comment_block(v.header, "Prometheus rules", lines)
    groups = {"groups": [{"name": f"rightsize-{v.header.name}", "interval": "1m", "rules": rules}]}
    return head + dump_yaml(groups)


GPU_KEYS = ["gr_engine_active", "power_usage", "fb_used"]
SERVING_KEYS = ["time_to_first_token", "inter_token_latency", "kv_cache_usage", "num_requests_waiting"]

# The device metrics in the catalog are dcgm-exporter's, which reads NVIDIA GPUs only (issue 28:
# no other vendor's exporter in a plan's files). Other vendors publish through their own
# exporters, whose metric names the catalog does not hold yet: their plans get no device rules.
DEVICE_VENDORS = ("nvidia",)
_OWN_EXPORTER = {
    "amd": "AMD's device-metrics-exporter",
    "google": "the TPU metrics of GKE / Cloud Monitoring",
    "aws": "neuron-monitor's Prometheus exporter",
    "intel": "Habana's metric exporter",
}


def has_device_rules(v: TrainingView | ServingView) -> bool:
    return v.hw.vendor in DEVICE_VENDORS


def training_rules(v: TrainingView) -> dict[str, str]:
    if not has_device_rules(v):
        own = _OWN_EXPORTER.get(v.hw.vendor, "its vendor's own exporter")
        raise BadInput(
            f"The plan trains on {v.hw.accelerator}; the Prometheus export writes device rules from "
            "NVIDIA's dcgm-exporter only, so it has no rule for this plan.",
            f"{v.hw.accelerator} reports through {own}, whose metric names are not in the catalog "
            "(catalog/data/metric_names.yaml); dcgm-exporter series never exist on it.",
            "Write alerts on your exporter's series from the plan's figures, or plan for NVIDIA GPUs.",
        )
    rules = _gpu_rules(v) + _aggregate_rules()
    return {RULES_FILE: _doc(v, rules, GPU_KEYS), TEST_FILE: rule_tests(v, rules)}


def serving_rules(v: ServingView) -> dict[str, str]:
    """The serving engine's rules (vLLM's metrics, which its TPU, Neuron, Gaudi and ROCm builds
    publish too), and the device rules where the part is one dcgm-exporter reads."""
    device = has_device_rules(v)
    rules = (_gpu_rules(v) + _aggregate_rules() if device else []) + _serving_rules(v)
    keys = (GPU_KEYS if device else []) + SERVING_KEYS
    return {RULES_FILE: _doc(v, rules, keys), TEST_FILE: rule_tests(v, rules)}


def rule_tests(v: TrainingView | ServingView, rules: list[dict[str, Any]]) -> str:
    from rightsize.export.rule_tests import build_tests

    head = comment_block(v.header, "promtool rule tests (promtool test rules " + TEST_FILE + ")")
    return head + dump_yaml(build_tests(v, rules, RULES_FILE))
