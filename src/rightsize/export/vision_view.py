"""The one place `export` reads a vision training plan (`kind: vision_plan`, mode training): the
plan dict becomes a typed, read-only view for the image-classification job writers
(`export.vision_jobs`, arguments in `export.fw_vision`).

Every figure is the plan's: GPUs, nodes, images per GPU per step, the data-loader cores per GPU,
epochs and images, precision, optimizer (the spec's, else the model preset's), where images are
decoded, the step time, the run with failures, the checkpoint interval and write, host needs,
fabric, storage and the priced instance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.names import choice
from rightsize.export.plan_fields import INT_MAX, MAX_GPUS, Fields
from rightsize.export.plan_view import (
    MAX_SECONDS,
    HardwareView,
    Header,
    _fabric,
    _hardware,
    _host_needs,
    _priced_instance,
    _storage,
    header,
    job_start_s,
)
from rightsize.spec.vision import get_vision_model

PRECISIONS = ("bf16", "fp16", "fp8")
OPTIMIZERS = ("sgd", "adamw", "lars", "lamb")
DECODES = ("cpu", "gpu")
MAX_IMAGES = 1e13


@dataclass(frozen=True)
class VisionTrainingView:
    header: Header
    model: str  # the preset's name (resnet50, vit-b16, ...)
    hw: HardwareView
    gpus: int
    nodes: int
    batch_per_gpu: int
    loader_cores_per_gpu: float  # CPU cores that decode and augment images, per GPU
    images_per_epoch: float
    epochs: float
    precision: str
    optimizer: str
    decode: str  # cpu (DataLoader workers) / gpu (DALI)
    step_time_s: float
    images_per_s: float
    run_s: float
    safety_margin: float
    checkpoint_interval_s: float
    checkpoint_write_s: float
    checkpoint_bytes: float  # one checkpoint (weights and optimizer state)
    mtbf_s: float | None
    fabric_kind: str | None
    nic_gbps_per_gpu: float | None
    rails: int | None
    cpu_cores_need_per_gpu: float
    host_memory_need_bytes_per_gpu: float
    priced_instance: tuple[str, str] | None = None
    planned_start_s: float = 0.0  # the plan's own "job start" line, inside run_s (0: not planned)
    checkpoints_bytes: float = 0.0
    dataset_bytes: float = 0.0

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
    spec, best, sizing = p.sub("spec"), p.sub("best"), p.sub("sizing")
    train, rel = spec.sub("train"), sizing.sub("reliability", False)
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
        header=header(plan),
        model=preset.name,
        hw=_hardware(best),
        gpus=best.integer("gpus", 1, MAX_GPUS),
        nodes=sizing.sub("nodes").integer("nodes", 1, MAX_GPUS),
        batch_per_gpu=best.integer("batch_per_gpu", 1, INT_MAX),
        loader_cores_per_gpu=best.num("cpu_cores_per_gpu", 0.0, 1e4, default=0.0),
        images_per_epoch=train.num("images", 1.0, MAX_IMAGES),
        epochs=train.num("epochs", 1e-9, 1e6),
        precision=choice(train.text("precision", default="bf16", max_len=40), PRECISIONS, "precision"),
        optimizer=choice(optimizer, OPTIMIZERS, "optimizer"),
        decode=choice(train.text("decode", default="cpu", max_len=40), DECODES, "decode"),
        step_time_s=best.sub("step").num("step_s", 1e-9, MAX_SECONDS),
        images_per_s=best.num("images_per_s", 1e-9, 1e15),
        run_s=sizing.sub("run", False).num("run_s", 0.0, MAX_SECONDS, default=0.0)
        or best.num("time_to_train_s", 0.0, MAX_SECONDS),
        safety_margin=spec.sub("infrastructure", False)
        .sub("margins", False)
        .num("safety_margin", 0.0, 10.0, default=0.2),
        checkpoint_interval_s=rel.num("checkpoint_interval_s", 0.0, MAX_SECONDS, default=0.0) or 3600.0,
        checkpoint_write_s=rel.num("checkpoint_write_s", 0.0, MAX_SECONDS, default=0.0),
        checkpoint_bytes=rel.num("checkpoint_bytes", 0.0, 1e18, default=0.0),
        mtbf_s=rel.num("cluster_mtbf_s", 0.0, MAX_SECONDS, default=0.0) or None,
        **_fabric(sizing),
        **_host_needs(sizing),
        priced_instance=_priced_instance(sizing),
        planned_start_s=job_start_s(best),
        **_storage(sizing),
    )
