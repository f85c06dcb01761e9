"""Float8 training by mechanism: which GEMMs run in fp8, cast costs per recipe, fp8 FSDP gathers."""

from __future__ import annotations

from dataclasses import replace

import pytest
from perf_helpers import catalog_hw, llama2_7b

from rightsize.perf.layer import logits_times
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.model import ModelArch


def test_fp8_keeps_the_output_layer_in_bf16() -> None:
    arch = llama2_7b()
    cfg = ParallelConfigs.single(dp=8, micro_batch=1)
    bf16 = logits_times(
        TrainWorkload(arch=arch, seq_len=4096, global_batch=8, precision="bf16"), cfg, catalog_hw("h100-sxm")
    )
    fp8 = logits_times(
        TrainWorkload(arch=arch, seq_len=4096, global_batch=8, precision="fp8"),
        cfg,
        catalog_hw("h100-sxm", "fp8"),
    )
    assert fp8[0][0] == pytest.approx(bf16[0][0]) and fp8[1][0] == pytest.approx(bf16[1][0])


def test_fp8_recipes_change_casts_and_fsdp_gathers() -> None:
    """Delayed scaling skips the amax read (cheaper casts); torchao tensorwise gathers FSDP
    weights in fp8 (half the all-gather bytes): neither slower than TE current scaling."""
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
    cfg = ParallelConfigs.single(dp=64, micro_batch=1, recompute="full", zero_stage=3)
    hw = catalog_hw("h100-sxm", "fp8").with_overrides(
        scaleout_bytes_per_s_per_gpu=5e9
    )  # a thin network exposes gathers
    base = TrainWorkload(arch=arch, seq_len=8192, global_batch=64, precision="fp8")
    t = {
        r: float(train_step(replace(base, fp8_recipe=r), cfg, hw).step_time[0])
        for r in ("auto", "delayed", "tensorwise")
    }
    assert t["delayed"] < t["auto"] and t["tensorwise"] < t["auto"]
