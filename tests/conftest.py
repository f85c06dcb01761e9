"""Shared fixtures: a hand-built A100-like hardware so perf tests do not depend on catalog values."""

from __future__ import annotations

import pytest

from rightsize.perf.hardware import Hardware


@pytest.fixture(scope="session")
def a100_like() -> Hardware:
    return Hardware(
        accelerator_id="test-a100",
        dtype="bf16",
        peak_flops_per_s=312e12,
        gemm_fraction=0.8,
        attention_fraction=0.5,
        sm_count=108,
        tile_m=128,
        tile_n=256,
        hbm_bytes=80 * 2**30,
        hbm_bytes_per_s=2.0e12,
        memory_bw_fraction=0.8,
        scaleup_bytes_per_s=300e9,
        scaleup_bw_fraction=0.75,
        scaleup_latency_s=8e-6,
        domain_gpus=8,
        scaleout_bytes_per_s_per_gpu=25e9,
        scaleout_bw_fraction=0.85,
        scaleout_latency_s=15e-6,
        gpus_per_node=8,
        kernel_overhead_s=5e-6,
        tdp_w=400.0,
        peak_16bit_flops_per_s=312e12,
    )
