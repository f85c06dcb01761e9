"""Vision (issue #7): layer-list counts against published figures, the data pipeline by hand,
the training and video-inference planners, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.catalog import get_accelerator, node_for
from rightsize.constants import REPORT_SCHEMA_VERSION
from rightsize.errors import BadInput
from rightsize.perf import datapipe
from rightsize.perf.hardware import Hardware
from rightsize.perf.vision import count_model, step_time
from rightsize.search.vision import VisionPlan
from rightsize.spec import SPEC_KINDS, load_spec, parse_spec, spec_json_schema
from rightsize.spec.vision import VisionSpec, get_vision_model

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


# --------------------------------------------------------------------- counts from the layer lists
# MACs = multiply-accumulates; FLOPs = 2 x MACs. Papers and torchvision print MACs as "GFLOPs".
@pytest.mark.parametrize(
    ("model", "macs", "params"),
    [
        ("resnet50", 4.089e9, 25_557_032),  # torchvision meta: 4.089 "GFLOPS", 25,557,032 params
        ("vit-b16", 17.564e9, 86_567_656),  # torchvision: 17.564; Dosovitskiy et al. Table 1: 86M
        ("vit-l16", 61.555e9, 304_326_632),  # torchvision: 61.555
    ],
)
def test_counts_match_published_figures(model: str, macs: float, params: int) -> None:
    arch = get_vision_model(model)
    c = count_model(arch)
    assert c.macs_per_image == pytest.approx(macs, rel=1e-3)
    assert c.params == params
    assert c.flops_per_image == 2 * c.macs_per_image
    # the data file carries the same published figures, with their sources
    assert arch.published["params"].value == params and "torchvision" in arch.published["params"].source
    assert c.macs_per_image == pytest.approx(arch.published["macs_per_image"].value, rel=1e-3)


def test_resnet50_headline_figures() -> None:
    c = count_model(get_vision_model("ResNet-50"))  # alias lookup
    assert round(c.macs_per_image / 1e9, 1) == 4.1 and round(c.params / 1e6, 1) == 25.6
    vit = count_model(get_vision_model("vit_b_16"))
    assert round(vit.params / 1e6) == 87 and round(vit.macs_per_image / 1e9, 1) == 17.6


# ----------------------------------------------------------------------------- data pipeline by hand


def test_cpu_decode_cores_per_gpu_by_hand() -> None:
    # A DataLoader worker's decode (1,754 images/s over 8 cores, scaled to Pillow by 577/735:
    # imread-benchmark), then augmentation, in series; not the single-thread 712 images/s.
    decode = 1754 / 8 * 577 / 735
    assert datapipe.figures().value("images.dataloader_decode_images_per_s_per_core") == pytest.approx(
        decode, rel=0.01
    )
    per_core = 1.0 / (1.0 / 172 + 1.0 / 2000)
    assert datapipe.images_per_s_per_core() == pytest.approx(per_core)
    assert datapipe.image_cpu_cores_per_gpu(5000.0, "cpu") == pytest.approx(5000.0 / per_core)
    assert datapipe.image_cpu_cores_per_gpu(5000.0, "gpu") == 1.0  # DALI: reading and batching only


def test_imagenet_mean_jpeg_bytes() -> None:
    assert datapipe.mean_image_bytes() == pytest.approx(138e9 / 1_281_167)  # ~108 KB
    assert 100e3 < datapipe.mean_image_bytes() < 120e3


def test_nvdec_capacity() -> None:
    assert datapipe.nvdec_engines("h100-sxm") == 7
    assert datapipe.video_decode_fps_per_gpu("h100-sxm", "nvdec") == 7 * 600
    assert datapipe.video_decode_fps_per_gpu("h100-sxm", "nvdec", pixels_vs_1080p=4.0) == 7 * 600 / 4
    assert datapipe.video_cpu_cores(500.0, "cpu") == pytest.approx(2.0)  # 250 fps per core


# ------------------------------------------------------------------------------------ the physics


def _hw(acc: str = "h100-sxm", dtype: str = "bf16", **over: float) -> Hardware:
    hw = Hardware.from_catalog(get_accelerator(acc), node_for(acc), dtype)
    return hw.with_overrides(**over) if over else hw


@pytest.mark.parametrize("model", ["resnet50", "vit-b16"])
def test_breakdown_adds_up_and_bandwidth_never_slows(model: str) -> None:
    arch = get_vision_model(model)
    hw = _hw()
    st = step_time(arch, hw, 128, training=True, act_bytes=2.0, optimizer="sgd")
    parts = st.gemm_s + st.attention_s + st.memory_bound_s + st.optimizer_s + st.overhead_s
    assert parts == pytest.approx(st.compute_s)
    faster = step_time(
        arch, _hw(hbm_bytes_per_s=2 * hw.hbm_bytes_per_s), 128, training=True, act_bytes=2.0, optimizer="sgd"
    )
    assert faster.compute_s < st.compute_s
    # a bigger inference batch never lowers throughput
    small = step_time(arch, hw, 8, training=False, act_bytes=2.0)
    big = step_time(arch, hw, 64, training=False, act_bytes=2.0)
    assert 64 / big.compute_s >= 8 / small.compute_s


def test_fused_residual_add_reads_its_shortcut_at_inference() -> None:
    """An inference engine fuses each residual add into a GEMM epilogue: no kernel of its own,
    but the shortcut tensor is read once from HBM, unless it and the sum stay in the L2."""
    from rightsize.perf.vision import FUSED_ADD_READ_PASSES

    arch = get_vision_model("resnet50")
    hw = _hw(dtype="int8")
    batch = 2048
    adds = [layer for layer in arch.layers if layer.op == "add"]
    shortcut_bytes = sum(a.count * a.channels * a.out_hw**2 for a in adds) * batch * 1.0
    pools = [layer for layer in arch.layers if layer.op == "pool"]
    pool_bytes = sum(p.count * p.channels * (p.in_hw**2 + p.out_hw**2) / 2.0 * 2.0 for p in pools) * batch
    st = step_time(arch, hw, batch, training=False, act_bytes=1.0)
    bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    assert st.memory_bound_s == pytest.approx((FUSED_ADD_READ_PASSES * shortcut_bytes + pool_bytes) / bw)
    # a batch whose shortcut and sum fit in the 50 MB L2 reads none, and its pools' input and
    # output stay there too (perf.vision.inference_pass_s): nothing memory-bound is left
    small = step_time(arch, hw, 8, training=False, act_bytes=1.0)
    small_pool = sum(p.count * p.channels * (p.in_hw**2 + p.out_hw**2) / 2.0 * 2.0 for p in pools) * 8
    assert small_pool < 50 * 2**20
    assert small.memory_bound_s == 0.0


# ----------------------------------------------------------------------------------------- planners


def test_training_example_plan() -> None:
    p = plan(EXAMPLES / "resnet50-imagenet-train.yaml")
    assert isinstance(p, VisionPlan) and p.mode == "training"
    b = p.best
    assert b.time_to_train_s is not None and b.time_to_train_s <= 8 * 3600
    assert sum(v for k, v in b.step.items() if k != "step_s") == pytest.approx(b.step["step_s"])
    d = p.demand
    assert d is not None and d.workload == "pretraining" and d.work_unit == "image"
    assert d.work_units_total == pytest.approx(1.28e6 * 90)
    assert d.data_read_bytes_per_s == pytest.approx(b.images_per_s * datapipe.mean_image_bytes())
    # CPU cores = images/s per GPU / images/s per core
    assert d.cpu_cores_per_gpu == pytest.approx(b.images_per_s_per_gpu / datapipe.images_per_s_per_core())
    sweep = [d.step_s_by_nic_gbps[g] for g in sorted(d.step_s_by_nic_gbps)]
    assert list(sorted(d.step_s_by_nic_gbps)) == [100.0, 200.0, 400.0, 800.0, 1600.0]
    assert all(a >= b2 - 1e-12 for a, b2 in zip(sweep, sweep[1:], strict=False))
    out = p.to_dict()
    assert out["kind"] == "vision_plan" and out["schema_version"] == REPORT_SCHEMA_VERSION
    json.dumps(out, default=str)
    assert "ResNet-50" in p.render_text("Plan")


def test_input_bound_when_cores_run_out() -> None:
    spec = _vision_spec(targets={"accelerators": ["h100-sxm"], "gpus": 8})
    cpu = plan(spec).best
    gpu = plan(_vision_spec(targets={"accelerators": ["h100-sxm"], "gpus": 8}, decode="gpu")).best
    assert gpu.cpu_cores_per_gpu == 1.0 and gpu.images_per_s_per_gpu >= cpu.images_per_s_per_gpu
    node = node_for("h100-sxm")
    assert cpu.cpu_cores_per_gpu <= node.cpu_cores / node.gpus_per_node + 1e-9


def test_video_inference_plan() -> None:
    p = plan(EXAMPLES / "resnet50-video-inference.yaml")
    b = p.best
    assert b.latency_p99_s is not None and b.latency_p99_s <= 0.050
    design = 200 * 30 * 1.2
    assert b.gpus * b.images_per_s_per_gpu >= design
    assert b.gpus - 1 < design / b.images_per_s_per_gpu  # no spare GPU
    d = p.demand
    assert d is not None and d.workload == "serving" and d.replicas == b.gpus and d.base_rate_rps == 6000
    assert d.data_read_bytes_per_s == pytest.approx(200 * 4e6 / 8)  # 200 streams x 4 Mb/s


def test_tight_latency_is_infeasible() -> None:
    from rightsize.errors import Infeasible

    spec = _vision_spec(mode="inference", model="vit-l16", latency="1ms")
    with pytest.raises(Infeasible, match="p99 latency"):
        plan(spec)


# -------------------------------------------------------------------------------------- bad input


def _vision_spec(
    mode: str = "training", model: str = "resnet50", decode: str = "cpu", latency: str = "50ms", **extra: Any
) -> VisionSpec:
    data: dict[str, Any] = {"kind": "vision", "mode": mode, "model": model}
    if mode == "training":
        data["train"] = {"images": "1.28M", "epochs": 90, "decode": decode}
    else:
        data["inference"] = {"streams": 10, "fps": 30, "latency_p99": latency}
    data.update(extra)
    spec = parse_spec(data, Path("."))
    assert isinstance(spec, VisionSpec)
    return spec


@pytest.mark.parametrize(
    ("section", "field", "expect"),
    [
        ({"inference": {"streams": 10, "fps": -30}}, "inference.fps", "greater than zero"),
        ({"inference": {"streams": 0}}, "inference.streams", "greater than zero"),
        ({"model": "resnet-5O"}, "model", "unknown vision model"),
        ({"inference": {"streams": 10, "fpss": 3}}, "inference.fpss", "unknown key"),
    ],
)
def test_bad_input_names_the_field(section: dict[str, Any], field: str, expect: str) -> None:
    data: dict[str, Any] = {"kind": "vision", "mode": "inference", "model": "resnet50"}
    data.update(section)
    if "inference" not in data:
        data["inference"] = {"streams": 10}
    with pytest.raises(BadInput) as info:
        parse_spec(data)
    assert info.value.exit_code == 2
    assert f"{field}:" in info.value.why and expect in info.value.why


def test_mode_needs_its_section() -> None:
    with pytest.raises(BadInput, match="needs an `inference:` section"):
        parse_spec({"kind": "vision", "mode": "inference", "model": "resnet50"})


def test_registered_and_described() -> None:
    assert SPEC_KINDS["vision"] is VisionSpec
    spec = load_spec(EXAMPLES / "resnet50-imagenet-train.yaml")
    assert isinstance(spec, VisionSpec) and spec.train is not None and spec.train.images == 1.28e6
    schema = spec_json_schema("vision")
    missing = [
        f"{name}.{key}"
        for name, d in [("$", schema), *schema["$defs"].items()]
        for key, prop in d.get("properties", {}).items()
        if not str(prop.get("description", "")).strip()
    ]
    assert missing == []
