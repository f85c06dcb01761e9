"""The plan and option records every non-LLM kind (vision, recommendation) shares, written once:
the fields a ranked option carries (hardware, step breakdown, memory, the run or the service),
and a plan's envelope, JSON and terminal text. Each kind adds its own rate fields and the lines
that describe its model."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from rightsize.constants import REPORT_SCHEMA_VERSION
from rightsize.search.demand import Demand
from rightsize.search.option_rank import RankedOption


@dataclass(kw_only=True)
class JobOption(RankedOption):
    """One evaluated configuration of a vision or recommendation search, as plain values."""

    accelerator: str
    node: str
    gpus: int
    step: dict[str, float]  # seconds, broken down (step_s is the total)
    memory: dict[str, float]  # bytes per GPU
    time_to_train_s: float | None = None
    gpu_hours: float | None = None
    cost_usd: float | None = None  # training: the run; inference: per hour
    latency_p99_s: float | None = None
    goodput: float | None = None
    gpu_hours_billed: float | None = None  # whole nodes x hours (training)
    whole_run: dict[str, Any] | None = None  # training: the run by part; time_to_train_s is its total

    @property
    def step_time_s(self) -> float | None:
        """One step (training) or one batch (inference), the figure a calibration changes."""
        return self.step.get("step_s")


def step_line(step: dict[str, float], digits: int = 2) -> str:
    """The step breakdown as one line of milliseconds (zero parts left out)."""
    parts = ", ".join(f"{k.removesuffix('_s')} {v * 1e3:.{digits}f} ms" for k, v in step.items() if v)
    return f"  step breakdown: {parts}"


@dataclass(kw_only=True)
class JobPlan:
    """The outcome of a vision or recommendation search. Subclasses set `KIND` and give
    `model_dict` (their model's JSON sections) and `model_lines` / `best_lines` (their text)."""

    KIND: ClassVar[str] = "job_plan"

    name: str
    model: str
    mode: str
    objective: str
    best: Any
    alternatives: list[tuple[Any, str]]
    rejected: list[tuple[str, str]]
    assumptions: list[str]
    targets: dict[str, Any] = field(default_factory=dict)
    demand: Demand | None = None
    sizing: Any = None
    uncertainty: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def model_dict(self) -> dict[str, Any]:
        return {}

    def model_lines(self) -> list[str]:
        return []

    def best_lines(self) -> list[str]:
        return []

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, versioned; every quantity key carries its unit."""
        return {
            "kind": self.KIND,
            "schema_version": REPORT_SCHEMA_VERSION,
            "name": self.name,
            "model": self.model,
            "mode": self.mode,
            "objective": self.objective,
            "targets": self.targets,
            **self.model_dict(),
            "best": asdict(self.best),
            "alternatives": [{**asdict(o), "why_not": why} for o, why in self.alternatives],
            "rejected": [{"accelerator": a, "reason": r} for a, r in self.rejected],
            "assumptions": self.assumptions,
            "demand": self.demand.as_dict() if self.demand else None,
            "sizing": self.sizing.as_dict() if hasattr(self.sizing, "as_dict") else self.sizing,
        }

    def render_text(self, title: str) -> str:
        lines = [f"{title}: {self.name}", "=" * (len(title) + len(self.name) + 2)]
        lines += self.model_lines()
        lines += self.best_lines()
        for opt, why in self.alternatives:
            lines.append(f"alternative: {opt.gpus} x {opt.accelerator}: {why}")
        for acc, why in self.rejected:
            lines.append(f"rejected: {acc}: {why}")
        lines += [f"assumption: {a}" for a in self.assumptions]
        return "\n".join(lines)
