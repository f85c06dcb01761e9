"""Speculative decoding: the expected tokens per step follow Leviathan et al.'s formula, a
verification step costs more than a plain one and more at large batch, n-gram drafting is
free on the GPU, a draft model takes KV memory, and the spec rejects what makes no sense."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica
from rightsize.perf.serving_specdec import SpeculativeReplica, tokens_per_step
from rightsize.search.serving import plan_serving
from rightsize.spec.load import parse_spec
from rightsize.spec.presets import get_preset

BASE = {
    "kind": "inference",
    "model": "llama3-70b",
    "serving": {"weight_precision": "fp8", "kv_precision": "fp8"},
    "traffic": {"rate": 5, "prompt_tokens": 1024, "output_tokens": 256},
    "slo": {"ttft": "1s", "tpot": "30ms"},
    "targets": {"accelerators": ["h100-sxm"], "tp": 2},
}


def test_tokens_per_step() -> None:
    assert tokens_per_step(4, 0.7) == pytest.approx((1 - 0.7**5) / 0.3)
    assert tokens_per_step(3, 1.0) == 4.0


def test_verification_and_draft_costs() -> None:
    acc, node = get_accelerator("h100-sxm"), node_for("h100-sxm")
    target = Replica.build(get_preset("llama3-70b"), acc, node, 2, "fp8", "fp8", engine="vllm")
    draft = Replica.build(get_preset("llama3-8b"), acc, node, 2, "fp8", "fp8", engine="vllm")
    ngram = SpeculativeReplica.wrap(target, None, 4, "ngram")
    with_draft = SpeculativeReplica.wrap(target, draft, 4, "draft_model")
    small, large = (1.0, 1024.0), (256.0, 256 * 1024.0)
    # at batch 1 verifying 5 tokens costs about one plain step (the weights dominate) ...
    assert float(ngram.decode_step_s(*small)) < 1.3 * float(target.decode_step_s(*small))
    # ... at batch 256 the GEMMs see 5x the rows and verification costs much more
    assert float(ngram.decode_step_s(*large)) > 1.5 * float(target.decode_step_s(*large))
    assert float(with_draft.decode_step_s(*small)) > float(ngram.decode_step_s(*small))
    assert with_draft.kv_capacity_tokens < target.kv_capacity_tokens
    assert ngram.kv_capacity_tokens == target.kv_capacity_tokens


def test_speculation_cuts_tpot_in_a_plan() -> None:
    plain = plan_serving(parse_spec(copy.deepcopy(BASE), Path("."))).best
    spec = copy.deepcopy(BASE)
    spec["engine"] = {"speculative": {"draft_tokens": 4, "acceptance_rate": 0.7, "method": "eagle"}}
    fast = plan_serving(parse_spec(spec, Path("."))).best
    assert fast.latency_s["tpot_p50_s"] < 0.8 * plain.latency_s["tpot_p50_s"]


@pytest.mark.parametrize(
    "bad",
    [
        {"draft_tokens": 4, "acceptance_rate": 0.7, "method": "ngram", "draft_model": "llama3-8b"},
        {"draft_tokens": 4, "acceptance_rate": 0.7, "draft_model": "no-such-model"},
        {"draft_tokens": 4, "acceptance_rate": 1.5},
    ],
)
def test_bad_speculative_settings_are_refused(bad: dict) -> None:
    spec = copy.deepcopy(BASE)
    spec["engine"] = {"speculative": bad}
    with pytest.raises(BadInput):
        parse_spec(spec, Path("."))
