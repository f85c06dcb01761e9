"""NVIDIA L40S (Ada, AD102): its GEMM fractions and the figures derived from them, the L2
residency of a vision engine's memory-bound kernels, and ResNet-50 inference against the
MLPerf Inference v4.0 rows it is validated on (issue 28)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf import datapipe
from rightsize.perf.hardware import SUSTAINED_GEMM_REALISATION, Hardware
from rightsize.perf.vision import FUSED_ADD_READ_PASSES, inference_pass_s, step_time
from rightsize.spec.vision import get_vision_model
from rightsize.validate.kind_cases import read_kind_cases
from rightsize.validate.vision_cases import METRICS, predict_vision

VISION_CSV = Path(__file__).resolve().parent.parent / "src" / "rightsize" / "validate" / "data" / "vision.csv"


def _hw(acc: str, dtype: str) -> Hardware:
    return Hardware.from_catalog(get_accelerator(acc), node_for(acc), dtype)


def _catalog_fraction(acc: str, dtype: str) -> float:
    return _hw(acc, dtype).gemm_fraction / SUSTAINED_GEMM_REALISATION


def test_l40s_fractions_follow_one_bf16_figure() -> None:
    """One value per quantity: FP16 and INT8 (same mma.sync fragments) equal the BF16 fraction,
    FP8 is it lowered by Hopper's FP8/BF16 ratio (0.88), attention is A100's FA2 estimate (0.6)
    scaled by the L40S/A100 BF16 ratio; and the BF16 fraction is never below the L40S's own
    best-shape sample (252.0 of 362.05 TFLOPS), the same-die RTX 6000 Ada bound being higher."""
    bf16 = _catalog_fraction("l40s", "bf16")
    assert bf16 >= 252.0 / 362.05
    assert bf16 == pytest.approx(278.5 / (4 * 91.06), abs=1e-3)
    assert _catalog_fraction("l40s", "fp16") == bf16
    assert _catalog_fraction("l40s", "int8") == bf16
    assert _catalog_fraction("l40s", "fp8") == pytest.approx(0.88 * bf16, abs=0.01)
    a100 = _catalog_fraction("a100-sxm-80gb", "bf16")
    assert _hw("l40s", "bf16").attention_fraction == pytest.approx(0.6 * bf16 / a100, abs=0.01)


def test_a_pass_that_fits_in_l2_reads_nothing_from_memory() -> None:
    bw = 800e9
    assert inference_pass_s(1e6, 2.0, 1.0, 4e6, bw) == 0.0
    assert inference_pass_s(1e6, 2.0, 1.0, 2e6, bw) == 0.0  # exactly full still fits
    assert inference_pass_s(3e6, 2.0, 1.0, 4e6, bw) == pytest.approx(6e6 / bw)
    assert inference_pass_s(1e6, 2.0, 2.0, 0.0, bw) == pytest.approx(4e6 / bw)


def test_resnet50_pools_stay_in_the_l40s_l2() -> None:
    """At batch 32 in INT8, ResNet-50's pools and its residual adds fit in the L40S's 96 MB of
    L2: nothing memory-bound is left. The same card with no L2 catalogued pays every pool
    (2 passes of input and output) and every shortcut read from GDDR."""
    arch = get_vision_model("resnet50")
    hw = _hw("l40s", "int8")
    assert datapipe.l2_bytes("l40s") == 96 * 2**20
    batch = 32
    assert step_time(arch, hw, batch, training=False, act_bytes=1.0).memory_bound_s == 0.0

    no_l2 = replace(hw, accelerator_id="l40s-without-l2")
    assert datapipe.l2_bytes(no_l2.accelerator_id) == 0.0
    pools = [x for x in arch.layers if x.op == "pool"]
    adds = [x for x in arch.layers if x.op == "add"]
    pool_bytes = sum(p.count * p.channels * (p.in_hw**2 + p.out_hw**2) for p in pools) * batch
    add_bytes = FUSED_ADD_READ_PASSES * sum(a.count * a.channels * a.out_hw**2 for a in adds) * batch
    bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    st = step_time(arch, no_l2, batch, training=False, act_bytes=1.0)
    assert st.memory_bound_s == pytest.approx((pool_bytes + add_bytes) / bw)


@pytest.mark.parametrize(
    "row_id", ["mlperf-inf-v4.0-rn50-l40sx2-offline", "mlperf-inf-v4.0-rn50-l4x1-offline"]
)
def test_resnet50_inference_against_mlperf(row_id: str) -> None:
    """The published MLPerf Inference v4.0 ResNet-50 Offline figures (Dell R7615 with 2 L40S,
    88,893 images/s; XR8620 with one L4, 12,097): the L40S within 30% (it was 34.8% low before
    its GEMM fraction took the same-die bound and its pools the L2), the L4 within 10%. The
    L40S's remaining gap (about -27% at the row's batch 64) is not explained by a sourced
    mechanism yet."""
    cases = read_kind_cases(VISION_CSV, METRICS)
    assert cases is not None
    case = next(c for c in cases if c.id == row_id)
    predicted, _ = predict_vision(case)
    bound = 0.30 if "l40s" in row_id else 0.10
    assert abs(predicted / case.published - 1.0) < bound
