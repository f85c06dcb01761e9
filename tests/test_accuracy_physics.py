"""Issue #14: training physics per mechanism, and saying how sure a prediction is.

Each test checks one mechanism against its source's shape (not a validation row)."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.ground import validated_runs
from rightsize.perf import collectives as coll
from rightsize.perf.attention import attention_efficiency
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import LOGITS_BYTES_PER_ENTRY, train_memory
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.search.ground import SIGMA_VALIDATED, ground_report, model_sigma, position
from rightsize.spec import get_preset


def _hw(acc: str, dtype: str = "bf16") -> Hardware:
    a = get_accelerator(acc)
    return Hardware.from_catalog(a, node_for(a.id), dtype)


def _w(preset: str, seq: int = 8192, batch: int = 128, precision: str = "bf16") -> TrainWorkload:
    return TrainWorkload(arch=get_preset(preset), seq_len=seq, global_batch=batch, precision=precision)


def test_all_gather_is_a_ring_of_n_minus_1_latency_steps(a100_like: Hardware) -> None:
    n = np.array([1024.0])
    t = coll.all_gather_s(np.array([0.0]), n, np.array([1e12]), np.array([10e-6]))
    assert t[0] == pytest.approx(1023 * 10e-6)
    # all-reduce keeps NCCL's tree at scale: far fewer latency steps
    assert coll.all_reduce_s(np.array([0.0]), n, np.array([1e12]), np.array([10e-6]))[0] < t[0] / 10


def test_fsdp_at_large_dp_with_one_sequence_per_gpu_is_slower_than_zero1() -> None:
    """The 405B pattern of issue #14: ZeRO-3 over thousands of ranks pays a ring per layer."""
    w = _w("llama3.1-405b", 8192, 2048)
    hw = _hw("h100-sxm")
    kw = dict(tp=8, pp=1, dp=256, micro_batch=1, recompute="full", sequence_parallel=True)
    z1 = train_step(w, ParallelConfigs.single(zero_stage=1, **kw), hw)  # type: ignore[arg-type]
    z3 = train_step(w, ParallelConfigs.single(zero_stage=3, **kw), hw)  # type: ignore[arg-type]
    assert z3.dp_comm[0] > 1.5 * z1.dp_comm[0]
    assert z3.step_time[0] > z1.step_time[0]


def test_zero_shards_over_dp_times_cp() -> None:
    w = _w("llama3-70b", 8192, 64)
    hw = _hw("h100-sxm")
    a = train_memory(w, ParallelConfigs.single(tp=8, dp=4, cp=1, zero_stage=1), hw)
    b = train_memory(w, ParallelConfigs.single(tp=8, dp=4, cp=2, zero_stage=1), hw)
    assert b.optimizer[0] == pytest.approx(a.optimizer[0] / 2)


def test_logits_are_six_bytes_per_entry() -> None:
    w = _w("llama3-8b", 2048, 64)
    mem = train_memory(
        w, ParallelConfigs.single(tp=1, dp=8, micro_batch=4, recompute="full"), _hw("h100-sxm")
    )
    expected = 4 * 2048 * w.arch.vocab * LOGITS_BYTES_PER_ENTRY
    assert mem.logits[0] == pytest.approx(expected) or mem.logits[0] == 0.0
    assert LOGITS_BYTES_PER_ENTRY == 6.0


def test_attention_efficiency_grows_with_block_length_and_head_dim() -> None:
    hw = _hw("a100-sxm-80gb")
    short, long_ = attention_efficiency(np.array([512.0, 16384.0]), 128.0, hw)
    assert long_ == pytest.approx(hw.attention_fraction)
    assert 0.55 * long_ < short < 0.8 * long_  # FA2 Fig. 4: ~110 vs ~190 TFLOP/s
    assert attention_efficiency(16384.0, 64.0, hw) < 0.9 * long_


def test_fp8_is_well_short_of_twice_bf16() -> None:
    """One sustained-GEMM factor made FP8 ~1.8x BF16; casts, transposes and 16-bit attention
    keep a real 8B step between 1.1x and 1.6x (Megatron-Bridge H100 FP8 vs BF16 tables)."""
    cfg = ParallelConfigs.single(tp=1, dp=8, micro_batch=1, zero_stage=1)
    t16 = train_step(_w("llama3-8b"), cfg, _hw("h100-sxm")).step_time[0]
    t8 = train_step(_w("llama3-8b", precision="fp8"), cfg, _hw("h100-sxm", "fp8")).step_time[0]
    assert 1.1 < t16 / t8 < 1.6


def test_tp_overlap_hides_tensor_parallel_traffic_only_where_the_stack_does() -> None:
    w = _w("llama3-70b", 8192, 64)
    cfg = ParallelConfigs.single(tp=8, dp=8, micro_batch=1, recompute="selective", sequence_parallel=True)
    hw = _hw("h100-sxm")
    assert hw.tp_comm_overlap > 0 and _hw("a100-sxm-80gb").tp_comm_overlap == 0
    with_overlap = train_step(w, cfg, hw).tp_comm[0]
    without = train_step(w, cfg, hw.with_overrides(tp_comm_overlap=0.0)).tp_comm[0]
    assert with_overlap < 0.6 * without


def test_zero1_parameter_gather_is_exposed_without_overlap() -> None:
    w = _w("llama3-8b", 4096, 1024)
    cfg = ParallelConfigs.single(tp=1, dp=1024, micro_batch=1, zero_stage=1)
    hw = _hw("h100-sxm")
    hidden = train_step(w, cfg, hw).dp_comm[0]
    exposed = train_step(w, cfg, hw.with_overrides(param_gather_overlap=0.0)).dp_comm[0]
    assert exposed > hidden


def test_slowest_gpu_wait_grows_with_scale() -> None:
    w = _w("llama3-8b", 4096, 1024)
    hw = _hw("h100-sxm")
    small = train_step(w, ParallelConfigs.single(dp=8, micro_batch=1, zero_stage=1), hw)
    big = train_step(w, ParallelConfigs.single(dp=1024, micro_batch=1, zero_stage=1), hw)
    assert big.straggler[0] / big.compute[0] > small.straggler[0] / small.compute[0] > 0


# --- validated ground ----------------------------------------------------------------------


def test_a_validated_run_stands_on_its_own_ground() -> None:
    runs = validated_runs()
    assert len(runs) >= 20
    r = next(x for x in runs if x.id == "korthikanti22-175b-selective")
    arch = get_preset("gpt3-175b")
    par = {"tp": 8, "pp": 8, "dp": 8, "cp": 1, "vpp": 1, "zero_stage": 0}
    p = position(arch, 2048, "fp16", "full", r.accelerator, par)
    assert ground_report(p)["distance"] < 0.6
    assert ground_report(p, exclude=(r.id,))["distance"] >= ground_report(p)["distance"]


def test_range_widens_away_from_validated_ground() -> None:
    arch = get_preset("llama3.1-405b")
    near = position(arch, 2048, "bf16", "full", "a100-sxm-80gb", {"tp": 8, "pp": 8, "dp": 16, "vpp": 2})
    far = position(
        arch, 131072, "fp8", "full", "gb200", {"tp": 4, "pp": 16, "dp": 8, "cp": 16, "zero_stage": 3}
    )
    g_near, g_far = ground_report(near), ground_report(far)
    assert g_far["distance"] > g_near["distance"] + 2
    assert g_far["sigma"] > g_near["sigma"] >= SIGMA_VALIDATED
    assert g_far["thin"]
    assert model_sigma(0.0) == pytest.approx(SIGMA_VALIDATED)
    # The per-family rows are ground too: Megatron-Bridge's GB200 405B rows ran context
    # parallelism, so it is not a mechanism never seen on a like part; no MI300X row did.
    assert "context_parallel" not in g_far["thin_mechanisms"]
    mi300x = position(
        arch, 131072, "fp8", "full", "mi300x", {"tp": 4, "pp": 16, "dp": 8, "cp": 16, "zero_stage": 3}
    )
    assert "context_parallel" in ground_report(mi300x)["thin_mechanisms"]


def test_a_family_run_lends_its_family_spread_not_the_public_one() -> None:
    """A per-family run (TPU v6e, 13-14% median error there) vouches with the family's
    measured spread, wider than the public rows' SIGMA_VALIDATED; the plan's range is floored
    by the family's spread besides (`search.uncertainty`)."""
    from rightsize.catalog.families import family_sigma
    from rightsize.search.ground import base_sigma

    r = next(x for x in validated_runs() if x.id == "maxtext-tpu-v6e-llama-3.1-70b-256chips-s8192")
    public = next(x for x in validated_runs() if x.id == "korthikanti22-175b-selective")
    assert r.family and not public.family
    assert base_sigma(r) == family_sigma("tpu-v6e", "training") > base_sigma(public) == SIGMA_VALIDATED
    p = position(get_preset("llama3.1-70b"), 8192, "bf16", "full", "tpu-v6e", {"dp": 256, "zero_stage": 3})
    g = ground_report(p)
    assert g["nearest"][0]["id"].startswith("maxtext-tpu-v6e")
    assert not g["thin_mechanisms"]  # MaxText's v6e rows ran FSDP over data parallelism


# --- say how sure: validate ranges, risk-aware ranking, advisor --------------------------------


def test_validate_gives_every_training_row_a_range_and_reports_coverage() -> None:
    from rightsize.validate.cases import bundled_paths
    from rightsize.validate.run import validate_paths

    res = validate_paths([p for p in bundled_paths() if p.name == "training.csv"])
    ranged = [r for r in res["rows"] if r["predicted"] is not None]
    assert ranged and all(r["p10"] <= r["p50"] <= r["p90"] for r in ranged)
    assert all(r["ground"]["nearest"] and r["ground"]["nearest"][0]["id"] != r["id"] for r in ranged)
    cov = res["summary"]["all"]["coverage_p10_p90"]
    assert cov == pytest.approx(sum(r["within_p10_p90"] for r in ranged) / len(ranged))
    assert 0.6 <= cov <= 1.0  # aimed at ~80%: not a range so wide it always holds


def test_405b_search_does_not_pick_zero3_over_thousands_of_ranks() -> None:
    """Issue #14: the 405B example picked FSDP/ZeRO-3 over DP 2048 at 58.5% MFU."""
    from pathlib import Path

    from rightsize.search.risk import P75
    from rightsize.search.train import plan_training
    from rightsize.spec.load import parse_spec

    spec = parse_spec(
        {
            "kind": "training",
            "model": "llama3.1-405b",
            "training": {"seq_len": 8192, "global_batch_tokens": "16Mi", "train_tokens": "15.6T"},
            "targets": {"accelerators": ["h100-sxm"], "gpus": 16384, "objective": "time"},
        },
        Path("."),
    )
    b = plan_training(spec).best  # type: ignore[arg-type]
    assert not (b.parallel["zero_stage"] >= 3 and b.parallel["dp"] >= 1024)
    assert b.mfu < 0.55  # the example picked 58.5%; published 405B runs: 38-43% (Llama 3 Table 4)
    assert b.risk_quantile == P75 and b.risk_factor >= 1.0  # issue #27: ranked by the P75


def test_advisor_flags_a_layout_on_thin_ground() -> None:
    from rightsize.advise.evidence import thin_ground
    from rightsize.advise.view import PlanView

    def v(ground: dict) -> PlanView:  # type: ignore[type-arg]
        return PlanView(None, "training", {}, None, {"ground": ground}, None, None)

    far = ground_report(
        position(get_preset("llama3.1-405b"), 8192, "bf16", "full", "mi300x", {"tp": 4, "pp": 16, "dp": 8})
    )
    f = thin_ground(v(far))
    assert f is not None and f.rule == "thin_validation" and f.impact > 0
    near = ground_report(
        position(get_preset("gpt3-175b"), 2048, "fp16", "full", "a100-sxm-80gb", {"tp": 8, "pp": 8, "dp": 8})
    )
    assert thin_ground(v(near)) is None


def test_pp16_vp8_for_126_layers_is_a_valid_layout() -> None:
    """Megatron-Bridge's 405B layout: 126 layers + embedding + loss in 128 chunks."""
    from rightsize.search.space import enumerate_configs
    from rightsize.spec.training import ParallelSettings

    arch = get_preset("llama3.1-405b")
    cfg, _ = enumerate_configs(
        arch, 8192, 2048, np.array([16384.0]), 8, ParallelSettings(tp=8, pp=16, vpp=8, cp=1)
    )
    assert len(cfg) > 0 and set(cfg.vpp) == {8.0}


def test_nvfp4_training_on_blackwell_is_faster_than_fp8_but_not_2x() -> None:
    cfg = ParallelConfigs.single(tp=4, pp=1, dp=8, micro_batch=1, zero_stage=1, sequence_parallel=True)
    t8 = train_step(_w("llama3-70b", precision="fp8"), cfg, _hw("b200", "fp8")).step_time[0]
    t4 = train_step(_w("llama3-70b", precision="nvfp4"), cfg, _hw("b200", "nvfp4")).step_time[0]
    assert 1.05 < t8 / t4 < 1.8
    assert not get_accelerator("h100-sxm").supports("nvfp4")
