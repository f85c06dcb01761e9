"""Blackwell Ultra (b300, gb300) GEMM fractions: what they rest on and the bounds a measurement sets."""

from __future__ import annotations

import pytest

from rightsize.catalog import accelerators

# Antoniomv7/gb300-microbench README (campaigns of 2026-08-17, NVIDIA B300 SXM6 AC, CUDA 13.1):
# cuBLASLt BF16 8192^3, two warm-up and ten timed launches, hot cache. A burst at boost clock is
# at or above any sustained best-shape mean, so it bounds the catalog's B300 BF16 rate from above.
B300_CUBLASLT_BF16_BURST_FLOPS_PER_S = 2118.7e12

ANALOGUES = [("b300", "b200"), ("gb300", "gb200")]


@pytest.mark.parametrize(("ultra", "base"), ANALOGUES)
def test_gemm_fractions_follow_their_blackwell_analogue(ultra: str, base: str) -> None:
    # No MAMF-comparable Blackwell Ultra measurement exists (see the b300 note in efficiency.yaml):
    # every dtype keeps its Blackwell analogue's fraction and says so.
    accs = accelerators()
    ultra_eff, base_eff = accs[ultra].efficiency, accs[base].efficiency
    for dtype, fraction in ultra_eff.gemm_peak_fraction.items():
        assert fraction == pytest.approx(base_eff.gemm_peak_fraction[dtype]), (ultra, dtype)
        source = ultra_eff.sources[f"gemm_peak_fraction.{dtype}"].source
        assert source.startswith("estimate") and "analogy" in source, (ultra, dtype, source[:80])


def test_b300_bf16_rate_stays_below_the_published_burst() -> None:
    b300 = accelerators()["b300"]
    rate = b300.efficiency.gemm_peak_fraction["bf16"] * b300.peak_dense_flops_per_s["bf16"]
    assert rate <= B300_CUBLASLT_BF16_BURST_FLOPS_PER_S


@pytest.mark.parametrize("acc_id", ["b300", "gb300"])
def test_low_precision_fractions_do_not_exceed_bf16(acc_id: str) -> None:
    # Measured Blackwell MAMF has FP8 at or below BF16 (b200 0.763 vs 0.776, gb200 0.723 vs 0.729)
    # and AIConfigurator's NVFP4 util level below FP8's; the analogy keeps that order.
    fractions = accelerators()[acc_id].efficiency.gemm_peak_fraction
    assert fractions["fp4"] < fractions["fp8"] <= fractions["bf16"]
