"""Disaggregated prefill and decode: the pools the plan sizes meet their SLOs when the whole
system (two pools and the KV transfer between them) is simulated again on requests the
search never saw; the transfer is bytes / link bandwidth; the plan states both modes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, get_node, node_for
from rightsize.perf.inference import Replica
from rightsize.perf.serving_disagg import KvTransfer, Pools, simulate_disaggregated
from rightsize.perf.serving_moe_ep import ExpertParallelReplica
from rightsize.perf.serving_slo import meets
from rightsize.search.serving import plan_serving
from rightsize.search.serving_disagg import _decode_load, _prefill_load, kv_transfer_link
from rightsize.search.serving_engine import model_at, slo_check, workload
from rightsize.search.serving_layouts import replica_options
from rightsize.spec.load import load_spec, parse_spec

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "llama3-70b-disaggregated-serving.yaml"
DEEPSEEK = EXAMPLE.parent / "deepseek-v3-ep-serving.yaml"


@pytest.fixture(scope="module")
def planned():
    spec = load_spec(EXAMPLE)
    return spec, plan_serving(spec)


def test_plan_states_both_modes_with_numbers(planned) -> None:
    _, plan = planned
    d = plan.best.disaggregation
    assert d is not None and d.disaggregated is not None
    assert d.chosen in ("aggregated", "disaggregated")
    for side in (d.aggregated, d.disaggregated):
        assert side.gpus > 0 and side.cost_usd_per_hour and side.slo_attainment is not None
    assert d.ratio == f"{d.prefill.replicas}P{d.decode.replicas}D"
    assert str(d.aggregated.gpus) in d.reason and str(d.disaggregated.gpus) in d.reason
    # Llama 3 70B, fp8 KV: 80 layers x 8 KV heads x 128 x (K and V) x 1 byte per token
    kv = d.kv_transfer
    assert kv.kv_bytes_per_token == 80 * 8 * 128 * 2
    assert kv.seconds_p50 > 0 and kv.link
    if d.chosen == "disaggregated":
        assert plan.best.replicas == d.prefill.replicas + d.decode.replicas


def test_disaggregated_pools_meet_their_slos_in_the_simulator(planned) -> None:
    spec, plan = planned
    best = plan.best
    acc, node = get_accelerator(best.accelerator), get_node(best.node)
    rep = Replica.build(
        spec.model, acc, node, best.tp, best.weight_precision, best.kv_precision, None, spec.engine.name
    )
    _pools_meet_slos_on_fresh_requests(spec, plan, rep)


def test_deepseek_v3_wide_ep_pools_meet_their_slos_in_the_simulator() -> None:
    """The MoE case: DeepSeek-V3 on a 16-GPU expert-parallel replica (two nodes, the
    all-to-all over the NICs), disaggregation forced on; the pools as planned hold the SLOs
    on requests the search never saw, simulated on the same expert-parallel replica."""
    spec = load_spec(DEEPSEEK)
    spec = spec.model_copy(update={"serving": spec.serving.model_copy(update={"disaggregation": "always"})})
    plan = plan_serving(spec)
    d, best = plan.best.disaggregation, plan.best
    assert d is not None and d.chosen == "disaggregated" and d.prefill.layout.ep == 16
    acc, node = get_accelerator(best.accelerator), get_node(best.node)
    (rep,) = replica_options(spec, acc, node, best.weight_precision, {})
    assert isinstance(rep, ExpertParallelReplica) and rep.ep == 16
    _pools_meet_slos_on_fresh_requests(spec, plan, rep)


def _pools_meet_slos_on_fresh_requests(spec, plan, rep) -> None:
    d, best = plan.best.disaggregation, plan.best
    fresh = workload(spec.model_copy(update={"seed": 12345}), 4000)  # requests the search never saw
    design = best.design_rate_rps
    p, dd = d.prefill.replicas, d.decode.replicas
    pools = Pools(
        model_at(rep, spec, _prefill_load(fresh), design / p),
        model_at(rep, spec, _decode_load(fresh), design / dd),
        p,
        dd,
    )
    link = KvTransfer(
        d.kv_transfer.link, d.kv_transfer.kv_bytes_per_token, d.kv_transfer.bandwidth_bytes_per_s, 1e-5
    )
    res, _ = simulate_disaggregated(
        fresh.unit_arrivals / design,
        fresh.prompts,
        fresh.outputs,
        pools,
        link,
        spec.traffic.prefix_cache_hit_rate,
    )
    assert meets(res, slo_check(spec))
    # and one replica fewer in the decode pool is not free: its TPOT tail grows
    if dd > 1:
        fewer = Pools(pools.prefill, model_at(rep, spec, _decode_load(fresh), design / (dd - 1)), p, dd - 1)
        res2, _ = simulate_disaggregated(
            fresh.unit_arrivals / design,
            fresh.prompts,
            fresh.outputs,
            fewer,
            link,
            spec.traffic.prefix_cache_hit_rate,
        )
        assert res2.percentile("tpot_s", 95) > res.percentile("tpot_s", 95)


def test_transfer_time_is_bytes_over_bandwidth_and_shows_in_tpot(planned) -> None:
    spec, plan = planned
    best = plan.best
    acc, node = get_accelerator(best.accelerator), get_node(best.node)
    rep = Replica.build(
        spec.model, acc, node, best.tp, best.weight_precision, best.kv_precision, None, spec.engine.name
    )
    wl = workload(spec, 600)
    rate = 2.0
    pools = Pools(
        model_at(rep, spec, _prefill_load(wl), rate), model_at(rep, spec, _decode_load(wl), rate), 1, 1
    )
    fast = KvTransfer("NVLink", rep.kv_bytes_per_token, 400e9, 0.0)
    slow = KvTransfer("RDMA NIC", rep.kv_bytes_per_token, 1e9, 0.0)
    assert float(slow.seconds(4096)) == pytest.approx(4096 * rep.kv_bytes_per_token / 1e9)
    a, _ = simulate_disaggregated(wl.unit_arrivals / rate, wl.prompts, wl.outputs, pools, fast)
    b, moved = simulate_disaggregated(wl.unit_arrivals / rate, wl.prompts, wl.outputs, pools, slow)
    assert np.allclose(a.ttft_s, b.ttft_s)  # the first token comes from the prefill pool
    assert np.nanmedian(b.tpot_s) > np.nanmedian(a.tpot_s)
    assert np.all(b.e2e_s >= a.e2e_s + moved * 0.5)


def test_disaggregation_needs_the_serving_scenario() -> None:
    with pytest.raises(Exception, match="disaggregation"):
        parse_spec(
            {
                "kind": "inference",
                "model": "llama3-8b",
                "serving": {"scenario": "offline", "disaggregation": "auto"},
                "traffic": {"prompt_tokens": 128, "output_tokens": 128},
            },
            Path("."),
        )


def test_link_is_nvlink_only_when_pools_pair_up_in_a_node() -> None:
    acc, node = get_accelerator("h100-sxm"), node_for("h100-sxm")
    rep = Replica.build(load_spec(EXAMPLE).model, acc, node, 4, "fp8", "fp8", None, "vllm")  # 2 per node
    assert "NVLink" in kv_transfer_link(rep, acc, node, 1, 1).link
    far = kv_transfer_link(rep, acc, node, 9, 3)  # 9 prefill replicas cannot all sit beside 3 decode ones
    assert (
        "RDMA" in far.link
        and far.bandwidth_bytes_per_s < kv_transfer_link(rep, acc, node, 1, 1).bandwidth_bytes_per_s
    )
