"""The one place `export` reads a recommendation training plan (`kind: recommendation_plan`,
mode training): the plan dict becomes a typed, read-only view for the DLRM job writers
(`export.recsys_jobs`, arguments in `export.fw_recsys`).

The figures every single-trainer plan has (GPUs, nodes, step time, the run with failures, the
checkpoint interval and write, host needs, fabric, storage, the priced instance) are read by
`export.trainer_view`; this view adds the global batch, epochs, precisions and tables and, for
the architecture the plan names (MLP widths, interaction, table rows), the preset the planner
used (`spec.recsys`); per-table rows are the plan's own (`tables.bytes_by_table` /
`row_bytes`, so `embeddings.rows_multiplier` is kept).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.names import choice
from rightsize.export.plan_fields import INT_MAX, Fields, check_num
from rightsize.export.plan_view import MAX_BYTES
from rightsize.export.trainer_view import TrainerView, placement_fields, run_fields
from rightsize.spec.recsys import RecsysModel, get_recsys_model

DENSE_PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
TABLE_PRECISIONS = ("fp32", "fp16", "bf16", "int8")
MAX_SAMPLES = 1e15


@dataclass(frozen=True, kw_only=True)
class RecsysTrainingView(TrainerView):
    arch: RecsysModel  # the preset the plan was made for (MLPs, interaction, pooling)
    global_batch: int
    epochs: float
    samples_per_epoch: float
    dense_precision: str  # fp32 / tf32 / bf16 / fp16
    table_precision: str  # fp32 / fp16 / bf16 / int8
    table_rows: tuple[int, ...]  # per table, as planned (rows_multiplier applied)
    embedding_dim: int
    tables_bytes: float  # all tables, as stored
    embedding_budget_bytes_per_gpu: float  # HBM the plan leaves for tables (and their state)
    host_table_bytes: float  # tables the plan placed in host memory (UVM)
    ssd_table_bytes: float  # tables the plan placed on SSD

    @property
    def batch_per_gpu(self) -> int:
        return self.global_batch // self.gpus

    @property
    def steps(self) -> int:
        """Optimizer steps of the whole run, at least 1."""
        return max(1, math.ceil(self.samples_per_epoch * self.epochs / self.global_batch))


def _rows(tables: Fields) -> tuple[tuple[int, ...], float]:
    row_bytes = tables.num("row_bytes", 1e-3, 1e9)
    sizes = [
        check_num(b, tables.where, "bytes_by_table", 0.0, MAX_BYTES) for b in tables.items("bytes_by_table")
    ]
    if len(sizes) != tables.integer("count", 1, 100_000):
        raise BadInput(
            "The plan's `tables.bytes_by_table` does not list every table (`tables.count`).",
            "The job's table sizes are read from it.",
            "Export a plan written by `rightsize plan SPEC --format json` (or pass the spec itself).",
        )
    return tuple(max(1, round(b / row_bytes)) for b in sizes), sum(sizes)


def _arch(plan: Fields) -> RecsysModel:
    name = plan.sub("spec").text("model", max_len=200)
    try:
        return get_recsys_model(name)
    except ValueError as err:
        raise BadInput(
            f"The plan's model {name!r} is no recommendation preset of this rightsize.",
            str(err),
            "Re-plan the spec with this rightsize (`rightsize export SPEC.yaml ...`).",
        ) from None


def recsys_training_view(plan: dict[str, Any]) -> RecsysTrainingView:
    p = Fields(plan)
    spec, best = p.sub("spec"), p.sub("best")
    train, emb = spec.sub("train"), spec.sub("embeddings", False)
    arch = _arch(p)
    rows, tables_bytes = _rows(p.sub("tables"))
    place = best.sub("placement", False)
    samples = p.sub("demand", False).num("work_units_total", 0.0, MAX_SAMPLES, default=0.0)
    epochs = train.num("epochs", 1e-9, 1e6, default=1.0)
    per_epoch = train.num("samples", 1.0, MAX_SAMPLES, default=0.0) or (samples / epochs if samples else 0.0)
    per_epoch = per_epoch or (arch.train_samples or 0.0)
    if not per_epoch:
        raise BadInput(
            "The plan says neither how many samples an epoch has (`spec.train.samples`) nor the total "
            "(`demand.work_units_total`).",
            "The job's steps are the samples over the global batch.",
            "Export a plan written by `rightsize plan SPEC --format json` (or pass the spec itself).",
        )
    return RecsysTrainingView(
        **placement_fields(plan),
        arch=arch,
        global_batch=best.integer("batch", 1, INT_MAX, default=None)
        or train.integer("global_batch", 1, INT_MAX),
        epochs=epochs,
        samples_per_epoch=per_epoch,
        dense_precision=choice(
            train.text("precision", default="bf16", max_len=40), DENSE_PRECISIONS, "precision"
        ),
        table_precision=choice(
            emb.text("precision", default="fp32", max_len=40), TABLE_PRECISIONS, "table precision"
        ),
        table_rows=rows,
        embedding_dim=p.sub("tables").integer("embedding_dim", 1, 1 << 20),
        tables_bytes=tables_bytes,
        embedding_budget_bytes_per_gpu=best.sub("memory", False).num(
            "embedding_budget_bytes", 0.0, MAX_BYTES, default=0.0
        ),
        host_table_bytes=place.num("host_bytes", 0.0, MAX_BYTES, default=0.0),
        ssd_table_bytes=place.num("ssd_bytes", 0.0, MAX_BYTES, default=0.0),
        **run_fields(plan),
    )
