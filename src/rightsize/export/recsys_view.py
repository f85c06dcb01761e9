"""The one place `export` reads a recommendation training plan (`kind: recommendation_plan`,
mode training): the plan dict becomes a typed, read-only view for the DLRM job writers
(`export.recsys_jobs`, arguments in `export.fw_recsys`).

The figures come from the plan (GPUs, nodes, the global batch, epochs, step time, the run
with failures, the checkpoint interval and write, host needs, fabric, storage, the priced
instance) and, for the architecture the plan names (MLP widths, interaction, table rows),
from the same preset the planner used (`spec.recsys`); per-table rows are the plan's own
(`tables.bytes_by_table` / `row_bytes`, so `embeddings.rows_multiplier` is kept).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.names import choice
from rightsize.export.plan_fields import INT_MAX, MAX_GPUS, Fields, check_num
from rightsize.export.plan_view import (
    MAX_BYTES,
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
from rightsize.spec.recsys import RecsysModel, get_recsys_model

DENSE_PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
TABLE_PRECISIONS = ("fp32", "fp16", "bf16", "int8")
MAX_SAMPLES = 1e15


@dataclass(frozen=True)
class RecsysTrainingView:
    header: Header
    arch: RecsysModel  # the preset the plan was made for (MLPs, interaction, pooling)
    hw: HardwareView
    gpus: int
    nodes: int
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
    step_time_s: float
    run_s: float  # planned wall time, failures and restarts included
    safety_margin: float
    checkpoint_interval_s: float
    checkpoint_write_s: float
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
    spec, best, sizing = p.sub("spec"), p.sub("best"), p.sub("sizing")
    train, emb = spec.sub("train"), spec.sub("embeddings", False)
    arch = _arch(p)
    rows, tables_bytes = _rows(p.sub("tables"))
    rel, place = sizing.sub("reliability", False), best.sub("placement", False)
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
        header=header(plan),
        arch=arch,
        hw=_hardware(best),
        gpus=best.integer("gpus", 1, MAX_GPUS),
        nodes=sizing.sub("nodes").integer("nodes", 1, MAX_GPUS),
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
        step_time_s=best.sub("step").num("step_s", 1e-9, MAX_SECONDS),
        run_s=sizing.sub("run", False).num("run_s", 0.0, MAX_SECONDS, default=0.0)
        or best.num("time_to_train_s", 0.0, MAX_SECONDS),
        safety_margin=spec.sub("infrastructure", False)
        .sub("margins", False)
        .num("safety_margin", 0.0, 10.0, default=0.2),
        checkpoint_interval_s=rel.num("checkpoint_interval_s", 0.0, MAX_SECONDS, default=0.0) or 3600.0,
        checkpoint_write_s=rel.num("checkpoint_write_s", 0.0, MAX_SECONDS, default=0.0),
        mtbf_s=rel.num("cluster_mtbf_s", 0.0, MAX_SECONDS, default=0.0) or None,
        **_fabric(sizing),
        **_host_needs(sizing),
        priced_instance=_priced_instance(sizing),
        planned_start_s=job_start_s(best),
        **_storage(sizing),
    )
