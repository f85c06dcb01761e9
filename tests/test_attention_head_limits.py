"""Head-dimension limits of fused attention kernels (catalog attention_kernels.yaml,
perf.attention_kernels): a kernel that cannot train the model's head width is replaced by what
the stack runs instead (PyTorch SDPA's memory-efficient kernel, Transformer Engine's next
backend, or unfused attention), priced as that backend and named in the plan's assumptions.
Pythia-1B (256-wide heads, GPT-NeoX pinning flash-attn 0.2.2) is the published case."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from perf_helpers import catalog_hw

from rightsize.catalog.attention_kernels import attention_kernel_catalog
from rightsize.catalog.loader import iter_numbers, read_data_file
from rightsize.perf.attention import attention_core_times
from rightsize.perf.attention_kernels import attention_backend, with_supported_attention
from rightsize.perf.step import train_memory_only, train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.search.train import plan_training
from rightsize.spec import parse_spec
from rightsize.spec.model import ModelArch

# Pythia-1B (EleutherAI/pythia models/1B/pythia-1b.yml): 16 layers, hidden 2048, 8 heads of 256.
PYTHIA_1B = ModelArch(
    name="pythia-1b", layers=16, hidden=2048, heads=8, kv_heads=8, ffn_hidden=8192, vocab=50304, mlp="gelu"
)


def _w(arch: ModelArch = PYTHIA_1B, kernel: str = "auto", seq: int = 2048) -> TrainWorkload:
    return TrainWorkload(arch=arch, seq_len=seq, global_batch=64, precision="bf16", attention_kernel=kernel)


def _heads_of(width: int) -> ModelArch:
    """Pythia-1B's shape with 8 heads of `width`."""
    return ModelArch(
        name=f"d{width}",
        layers=16,
        hidden=8 * width,
        heads=8,
        kv_heads=8,
        ffn_hidden=32 * width,
        vocab=50304,
        mlp="gelu",
    )


CFG = ParallelConfigs.single(tp=1, dp=8, micro_batch=4, zero_stage=1)


def test_catalog_limits_carry_their_sources() -> None:
    cat = attention_kernel_catalog()
    assert cat.kernels["flash1"].max_head_dim.value == 128
    assert cat.kernels["flash2"].max_head_dim.value == 256
    assert cat.kernels["flash3"].max_head_dim.value == 256
    assert cat.kernels["cudnn"].max_head_dim.value == 128
    assert cat.kernels["cudnn"].max_head_dim_by_cc["9.0"].value == 256
    for k in cat.kernels.values():
        assert k.max_head_dim.source and k.max_head_dim.as_of and k.fallback_source and k.cite
    assert cat.compute_capability["a100-sxm-80gb"] == "8.0" and cat.compute_capability["l40s"] == "8.9"
    numbers = list(iter_numbers(read_data_file("attention_kernels.yaml")))
    assert len(numbers) >= 15
    for path, _, holder in numbers:
        assert holder is not None and holder["source"].strip() and holder["as_of"].strip(), path


@pytest.mark.parametrize(
    ("kernel", "acc", "width", "runs"),
    [
        ("flash1", "a100-sxm-40gb", 256, "unfused"),  # FA1 <= 128: GPT-NeoX/Megatron's own attention
        ("flash1", "a100-sxm-40gb", 128, "flash1"),
        ("flash1", "l40s", 128, "unfused"),  # FA1 backward > 64 needs A100/H100
        ("flash2", "a100-sxm-80gb", 256, "flash2"),
        ("flash2", "h100-sxm", 320, "efficient"),  # SDPA: flash, then memory-efficient
        ("flash2", "l40s", 200, "efficient"),  # sm89: training head dim in (192, 224] refused
        ("flash2", "l40s", 256, "flash2"),  # ... (224, 256] runs without dropout
        ("auto", "h100-sxm", 512, "efficient"),
        ("auto", "h100-sxm", 256, "auto"),
        ("cudnn", "a100-sxm-80gb", 256, "flash2"),  # cuDNN <= 128 on sm80: TE runs flash-attn 2
        ("cudnn", "h100-sxm", 256, "cudnn"),  # cuDNN 9.5+: <= 256 on Hopper
        ("cudnn", "h100-sxm", 320, "unfused"),
        ("flash3", "h100-sxm", 320, "unfused"),
        ("auto", "tpu-v5p", 512, "auto"),  # no limit catalogued for TPU kernels
    ],
)
def test_the_backend_each_stack_runs(kernel: str, acc: str, width: int, runs: str) -> None:
    b = attention_backend(_w(_heads_of(width), kernel), catalog_hw(acc))
    assert b.runs == runs
    assert (b.note is None) == (runs == kernel)


def test_sdpa_sm89_exception_needs_no_dropout() -> None:
    w = replace(_w(_heads_of(256), "flash2"), dropout=True)
    assert attention_backend(w, catalog_hw("l40s")).runs == "efficient"


@pytest.mark.parametrize("acc", ["a100-sxm-80gb", "h100-sxm", "b200", "l40s", "mi300x", "tpu-v6e"])
@pytest.mark.parametrize("kernel", ["auto", "flash2", "cudnn", "flash3"])
def test_heads_up_to_128_never_move(kernel: str, acc: str) -> None:
    for width in (64, 80, 96, 128):
        w = _w(_heads_of(width), kernel)
        hw = catalog_hw(acc)
        assert with_supported_attention(w, hw) == (w, hw)


def test_pythia_1b_with_flash1_is_priced_as_unfused_attention() -> None:
    """The published run's attention (flash-attn 0.2.2 cannot run 256-wide heads): the same step
    and the same memory as a spec that turns flash attention off by hand."""
    hw = catalog_hw("a100-sxm-40gb")
    fa1 = _w(kernel="flash1")
    unfused = replace(fa1, flash_attention=False)
    a, b = train_step(fa1, CFG, hw), train_step(unfused, CFG, hw)
    assert float(a.step_time[0]) == float(b.step_time[0])
    assert float(a.memory.total[0]) == float(b.memory.total[0])
    assert float(train_memory_only(fa1, CFG, hw).total[0]) == float(a.memory.total[0])
    # ... and not what FlashAttention-1 at 256-wide heads would have been priced at
    priced_as_fa1 = attention_core_times(fa1, CFG, hw)[0]
    assert float(attention_core_times(unfused, CFG, hw)[0][0]) > float(priced_as_fa1[0])


def test_memory_efficient_fallback_keeps_scores_out_of_memory_and_is_not_faster() -> None:
    hw = catalog_hw("a100-sxm-80gb")
    w = _w(_heads_of(320), "flash2")
    w2, hw2 = with_supported_attention(w, hw)
    assert w2.flash_attention and w2 == w  # fused: no s x s scores
    assert float(hw2.attention_fraction_for("flash2")) <= float(hw.attention_fraction_for("flash2"))
    assert float(hw2.attention_fraction_for("flash2")) == pytest.approx(
        float(hw.attention_fraction_for("flash1"))
    )
    fused = train_step(w, CFG, hw).memory.total[0]
    assert float(fused) < float(train_step(replace(w, flash_attention=False), CFG, hw).memory.total[0])
    assert with_supported_attention(w2, hw2) == (w2, hw2)  # applying it twice changes nothing more


def test_cudnn_on_a100_is_priced_as_flash2() -> None:
    hw = catalog_hw("a100-sxm-80gb")
    w = _w(_heads_of(256), "cudnn")
    _, hw2 = with_supported_attention(w, hw)
    assert float(hw2.attention_fraction_for("cudnn")) == float(hw.attention_fraction_for("flash2"))
    step = train_step(w, CFG, hw).step_time[0]
    assert float(step) == float(train_step(replace(w, attention_kernel="flash2"), CFG, hw).step_time[0])


def test_the_plan_says_which_backend_it_priced() -> None:
    data = {
        "model": {
            "name": "pythia-1b",
            "layers": 16,
            "hidden": 2048,
            "heads": 8,
            "kv_heads": 8,
            "ffn_hidden": 8192,
            "vocab": 50304,
            "mlp": "gelu",
        },
        "training": {
            "seq_len": 2048,
            "global_batch": 256,
            "train_tokens": "1B",
            "attention_kernel": "flash1",
        },
        "targets": {"accelerators": ["a100-sxm-40gb"], "gpus": 8, "objective": "time"},
    }
    plan = plan_training(parse_spec(data, Path(".")))
    notes = [a for a in plan.assumptions if a.startswith("Attention:")]
    assert len(notes) == 1
    assert "FlashAttention-1 cannot train 256-wide heads" in notes[0] and "unfused" in notes[0]
    assert "flash-attention README" in notes[0]
    # the same model with 128-wide heads (16 heads) plans without the line
    data["model"]["heads"] = data["model"]["kv_heads"] = 16  # type: ignore[index]
    plan = plan_training(parse_spec(data, Path(".")))
    assert not any(a.startswith("Attention:") for a in plan.assumptions)
    assert np.isfinite(plan.best.step_time_s)
