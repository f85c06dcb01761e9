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

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from rightsize import yamlio
from rightsize.errors import did_you_mean
from rightsize.spec.checked import CheckedSpec
from rightsize.spec.inference import Policy
from rightsize.spec.infrastructure import Infrastructure
from rightsize.spec.prices import ProviderList, UserPrices, providers_field
from rightsize.spec.shared import ACCELERATORS_SCHEMA_EXTRA, MAX_ACCELERATORS, POSITIVE, all_means_every
from rightsize.spec.units import Bytes, BytesPerS, Count, CountInt, DurationS, refuse_bare_durations

LayerOp = Literal["conv", "pool", "add", "linear", "attention", "norm", "act", "params"]
_OPS: frozenset[str] = frozenset(("conv", "pool", "add", "linear", "attention", "norm", "act", "params"))
_SEPARATORS_RE = re.compile(r"[-_./\s]")


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


def _normalize(name: str) -> str:
    return _SEPARATORS_RE.sub("", name.lower())


def _layer(raw: dict[str, Any], where: str) -> VisionLayer:
    op = raw.get("op")
    if op not in _OPS:
        raise RuntimeError(f"vision_models.yaml: {where}: unknown op {op!r}")
    allowed = set(VisionLayer.__dataclass_fields__)
    extra = set(raw) - allowed
    if extra:
        raise RuntimeError(f"vision_models.yaml: {where}: unexpected keys {sorted(extra)}")
    return VisionLayer(**raw)


@functools.cache
def _table() -> tuple[dict[str, VisionModel], dict[str, str]]:
    text = resources.files("rightsize.spec").joinpath("data/vision_models.yaml").read_text(encoding="utf-8")
    doc = yamlio.safe_load(text)
    models: dict[str, VisionModel] = {}
    lookup: dict[str, str] = {}
    for name, entry in doc["models"].items():
        layers = tuple(_layer(dict(raw), f"{name}.layers[{i}]") for i, raw in enumerate(entry["layers"]))
        published = {
            key: PublishedFigure(float(fig["value"]), str(fig["source"]), str(fig["as_of"]))
            for key, fig in (entry.get("published") or {}).items()
        }
        models[name] = VisionModel(
            name=name,
            title=str(entry["title"]),
            family=str(entry["family"]),
            image_size=int(entry["image_size"]),
            optimizer=str(entry["optimizer"]),
            source=str(entry["source"]),
            layers=layers,
            published=published,
        )
        for alias in (name, *entry.get("aliases", ())):
            lookup[_normalize(alias)] = name
    return models, lookup


def vision_model_names() -> list[str]:
    """Ids of the vision presets."""
    return sorted(_table()[0])


def find_vision_model(name: str) -> VisionModel | None:
    """The preset for a name or alias (case and '-', '_', '.', '/' ignored), or None."""
    models, lookup = _table()
    found = lookup.get(_normalize(name))
    return models[found] if found is not None else None


def get_vision_model(name: str) -> VisionModel:
    """The preset for a name; ValueError naming the known ones when unknown (a field error in a spec)."""
    model = find_vision_model(name)
    if model is None:
        hint = did_you_mean(name, vision_model_names())
        raise ValueError(
            f"unknown vision model {name!r}; known: {', '.join(vision_model_names())}"
            + (f" ({hint})" if hint else "")
        )
    return model


# ------------------------------------------------------------------------------------------- spec

_CFG = ConfigDict(
    extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
)


class VisionTraining(BaseModel):
    """A training run over an image dataset."""

    model_config = _CFG

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


class VisionInference(BaseModel):
    """Real-time inference on camera streams (or a plain image rate)."""

    model_config = _CFG

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
    decode: Literal["nvdec", "cpu"] = Field(
        default="nvdec", description="Video decode on the GPU's NVDEC engines or on CPU cores (software)."
    )
    resolution_vs_1080p: Annotated[float, POSITIVE] = Field(
        default=1.0, description="Pixels per frame relative to 1920x1080 (4K = 4); scales decode cost."
    )
    stream_bitrate: BytesPerS | None = Field(
        default=None,
        description="Bitrate of one stream, e.g. '4 Mb/s'; null takes a typical 1080p H.264 camera (4 Mb/s).",
    )

    @model_validator(mode="before")
    @classmethod
    def _latency_has_unit(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("latency_p99", "latency"))


class VisionTargets(BaseModel):
    """Which hardware the plan may use and what it minimises."""

    model_config = _CFG

    accelerators: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ACCELERATORS,
        json_schema_extra=ACCELERATORS_SCHEMA_EXTRA,
        description="Catalog ids of the accelerators allowed (see `rightsize catalog`); 'all' or null for every one.",
    )
    deadline_s: Annotated[DurationS, POSITIVE] | None = Field(
        default=None,
        validation_alias=AliasChoices("deadline", "deadline_s"),
        description="Training: wall-clock time the run must finish within, e.g. '8h'.",
    )
    gpus: Annotated[CountInt, POSITIVE] | None = Field(
        default=None, description="Training: a fixed GPU count; null lets the search choose."
    )
    providers: ProviderList = providers_field()
    objective: Literal["time", "gpu_hours", "cost", "gpus"] = Field(
        default="gpu_hours",
        description="What the search minimises among plans that meet the targets (inference: gpus or cost).",
    )

    @field_validator("accelerators", mode="before")
    @classmethod
    def _all_means_every(cls, value: Any) -> Any:
        return all_means_every(value)

    @model_validator(mode="before")
    @classmethod
    def _deadline_has_unit(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("deadline",))


class VisionSpec(CheckedSpec):
    """A vision workload to size: model, mode (training or inference), its section, targets."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
    )  # CheckedSpec's, with aliases read by name

    kind: Literal["vision"] = Field(description="Spec kind; 'vision' for CNNs and vision transformers.")
    name: str | None = Field(
        default=None, max_length=200, description="A name for this plan, shown in reports."
    )
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
        default=None, description="The streams to analyse: count, frame rate, latency target, decode."
    )
    targets: VisionTargets = Field(
        default_factory=VisionTargets, description="Accelerator choices, deadline or GPU count, objective."
    )
    policy: Policy = Field(default_factory=Policy, description="Inference: headroom and utilisation margins.")
    infrastructure: Infrastructure = Field(
        default_factory=Infrastructure,
        description="Facility, fabric, storage, cost, margins, growth and schedule around the accelerators.",
    )
    _notes: tuple[str, ...] = PrivateAttr(default=())  # how unit-less figures were read (spec.load)
    prices: UserPrices = Field(
        default_factory=UserPrices,
        description=(
            "Negotiated prices merged over the catalog, keyed by accelerator or node id, e.g. "
            "{h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}, hgx-h100: {capex_usd: 250000}, power_usd_per_kwh: 0.07}."
        ),
    )

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        return get_vision_model(value).name

    @model_validator(mode="after")
    def _check_mode(self) -> VisionSpec:
        problems = []
        if self.mode == "training" and self.train is None:
            problems.append("mode 'training' needs a `train:` section (images, epochs)")
        if self.mode == "inference" and self.inference is None:
            problems.append("mode 'inference' needs an `inference:` section (streams, fps, latency_p99)")
        if self.mode == "training" and self.inference is not None:
            problems.append("`inference:` applies only to mode 'inference'; remove it or set mode: inference")
        if self.mode == "inference" and self.train is not None:
            problems.append("`train:` applies only to mode 'training'; remove it or set mode: training")
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def arch(self) -> VisionModel:
        return get_vision_model(self.model)
