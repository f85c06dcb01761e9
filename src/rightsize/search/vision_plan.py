"""The vision plan and its options: the shared records (`search.job_plan`) with the vision
model's own fields (rates in images, MFU, the input pipeline) and text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rightsize.constants import GB, HOUR_S, GiB
from rightsize.perf.vision import VisionCounts
from rightsize.search.job_plan import JobOption, JobPlan, step_line
from rightsize.search.option_rank import objective_gap


@dataclass(kw_only=True)
class VisionOption(JobOption):
    """One evaluated configuration with everything a report needs, as plain values."""

    batch_per_gpu: int
    images_per_s_per_gpu: float
    images_per_s: float
    mfu: float
    cpu_cores_per_gpu: float
    input_bound: bool = False


def explain(loser: VisionOption, winner: VisionOption, objective: str) -> str:
    """Why `loser` ranks below `winner`, from the numbers."""
    parts = [objective_gap(loser, winner, objective)]
    parts.append(f"{loser.images_per_s_per_gpu:,.0f} vs {winner.images_per_s_per_gpu:,.0f} images/s per GPU")
    if loser.input_bound:
        parts.append("input bound (decode cannot keep up with compute)")
    return "; ".join(parts)


@dataclass(kw_only=True)
class VisionPlan(JobPlan):
    """The outcome of a vision search."""

    KIND = "vision_plan"

    best: VisionOption
    alternatives: list[tuple[VisionOption, str]]
    counts: VisionCounts
    pipeline: dict[str, Any]

    def model_dict(self) -> dict[str, Any]:
        return {
            "model_counts": {
                "macs_per_image": self.counts.macs_per_image,
                "flops_per_image": self.counts.flops_per_image,
                "params": self.counts.params,
                "stored_activation_elements_per_image": self.counts.stored_activation_elements_per_image,
            },
            "pipeline": self.pipeline,
        }

    def model_lines(self) -> list[str]:
        c = self.counts
        return [
            f"model {self.model}: {c.macs_per_image / 1e9:.2f} GMACs ({c.flops_per_image / 1e9:.2f} GFLOPs) "
            f"per image, {c.params / 1e6:.1f}M parameters"
        ]

    def best_lines(self) -> list[str]:
        b = self.best
        lines = [f"best: {b.gpus} x {b.accelerator} ({b.node}), batch {b.batch_per_gpu} per GPU"]
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
        lines.append(step_line(b.step))
        mem = b.memory
        lines.append(
            f"  memory per GPU: {mem['total_bytes'] / GiB:.1f} of {mem['capacity_bytes'] / GiB:.1f} GiB"
        )
        p = self.pipeline
        lines.append(
            f"data pipeline: {b.cpu_cores_per_gpu:.1f} CPU cores per GPU, "
            f"read {p.get('read_bytes_per_s', 0.0) / GB:.2f} GB/s in total"
        )
        return lines
