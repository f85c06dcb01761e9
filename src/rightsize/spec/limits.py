"""Sane upper limits (and, where a tiny figure gives nonsense, lower ones) for the numbers in a spec.

A valid spec can still ask for something no cluster, model or market has ever seen (a batch of
10^17 requests, 2^31 times Criteo's embedding rows, 15 trillion queries per second); the physics
then runs with absurd figures (10^58 s of latency) instead of saying the input is wrong. Each
limit sits far above anything published (usually 100-1000x), so no real plan is refused, and
the message says what the field is, the limit and why. `spec_limit_problems` walks a validated
spec and lists each field over its limit, named by its path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

_Spec = TypeVar("_Spec", bound=BaseModel)
_TOKENS = 2.0**27  # 134M tokens in one sequence: 100x the longest context served today
_LAYOUT = "far beyond any published model"

# field -> (largest value, why). A key "Model.field" overrides a plain "field" for that model.
LIMITS: dict[str, tuple[float, str]] = {
    # model shape
    "layers": (10_000, f"{_LAYOUT} (the deepest have ~200 layers)"),
    "hidden": (2**20, f"{_LAYOUT} (the widest are ~25k wide)"),
    "heads": (65_536, _LAYOUT),
    "kv_heads": (65_536, _LAYOUT),
    "head_dim": (65_536, _LAYOUT),
    "ffn_hidden": (2**24, _LAYOUT),
    "expert_ffn_hidden": (2**24, _LAYOUT),
    "vocab": (2**24, f"{_LAYOUT} (vocabularies are 32k-256k)"),
    "experts": (65_536, _LAYOUT),
    "experts_per_token": (1024, _LAYOUT),
    "shared_experts": (1024, _LAYOUT),
    "dense_layers": (10_000, _LAYOUT),
    "kv_lora_rank": (65_536, _LAYOUT),
    "q_lora_rank": (65_536, _LAYOUT),
    "qk_rope_head_dim": (65_536, _LAYOUT),
    "v_head_dim": (65_536, _LAYOUT),
    "max_seq_len": (_TOKENS, "longer than any context window by 100x"),
    "sliding_window": (_TOKENS, "a window longer than any context by 100x"),
    "full_attention_every": (10_000, "more than any model has layers"),
    "glu_clamp": (1e6, "a clamp no published activation uses (GPT-OSS: 7)"),
    "rank": (65_536, "an adapter wider than any model's hidden size"),
    "alpha": (1e6, "a LoRA scale beyond any use"),
    # training workload and targets
    "seq_len": (2**24, "16M tokens per training sequence is 100x the longest published"),
    "TrainingWorkload.global_batch": (2**24, "16M sequences per step is 1000x the largest published batch"),
    "global_batch_tokens": (2.0**36, "64G tokens per step is 1000x the largest published batch"),
    "train_tokens": (1e16, "10 quadrillion tokens is 600x the largest published run"),
    "deadline_s": (100 * 365.25 * 86400, "a deadline beyond 100 years plans nothing"),
    "gpus": (10_000_000, "ten million accelerators is 50x the largest cluster built"),
    "tp": (4096, "tensor parallelism beyond 4096 has no NVLink domain to run in"),
    "pp": (10_000, "more pipeline stages than any model has layers"),
    "dp": (10_000_000, "more replicas than any cluster has accelerators"),
    "cp": (65_536, "more context-parallel ranks than tokens in most sequences"),
    "ep": (65_536, "more expert-parallel ranks than experts"),
    "vpp": (1024, "more virtual stages than layers per stage"),
    "micro_batch": (2**24, "larger than any global batch"),
    "moe_capacity_factor": (8.0, "capacity factors above 8 are never used"),
    # infrastructure
    "rack_power_kw": (10_000, "10 MW in one rack is 50x the densest rack built"),
    "rack_units": (100, "racks are 42-58 U"),
    "power_cap_w": (1e11, "100 GW is more than the largest power plants"),
    "nic_gbps": (1e6, "1 Pb/s per NIC is 1000x the fastest NIC"),
    "dataset_bytes": (1e21, "a zettabyte of training data"),
    "preprocessed_multiple": (1000, "a thousand copies of the dataset"),
    "scratch_multiple": (1000, "a thousand copies of the dataset"),
    "checkpoints_retained": (10_000, "ten thousand full checkpoints"),
    "electricity_usd_per_kwh": (100, "100x the most expensive electricity"),
    "spot_preemption_per_hour": (3600, "more than one preemption a second"),
    "model_growth_per_year": (100, "models 100x larger every year"),
    "data_growth_per_year": (100, "data 100x larger every year"),
    "traffic_growth_per_year": (100, "traffic 100x larger every year"),
    "scalable_unit_nodes": (1_000_000, "a million nodes in one scalable unit"),
    "jobs_per_week": (10_080, "more than a job a minute"),
    "turnaround": (100 * 365.25 * 86400, "a turnaround beyond 100 years"),
    # serving
    "InferenceWorkload.batch": (1_000_000, "a million concurrent sequences per replica"),
    "rate_per_s": (1e8, "100 million requests per second is 100x the busiest public API"),
    "peak_rate_per_s": (1e8, "100 million requests per second is 100x the busiest public API"),
    "burst_cv": (100, "a coefficient of variation of 100 is no longer an arrival process"),
    "mean": (_TOKENS, "longer than any context window by 100x"),
    "std": (_TOKENS, "longer than any context window by 100x"),
    "min": (_TOKENS, "longer than any context window by 100x"),
    "max": (_TOKENS, "longer than any context window by 100x"),
    "ttft_s": (86_400, "a latency objective of more than a day"),
    "tpot_s": (86_400, "a latency objective of more than a day"),
    "e2e_s": (86_400 * 7, "a latency objective of more than a week"),
    "chunk_tokens": (2**24, "a prefill chunk longer than any context"),
    "block_tokens": (65_536, "a KV block longer than most contexts"),
    "max_batch": (1_000_000, "a million concurrent sequences per replica"),
    "draft_tokens": (64, "speculative decoding drafts a handful of tokens"),
    "replicas": (1_000_000, "a million replicas"),
    "seed": (2**63 - 1, "seeds are 64-bit"),
    # vision
    "images": (1e13, "ten trillion images is 1000x the largest dataset"),
    "epochs": (1e6, "a million passes over the data"),
    "batch_per_gpu": (1_000_000, "a million samples per accelerator"),
    "mean_image_bytes": (1e10, "a 10 GB image"),
    "streams": (100_000_000, "a hundred million camera streams"),
    "fps": (10_000, "ten thousand frames per second per stream"),
    "latency_p99_s": (86_400, "a latency objective of more than a day"),
    "resolution_vs_1080p": (1000, "a thousand times a 1080p frame"),
    "stream_bitrate": (1e12, "a terabit per stream"),
    # recommendation
    "rows_multiplier": (1000, "a thousand times the preset's embedding rows"),
    "samples": (1e15, "a quadrillion samples is 200,000x Criteo 1TB"),
    "RecsysTraining.global_batch": (2**26, "64M samples per step is 1000x the largest published batch"),
    "bytes_per_sample": (1e9, "a gigabyte per sample"),
    "qps": (1e9, "a billion queries per second"),
    "samples_per_query": (1_000_000, "a million candidates per query"),
    "gpus_per_replica": (65_536, "more accelerators than any replica uses"),
}


# field -> (smallest value, why): figures so small that the plan they give is nonsense (a pool at
# 1e-9 utilisation is 116 million GPUs; 1e-12 requests/s costs $10^28 per million requests).
FLOORS: dict[str, tuple[float, str]] = {
    "utilisation_target": (0.05, "a resource planned to be busy under 5% of the time is idle capacity"),
    "onprem_utilisation": (0.01, "an owned cluster busy under 1% of hours has no meaningful $/GPU-hour"),
    "rate_per_s": (1e-3, "fewer than one request every 17 minutes is not a serving load to size for"),
    "peak_rate_per_s": (1e-3, "fewer than one request every 17 minutes is not a serving load to size for"),
    "qps": (1e-3, "fewer than one query every 17 minutes is not a serving load to size for"),
    "fps": (1e-3, "fewer than one frame every 17 minutes is not a stream to size for"),
    "jobs_per_week": (1e-3, "fewer than one job in 19 years is not a schedule"),
    "ttft_s": (1e-6, "a latency objective under a microsecond"),
    "tpot_s": (1e-6, "a latency objective under a microsecond"),
    "e2e_s": (1e-6, "a latency objective under a microsecond"),
    "latency_p99_s": (1e-6, "a latency objective under a microsecond"),
    "deadline_s": (1.0, "a deadline under a second"),
    "turnaround": (1.0, "a turnaround under a second"),
    # a bare number is in SI base units: a tiny one was most likely meant in a larger unit
    "power_cap_w": (1000.0, "a facility under 1 kW holds no server; give the unit, e.g. '2 MW'"),
    "rack_power_kw": (1.0, "a rack under 1 kW holds no accelerator server"),
    "stream_bitrate": (1000.0, "under 8 kb/s is no video stream; give the unit, e.g. '4 Mb/s'"),
}


def _floor(model: BaseModel, field: str) -> tuple[float, str] | None:
    return FLOORS.get(f"{type(model).__name__}.{field}") or FLOORS.get(field)


def _allowed(model: BaseModel, field: str) -> str:
    limit, floor = _limit(model, field), _floor(model, field)
    bottom = f"{floor[0]:,.6g}" if floor else "0"
    return f"(allowed: {bottom} to {f'{limit[0]:,.6g}' if limit else 'no limit'})"


def _over_limit(model: BaseModel, field: str, value: float) -> str:
    """'' when the value is within its limit, else what is wrong, with the allowed range."""
    limit = _limit(model, field)
    if limit is not None and (not math.isfinite(value) or value > limit[0]):
        return f"{value:.4g} is more than {limit[0]:,.6g}: {limit[1]} {_allowed(model, field)}"
    return ""


def _under_floor(model: BaseModel, field: str, value: float) -> str:
    """'' when the value is at or above its floor, else what is wrong, with the allowed range."""
    floor = _floor(model, field)
    if floor is not None and value < floor[0]:
        return f"{value:.4g} is less than {floor[0]:,.6g}: {floor[1]} {_allowed(model, field)}"
    return ""


def _limit(model: BaseModel, field: str) -> tuple[float, str] | None:
    return LIMITS.get(f"{type(model).__name__}.{field}") or LIMITS.get(field)


def spec_limit_problems(spec: BaseModel) -> list[str]:
    """`path: message` for every number over its limit (none for a sane spec)."""
    problems: list[str] = []
    _walk(spec, "", problems, _over_limit)
    return problems


def spec_floor_problems(spec: BaseModel) -> list[str]:
    """`path: message` for every number under its floor (none for a sane spec)."""
    problems: list[str] = []
    _walk(spec, "", problems, _under_floor)
    return problems


def refuse_figures_under_floor(spec: _Spec) -> _Spec:
    """The body of each spec kind's after-check: a figure under its floor makes the spec invalid."""
    problems = spec_floor_problems(spec)
    if problems:
        raise ValueError("\n".join(problems))
    return spec


def _walk(node: Any, prefix: str, problems: list[str], check: Callable[[BaseModel, str, float], str]) -> None:
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            value = getattr(node, name, None)
            where = f"{prefix}{name}"
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float):
                problem = check(node, name, value)
                if problem:
                    problems.append(f"{where}: {problem}")
            elif isinstance(value, BaseModel):
                _walk(value, where + ".", problems, check)
            elif isinstance(value, list | tuple):
                for i, item in enumerate(value):
                    if isinstance(item, BaseModel):
                        _walk(item, f"{where}.{i}.", problems, check)
