"""Blackwell Ultra (b300, gb300) GEMM fractions against the B300 measurement they come from."""

from __future__ import annotations

import pytest

from rightsize.catalog import accelerators

# Antoniomv7/gb300-microbench results/precision_cutedsl_vs_cublaslt.csv (study-20260923T173150Z):
# cuBLASLt on an NVIDIA B300 SXM6 AC, best shape 8192^3, mean of 3 x 20 timed launches, TFLOP/s.
B300_CUBLASLT_FLOPS_PER_S = {"bf16": 2099.3e12, "fp8": 3944.7e12, "fp4": 7545.6e12}
# Same study, whole-device BF16 UMMA loop on all 148 SMs (operands already in shared memory): the
# tensor-instruction ceiling under load, which no complete GEMM can exceed.
B300_DEVICE_UMMA_BF16_FLOPS_PER_S = 2119.7e12


@pytest.mark.parametrize("dtype", sorted(B300_CUBLASLT_FLOPS_PER_S))
def test_b300_fraction_is_the_measured_rate_over_the_datasheet_peak(dtype: str) -> None:
    b300 = accelerators()["b300"]
    rate = b300.efficiency.gemm_peak_fraction[dtype] * b300.peak_dense_flops_per_s[dtype]
    assert rate == pytest.approx(B300_CUBLASLT_FLOPS_PER_S[dtype], rel=2e-3)
    assert b300.efficiency.sources[f"gemm_peak_fraction.{dtype}"].source.startswith("measured")


@pytest.mark.parametrize("dtype", sorted(B300_CUBLASLT_FLOPS_PER_S))
def test_gb300_keeps_at_least_the_b300_rate(dtype: str) -> None:
    # Same die and SM count at 1,400 W against 1,100 W: GB300 sustains at least B300's rate, and
    # the catalog takes exactly that lower bound over GB300's higher nominal peak.
    gb300 = accelerators()["gb300"]
    rate = gb300.efficiency.gemm_peak_fraction[dtype] * gb300.peak_dense_flops_per_s[dtype]
    assert rate == pytest.approx(B300_CUBLASLT_FLOPS_PER_S[dtype], rel=5e-3)


def test_b300_bf16_gemm_stays_under_the_device_tensor_ceiling() -> None:
    b300 = accelerators()["b300"]
    rate = b300.efficiency.gemm_peak_fraction["bf16"] * b300.peak_dense_flops_per_s["bf16"]
    assert rate <= B300_DEVICE_UMMA_BF16_FLOPS_PER_S


@pytest.mark.parametrize("acc_id", ["b300", "gb300"])
def test_lower_precision_reaches_a_smaller_fraction(acc_id: str) -> None:
    # Measured on B300 as on B200 (MAMF 0.776 BF16, 0.763 FP8): each halving of the operand width
    # loses some of its nominal doubling (block-scale handling, epilogue, memory per FLOP).
    fractions = accelerators()[acc_id].efficiency.gemm_peak_fraction
    assert fractions["fp4"] < fractions["fp8"] < fractions["bf16"]
