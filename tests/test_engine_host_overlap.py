"""Per-iteration engine host time by mechanism (issue 30): an engine release that overlaps its host
work with the GPU step (TensorRT-LLM's PyTorch overlap scheduler, SGLang's zero-overhead scheduler)
exposes only the host time beyond the step; one that does not (vLLM V1's serial loop, TensorRT-LLM's
GptSession before 1.0) adds all of it. Sampling stays GPU work either way."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.engines import _parse, get_engine
from rightsize.catalog.loader import CatalogDataError
from rightsize.perf.inference import LOGIT_BYTES, SAMPLING_PASSES, Replica
from rightsize.spec import get_preset

LLAMA3_8B = get_preset("llama3-8b")


def _rep(engine: str, version: str | None) -> Replica:
    acc = get_accelerator("h100-sxm")
    return Replica.build(
        LLAMA3_8B, acc, node_for(acc.id), 1, "fp8", "fp8", engine=engine, engine_version=version
    )


def _sampling_s(rep: Replica, batch: float) -> float:
    return SAMPLING_PASSES * LOGIT_BYTES * batch * rep.arch.vocab / rep._stream_bw()


def test_overlap_is_sourced_and_by_release() -> None:
    trt, sgl, vllm = get_engine("tensorrt-llm"), get_engine("sglang"), get_engine("vllm")
    assert trt.host_overlap and "overlap" in trt.host_overlap_source.lower()
    assert trt.overlaps_host("1.0.0") and trt.overlaps_host(None)  # unnamed: the current release
    assert not trt.overlaps_host("0.8.0") and not trt.overlaps_host("0.6.1")  # GptSession
    assert sgl.overlaps_host("0.4.3") and not sgl.overlaps_host("0.3.6")
    assert not vllm.overlaps_host("0.10.0") and vllm.host_overlap_source  # V1's serial loop
    for rel in trt.releases + sgl.releases:
        if rel.host_overlap is not None:
            assert rel.mechanism


def test_overlapped_host_time_hides_behind_the_gpu_step() -> None:
    rep = _rep("tensorrt-llm", "1.0.0")
    host = rep.engine.iteration_host_s("1.0.0")  # type: ignore[union-attr]
    b = 64.0
    sampling = _sampling_s(rep, b)
    long_step = float(rep.step_overhead_s(b, gpu_s=10e-3))
    assert long_step == pytest.approx(sampling + rep.hw.serving_step_overhead_s)  # all hidden
    short_step = float(rep.step_overhead_s(b, gpu_s=0.0))  # nothing to hide behind but sampling
    assert short_step == pytest.approx(max(host, sampling) + rep.hw.serving_step_overhead_s)
    # no GPU time given (the planner's floor on an iteration): the whole host time
    assert float(rep.step_overhead_s(b)) == pytest.approx(host + sampling + rep.hw.serving_step_overhead_s)


def test_serial_engines_expose_all_their_host_time() -> None:
    for engine, version in (("vllm", "0.10.0"), ("tensorrt-llm", "0.8.0")):
        rep = _rep(engine, version)
        host = rep.engine.iteration_host_s(version)  # type: ignore[union-attr]
        got = float(rep.step_overhead_s(8.0, gpu_s=10e-3))
        assert got == pytest.approx(host + _sampling_s(rep, 8.0) + rep.hw.serving_step_overhead_s)


def test_decode_step_gains_exactly_the_hidden_host_time() -> None:
    """The same step on TensorRT-LLM 1.0 (overlapped) and 0.8.0 (GptSession, serial) differs by
    the host time, since an 8B decode step on an H100 is far longer than 0.3 ms."""
    b, ctx = np.array([1.0, 64.0, 512.0]), np.array([2048.0, 64 * 2048.0, 512 * 2048.0])
    new = _rep("tensorrt-llm", "1.0.0").decode_step_s(b, ctx)
    old = _rep("tensorrt-llm", "0.8.0").decode_step_s(b, ctx)
    host = get_engine("tensorrt-llm").iteration_host_s("1.0.0")
    assert np.all(new > 1e-3)
    assert old - new == pytest.approx(np.full(3, host))


def test_host_overlap_needs_a_source() -> None:
    raw = {
        "kv_memory_basis": "total",
        "kv_reservation": "on_demand",
        "conventions_source": "x",
        "kv_memory_fraction": {"value": 0.9, "source": "x", "as_of": "2025-01"},
        "block_tokens": {"value": 16, "source": "x", "as_of": "2025-01"},
        "iteration_overhead_s": {"value": 3e-4, "source": "x", "as_of": "2025-01"},
        "host_overlap": True,
    }
    with pytest.raises(CatalogDataError, match="host_overlap"):
        _parse("toy", raw)
    assert _parse("toy", raw | {"host_overlap_source": "docs"}).host_overlap
