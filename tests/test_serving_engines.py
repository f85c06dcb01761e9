"""Serving engines' defaults and the serving fixes of #14: prefill of a batch, engine batch
caps, KV memory conventions, separate GEMM and attention rooflines."""

from __future__ import annotations

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.engines import engines, get_engine
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica, fixed_batch_metrics, max_concurrency
from rightsize.spec.model import ModelArch

LLAMA3_8B = ModelArch(
    name="llama-3-8b",
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    ffn_hidden=14336,
    vocab=128256,
    mlp="swiglu",
)


def _rep(acc_id: str = "h100-sxm", engine: str | None = None, prec: str = "fp8") -> Replica:
    acc = get_accelerator(acc_id)
    return Replica.build(LLAMA3_8B, acc, node_for(acc.id), 1, prec, prec, engine=engine)


def test_every_engine_figure_is_sourced():
    for eng in engines().values():
        assert eng.conventions_source
        for fig in eng.figures.values():
            assert fig.source and fig.as_of


def test_engine_aliases_and_unknown_engine():
    assert get_engine("TRTLLM").name == "tensorrt-llm"
    with pytest.raises(BadInput, match="Unknown serving engine"):
        get_engine("nope")


def test_vllm_caps_running_sequences_by_gpu():
    vllm = get_engine("vllm")
    assert vllm.max_num_seqs(80, "h100-sxm") == 1024  # >= 70 GiB, not an A100
    assert vllm.max_num_seqs(80, "a100-sxm-80gb") == 256
    assert max_concurrency(_rep(engine="vllm"), 128, 128) <= 1024


def test_trtllm_gives_the_kv_cache_a_share_of_free_memory():
    # TensorRT-LLM: 0.95 of what weights leave; vLLM: 0.9 of all memory minus weights
    trt, vllm = _rep(engine="tensorrt-llm"), _rep(engine="vllm")
    assert trt.kv_capacity_tokens > vllm.kv_capacity_tokens


def test_fixed_batch_prefill_is_batch_prompts_not_one_long_prompt():
    rep = _rep(prec="bf16")
    one_long = float(rep.prefill_s(64 * 2048.0))
    batch = float(rep.prefill_s(2048.0, sequences=64.0))
    assert batch < one_long  # attention grows with each prompt's square, not the batch's
    assert batch == pytest.approx(64 * float(rep.prefill_s(2048.0)), rel=0.15)
    m = fixed_batch_metrics(rep, 64, 2048, 16)
    assert m["ttft_s"] == pytest.approx(batch + float(rep.decode_step_s(64.0, 64 * 2048.0)), rel=1e-6)


def test_gemm_and_attention_rooflines_add_at_large_batch():
    rep = _rep(prec="fp8")
    b, ctx = 1024.0, 1024.0 * 1152
    step = float(rep.decode_step_s(b, ctx))
    attention = float(rep.analytic_decode_attention_s(b, ctx)) * LLAMA3_8B.layers
    gemm_flops = 2.0 * 7.5e9 * b
    assert step > attention + gemm_flops / (rep.hw.peak_flops_per_s * rep.hw.gemm_fraction) * 0.9
