"""Wide expert parallelism for MoE serving: DeepSeek-V3 in fp8 fits a 16-GPU EP replica
(it fits no single 8 x 80 GB node), the all-to-all over the NICs costs more than over NVLink,
load imbalance slows decode, and the plan records the expert-parallel layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica
from rightsize.perf.serving_moe_ep import ExpertParallelReplica
from rightsize.search.serving import plan_serving
from rightsize.spec.load import load_spec, parse_spec
from rightsize.spec.presets import get_preset

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "deepseek-v3-ep-serving.yaml"


def _base() -> Replica:
    acc, node = get_accelerator("h100-sxm"), node_for("h100-sxm")
    return Replica.build(get_preset("deepseek-v3"), acc, node, 1, "fp8", "bf16", engine="sglang")


def test_ep_physics() -> None:
    base = _base()
    ep16 = ExpertParallelReplica.build_ep(base, 16, 1.0, True)
    ep8 = ExpertParallelReplica.build_ep(base, 8, 1.0, False)
    assert ep16.fits and not ep8.fits  # ~700 GB of fp8 weights: more than one 8 x 80 GB node
    assert ep16.weight_bytes_per_gpu < base.weight_bytes_per_gpu / 8
    local = ExpertParallelReplica.build_ep(base, 16, 1.0, False)
    assert float(ep16.all_to_all_s(1024.0)) > float(local.all_to_all_s(1024.0))
    skewed = ExpertParallelReplica.build_ep(base, 16, 1.5, True)
    assert float(skewed.decode_step_s(4096.0, 4096 * 2000.0)) > float(
        ep16.decode_step_s(4096.0, 4096 * 2000.0)
    )


def test_plan_records_the_expert_parallel_layout() -> None:
    best = plan_serving(load_spec(EXAMPLE)).best
    assert best.layout is not None and best.layout.ep == 16 and best.layout.nodes == 2
    assert best.gpus == 16 * best.replicas


def test_expert_parallel_needs_a_moe_model() -> None:
    with pytest.raises(BadInput, match="expert_parallel"):
        parse_spec(
            {
                "kind": "inference",
                "model": "llama3-8b",
                "serving": {"expert_parallel": 8},
                "traffic": {"rate": 1, "prompt_tokens": 128, "output_tokens": 128},
            },
            Path("."),
        )


def test_published_wide_ep_rows_within_ten_percent() -> None:
    """The held-out DeepSeek-V3 wide-EP rows (DeepSeek's day-6 decode, SGLang's 96-H100 decode
    and prefill) are predicted within 10% by the physics (DeepEP's low-latency decode
    all-to-all per expert, its normal prefill all-to-all once per remote node)."""
    from rightsize.validate.cases import bundled_paths, read_cases
    from rightsize.validate.inference_cases import predict_inference

    holdout = next(p for p in bundled_paths(holdout=True) if p.name == "holdout_inference.csv")
    cases = [c for c in read_cases(holdout) if "-ep" in c.id and "v3" in c.id]
    assert len(cases) == 5
    for case in cases:
        predicted, _ = predict_inference(case)
        assert abs(predicted / case.published - 1) < 0.10, case.id
