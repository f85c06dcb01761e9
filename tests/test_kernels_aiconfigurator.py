"""AIConfigurator's kernel database through its package (the optional extra `rightsize[aiconfigurator]`).

These tests skip, saying why, where the package is not installed; `.ci/run` installs it in
its own step so CI runs them.
"""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.perf.kernels import aiconfigurator

pytestmark = pytest.mark.skipif(aiconfigurator.status() is not None, reason=str(aiconfigurator.status()))


@pytest.fixture(scope="module")
def h100_trtllm():
    table = aiconfigurator.load_table("h100-sxm", "tensorrt-llm")
    assert table is not None
    return table


def test_database_read_through_the_package(h100_trtllm):
    t = h100_trtllm
    assert "AIConfigurator" in t.source and "h100_sxm/trtllm" in t.source
    ops = t.ops()
    assert ops["gemm"] > 1000 and ops["generation_attention"] > 1000 and ops["all_reduce"] > 10
    g = t.grid("gemm", "fp8")
    assert g is not None
    small, big = float(g(16.0, 4096.0, 4096.0)), float(g(4096.0, 4096.0, 4096.0))
    # a 4096^3 FP8 GEMM is compute-bound: between 30% and 100% of H100's 1979 TFLOP/s dense peak
    assert 2 * 4096**3 / 1979e12 / 1.0 <= big <= 2 * 4096**3 / 1979e12 / 0.3
    assert small < big
    assert np.isnan(float(g(1e6, 4096.0, 4096.0)))  # far beyond the measured m: refused


def test_unknown_accelerator_or_engine_has_no_table():
    assert aiconfigurator.load_table("mi300x", "vllm") is None  # AMD: no data in the database
    assert aiconfigurator.load_table("h100-sxm", "gpt-fast") is None


def test_version_not_in_the_database_is_named_in_the_source():
    t = aiconfigurator.load_table("h200-sxm", "tensorrt-llm", "1.0.0")
    assert t is not None and "1.0.0 not in the database" in t.source


def test_validation_row_is_predicted_from_measured_kernels():
    from rightsize.validate.cases import bundled_paths, read_cases
    from rightsize.validate.inference_cases import predict_inference

    case = next(
        c for c in read_cases(bundled_paths()[1]) if c.id == "trtllm-h100-sxm-llama-3-8b-tp1-128-2048"
    )
    value, detail = predict_inference(case)
    assert detail["source"] in ("measured kernels", "mixed")
    assert detail["kernels_predicted"] == value and detail["analytic_predicted"] > 0
    assert abs(value - case.published) / case.published < 0.25
