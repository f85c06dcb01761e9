"""What every single-trainer training plan gives its export (vision's torchvision reference,
recommendation's DLRM trainer: one pinned PyTorch trainer, one process per GPU): the fields of
`TrainerView` and their derivation from the plan, read once here. Each kind's view
(`export.vision_view`, `export.recsys_view`) adds only its own workload's fields.

The figures are the plan's: GPUs, nodes, the step time, the run with failures, the safety
margin, the checkpoint interval and write, the cluster MTBF, fabric, host needs, the priced
instance, the plan's own "job start" line and storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rightsize.export.plan_fields import MAX_GPUS, Fields
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


@dataclass(frozen=True, kw_only=True)
class TrainerView:
    header: Header
    hw: HardwareView
    gpus: int
    nodes: int
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


def placement_fields(plan: dict[str, Any]) -> dict[str, Any]:
    """The header, hardware, GPUs and nodes of a TrainerView (read first, as every view does)."""
    p = Fields(plan)
    best = p.sub("best")
    return {
        "header": header(plan),
        "hw": _hardware(best),
        "gpus": best.integer("gpus", 1, MAX_GPUS),
        "nodes": p.sub("sizing").sub("nodes").integer("nodes", 1, MAX_GPUS),
    }


def run_fields(plan: dict[str, Any]) -> dict[str, Any]:
    """The rest of a TrainerView: step, run, margin, checkpoints, MTBF, fabric, host, instance,
    start and storage."""
    p = Fields(plan)
    spec, best, sizing = p.sub("spec"), p.sub("best"), p.sub("sizing")
    rel = sizing.sub("reliability", False)
    return {
        "step_time_s": best.sub("step").num("step_s", 1e-9, MAX_SECONDS),
        "run_s": sizing.sub("run", False).num("run_s", 0.0, MAX_SECONDS, default=0.0)
        or best.num("time_to_train_s", 0.0, MAX_SECONDS),
        "safety_margin": spec.sub("infrastructure", False)
        .sub("margins", False)
        .num("safety_margin", 0.0, 10.0, default=0.2),
        "checkpoint_interval_s": rel.num("checkpoint_interval_s", 0.0, MAX_SECONDS, default=0.0) or 3600.0,
        "checkpoint_write_s": rel.num("checkpoint_write_s", 0.0, MAX_SECONDS, default=0.0),
        "mtbf_s": rel.num("cluster_mtbf_s", 0.0, MAX_SECONDS, default=0.0) or None,
        **_fabric(sizing),
        **_host_needs(sizing),
        "priced_instance": _priced_instance(sizing),
        "planned_start_s": job_start_s(best),
        **_storage(sizing),
    }
