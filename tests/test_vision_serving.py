"""Serving specs of the non-LLM kinds take a batch or a p99 bound (issue #28), the mechanisms the
published rows showed (implicit-GEMM convs, eager vs fused BN/ReLU/add, DataLoader cores), and the
one shape vision and recommendation share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import BadInput
from rightsize.perf.hardware import Hardware
from rightsize.perf.vision import conv_time_s, step_time
from rightsize.search.job_plan import JobOption, JobPlan
from rightsize.search.recsys import plan_recsys
from rightsize.search.recsys import serving_capacity as recsys_capacity
from rightsize.search.vision import _frame_costs, _serve_point, plan_vision, serving_capacity
from rightsize.spec import parse_spec
from rightsize.spec.job_kinds import KindSpec, KindTargets, ServingBatch
from rightsize.spec.recsys import RecsysSpec
from rightsize.spec.vision import VisionLayer, VisionSpec, get_vision_model


def _hw(acc_id: str, dtype: str) -> Hardware:
    acc = get_accelerator(acc_id)
    return Hardware.from_catalog(acc, node_for(acc.id), dtype)


def _vision(inference: dict[str, Any], acc: str = "h100-sxm") -> VisionSpec:
    spec = parse_spec(
        {
            "kind": "vision",
            "model": "resnet50",
            "mode": "inference",
            "inference": inference,
            "targets": {"accelerators": [acc]},
        },
        Path("."),
    )
    assert isinstance(spec, VisionSpec)
    return spec


def _dlrm(inference: dict[str, Any]) -> RecsysSpec:
    spec = parse_spec(
        {
            "kind": "recommendation",
            "model": "dlrm-dcnv2-criteo",
            "mode": "inference",
            "embeddings": {"precision": "fp16"},
            "inference": inference,
            "targets": {"accelerators": ["h100-sxm"], "gpus_per_replica": 1},
        },
        Path("."),
    )
    assert isinstance(spec, RecsysSpec)
    return spec


# ------------------------------------------------------------------------- a batch or a bound


def test_a_fixed_batch_is_served_as_given_and_its_latency_reported() -> None:
    spec = _vision(
        {"streams": 100, "fps": 30, "batch": 64, "latency_p99": "1ms", "decode": "none", "precision": "int8"}
    )
    plan = plan_vision(spec)
    assert plan.best.batch_per_gpu == 64
    assert plan.best.latency_p99_s is not None and plan.best.latency_p99_s > 1e-3  # reported, not enforced


def test_a_looser_bound_never_serves_less() -> None:
    hw = _hw("h100-sxm", "int8")
    rates = []
    for bound in ("2ms", "5ms", "15ms", "60ms"):
        found = serving_capacity(
            _vision({"streams": 1, "latency_p99": bound, "decode": "none", "precision": "int8"}),
            "h100-sxm",
            hw,
        )
        assert found is not None
        batch, rate, latency = found
        assert latency <= float(bound.removesuffix("ms")) / 1e3
        rates.append(rate)
    assert rates == sorted(rates)
    one = serving_capacity(
        _vision({"streams": 1, "batch": 1, "decode": "none", "precision": "int8"}), "h100-sxm", hw
    )
    assert one is not None
    # Batching is what the -58% to -69% rows lacked; batch 1 now runs up to 4 engine contexts at
    # once (perf.vision.step_time), which fills the GPU better than one, yet batching serves 7x more.
    assert rates[-1] > 5 * one[1]


def test_decoded_tensors_skip_the_decoders() -> None:
    hw = _hw("l4", "int8")
    none = serving_capacity(
        _vision({"streams": 1, "batch": 256, "decode": "none", "precision": "int8"}, "l4"), "l4", hw
    )
    nvdec = serving_capacity(
        _vision({"streams": 1, "batch": 256, "decode": "nvdec", "precision": "int8"}, "l4"), "l4", hw
    )
    assert none is not None and nvdec is not None
    assert nvdec[1] <= none[1]
    # No frame decode in the latency (compared at one engine context: decoded tensors let the
    # engine run more contexts at once, which lengthens a batch's own latency).
    points = []
    for decode in ("none", "nvdec"):
        spec = _vision({"streams": 1, "batch": 256, "decode": decode, "precision": "int8"}, "l4")
        _, _, decode_latency, prep_s = _frame_costs(spec, "l4", hw, [])
        point = _serve_point(spec, hw, 256, decode_latency, prep_s, 1)
        assert point is not None
        points.append(point[3])
    assert points[0] < points[1]


def test_recommendation_batch_or_bound() -> None:
    acc = get_accelerator("h100-sxm")
    node = node_for(acc.id)
    hw = _hw("h100-sxm", "int8")
    fixed = recsys_capacity(
        _dlrm({"qps": 1, "samples_per_query": 270, "batch": 102_400, "precision": "int8"}), acc, node, hw
    )
    assert fixed is not None and fixed[0] == 102_400
    tight = recsys_capacity(
        _dlrm({"qps": 1, "samples_per_query": 270, "latency_p99": "5ms", "precision": "int8"}), acc, node, hw
    )
    loose = recsys_capacity(
        _dlrm({"qps": 1, "samples_per_query": 270, "latency_p99": "60ms", "precision": "int8"}), acc, node, hw
    )
    assert tight is not None and loose is not None
    assert tight[0] < loose[0] and tight[1] < loose[1]
    plan = plan_recsys(_dlrm({"qps": 2000, "samples_per_query": 100, "batch": 6400, "precision": "fp16"}))
    assert plan.best.batch == 6400


def test_batch_must_be_positive() -> None:
    with pytest.raises(BadInput):
        _vision({"streams": 1, "batch": 0})


# ------------------------------------------------------------------------------- mechanisms


def test_conv_memory_is_the_real_tensors_not_im2col() -> None:
    """A 3x3 conv at batch 256 on 56x56x64: implicit GEMM reads x once, not 9 times."""
    hw = _hw("a100-sxm-80gb", "fp16")
    layer = VisionLayer(op="conv", cin=64, cout=64, k=3, out_hw=56)
    (fwd,) = conv_time_s(layer, 256, hw, 2.0, training=False)
    elements = 256 * 64 * 56**2 * 2 + 64 * 64 * 9  # x and y, and the weights
    memory_s = elements * 2.0 / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)
    assert fwd >= memory_s * 0.999
    im2col_s = 256 * 56**2 * 64 * 9 * 2.0 / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)
    assert fwd < im2col_s
    assert len(conv_time_s(layer, 256, hw, 2.0, training=True)) == 3  # forward, data grad, weight grad


def test_eager_kernels_pay_separate_relu_passes() -> None:
    arch = get_vision_model("resnet50")
    hw = _hw("a100-sxm-80gb", "fp16")
    fused = step_time(arch, hw, 256, training=True, act_bytes=2.0, kernels="fused")
    eager = step_time(arch, hw, 256, training=True, act_bytes=2.0, kernels="eager")
    assert eager.gemm_s == pytest.approx(fused.gemm_s)
    assert eager.memory_bound_s > 1.3 * fused.memory_bound_s
    # inference folds BN and fuses ReLU whatever the training kernels
    a = step_time(arch, hw, 64, training=False, act_bytes=2.0, kernels="eager")
    b = step_time(arch, hw, 64, training=False, act_bytes=2.0, kernels="fused")
    assert a.compute_s == pytest.approx(b.compute_s)


def test_cpu_decode_bounds_a_dataloader_recipe() -> None:
    spec = parse_spec(
        {
            "kind": "vision",
            "model": "resnet50",
            "train": {"precision": "fp16", "decode": "cpu", "kernels": "fused", "batch_per_gpu": 256},
            "targets": {"accelerators": ["a100-sxm-80gb"], "gpus": 8},
        },
        Path("."),
    )
    assert isinstance(spec, VisionSpec)
    cpu = plan_vision(spec).best
    dali = plan_vision(
        spec.model_copy(update={"train": spec.train.model_copy(update={"decode": "gpu"})})
    ).best  # type: ignore[union-attr]
    assert cpu.input_bound and not dali.input_bound
    assert cpu.cpu_cores_per_gpu == pytest.approx(
        128 / 8 - 1
    )  # DGX A100: 16 cores per GPU, one runs the trainer
    assert cpu.step["input_wait_s"] > 0 and dali.images_per_s > cpu.images_per_s


# ------------------------------------------------------------------------------- one shape


def test_vision_and_recommendation_share_one_shape() -> None:
    assert issubclass(VisionSpec, KindSpec) and issubclass(RecsysSpec, KindSpec)
    v = _vision({"streams": 10, "decode": "none", "precision": "int8"})
    r = _dlrm({"qps": 100, "precision": "fp16"})
    assert isinstance(v.targets, KindTargets) and isinstance(r.targets, KindTargets)
    assert isinstance(v.inference, ServingBatch) and isinstance(r.inference, ServingBatch)
    pv, pr = plan_vision(v), plan_recsys(r)
    assert isinstance(pv, JobPlan) and isinstance(pr, JobPlan)
    assert isinstance(pv.best, JobOption) and isinstance(pr.best, JobOption)
    common = {
        "kind",
        "schema_version",
        "name",
        "model",
        "mode",
        "objective",
        "targets",
        "best",
        "alternatives",
        "rejected",
        "assumptions",
        "demand",
        "sizing",
    }
    assert common <= set(pv.to_dict()) and common <= set(pr.to_dict())
    assert pv.to_dict()["kind"] == "vision_plan" and pr.to_dict()["kind"] == "recommendation_plan"


@pytest.mark.parametrize(
    ("data", "needs"),
    [
        ({"kind": "vision", "model": "resnet50", "mode": "inference"}, "streams, fps, latency_p99 or batch"),
        (
            {"kind": "recommendation", "model": "dlrm-dcnv2-criteo", "mode": "inference"},
            "qps, samples_per_query",
        ),
    ],
)
def test_mode_problems_said_once_for_both(data: dict[str, Any], needs: str) -> None:
    with pytest.raises(BadInput, match=needs):
        parse_spec(data, Path("."))
