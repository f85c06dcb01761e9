"""Issue #27: routed-expert GEMMs are timed as the pinned stack runs them, one cuBLAS GEMM per local
expert on its own routed rows (Transformer Engine f8a01cd5 `multi_stream_cublas_gemm`), so each
expert pays its own tile rounding, wave tail and launch, not the dense efficiency of one GEMM over
the concatenated rows (perf.moe_step's docstring, 'Expert GEMMs')."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf import layer
from rightsize.perf.gemm import gemm_time_s, train_gemm_time_s
from rightsize.perf.hardware import Hardware
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.presets import get_preset


@pytest.fixture(scope="module")
def b200() -> Hardware:
    acc = get_accelerator("b200")
    return Hardware.from_catalog(acc, node_for(acc.id), "bf16")


def _gpt_oss() -> TrainWorkload:
    return TrainWorkload(arch=get_preset("gpt-oss-120b"), seq_len=4096, global_batch=1280, precision="bf16")


def test_expert_mlp_is_local_experts_times_one_experts_gemms(b200: Hardware) -> None:
    """GPT-OSS 120B at EP8 on B200 (the Megatron-Bridge 26.04 layout): 16 local experts, each
    fc1 [rows_e, 2880] x [2880, 5760] and fc2 [rows_e, 2880] x [2880, 2880], forward and the two
    backward GEMMs, plus the router's [rows, 2880] x [2880, 128]."""
    w, cfg = _gpt_oss(), ParallelConfigs.single(dp=64, ep=8, micro_batch=4)
    rows = cfg.micro_batch * w.seq_len / cfg.cp
    fwd, bwd = layer._moe_mlp_times(w, cfg, b200, rows, cfg.tp)
    rows_e = rows * 4 * 8 / 128 * layer.moe_load_factor(w, cfg)
    f1, b1 = train_gemm_time_s(rows_e, 5760.0, 2880.0, b200, 2.0)
    f2, b2 = train_gemm_time_s(rows_e, 2880.0, 2880.0, b200, 2.0)
    rf, rb = train_gemm_time_s(rows, 128.0, 2880.0, b200, 2.0)
    assert fwd[0] == pytest.approx(16 * (f1[0] + f2[0]) + rf[0])
    assert bwd[0] == pytest.approx(16 * (b1[0] + b2[0]) + rb[0])


def test_per_expert_gemms_cost_more_than_one_gemm_over_the_concatenated_rows(b200: Hardware) -> None:
    """The hypothesis that the model runs expert GEMMs at the concatenated shape's efficiency is
    not what it does: 16 GEMMs of ~4.1k rows cost more than one of 66k rows (each expert's wave
    tail and launch), and the gap closes as the experts' rows grow (EP64: 2 experts of ~33k)."""
    w = _gpt_oss()
    for ep, local in ((8, 16), (64, 2)):
        cfg = ParallelConfigs.single(dp=64, ep=ep, micro_batch=4)
        rows_e = float((cfg.micro_batch * w.seq_len * 4 * ep / 128 * layer.moe_load_factor(w, cfg))[0])
        split = local * gemm_time_s(rows_e, 5760.0, 2880.0, b200, 2.0)
        joined = gemm_time_s(local * rows_e, 5760.0, 2880.0, b200, 2.0)
        assert split > joined
        if ep == 8:
            assert split / joined > 1.05
        else:
            assert split / joined < 1.02
    assert np.isfinite(split)
