"""The vision spec (`kind: vision`): a CNN or vision transformer, trained on images or serving
video streams, and the presets its layer lists come from (`data/vision_models.yaml`).

A vision model is data: a list of layers with shapes (conv, linear, attention, norm, ...). The
perf package counts FLOPs, parameters and activations from it; this module only reads it. Like the
other spec kinds, building a spec computes nothing and every field has a description.

    kind: vision
    mode: training            # or inference
    model: resnet50
    train: {images: 1.28M, epochs: 90}
    targets: {accelerators: [h100-sxm], deadline: 8h}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator, model_validator

from rightsize.spec.job_kinds import KIND_CONFIG, KindSpec, KindTargets, PresetTable, ServingBatch
from rightsize.spec.shared import POSITIVE
from rightsize.spec.units import Bytes, BytesPerS, Count, CountInt, DurationS

LayerOp = Literal["conv", "pool", "add", "linear", "attention", "norm", "act", "params"]
_OPS: frozenset[str] = frozenset(("conv", "pool", "add", "linear", "attention", "norm", "act", "params"))


@dataclass(frozen=True)
class VisionLayer:
    """One layer (repeated `count` times) of a vision model; unused shape fields are 0."""

    op: str
    count: int = 1
    cin: int = 0
    cout: int = 0
    k: int = 0
    in_hw: int = 0
    out_hw: int = 0
    din: int = 0
    dout: int = 0
    dim: int = 0
    heads: int = 0
    tokens: int = 0
    channels: int = 0
    bn: bool = False
    relu: bool = False
    bias: bool | None = None  # None: the op's default (linear: True, conv: False)


@dataclass(frozen=True)
class PublishedFigure:
    value: float
    source: str
    as_of: str


@dataclass(frozen=True)
class VisionModel:
    """A vision architecture as a layer list, with the figures published for it."""

    name: str
    title: str
    family: str  # 'cnn' or 'vit'
    image_size: int
    optimizer: str  # the optimizer it is usually trained with
    source: str
    layers: tuple[VisionLayer, ...]
    published: dict[str, PublishedFigure] = field(default_factory=dict)


def _layer(raw: dict[str, Any], where: str) -> VisionLayer:
    op = raw.get("op")
    if op not in _OPS:
        raise RuntimeError(f"vision_models.yaml: {where}: unknown op {op!r}")
    allowed = set(VisionLayer.__dataclass_fields__)
    extra = set(raw) - allowed
    if extra:
        raise RuntimeError(f"vision_models.yaml: {where}: unexpected keys {sorted(extra)}")
    return VisionLayer(**raw)


def _build(name: str, entry: dict[str, Any]) -> VisionModel:
    layers = tuple(_layer(dict(raw), f"{name}.layers[{i}]") for i, raw in enumerate(entry["layers"]))
    published = {
        key: PublishedFigure(float(fig["value"]), str(fig["source"]), str(fig["as_of"]))
        for key, fig in (entry.get("published") or {}).items()
    }
    return VisionModel(
        name=name,
        title=str(entry["title"]),
        family=str(entry["family"]),
        image_size=int(entry["image_size"]),
        optimizer=str(entry["optimizer"]),
        source=str(entry["source"]),
        layers=layers,
        published=published,
    )


PRESETS = PresetTable("vision_models.yaml", "vision", _build)


def vision_model_names() -> list[str]:
    """Ids of the vision presets."""
    return PRESETS.names()


def find_vision_model(name: str) -> VisionModel | None:
    """The preset for a name or alias (case and '-', '_', '.', '/' ignored), or None."""
    return PRESETS.find(name)


def get_vision_model(name: str) -> VisionModel:
    """The preset for a name; ValueError naming the known ones when unknown (a field error in a spec)."""
    return PRESETS.get(name)


# ------------------------------------------------------------------------------------------- spec


class VisionTraining(BaseModel):
    """A training run over an image dataset."""

    model_config = KIND_CONFIG

    images: Annotated[Count, POSITIVE] = Field(
        default=1281167,
        validation_alias=AliasChoices("images", "dataset_images"),
        description="Images in the training set (ImageNet-1k: 1,281,167 = '1.28M').",
    )
    epochs: Annotated[float, POSITIVE] = Field(default=90, description="Passes over the training set.")
    batch_per_gpu: Annotated[CountInt, POSITIVE] | None = Field(
        default=None,
        description="Images per GPU per step; null picks the largest power of two up to 256 that fits in memory.",
    )
    precision: Literal["bf16", "fp16", "fp8"] = Field(
        default="bf16",
        description="Compute precision of convolutions and matrix multiplies (mixed precision).",
    )
    optimizer: Literal["sgd", "adamw", "lars", "lamb"] | None = Field(
        default=None,
        description="Optimizer; null takes the model's usual one (SGD/LARS for CNNs, AdamW for ViTs).",
    )
    decode: Literal["cpu", "gpu"] = Field(
        default="cpu",
        description="Where JPEG decode and augmentation run: 'cpu' (PyTorch DataLoader workers) or 'gpu' (DALI).",
    )
    mean_image_bytes: Bytes | None = Field(
        default=None,
        description="Mean stored size of one image; null takes ImageNet's (138 GB / 1.28M = 108 KB).",
    )
    kernels: Literal["eager", "fused"] = Field(
        default="eager",
        description=(
            "How the framework runs BatchNorm, ReLU and residual adds: 'eager' (separate kernels, PyTorch "
            "eager mode) or 'fused' (cuDNN fused BN+add+ReLU, as MXNet and MLPerf submissions run)."
        ),
    )


class VisionInference(ServingBatch):
    """Real-time inference on camera streams (or a plain image rate)."""

    streams: Annotated[CountInt, POSITIVE] = Field(description="Video streams (cameras) to analyse.")
    fps: Annotated[float, POSITIVE] = Field(
        default=30, description="Frames per second analysed from each stream (after any frame skipping)."
    )
    latency_p99_s: Annotated[DurationS, POSITIVE] = Field(
        default=0.1,
        validation_alias=AliasChoices("latency_p99", "latency_p99_s", "latency"),
        description="Longest a frame may take from arrival to result at the 99th percentile, e.g. '50ms'.",
    )
    precision: Literal["bf16", "fp16", "fp8", "int8"] = Field(
        default="fp16", description="Inference precision (int8/fp8 need a quantised engine such as TensorRT)."
    )
    decode: Literal["nvdec", "cpu", "none"] = Field(
        default="nvdec",
        description=(
            "Video decode on the GPU's NVDEC engines, on CPU cores (software), or 'none': frames arrive "
            "decoded and resized (tensors, as in MLPerf Inference)."
        ),
    )
    resolution_vs_1080p: Annotated[float, POSITIVE] = Field(
        default=1.0, description="Pixels per frame relative to 1920x1080 (4K = 4); scales decode cost."
    )
    stream_bitrate: BytesPerS | None = Field(
        default=None,
        description="Bitrate of one stream, e.g. '4 Mb/s'; null takes a typical 1080p H.264 camera (4 Mb/s).",
    )


class VisionTargets(KindTargets):
    """Which hardware the plan may use and what it minimises."""


class VisionSpec(KindSpec):
    """A vision workload to size: model, mode (training or inference), its section, targets."""

    kind: Literal["vision"] = Field(description="Spec kind; 'vision' for CNNs and vision transformers.")
    model: str = Field(
        description="Vision preset: resnet50, vit-b16 or vit-l16 (layer lists in spec/data/vision_models.yaml)."
    )
    mode: Literal["training", "inference"] = Field(
        default="training",
        description="'training' (needs `train:`) or 'inference' on video streams (needs `inference:`).",
    )
    train: VisionTraining | None = Field(
        default=None,
        validation_alias=AliasChoices("train", "training"),
        description="The training run: images, epochs, batch, precision, where images are decoded.",
    )
    inference: VisionInference | None = Field(
        default=None,
        description="The streams to analyse: count, frame rate, a batch or a latency bound, decode.",
    )
    targets: VisionTargets = Field(
        default_factory=VisionTargets, description="Accelerator choices, deadline or GPU count, objective."
    )

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        return get_vision_model(value).name

    @model_validator(mode="after")
    def _check_mode(self) -> VisionSpec:
        problems = self.mode_problems("images, epochs", "streams, fps, latency_p99 or batch")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def arch(self) -> VisionModel:
        return get_vision_model(self.model)
