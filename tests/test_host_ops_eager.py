"""Issue #27: what an eager dense or MoE layer issues on the host beyond its modules
(perf.host_overhead): fp8 Transformer Engine modules, Transformer Engine's context-parallel
ring (counted from v1.6rc2's AttnFuncWithCP) and LoRA adapters."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.catalog.host_launch import host_launch_figures
from rightsize.perf import host_overhead as ho
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.presets import get_preset


def _llama(precision: str = "bf16", cp_comm: str = "p2p", method: str = "full", targets=("q", "k", "v", "o")):
    return TrainWorkload(
        arch=get_preset("llama2-70b"),
        seq_len=8192,
        global_batch=8,
        precision=precision,
        method=method,
        lora_targets=tuple(targets),
        cp_comm=cp_comm,
        cuda_graph_scope="none",
    )


def _cfg(cp: int) -> ParallelConfigs:
    return ParallelConfigs.single(tp=4, cp=cp, dp=2, micro_batch=1, zero_stage=0)


def _dense(w: TrainWorkload, cp: int = 1) -> tuple[float, float]:
    _, fwd, _, bwd = ho.section_ops(w, _cfg(cp), False)
    return float(fwd[0]), float(bwd[0])


def test_the_fp8_factor_is_sourced_to_a_measurement() -> None:
    figures = host_launch_figures()
    s = figures.sources["te_fp8_module_factor"]
    assert "761" in s.source and s.source.startswith("measured")
    assert figures.te_fp8_module_factor == pytest.approx(2.0)


def test_fp8_modules_weigh_the_factor_more_on_the_host() -> None:
    """Four fp8 TE linears forward (QKV, out-projection, fc1, fc2); the core attention module
    stays 16 bit."""
    f16, b16 = _dense(_llama("bf16"))
    f8, b8 = _dense(_llama("fp8"))
    extra = 4.0 * ho.TE_MODULE_OPS * (host_launch_figures().te_fp8_module_factor - 1.0)
    assert f8 - f16 == pytest.approx(extra)
    assert b8 - b16 == pytest.approx(2.0 * extra)


def test_the_context_parallel_ring_adds_its_counted_steps() -> None:
    f1, b1 = _dense(_llama(), 1)
    for cp in (2, 4, 8):
        f, b = _dense(_llama(), cp)
        assert f - f1 == pytest.approx(ho.CP_RING_FWD_OPS_PER_STEP * cp + ho.CP_RING_FWD_FIXED_OPS)
        assert b - b1 == pytest.approx(ho.CP_RING_BWD_OPS_PER_STEP * cp + ho.CP_RING_BWD_FIXED_OPS)
    # the all-to-all (Ulysses) and all-gather variants are not TE's ring: not counted here
    assert _dense(_llama(cp_comm="a2a"), 4) == (f1, b1)


def test_lora_adapters_follow_megatrons_fused_projections() -> None:
    full = _dense(_llama())
    attn = _dense(_llama(method="lora", targets=("q", "k", "v", "o")))
    qkv_only = _dense(_llama(method="lora", targets=("q", "v")))
    every = _dense(_llama(method="lora", targets=("q", "k", "v", "o", "gate", "up", "down")))
    per = (ho.LORA_FWD_OPS_PER_ADAPTER, ho.LORA_BWD_OPS_PER_ADAPTER)
    for got, sites in ((attn, 2), (qkv_only, 1), (every, 4)):
        assert got[0] - full[0] == pytest.approx(sites * per[0])
        assert got[1] - full[1] == pytest.approx(sites * per[1])


def test_a_host_bound_dense_layer_exposes_its_extra_launches() -> None:
    """With no device work queued the layer lasts as long as the host issues it: the ring and
    the fp8 modules show up one for one in the exposed time."""
    from rightsize.catalog import get_accelerator, node_for
    from rightsize.perf.hardware import Hardware

    acc = get_accelerator("h100-sxm")
    hw = Hardware.from_catalog(acc, node_for(acc.id), "bf16")
    tiny = np.full(1, 1e-9)
    w = _llama("fp8", method="lora")
    f, b = ho.exposed_host_s(w, _cfg(2), hw, False, (0.0 * tiny, tiny, tiny))
    fwd, bwd = _dense(w, 2)
    per_op = host_launch_figures().per_op_s_for("h100-sxm")
    assert f[0] == pytest.approx(fwd * per_op - 1e-9)
    assert b[0] == pytest.approx(bwd * per_op - 1e-9)


def test_mla_and_the_shared_expert_are_counted_from_megatron_core() -> None:
    """DeepSeek-V3's layer issues seven TE module calls for its attention (input norm, four
    latent projections, core attention, out-projection) and a shared expert beside the routed."""
    arch = get_preset("deepseek-v3")
    assert arch.is_mla and arch.shared_experts == 1
    w = TrainWorkload(arch=arch, seq_len=4096, global_batch=4096, precision="bf16", cuda_graph_scope="none")
    cfg = ParallelConfigs.single(dp=64, ep=64, micro_batch=1, zero_stage=1)
    experts, attention, _, _ = ho.section_ops(w, cfg, True)
    te = ho.TE_MODULE_OPS
    assert attention[0] == pytest.approx(7.0 * te + ho.MLA_EXTRA_OPS + ho.ATTENTION_FIXED_OPS)
    local = arch.experts / 64
    routed = ho.EXPERT_FIXED_OPS + ho.EXPERT_TE_MODULES * te + ho.ACTIVATION_OPS + 2.0 * local
    assert experts[0] == pytest.approx(routed + 2.0 * te + ho.SHARED_EXPERT_OPS)
