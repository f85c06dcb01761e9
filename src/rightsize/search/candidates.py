"""Candidates: a chosen configuration with everything a report needs, as plain values."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Candidate:
    """One evaluated configuration: hardware, layout, step breakdown, memory, run totals."""

    accelerator: str
    node: str
    gpus: int
    parallel: dict[str, Any]
    step: dict[str, float]  # step_time_s and its breakdown
    memory: dict[str, float]  # bytes per GPU, broken down
    mfu: float
    hfu: float
    tokens_per_s_per_gpu: float
    time_to_train_s: float | None = None
    gpu_hours: float | None = None
    cost_usd: float | None = None
    reliability: dict[str, float] = field(default_factory=dict)  # goodput and its inputs
    # Risk-aware ranking (search.risk): the chosen quantile of the step time over its base
    # value, from the efficiencies' spread and the distance to validated runs.
    risk_factor: float = 1.0
    risk_quantile: float = 0.5
    # GPU-hours billed: whole nodes x the run's hours (what `objective: gpu_hours` ranks by;
    # `gpu_hours` is the GPUs the job uses x hours)
    gpu_hours_billed: float | None = None
    # The whole run by part (`perf.whole_run.RunParts.as_dict`): its total is time_to_train_s.
    whole_run: dict[str, Any] | None = None

    @property
    def step_time_s(self) -> float:
        return self.step["step_time_s"]

    def objective(self, name: str) -> float:
        """Smaller is better, at the risk-aware quantile (base value x risk_factor).
        Without a run length, throughput per GPU stands in."""
        return self.base_objective(name) * self.risk_factor

    def base_objective(self, name: str) -> float:
        """The objective at the catalog efficiencies (no risk)."""
        if name == "time" and self.time_to_train_s is not None:
            return self.time_to_train_s
        if name == "cost" and self.cost_usd is not None:
            return self.cost_usd
        if name == "gpu_hours" and self.gpu_hours_billed is not None:
            return self.gpu_hours_billed
        if self.gpu_hours is not None and name != "time":
            return self.gpu_hours
        if name == "time":
            return self.step_time_s
        return 1.0 / self.tokens_per_s_per_gpu

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def explain_difference(loser: Candidate, winner: Candidate, objective: str) -> str:
    """Why `loser` ranks below `winner`, from the numbers: the objective gap, then
    either the throughput gap (other hardware) or the step-time component that
    differs most per token (same hardware, other layout)."""
    label = {"time": "time to train", "gpu_hours": "GPU-hours", "cost": "cost"}[objective]
    base = loser.base_objective(objective) / winner.base_objective(objective) - 1.0
    parts = [f"{base:+.0%} {label}" if abs(base) >= 0.005 else f"same {label}"]
    same_risk = abs(loser.risk_factor / winner.risk_factor - 1.0) < 0.005
    if loser.risk_quantile == winner.risk_quantile and not same_risk:
        # ranked at the risk-aware quantile: say so, or the table's own figures contradict the rank
        ranked = loser.objective(objective) / winner.objective(objective) - 1.0
        q = round(100 * max(loser.risk_quantile, winner.risk_quantile))
        parts[0] += (
            f" as planned, {ranked:+.0%} at P{q} of the model's error for each (search.risk: "
            f"x{loser.risk_factor:.2f} against x{winner.risk_factor:.2f}, the less validated side wider)"
        )
    if loser.accelerator != winner.accelerator:
        parts.append(
            f"{loser.tokens_per_s_per_gpu:,.0f} vs {winner.tokens_per_s_per_gpu:,.0f} tokens/s per GPU "
            f"(MFU {loser.mfu:.0%} vs {winner.mfu:.0%})"
        )
        return "; ".join(parts)

    def per_token(c: Candidate, key: str) -> float:
        return c.step.get(key, 0.0) / (c.tokens_per_s_per_gpu * c.step_time_s)

    keys = [k for k in winner.step if k != "step_time_s"]
    deltas = {k: per_token(loser, k) - per_token(winner, k) for k in keys}
    worst = max(deltas, key=lambda k: deltas[k])
    if deltas[worst] > 0:
        more = deltas[worst] / per_token(winner, "step_time_s")
        name = worst.removesuffix("_s").replace("_", " ")
        parts.append(f"{name} costs {more:.1%} more GPU time per token")
    return "; ".join(parts)
