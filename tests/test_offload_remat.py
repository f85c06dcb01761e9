"""Remat policies by name, activation and optimizer offload to host memory: device and host
bytes, link time, and the search's policies per stack."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from perf_helpers import catalog_hw, llama2_7b

from rightsize.perf import remat
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.model import ModelArch


def _maxtext(scale_layers: int, hidden: int, heads: int, ffn: int) -> ModelArch:
    # MaxText base.yml scaled by global_parameter_scale (pyconfig.get_individual_scales)
    return ModelArch(
        name="maxtext",
        layers=scale_layers,
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        ffn_hidden=ffn,
        vocab=32000,
        mlp="swiglu",
        head_dim=128,
    )


def test_maxtext_v5e_32b_full_remat_fits_on_16gb_chips() -> None:
    """MaxText configs/v5e/32b.sh: 256 v5e chips, FSDP over all, 4 sequences of 2048 per chip,
    remat full; it ran (132 TFLOP/s/chip, configs/v5e/README.md), so it must fit."""
    w = TrainWorkload(arch=_maxtext(32, 8192, 64, 28672), seq_len=2048, global_batch=1024, precision="bf16")
    cfg = ParallelConfigs.single(dp=256, micro_batch=4, recompute="full", zero_stage=3)
    mem = train_step(w, cfg, catalog_hw("tpu-v5e")).memory
    assert bool(mem.fits[0]), mem.as_dict(0)


def test_policies_order_memory_and_recompute() -> None:
    """Saving fewer tensors keeps less on the device and repeats more forward work."""
    w = TrainWorkload(arch=llama2_7b(), seq_len=4096, global_batch=64, precision="bf16")
    hw = catalog_hw("h100-sxm")
    order = ["none", "minimal", "save_dot_except_mlp", "save_qkv_proj", "full"]
    cfg = ParallelConfigs(
        tp=1,
        pp=1,
        dp=8,
        cp=1,
        ep=1,
        vpp=1,
        micro_batch=1,
        recompute=np.array([remat.CODES[n] for n in order]),
        sequence_parallel=False,
        zero_stage=3,
    )
    st = train_step(w, cfg, hw)
    acts = st.memory.activations
    assert np.all(np.diff(acts) < 0), dict(zip(order, acts, strict=True))
    work = st.hardware_flops
    assert np.all(np.diff(work) >= 0), dict(zip(order, work, strict=True))
    assert st.step_time[0] < st.step_time[-1]


def test_offloaded_policy_moves_qkv_to_host_and_costs_link_time() -> None:
    w = TrainWorkload(arch=llama2_7b(), seq_len=4096, global_batch=64, precision="bf16")
    hw = catalog_hw("h100-sxm")
    names = ["save_qkv_proj", "qkv_proj_offloaded"]
    cfg = ParallelConfigs(
        tp=1,
        pp=1,
        dp=8,
        cp=1,
        ep=1,
        vpp=1,
        micro_batch=2,
        recompute=np.array([remat.CODES[n] for n in names]),
        sequence_parallel=False,
        zero_stage=3,
    )
    st = train_step(w, cfg, hw)
    # q, k, v: 3 x 4096 x 2 bytes per token per layer, 2 x 4096 tokens, 32 layers
    qkv = 3 * 4096 * 2 * 2 * 4096 * 32
    assert st.memory.activations[0] - st.memory.activations[1] == pytest.approx(qkv, rel=1e-9)
    assert st.memory.host is not None and st.memory.host[1] == pytest.approx(qkv, rel=1e-9)
    assert st.step_time[1] >= st.step_time[0]
    # a link 100x slower exposes the copies
    slow = train_step(w, cfg, hw.with_overrides(host_link_bytes_per_s=hw.host_link_bytes_per_s / 100))
    assert slow.step_time[1] > st.step_time[1] * 1.05


def test_host_memory_limits_offload() -> None:
    w = TrainWorkload(arch=llama2_7b(), seq_len=4096, global_batch=64, precision="bf16")
    cfg = ParallelConfigs.single(dp=8, micro_batch=2, recompute="minimal_offloaded", zero_stage=3)
    hw = catalog_hw("h100-sxm")
    assert bool(train_step(w, cfg, hw).memory.fits[0])
    tiny = hw.with_overrides(host_bytes_per_gpu=1e9)
    assert not bool(train_step(w, cfg, tiny).memory.fits[0])


def test_optimizer_offload_moves_states_to_host_and_streams_them() -> None:
    w = TrainWorkload(arch=llama2_7b(), seq_len=4096, global_batch=64, precision="bf16")
    cfg = ParallelConfigs.single(dp=8, micro_batch=1, recompute="full", zero_stage=1)
    hw = catalog_hw("h100-sxm")
    on = train_step(w, cfg, hw)
    off = train_step(replace(w, optimizer_offload=True), cfg, hw)
    assert float(off.memory.optimizer[0]) == 0.0
    assert off.memory.host is not None and off.memory.host[0] == pytest.approx(on.memory.optimizer[0])
    streamed = 2 * on.memory.optimizer[0] / hw.host_link_bytes_per_s
    assert off.optimizer[0] - on.optimizer[0] == pytest.approx(streamed)


def test_torchtitan_op_selective_keeps_every_other_matmul_output() -> None:
    """torchtitan's op-level SAC on Llama 3.1 8B keeps wq, wv, w1, w2 outputs, the attention
    output and the block input: 2h + 2ad + 2gd + (2ad + 4a) + 2f + 2h bytes per token per layer."""
    arch = ModelArch(
        name="llama3-8b",
        layers=32,
        hidden=4096,
        heads=32,
        kv_heads=8,
        ffn_hidden=14336,
        vocab=128256,
        mlp="swiglu",
    )
    w = TrainWorkload(arch=arch, seq_len=8192, global_batch=16, precision="bf16")
    names = ["none", "selective_op", "full"]
    cfg = ParallelConfigs(
        tp=1,
        pp=1,
        dp=8,
        cp=1,
        ep=1,
        vpp=1,
        micro_batch=2,
        recompute=np.array([remat.CODES[n] for n in names]),
        sequence_parallel=False,
        zero_stage=3,
    )
    st = train_step(w, cfg, catalog_hw("h100-sxm"))
    h, a, g, d, f = 4096, 32, 8, 128, 14336
    per_token = 2 * h + 2 * a * d + 2 * g * d + (2 * a * d + 4 * a) + 2 * f + 2 * h
    rebuilt = st.memory.activations[1] - per_token * 16384 * 32
    assert 0 <= rebuilt < 0.1 * st.memory.activations[1]  # one layer rebuilt in its backward
    assert st.memory.activations[0] > st.memory.activations[1] > st.memory.activations[2]
    assert st.hardware_flops[0] < st.hardware_flops[1] < st.hardware_flops[2]


def test_spec_takes_named_policies_and_offload_fields() -> None:
    from rightsize.spec.training import TrainingSpec

    spec = TrainingSpec.model_validate(
        {
            "model": {
                "name": "m",
                "layers": 4,
                "hidden": 512,
                "heads": 8,
                "kv_heads": 8,
                "ffn_hidden": 2048,
                "vocab": 1000,
                "mlp": "swiglu",
            },
            "training": {
                "seq_len": 2048,
                "global_batch": 8,
                "attention_kernel": "cudnn",
                "optimizer_offload": True,
            },
            "parallel": {"recompute": "qkv_proj_offloaded"},
        }
    )
    w = TrainWorkload.from_spec(spec.model, spec.training)
    assert w.optimizer_offload and w.attention_kernel == "cudnn"
    with pytest.raises(ValueError):
        TrainingSpec.model_validate({**spec.model_dump(), "parallel": {"recompute": "sometimes"}})


def test_xla_keeps_less_device_memory_aside_than_cuda() -> None:
    tpu, gpu = catalog_hw("tpu-v5e"), catalog_hw("h100-sxm")
    assert tpu.framework_bytes < gpu.framework_bytes and tpu.usable_fraction > gpu.usable_fraction


def test_tpu_search_tries_maxtext_policies() -> None:
    """On Cloud TPU the planner's remat choices are MaxText's names (JAX), offloading included."""
    from rightsize.catalog import get_accelerator as acc_of
    from rightsize.search.space import enumerate_where
    from rightsize.spec.training import ParallelSettings

    arch = llama2_7b()
    names = remat.searched_policies(acc_of("tpu-v5p").vendor)
    assert "qkv_proj_offloaded" in names and "selective" not in names
    cfg, _ = enumerate_where(
        arch, 4096, 256, np.array([64.0]), 64, ParallelSettings(), recompute_options=names
    )
    assert {remat.NAMES[int(c)] for c in np.unique(cfg.recompute)} == set(names)
    gpu = remat.searched_policies(acc_of("h100-sxm").vendor)
    assert gpu == ("none", "selective", "full")


def test_report_schema_names_every_remat_policy() -> None:
    """A plan's JSON names its remat policy; the published schema must accept every one."""
    import json
    from importlib import resources

    schema = json.loads((resources.files("rightsize.report") / "data" / "report.schema.json").read_text())
    enum = schema["$defs"]["candidate"]["properties"]["parallel"]["properties"]["recompute"]["enum"]
    assert set(enum) == set(remat.NAMES)
