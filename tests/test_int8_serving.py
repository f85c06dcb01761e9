"""int8 serving by the engine's scheme (issue 28, L40S int8): vLLM, SGLang and TensorRT-LLM
run int8 checkpoints as W8A8 on the int8 tensor-core rate (Ada, Ampere, Hopper), gpt-fast as
weight-only int8 dequantised to 16 bit (the public gpt-fast rows it was fitted on)."""

from __future__ import annotations

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.engines import engines
from rightsize.perf.inference import Replica
from rightsize.spec.model import ModelArch

LLAMA_8B = ModelArch(
    name="llama3-8b",
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    ffn_hidden=14336,
    vocab=128256,
    mlp="swiglu",
)


def _rep(acc: str, engine: str | None, prec: str = "int8") -> Replica:
    a = get_accelerator(acc)
    return Replica.build(LLAMA_8B, a, node_for(a.id), 1, prec, "bf16", engine=engine)


@pytest.mark.parametrize("engine", ["vllm", "tensorrt-llm", "sglang"])
def test_w8a8_engines_multiply_int8_on_the_int8_rate(engine: str) -> None:
    w8a8, weight_only = _rep("l40s", engine), _rep("l40s", "gpt-fast")
    assert not w8a8.dequant and weight_only.dequant
    assert w8a8.hw.peak_flops_per_s == pytest.approx(get_accelerator("l40s").peak_flops_per_s("int8"))
    assert weight_only.hw.peak_flops_per_s == pytest.approx(get_accelerator("l40s").peak_flops_per_s("bf16"))
    # prefill is compute-bound: twice the tensor-core rate (733 vs 362 TOPS on L40S) shows
    assert w8a8.prefill_s(1, 4096) < 0.7 * weight_only.prefill_s(1, 4096)
    # decode streams the same int8 bytes; W8A8 has no dequantisation on top
    assert w8a8.decode_step_s(8.0, 1024.0) < weight_only.decode_step_s(8.0, 1024.0)


def test_no_engine_and_fp8_are_unchanged() -> None:
    assert _rep("l40s", None).dequant  # no engine named: weight-only, as before
    assert _rep("l40s", "vllm", "fp8").hw.peak_flops_per_s == _rep("l40s", None, "fp8").hw.peak_flops_per_s


def test_a_part_without_an_int8_rate_stays_weight_only() -> None:
    acc = next(a for a in ("gaudi3", "tpu-v7", "trn2") if not get_accelerator(a).supports("int8"))
    a = get_accelerator(acc)
    rep = Replica.build(LLAMA_8B, a, node_for(a.id), 1, "int8", "bf16", engine="vllm")
    assert rep.dequant


def test_every_w8a8_engine_cites_its_documentation() -> None:
    for name, eng in engines().items():
        assert eng.int8_scheme in ("w8a8", "weight_only"), name
        assert eng.int8_scheme != "w8a8" or eng.int8_source, name
