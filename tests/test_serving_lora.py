"""Multi-LoRA serving: adapter memory from the shapes, the distinct adapters a batch reads,
a step slower than the base (the batching penalty) and the KV cache smaller by the slots."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica
from rightsize.perf.serving_lora import LoraReplica, adapter_params
from rightsize.search.serving import plan_serving
from rightsize.spec.load import parse_spec
from rightsize.spec.presets import get_preset


def test_adapter_size_from_shapes() -> None:
    arch = get_preset("llama3-8b")  # hidden 4096, 32 heads, 8 KV heads of 128, ffn 14336, 32 layers
    attn = 16 * ((4096 + 4096) + (4096 + 1024) + (4096 + 1024) + (4096 + 4096))
    assert adapter_params(arch, 16, "attention") == pytest.approx(32 * attn)
    mlp = 16 * (2 * (4096 + 14336) + (14336 + 4096))
    assert adapter_params(arch, 16, "all") == pytest.approx(32 * (attn + mlp))


def test_penalty_memory_and_distinct_adapters() -> None:
    acc, node = get_accelerator("h100-sxm"), node_for("h100-sxm")
    base = Replica.build(get_preset("llama3-8b"), acc, node, 1, "bf16", "bf16", engine="vllm")
    lora = LoraReplica.wrap(base, 100, 16, 8, "attention")
    assert float(lora.decode_step_s(1.0, 1000.0)) > float(base.decode_step_s(1.0, 1000.0))
    assert lora.kv_capacity_tokens < base.kv_capacity_tokens
    assert float(lora.distinct_adapters(1.0)) == pytest.approx(1.0)
    assert float(lora.distinct_adapters(1000.0)) == 8.0  # capped by the GPU slots
    bigger = LoraReplica.wrap(base, 100, 64, 8, "all")
    assert float(bigger.decode_step_s(64.0, 64e3)) > float(lora.decode_step_s(64.0, 64e3))


def test_lora_in_a_plan_and_bad_input() -> None:
    spec = {
        "kind": "inference",
        "model": "llama3-8b",
        "traffic": {"rate": 20, "prompt_tokens": 512, "output_tokens": 128},
        "slo": {"ttft": "500ms", "tpot": "30ms"},
        "targets": {"accelerators": ["h100-sxm"], "tp": 1},
    }
    plain = plan_serving(parse_spec(copy.deepcopy(spec), Path("."))).best
    spec["engine"] = {"lora": {"adapters": 100, "rank": 16, "max_loras": 8}}
    served = plan_serving(parse_spec(copy.deepcopy(spec), Path("."))).best
    assert served.latency_s["tpot_p50_s"] > plain.latency_s["tpot_p50_s"]
    assert served.replica_capacity_rps <= plain.replica_capacity_rps
    spec["engine"] = {"lora": {"adapters": 4, "max_loras": 8}}
    with pytest.raises(BadInput, match="max_loras"):
        parse_spec(spec, Path("."))
