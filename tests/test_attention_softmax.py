"""Flash attention's head-dimension curve from the special-function units' exponential rate
(perf.attention.softmax_head_dim_half): the catalog rates against the published figures they
come from, and the curve's behaviour where the plateau is measured (head dim 128) and below."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf.attention import (
    HEAD_DIM_HALF,
    REFERENCE_SEQ,
    attention_efficiency,
    softmax_head_dim_half,
)
from rightsize.perf.hardware import Hardware


def _hw(acc: str) -> Hardware:
    return Hardware.from_catalog(get_accelerator(acc), node_for(acc), "bf16")


def test_a100_rates_give_the_measured_flashattention2_curve() -> None:
    # Dao 2023 (FA2) Fig. 4 on A100: head dim 64 at ~0.83 of head dim 128, i.e. h = 32, which
    # the catalog's A100 SFU rate (108 SMs x 16 / clk x 1.41 GHz) and 312 TFLOPS reproduce.
    hw = _hw("a100-sxm-80gb")
    assert softmax_head_dim_half(hw) == pytest.approx(HEAD_DIM_HALF, rel=0.02)
    ratio = attention_efficiency(REFERENCE_SEQ, 64.0, hw) / attention_efficiency(REFERENCE_SEQ, 128.0, hw)
    assert float(ratio) == pytest.approx(0.83, abs=0.01)


def test_h100_matches_the_flashattention3_paper_ratio() -> None:
    # FA3 paper sec. 3: 989 TFLOPS of matmul against 3.9 TFLOPS of special functions, so at
    # head dim 128 (512 matmul FLOPs per score) the exponentials take half the matmul time.
    hw = _hw("h100-sxm")
    exp_over_matmul_at_128 = (1.0 / hw.sfu_exp_per_s) / (4.0 * 128.0 / hw.peak_16bit_flops_per_s)
    assert exp_over_matmul_at_128 == pytest.approx(0.5, rel=0.03)


@pytest.mark.parametrize("acc", ["a100-sxm-80gb", "h100-sxm", "b200", "gb200", "b300", "gb300", "mi300x"])
def test_head_dim_128_keeps_the_catalog_plateau(acc: str) -> None:
    hw = _hw(acc)
    assert float(attention_efficiency(REFERENCE_SEQ, 128.0, hw)) == pytest.approx(
        float(hw.attention_fraction_for("auto"))
    )


def test_narrow_heads_pay_more_where_tensor_cores_outrun_the_sfus() -> None:
    def ratio(acc: str) -> float:
        hw = _hw(acc)
        return float(
            attention_efficiency(REFERENCE_SEQ, 64.0, hw) / attention_efficiency(REFERENCE_SEQ, 128.0, hw)
        )

    # Blackwell doubles tensor throughput per SM, not the SFUs; Blackwell Ultra doubles the SFUs.
    assert ratio("gb200") < ratio("h100-sxm") < ratio("a100-sxm-80gb")
    assert ratio("gb200") < ratio("gb300")
    assert ratio("b200") < ratio("b300")
    # Wider heads (MLA's 192/128) amortise the exponentials better, most on Blackwell.
    hw = _hw("b200")
    assert attention_efficiency(REFERENCE_SEQ, 160.0, hw) > attention_efficiency(REFERENCE_SEQ, 128.0, hw)


def test_without_an_sfu_rate_the_a100_curve_is_kept() -> None:
    hw = dataclasses.replace(_hw("b200"), sfu_exp_per_s=0.0)
    assert softmax_head_dim_half(hw) == HEAD_DIM_HALF
    doubled = dataclasses.replace(_hw("b200"), sfu_exp_per_s=2.0 * _hw("b200").sfu_exp_per_s)
    assert softmax_head_dim_half(doubled) == pytest.approx(softmax_head_dim_half(_hw("b200")) / 2.0)
    assert np.all(np.asarray(attention_efficiency(np.array([128.0, 4096.0]), 64.0, doubled)) > 0.0)
