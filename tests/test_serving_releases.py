"""Engine releases as mechanisms (issue 30): TensorRT-LLM before XQA loads a GQA group's K/V once
per query head, and the published v0.6.1 / v0.8.0 static-batching tables it is checked on."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.engines import get_engine, version_key
from rightsize.perf.inference import Replica
from rightsize.spec.model import ModelArch
from rightsize.validate.cases import read_cases, serving_public_paths
from rightsize.validate.inference_cases import analytic_only, predict_inference

LLAMA2_70B = ModelArch(
    name="llama-2-70b",
    layers=80,
    hidden=8192,
    heads=64,
    kv_heads=8,
    ffn_hidden=28672,
    vocab=32000,
    mlp="swiglu",
)
LLAMA2_7B = ModelArch(
    name="llama-2-7b",
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=32,
    ffn_hidden=11008,
    vocab=32000,
    mlp="swiglu",
)


def _rep(arch: ModelArch, tp: int, version: str | None, engine: str = "tensorrt-llm") -> Replica:
    acc = get_accelerator("h100-sxm")
    return Replica.build(arch, acc, node_for(acc.id), tp, "fp8", "fp8", engine=engine, engine_version=version)


@pytest.mark.parametrize(
    ("text", "key"),
    [("0.6.1", (0, 6, 1)), ("v0.8.0", (0, 8, 0)), ("1.0.0rc2", (1, 0, 0)), ("", ()), ("dev", ())],
)
def test_version_key(text: str, key: tuple[int, ...]) -> None:
    assert version_key(text) == key


def test_release_figures_apply_only_before_their_release() -> None:
    trt = get_engine("tensorrt-llm")
    assert trt.release_value("gqa_decode_kv_reread_fraction", "0.6.1") == pytest.approx(0.7)
    assert trt.release_value("gqa_decode_kv_reread_fraction", "0.7.0") is None
    assert trt.release_value("gqa_decode_kv_reread_fraction", "1.0.0") is None
    assert trt.release_value("gqa_decode_kv_reread_fraction", None) is None  # unnamed: current
    for rel in trt.releases:
        assert rel.mechanism
        assert all(f.source and f.as_of for f in rel.figures.values())


def test_pre_xqa_release_reads_gqa_kv_per_query_head() -> None:
    old, new = _rep(LLAMA2_70B, 2, "0.6.1"), _rep(LLAMA2_70B, 2, "0.8.0")
    assert old.decode_kv_loads == pytest.approx(1.0 + 7 * 0.7)  # group of 8 query heads per KV head
    assert new.decode_kv_loads == 1.0
    ctx = np.asarray(64 * 3072.0)
    assert float(old.decode_step_s(64.0, ctx)) > 1.5 * float(new.decode_step_s(64.0, ctx))
    # weights-bound batch-1 steps barely change: the mechanism is the KV stream, not a flat factor
    assert float(old.decode_step_s(1.0, 256.0)) == pytest.approx(
        float(new.decode_step_s(1.0, 256.0)), rel=0.02
    )
    # the kernel-table path adds the same re-reads to a current release's measured kernel
    assert float(np.asarray(old.release_decode_attention_extra_s(ctx))) > 0.0
    assert new.release_decode_attention_extra_s(ctx) == 0.0


def test_mha_models_and_other_engines_are_unaffected() -> None:
    assert _rep(LLAMA2_7B, 1, "0.6.1").decode_kv_loads == 1.0  # one query head per KV head
    assert _rep(LLAMA2_70B, 2, "0.6.1", engine="vllm").decode_kv_loads == 1.0


def _errors(prefix: str) -> list[float]:
    cases = [c for c in read_cases(serving_public_paths()[0]) if c.id.startswith(prefix)]
    assert cases
    with analytic_only():
        return [abs(predict_inference(c)[0] / c.published - 1.0) for c in cases]


def test_v061_gqa_rows_within_bars() -> None:
    """The four published v0.6.1 Llama 2 70B rows (before: +28% to +142%)."""
    errs = _errors("trtllm061-h100-sxm-llama-2-70b") + _errors("trtllm061-h100-llama-2-70b")
    assert len(errs) == 4
    assert statistics.median(errs) <= 0.08
    assert max(errs) <= 0.15


def test_v080_rows_after_xqa_stay_near() -> None:
    """After XQA the same model is not slowed: the v0.8.0 H100 70B rows stay within 35%."""
    errs = _errors("trtllm080-h100-sxm-llama-2-70b")
    assert max(errs) <= 0.35


@pytest.mark.parametrize(
    ("acc_id", "precision", "bytes_per_weight"),
    [
        ("b200", "fp4", 0.5 + 1 / 16),
        ("mi355x", "fp4", 0.5 + 1 / 32),
        ("b200", "fp8", 1.0),
        ("h100-sxm", "bf16", 2.0),
    ],
)
def test_fp4_weights_carry_their_block_scales(acc_id: str, precision: str, bytes_per_weight: float) -> None:
    """NVFP4: one FP8 scale per 16 weights; AMD MXFP4: one E8M0 scale per 32 (issue 30)."""
    acc = get_accelerator(acc_id)
    rep = Replica.build(LLAMA2_70B, acc, node_for(acc.id), 2, precision, "fp8")
    assert rep.weight_bytes_per_element == pytest.approx(bytes_per_weight)
    assert rep.weight_bytes_per_gpu > rep.linear_params * bytes_per_weight / 2
