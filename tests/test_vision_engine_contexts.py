"""Inference engines running several contexts at once (MLPerf's `gpu_inference_streams`), and the
INT8 GEMM fraction of Ampere and Ada parts (issue #28: the L40S, L4 and A100 ResNet-50 rows)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf import datapipe
from rightsize.perf.gemm import gemm_efficiency
from rightsize.perf.hardware import Hardware
from rightsize.perf.vision import concurrent_gemm_efficiency, step_time
from rightsize.search.vision import ENGINE_CONTEXTS, plan_vision
from rightsize.spec import parse_spec
from rightsize.spec.vision import VisionSpec, get_vision_model


def _hw(acc_id: str, dtype: str = "int8") -> Hardware:
    acc = get_accelerator(acc_id)
    return Hardware.from_catalog(acc, node_for(acc.id), dtype)


def _resnet_conv_shapes(batch: int) -> list[tuple[float, float, float]]:
    model = get_vision_model("resnet50")
    return [
        (float(batch * layer.out_hw**2), float(layer.cout), float(layer.cin * layer.k**2))
        for layer in model.layers
        if layer.op == "conv"
    ]


@pytest.mark.parametrize("acc_id", ["l40s", "l4", "a100-sxm-80gb", "h100-sxm"])
def test_concurrent_contexts_only_remove_the_wave_tail(acc_id: str) -> None:
    hw = _hw(acc_id)
    for m, n, k in _resnet_conv_shapes(32):
        alone = float(gemm_efficiency(np.array(m), np.array(n), np.array(k), hw))
        together = concurrent_gemm_efficiency(m, n, k, hw)
        assert alone <= together + 1e-12
        # The GEMM fraction and the pipeline fill stay.
        assert together == pytest.approx(hw.gemm_fraction * k / (k + 96.0))
    # A shape that fills whole tiles and whole waves gains nothing.
    m = float(hw.tile_m * hw.sm_count * 4)
    n = float(hw.tile_n)
    assert concurrent_gemm_efficiency(m, n, 4096.0, hw) == pytest.approx(
        float(gemm_efficiency(np.array(m), np.array(n), np.array(4096.0), hw))
    )


def test_contexts_share_the_l2_and_the_launch_gaps() -> None:
    model = get_vision_model("resnet50")
    hw = _hw("l40s")
    one = step_time(model, hw, 16, training=False, act_bytes=1.0)
    two = step_time(model, hw, 16, training=False, act_bytes=1.0, contexts=2)
    assert two.overhead_s == pytest.approx(one.overhead_s / 2)
    assert two.gemm_s < one.gemm_s  # batch 16 on 142 SMs leaves waves half empty alone
    # Batch 48 fits the 96 MiB L2 alone (its stage-1 residual adds: 2 x 48 x 0.8 MB), not with
    # three more contexts' working sets beside it: the adds' shortcut reads go to GDDR.
    l2 = datapipe.l2_bytes("l40s")
    assert 2 * 48 * 256 * 56 * 56 < l2 < 4 * 2 * 48 * 256 * 56 * 56
    alone = step_time(model, hw, 48, training=False, act_bytes=1.0)
    shared = step_time(model, hw, 48, training=False, act_bytes=1.0, contexts=4)
    assert shared.memory_bound_s > alone.memory_bound_s
    # A transformer's linears take the same path (their last waves filled, their fill kept).
    vit = get_vision_model("vit-b16")
    h100 = _hw("h100-sxm")
    assert step_time(vit, h100, 8, training=False, act_bytes=1.0, contexts=2).gemm_s <= (
        step_time(vit, h100, 8, training=False, act_bytes=1.0).gemm_s
    )
    with pytest.raises(ValueError):
        step_time(model, hw, 16, training=True, act_bytes=2.0, contexts=2)


def test_the_plan_reports_the_contexts_it_picked() -> None:
    spec = parse_spec(
        {
            "kind": "vision",
            "model": "resnet50",
            "mode": "inference",
            "inference": {
                "streams": 1000,
                "fps": 30,
                "latency_p99": "15ms",
                "decode": "none",
                "precision": "int8",
            },
            "targets": {"accelerators": ["l40s"]},
        },
        Path("."),
    )
    assert isinstance(spec, VisionSpec)
    best = plan_vision(spec).best
    assert best.step["engine_contexts"] in ENGINE_CONTEXTS
    # Contexts > 1 lengthen a batch's latency, never past the bound.
    assert best.latency_p99_s is not None and best.latency_p99_s <= 15e-3


@pytest.mark.parametrize("acc_id", ["a100-sxm-80gb", "l40s", "l4"])
def test_ampere_and_ada_run_int8_at_their_16_bit_fraction(acc_id: str) -> None:
    """mma.sync m16n8k32 .s8 and m16n8k16 .bf16 take the same fragment registers and issue at the
    same rate on Ampere and Ada (INT8 peak = 2 x BF16): one measured fraction serves both."""
    eff = get_accelerator(acc_id).efficiency
    acc = get_accelerator(acc_id)
    assert acc.peak_flops_per_s("int8") == pytest.approx(2 * acc.peak_flops_per_s("bf16"), rel=0.02)
    assert eff.gemm_fraction("int8") == pytest.approx(eff.gemm_fraction("bf16"))
