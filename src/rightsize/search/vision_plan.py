"""The vision plan and its options as typed values, with their JSON and terminal text."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rightsize.constants import GB, HOUR_S, REPORT_SCHEMA_VERSION, GiB
from rightsize.perf.vision import (
    VisionCounts,
)
from rightsize.search.demand import Demand
from rightsize.search.option_rank import RankedOption, objective_gap


@dataclass
class VisionOption(RankedOption):
    """One evaluated configuration with everything a report needs, as plain values."""

    accelerator: str
    node: str
    gpus: int
    batch_per_gpu: int
    images_per_s_per_gpu: float
    images_per_s: float
    step: dict[str, float]  # seconds, broken down (step_s is the total)
    memory: dict[str, float]  # bytes per GPU
    mfu: float
    cpu_cores_per_gpu: float
    input_bound: bool = False
    time_to_train_s: float | None = None
    gpu_hours: float | None = None
    cost_usd: float | None = None  # training: the run; inference: per hour
    latency_p99_s: float | None = None
    goodput: float | None = None
    gpu_hours_billed: float | None = None  # whole nodes x hours (training)

    @property
    def step_time_s(self) -> float | None:
        """One step (training) or one batch (inference), the figure a calibration changes."""
        return self.step.get("step_s")


def explain(loser: VisionOption, winner: VisionOption, objective: str) -> str:
    """Why `loser` ranks below `winner`, from the numbers."""
    parts = [objective_gap(loser, winner, objective)]
    parts.append(f"{loser.images_per_s_per_gpu:,.0f} vs {winner.images_per_s_per_gpu:,.0f} images/s per GPU")
    if loser.input_bound:
        parts.append("input bound (decode cannot keep up with compute)")
    return "; ".join(parts)


@dataclass
class VisionPlan:
    """The outcome of a vision search."""

    name: str
    model: str
    mode: str
    objective: str
    best: VisionOption
    alternatives: list[tuple[VisionOption, str]]
    rejected: list[tuple[str, str]]
    assumptions: list[str]
    counts: VisionCounts
    pipeline: dict[str, Any]
    targets: dict[str, Any] = field(default_factory=dict)
    demand: Demand | None = None
    sizing: Any = None
    uncertainty: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, versioned; every quantity key carries its unit."""
        return {
            "kind": "vision_plan",
            "schema_version": REPORT_SCHEMA_VERSION,
            "name": self.name,
            "model": self.model,
            "mode": self.mode,
            "objective": self.objective,
            "targets": self.targets,
            "model_counts": {
                "macs_per_image": self.counts.macs_per_image,
                "flops_per_image": self.counts.flops_per_image,
                "params": self.counts.params,
                "stored_activation_elements_per_image": self.counts.stored_activation_elements_per_image,
            },
            "pipeline": self.pipeline,
            "best": asdict(self.best),
            "alternatives": [{**asdict(o), "why_not": why} for o, why in self.alternatives],
            "rejected": [{"accelerator": a, "reason": r} for a, r in self.rejected],
            "assumptions": self.assumptions,
            "demand": self.demand.as_dict() if self.demand else None,
            "sizing": self.sizing.as_dict() if hasattr(self.sizing, "as_dict") else self.sizing,
        }

    def render_text(self, title: str) -> str:
        b = self.best
        lines = [f"{title}: {self.name}", "=" * (len(title) + len(self.name) + 2)]
        c = self.counts
        lines.append(
            f"model {self.model}: {c.macs_per_image / 1e9:.2f} GMACs ({c.flops_per_image / 1e9:.2f} GFLOPs) "
            f"per image, {c.params / 1e6:.1f}M parameters"
        )
        lines.append(f"best: {b.gpus} x {b.accelerator} ({b.node}), batch {b.batch_per_gpu} per GPU")
        if self.mode == "training":
            assert b.time_to_train_s is not None
            lines.append(
                f"  {b.images_per_s_per_gpu:,.0f} images/s per GPU, {b.images_per_s:,.0f} images/s total, "
                f"MFU {b.mfu:.0%}{' (input bound)' if b.input_bound else ''}"
            )
            lines.append(
                f"  time to train {b.time_to_train_s / HOUR_S:.2f} h, {b.gpu_hours or 0:,.1f} GPU-hours"
                + (f", ${b.cost_usd:,.0f} on demand" if b.cost_usd is not None else "")
            )
        else:
            assert b.latency_p99_s is not None
            lines.append(
                f"  {b.images_per_s_per_gpu:,.0f} frames/s per GPU at the utilisation target, "
                f"p99 latency {b.latency_p99_s * 1e3:.1f} ms"
                + (f", ${b.cost_usd:,.2f}/h on demand" if b.cost_usd is not None else "")
            )
        step = ", ".join(f"{k.removesuffix('_s')} {v * 1e3:.2f} ms" for k, v in b.step.items() if v)
        lines.append(f"  step breakdown: {step}")
        mem = b.memory
        lines.append(
            f"  memory per GPU: {mem['total_bytes'] / GiB:.1f} of {mem['capacity_bytes'] / GiB:.1f} GiB"
        )
        p = self.pipeline
        lines.append(
            f"data pipeline: {b.cpu_cores_per_gpu:.1f} CPU cores per GPU, "
            f"read {p.get('read_bytes_per_s', 0.0) / GB:.2f} GB/s in total"
        )
        for opt, why in self.alternatives:
            lines.append(f"alternative: {opt.gpus} x {opt.accelerator}: {why}")
        for acc, why in self.rejected:
            lines.append(f"rejected: {acc}: {why}")
        lines += [f"assumption: {a}" for a in self.assumptions]
        return "\n".join(lines)
