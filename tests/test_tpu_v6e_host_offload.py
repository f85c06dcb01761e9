"""TPU v6e host offload (issue 27): the chip's own host link and what MaxText's Trillium
recipes move over it.

Google's Cloud TPU docs put each v6e chip on a PCIe Gen5 interface and the scaling book gives
32 GB/s per chip (a Gen5 x8 link, not a GPU's x16), which the catalog now carries with its
source instead of the GPU default. The recipes offload each layer's named tensors while the
layer computes (`perf.offload_time`); the Llama 3.1 8B recipe is the one that nearly fills
the link, so its step is the one this figure moves."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf.hardware import Hardware
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.model import ModelArch


def _arch(name: str, layers: int, hidden: int, heads: int, ffn: int, vocab: int) -> ModelArch:
    return ModelArch(
        name=name,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=8,
        ffn_hidden=ffn,
        vocab=vocab,
        mlp="swiglu",
    )


# The published Trillium recipes (tpu-recipes / maxtext_trillium_model_configs.py), as
# (model, sequence, global batch, layout). The 405B config runs dcn_fsdp_parallelism 2 x
# ici_fsdp_parallelism 64 x ici_tensor_parallelism 4: two v6e-256 slices, and
# per_device_batch_size 1 over 512 devices is 4 sequences per tensor-parallel group.
RECIPES = {
    "llama-3.1-8b": (
        _arch("llama-3.1-8b", 32, 4096, 32, 14336, 128256),
        8192,
        1024,
        dict(dp=256, micro_batch=4, recompute="input_qkv_out_offloaded", zero_stage=3),
    ),
    "llama-2-70b": (
        _arch("llama-2-70b", 80, 8192, 64, 28672, 32000),
        4096,
        768,
        dict(dp=256, micro_batch=3, recompute="qkv_proj_offloaded", zero_stage=3),
    ),
    "llama-3.1-405b": (
        _arch("llama-3.1-405b", 126, 16384, 128, 53248, 128256),
        8192,
        512,
        dict(
            tp=4,
            dp=128,
            micro_batch=4,
            recompute="input_qkv_out_offloaded",
            sequence_parallel=True,
            zero_stage=3,
        ),
    ),
}


def _hw() -> Hardware:
    acc = get_accelerator("tpu-v6e")
    return Hardware.from_catalog(acc, node_for(acc.id), "bf16")


def _compute_s(name: str, host_link_bytes_per_s: float) -> float:
    arch, seq, batch, layout = RECIPES[name]
    w = TrainWorkload(arch=arch, seq_len=seq, global_batch=batch, precision="bf16")
    hw = replace(_hw(), host_link_bytes_per_s=host_link_bytes_per_s)
    return float(train_step(w, ParallelConfigs.single(**layout), hw).compute[0])


def test_v6e_host_link_is_googles_per_chip_pcie_figure() -> None:
    eff = get_accelerator("tpu-v6e").efficiency
    figure = eff.sources["host_link_bytes_per_s"]
    assert eff.host_link_bytes_per_s == pytest.approx(32e9)
    assert "PCIe Gen5" in figure.source and "scaling-book" in figure.source
    assert not figure.source.startswith("estimate: PCIe Gen4 x16")  # no longer the GPU default


def test_llama_8b_recipe_hides_its_offload_only_just() -> None:
    """At the catalog's rate the 8B recipe's copies hide under each layer's compute; a link a
    fifth slower exposes them. A change to the offloaded bytes or the link moves this row."""
    link = _hw().host_link_bytes_per_s
    hidden = _compute_s("llama-3.1-8b", 1e13)
    assert _compute_s("llama-3.1-8b", link) == pytest.approx(hidden, rel=1e-9)
    assert _compute_s("llama-3.1-8b", 0.8 * link) > hidden * 1.001


@pytest.mark.parametrize("name", ["llama-2-70b", "llama-3.1-405b"])
def test_larger_recipes_keep_headroom_on_the_link(name: str) -> None:
    link = _hw().host_link_bytes_per_s
    hidden = _compute_s(name, 1e13)
    assert _compute_s(name, 0.5 * link) == pytest.approx(hidden, rel=1e-9)
    assert _compute_s(name, 0.05 * link) > hidden


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_slower_host_link_never_speeds_a_step(name: str) -> None:
    link = _hw().host_link_bytes_per_s
    times = [_compute_s(name, f * link) for f in (0.1, 0.3, 1.0, 3.0)]
    assert times == sorted(times, reverse=True)


def test_llama_405b_recipe_fits_on_its_two_slices() -> None:
    """maxtext_trillium_model_configs.py llama3_1_405b_8192_fsdp_dcn ran (tiering.md: 123
    tokens/s/device): on 512 chips each holds half the 256-chip shard of weights and optimizer
    states, which leaves room for 4 sequences per tensor-parallel group."""
    arch, seq, batch, layout = RECIPES["llama-3.1-405b"]
    w = TrainWorkload(arch=arch, seq_len=seq, global_batch=batch, precision="bf16")
    st = train_step(w, ParallelConfigs.single(**layout), _hw())
    assert bool(st.memory.fits[0])
