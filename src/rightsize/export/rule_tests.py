"""`promtool test rules` cases for the exported rules: synthetic series that break every
threshold (each alert must fire, with its labels and summary) and series as planned (no
alert may fire). Values are derived from the same plan figures as the thresholds, on
either side of them, so a wrong expression, unit or threshold fails the test."""

from __future__ import annotations

from typing import Any

from rightsize.catalog.metric_names import metric_spec
from rightsize.export.names import promql_string
from rightsize.export.plan_view import ServingView, TrainingView
from rightsize.export.thresholds import activity_floor, kv_usage_limit, memory_limit_bytes, queue_limit

MINUTES = 60
EVAL_AT = "50m"
GPU = {"Hostname": "node0", "gpu": "0"}
REPLICA = {"instance": "replica0:8000"}


def _name(key: str) -> str:
    return metric_spec(key).primary.name


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    """An `input_series` entry; label values as PromQL string literals (`names.promql_string`)."""
    inner = ",".join(f"{k}={promql_string(v)}" for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


def _flat(value: float) -> str:
    return f"{value:.12g}+0x{MINUTES}"


def _histogram(name: str, model: dict[str, str], limit_s: float, slow: bool) -> list[dict[str, str]]:
    """All observations above the limit (slow) or at most half of it (as planned)."""
    lo, hi = limit_s / 2.0, limit_s * 2.0
    low_rate = "0+0" if slow else "0+10"
    return [
        _series(f"{name}_bucket", {**model, "le": f"{lo:.12g}"}, f"{low_rate}x{MINUTES}"),
        _series(f"{name}_bucket", {**model, "le": f"{hi:.12g}"}, f"0+10x{MINUTES}"),
        _series(f"{name}_bucket", {**model, "le": "+Inf"}, f"0+10x{MINUTES}"),
    ]


def _gpu_series(v: TrainingView | ServingView, broken: bool) -> list[dict[str, str]]:
    mem_mib = memory_limit_bytes(v) / 2**20
    if broken:
        act, power, fb = activity_floor(v) / 2.0, v.hw.tdp_w + 50.0, mem_mib * 1.1
    else:
        act, power, fb = v.gpu_activity_fraction, v.gpu_power_typical_w, mem_mib * 0.8
    return [
        _series(_name("gr_engine_active"), GPU, _flat(act)),
        _series(_name("power_usage"), GPU, _flat(power)),
        _series(_name("fb_used"), GPU, _flat(fb)),
    ]


def _serving_series(v: ServingView, broken: bool) -> list[dict[str, str]]:
    model = {"model_name": v.model.name}
    out: list[dict[str, str]] = []
    if v.ttft_slo_s:
        out += _histogram(_name("time_to_first_token"), model, v.ttft_slo_s, broken)
    if v.tpot_slo_s:
        out += _histogram(_name("inter_token_latency"), model, v.tpot_slo_s, broken)
    kv = kv_usage_limit(v)
    kv_value = min(1.0, kv + 0.04) if broken else kv * 0.5
    waiting = queue_limit(v) * 2.0 + 1.0 if broken else 0.0
    out.append(_series(_name("kv_cache_usage"), {**model, **REPLICA}, _flat(kv_value)))
    out.append(_series(_name("num_requests_waiting"), {**model, **REPLICA}, _flat(waiting)))
    return out


def _labels_for(alert: str) -> dict[str, str]:
    if alert.startswith("RightsizeGPU"):
        return dict(GPU)
    if alert in ("RightsizeTTFTAboveSLO", "RightsizeITLAboveSLO"):
        return {}
    return {"instance": REPLICA["instance"]}


def build_tests(
    v: TrainingView | ServingView, rules: list[dict[str, Any]], rules_file: str
) -> dict[str, Any]:
    alerts = [r for r in rules if "alert" in r]
    model = {"model_name": v.model.name} if isinstance(v, ServingView) else {}
    fired, quiet = [], []
    for a in alerts:
        labels = {**_labels_for(a["alert"]), **(model if not a["alert"].startswith("RightsizeGPU") else {})}
        exp = {"exp_labels": {**labels, **a["labels"]}, "exp_annotations": a["annotations"]}
        fired.append({"eval_time": EVAL_AT, "alertname": a["alert"], "exp_alerts": [exp]})
        quiet.append({"eval_time": EVAL_AT, "alertname": a["alert"], "exp_alerts": []})
    device = any(r.get("record") == "rightsize:gpu_engine_active:ratio" for r in rules)
    broken, planned = (_gpu_series(v, True), _gpu_series(v, False)) if device else ([], [])
    if isinstance(v, ServingView):
        broken += _serving_series(v, True)
        planned += _serving_series(v, False)
    tests = [
        {"name": "beyond the plan: every alert fires", "interval": "1m", "input_series": broken,
         "alert_rule_test": fired},
        {"name": "as planned: no alert fires", "interval": "1m", "input_series": planned,
         "alert_rule_test": quiet},
    ]  # fmt: skip
    if any(r.get("record", "").startswith("rightsize:cluster_") for r in rules):
        tests.append(_aggregate_test())
    return {"rule_files": [rules_file], "evaluation_interval": "1m", "tests": tests}


def _aggregate_test() -> dict[str, Any]:
    """Three GPUs on two nodes at known activity and power: the node and cluster records equal
    the sums, means and extremes computed here."""
    # binary fractions: promtool compares sums and means exactly
    gpus = [("node0", "0", 0.25, 300.0), ("node0", "1", 0.5, 500.0), ("node1", "0", 0.75, 600.0)]
    series = []
    for host, gpu, act, watts in gpus:
        labels = {"Hostname": host, "gpu": gpu}
        series += [
            _series(_name("gr_engine_active"), labels, _flat(act)),
            _series(_name("power_usage"), labels, _flat(watts)),
        ]
    acts = [g[2] for g in gpus]

    def one(expr: str, value: float) -> dict[str, Any]:
        return {
            "expr": expr,
            "eval_time": EVAL_AT,
            "exp_samples": [{"labels": expr, "value": round(value, 9)}],
        }

    return {
        "name": "aggregates: per node and cluster-wide records",
        "interval": "1m",
        "input_series": series,
        "promql_expr_test": [
            one("rightsize:cluster_gpu_engine_active:avg", sum(acts) / len(acts)),
            one("rightsize:cluster_gpu_engine_active:min", min(acts)),
            one("rightsize:cluster_gpu_engine_active:max", max(acts)),
            one("rightsize:cluster_gpus_reporting:count", len(gpus)),
            one("rightsize:cluster_gpu_power:watts", sum(g[3] for g in gpus)),
            {
                "expr": 'rightsize:node_gpu_engine_active:avg{Hostname="node0"}',
                "eval_time": EVAL_AT,
                "exp_samples": [
                    {
                        "labels": 'rightsize:node_gpu_engine_active:avg{Hostname="node0"}',
                        "value": (acts[0] + acts[1]) / 2,
                    }
                ],
            },
            {
                "expr": 'rightsize:node_gpu_power:watts{Hostname="node0"}',
                "eval_time": EVAL_AT,
                "exp_samples": [
                    {
                        "labels": 'rightsize:node_gpu_power:watts{Hostname="node0"}',
                        "value": gpus[0][3] + gpus[1][3],
                    }
                ],
            },
        ],
    }
