"""The one place `export` reads a vision training plan (`kind: vision_plan`, mode training): the
plan dict becomes a typed, read-only view for the image-classification job writers
(`export.vision_jobs`, arguments in `export.fw_vision`).

Every figure is the plan's. Those every single-trainer plan has (GPUs, nodes, the step time, the
run with failures, the checkpoint interval and write, host needs, fabric, storage, the priced
instance) are read by `export.trainer_view`; this view adds images per GPU per step, the
data-loader cores per GPU, epochs and images, precision, optimizer (the spec's, else the model
preset's), where images are decoded, the image rate and one checkpoint's size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.names import choice
from rightsize.export.plan_fields import INT_MAX, Fields
from rightsize.export.trainer_view import TrainerView, placement_fields, run_fields
from rightsize.spec.vision import get_vision_model

PRECISIONS = ("bf16", "fp16", "fp8")
OPTIMIZERS = ("sgd", "adamw", "lars", "lamb")
DECODES = ("cpu", "gpu")
MAX_IMAGES = 1e13


@dataclass(frozen=True, kw_only=True)
class VisionTrainingView(TrainerView):
    model: str  # the preset's name (resnet50, vit-b16, ...)
    batch_per_gpu: int
    loader_cores_per_gpu: float  # CPU cores that decode and augment images, per GPU
    images_per_epoch: float
    epochs: float
    precision: str
    optimizer: str
    decode: str  # cpu (DataLoader workers) / gpu (DALI)
    images_per_s: float
    checkpoint_bytes: float  # one checkpoint (weights and optimizer state)

    @property
    def global_batch(self) -> int:
        return self.batch_per_gpu * self.gpus

    @property
    def epoch_s(self) -> float:
        return self.images_per_epoch / self.images_per_s

    @property
    def steps(self) -> int:
        return max(1, math.ceil(self.images_per_epoch * self.epochs / self.global_batch))


def vision_training_view(plan: dict[str, Any]) -> VisionTrainingView:
    p = Fields(plan)
    spec, best = p.sub("spec"), p.sub("best")
    train, rel = spec.sub("train"), p.sub("sizing").sub("reliability", False)
    name = spec.text("model", max_len=200)
    try:
        preset = get_vision_model(name)
    except ValueError as err:
        raise BadInput(
            f"The plan's model {name!r} is no vision preset of this rightsize.",
            str(err),
            "Re-plan the spec with this rightsize (`rightsize export SPEC.yaml ...`).",
        ) from None
    optimizer = train.text("optimizer", default="", max_len=40) or preset.optimizer
    return VisionTrainingView(
        **placement_fields(plan),
        model=preset.name,
        batch_per_gpu=best.integer("batch_per_gpu", 1, INT_MAX),
        loader_cores_per_gpu=best.num("cpu_cores_per_gpu", 0.0, 1e4, default=0.0),
        images_per_epoch=train.num("images", 1.0, MAX_IMAGES),
        epochs=train.num("epochs", 1e-9, 1e6),
        precision=choice(train.text("precision", default="bf16", max_len=40), PRECISIONS, "precision"),
        optimizer=choice(optimizer, OPTIMIZERS, "optimizer"),
        decode=choice(train.text("decode", default="cpu", max_len=40), DECODES, "decode"),
        images_per_s=best.num("images_per_s", 1e-9, 1e15),
        checkpoint_bytes=rel.num("checkpoint_bytes", 0.0, 1e18, default=0.0),
        **run_fields(plan),
    )
