"""torchtitan's stacks by mechanism (issue #27): torchao's rowwise float8 casts, and the
torchtitan December 2024 benchmark rows reported as their own validation set."""

from __future__ import annotations

from dataclasses import replace

import pytest
from perf_helpers import catalog_hw

from rightsize.perf.layer import elementwise_bytes_per_token, fp8_backward_cast_bytes_per_token
from rightsize.perf.lowp_casts import FP8_CAST_BYTES_PER_ELEMENT, cast_bytes_per_element
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.model import ModelArch

LLAMA3_8B = ModelArch(
    name="llama3-8b",
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    ffn_hidden=14336,
    vocab=128256,
    mlp="swiglu",
)


def _fp8(recipe: str) -> TrainWorkload:
    return TrainWorkload(arch=LLAMA3_8B, seq_len=8192, global_batch=96, precision="fp8", fp8_recipe=recipe)


def test_rowwise_casts_each_operand_once_per_axis() -> None:
    """torchao's roofline (roofline_utils.py, rowwise): the dim0 cast reads 2 and writes 1; the
    dim1 copy a bf16 transpose (2 + 2) and a cast (2 + 1). Forward inputs pay 3 there and 7 plus
    the 4-byte post-scaling of grad_input in backward; output gradients pay both casts."""
    row, tw = _fp8("rowwise"), _fp8("tensorwise")
    assert cast_bytes_per_element(row) == (3.0, 10.0)
    assert cast_bytes_per_element(tw) == (FP8_CAST_BYTES_PER_ELEMENT, FP8_CAST_BYTES_PER_ELEMENT)
    cfg = ParallelConfigs.single(dp=8, tp=8, micro_batch=12, sequence_parallel=True)
    h, t, f = 4096.0, 8.0, 14336.0
    fwd_in = h + 32 * 128 / t + h + f / t
    grad_out = h + (32 + 16) * 128 / t + h + 2 * f / t
    saved_fwd = float(elementwise_bytes_per_token(tw, cfg)[0] - elementwise_bytes_per_token(row, cfg)[0])
    assert saved_fwd == pytest.approx((6.0 - 3.0) * fwd_in)
    extra_bwd = float(
        fp8_backward_cast_bytes_per_token(row, cfg)[0] - fp8_backward_cast_bytes_per_token(tw, cfg)[0]
    )
    assert extra_bwd == pytest.approx((10.0 - 6.0) * grad_out + (7.0 + 4.0) * fwd_in)


def test_rowwise_steps_are_slower_than_tensorwise() -> None:
    """More cast traffic and 16-bit FSDP gathers (torchao's float8 all-gather is tensorwise
    only): a rowwise step costs more than a tensorwise one, never less."""
    cfg = ParallelConfigs.single(dp=8, micro_batch=2, recompute="selective_op", zero_stage=3)
    hw = catalog_hw("h100-sxm", "fp8")
    t = {r: float(train_step(_fp8(r), cfg, hw).step_time[0]) for r in ("tensorwise", "rowwise")}
    assert t["rowwise"] > t["tensorwise"]
    assert (
        t["rowwise"]
        < float(train_step(replace(_fp8("rowwise"), precision="bf16"), cfg, hw).step_time[0]) * 1.2
    )
