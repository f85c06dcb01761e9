"""The serving planner: SLO capacity, replicas for the load, costs, impossible requests."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import Infeasible
from rightsize.perf.inference import Replica, fixed_batch_metrics
from rightsize.search.serving import plan_serving
from rightsize.spec import get_preset, load_spec, parse_spec

EX = Path(__file__).resolve().parent.parent / "examples"


def _spec(**over: Any):  # type: ignore[no-untyped-def]
    data: dict[str, Any] = {
        "kind": "inference",
        "model": "llama3-8b",
        "serving": {"weight_precision": "bf16", "kv_precision": "bf16"},
        "traffic": {"rate": 10, "prompt_tokens": 512, "output_tokens": 128},
        "slo": {"ttft": "300ms", "tpot": "40ms", "percentile": 95},
        "targets": {"accelerators": ["h100-sxm"], "tp": 1},
    }
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v}
    return parse_spec(data, Path("."))


def test_chosen_plan_meets_every_slo_at_the_design_rate() -> None:
    plan = plan_serving(_spec())
    b = plan.best
    assert b.latency_s["ttft_p95_s"] <= 0.300
    assert b.latency_s["tpot_p95_s"] <= 0.040
    assert b.design_rate_rps == pytest.approx(10 * 1.2)
    # replicas run at most at the utilisation target of their SLO capacity
    assert b.design_rate_rps / b.replicas <= b.replica_capacity_rps * 0.8 + 1e-9
    assert all(v >= 1.0 for v in b.slo_headroom.values())


def test_replicas_grow_with_load() -> None:
    small = plan_serving(_spec(traffic={"rate": 10})).best
    big = plan_serving(_spec(traffic={"rate": 80})).best
    assert big.replicas > small.replicas
    for c, rate in ((small, 10), (big, 80)):
        assert c.replicas == math.ceil(rate * 1.2 / (c.replica_capacity_rps * 0.8))


def test_tighter_tpot_needs_more_capacity() -> None:
    loose = plan_serving(_spec(slo={"tpot": "60ms"})).best
    tight = plan_serving(_spec(slo={"tpot": "12ms"})).best
    assert tight.replica_capacity_rps < loose.replica_capacity_rps


def test_impossible_tpot_is_infeasible_with_the_best_achievable() -> None:
    spec = parse_spec(
        {
            "kind": "inference",
            "model": "llama3-70b",
            "traffic": {"rate": 1, "prompt_tokens": 128, "output_tokens": 64},
            "slo": {"tpot": "1ms"},
            "targets": {"accelerators": ["a100-sxm-80gb"]},
        },
        Path("."),
    )
    with pytest.raises(Infeasible) as exc:
        plan_serving(spec)
    msg = exc.value.message()
    assert "at least" in msg and "Relax slo.tpot" in msg


def test_costs_and_energy_are_reported() -> None:
    b = plan_serving(_spec()).best
    assert b.cost_usd_per_hour is not None and b.cost_usd_per_hour > 0
    assert b.cost_usd_per_m_output_tokens is not None and b.cost_usd_per_m_output_tokens > 0
    assert b.output_tokens_per_joule is not None and b.output_tokens_per_joule > 0


def test_plan_is_deterministic_under_a_seed() -> None:
    a = plan_serving(_spec()).best
    b = plan_serving(_spec()).best
    assert a.latency_s == b.latency_s and a.replicas == b.replicas


def test_fixed_batch_example_matches_gpt_fast() -> None:
    # gpt-fast: Llama-2-7B bf16 batch 1 on an A100 at 104.9 tokens/s
    plan = plan_serving(load_spec(EX / "llama2-7b-batch1.yaml"))
    assert plan.best.output_tokens_per_s == pytest.approx(104.9, rel=0.10)


def test_kv_cache_bytes_per_token() -> None:
    # Llama 3 70B: 2 (K,V) x 80 layers x 8 KV heads x 128 dims x 2 bytes = 327,680 bytes
    acc = get_accelerator("h100-sxm")
    rep = Replica.build(get_preset("llama3-70b"), acc, node_for(acc.id), 8, "bf16", "bf16")
    assert rep.kv_bytes_per_token == 327_680
    # 8 KV heads over tp8: one head per GPU
    assert rep.kv_shards == 8


def test_decode_is_bandwidth_bound_at_batch_one_and_compute_bound_at_large_batch() -> None:
    acc = get_accelerator("h100-sxm")
    rep = Replica.build(get_preset("llama3-8b"), acc, node_for(acc.id), 1, "bf16", "bf16")
    t1 = float(rep.decode_step_s(1, 1024))
    t2 = float(rep.decode_step_s(2, 2048))
    assert t2 / t1 < 1.05  # a second stream is nearly free
    t512 = float(rep.decode_step_s(512, 512 * 64))
    t1024 = float(rep.decode_step_s(1024, 1024 * 64))
    assert t1024 / t512 > 1.6  # compute-bound: time grows with the batch


def test_fixed_batch_ttft_is_prefill() -> None:
    acc = get_accelerator("a100-sxm-80gb")
    rep = Replica.build(get_preset("llama2-7b"), acc, node_for(acc.id), 1, "bf16", "bf16")
    m = fixed_batch_metrics(rep, 1, 2048, 16)
    # 2 x 6.6e9 params x 2048 tokens at ~250 TFLOP/s is ~0.1 s
    assert 0.05 < m["ttft_s"] < 0.2


def test_chat_example_plans_with_alternatives() -> None:
    plan = plan_serving(load_spec(EX / "llama3-70b-chat-serving.yaml"))
    assert plan.best.latency_s["ttft_p95_s"] <= 0.5 and plan.best.latency_s["tpot_p95_s"] <= 0.05
    assert len(plan.alternatives) >= 3
    costs = [c.cost_usd_per_hour for c, _ in plan.alternatives]
    assert all(c is not None and c >= plan.best.cost_usd_per_hour for c in costs)  # type: ignore[operator]


def test_model_that_fits_nowhere_names_the_smallest_change() -> None:
    spec = parse_spec(
        {
            "kind": "inference",
            "model": "llama3.1-405b",
            "serving": {"weight_precision": "bf16"},
            "traffic": {"rate": 1, "prompt_tokens": 256, "output_tokens": 64},
            "targets": {"accelerators": ["a100-sxm-80gb"], "max_nodes_per_replica": 1},
        },
        Path("."),
    )
    with pytest.raises(Infeasible) as exc:
        plan_serving(spec)
    # 405B in bf16 is 810 GB: more than 8 x 80 GB; in fp8 (405 GB) it fits on 8 GPUs
    assert "weight_precision: fp8" in exc.value.message() and "8 x a100-sxm-80gb" in exc.value.message()


def test_quantisation_is_searched_when_allowed() -> None:
    only_bf16 = plan_serving(_spec(traffic={"rate": 150}, targets={"tp": None})).best
    searched = plan_serving(
        _spec(traffic={"rate": 150}, targets={"tp": None, "weight_precisions": ["bf16", "fp8"]})
    ).best
    assert searched.weight_precision == "fp8"  # H100 runs fp8 natively: cheaper per request
    assert searched.cost_usd_per_hour is not None and only_bf16.cost_usd_per_hour is not None
    assert searched.cost_usd_per_hour <= only_bf16.cost_usd_per_hour
