"""The recommendation plan and its options as typed values, with their JSON and terminal text."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rightsize.constants import GB, HOUR_S, REPORT_SCHEMA_VERSION, GiB
from rightsize.search.demand import Demand
from rightsize.search.option_rank import RankedOption, objective_gap


@dataclass
class RecsysOption(RankedOption):
    """One evaluated configuration, as plain values."""

    accelerator: str
    node: str
    gpus: int
    batch: int  # training: global samples per step; inference: samples per replica batch
    samples_per_s: float
    samples_per_s_per_gpu: float
    step: dict[str, float]  # seconds, broken down; step_s is the total
    placement: dict[str, float]  # bytes per tier, cache hit rate, lookups per sample by tier
    comm: dict[str, float]  # bytes one GPU sends, per direction
    memory: dict[str, float]  # bytes per GPU
    gpus_per_replica: int | None = None
    replicas: int | None = None
    latency_p99_s: float | None = None
    time_to_train_s: float | None = None
    gpu_hours: float | None = None
    cost_usd: float | None = None  # training: the run; inference: per hour
    goodput: float | None = None
    gpu_hours_billed: float | None = None  # whole nodes x hours (training)

    @property
    def step_time_s(self) -> float | None:
        """One step (training) or one batch (inference), the figure a calibration changes."""
        return self.step.get("step_s")

    @property
    def mfu(self) -> float | None:
        return None  # embedding lookups, not FLOPs, bound a recommendation model: no MFU is modelled


def explain(loser: RecsysOption, winner: RecsysOption, objective: str) -> str:
    parts = [objective_gap(loser, winner, objective)]
    parts.append(
        f"{loser.samples_per_s_per_gpu / 1e6:,.3g}M vs {winner.samples_per_s_per_gpu / 1e6:,.3g}M samples/s per GPU"
    )
    if loser.placement.get("host_bytes", 0) + loser.placement.get("ssd_bytes", 0) > 0:
        parts.append(f"tables spill beyond HBM (cache hit {loser.placement['cache_hit_rate']:.0%})")
    return "; ".join(parts)


@dataclass
class RecsysPlan:
    """The outcome of a recommendation search."""

    name: str
    model: str
    mode: str
    objective: str
    best: RecsysOption
    alternatives: list[tuple[RecsysOption, str]]
    rejected: list[tuple[str, str]]
    assumptions: list[str]
    tables: dict[str, Any]
    targets: dict[str, Any] = field(default_factory=dict)
    demand: Demand | None = None
    sizing: Any = None
    uncertainty: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, versioned; every quantity key carries its unit."""
        return {
            "kind": "recommendation_plan",
            "schema_version": REPORT_SCHEMA_VERSION,
            "name": self.name,
            "model": self.model,
            "mode": self.mode,
            "objective": self.objective,
            "targets": self.targets,
            "tables": self.tables,
            "best": asdict(self.best),
            "alternatives": [{**asdict(o), "why_not": why} for o, why in self.alternatives],
            "rejected": [{"accelerator": a, "reason": r} for a, r in self.rejected],
            "assumptions": self.assumptions,
            "demand": self.demand.as_dict() if self.demand else None,
            "sizing": self.sizing.as_dict() if hasattr(self.sizing, "as_dict") else self.sizing,
        }

    def render_text(self, title: str) -> str:
        b = self.best
        t = self.tables
        lines = [f"{title}: {self.name}", "=" * (len(title) + len(self.name) + 2)]
        lines.append(
            f"model {self.model}: {t['count']} tables, {t['rows']:,.0f} rows x {t['embedding_dim']} = "
            f"{t['total_bytes'] / GB:,.1f} GB ({t['precision']}), {t['lookups_per_sample']:g} lookups per sample, "
            f"dense {t['dense_params'] / 1e6:.1f}M parameters"
        )
        head = f"best: {b.gpus} x {b.accelerator} ({b.node})"
        if self.mode == "inference":
            head += f" = {b.replicas} replicas of {b.gpus_per_replica} GPU(s), batch {b.batch:,} samples"
        else:
            head += f", global batch {b.batch:,}"
        lines.append(head)
        if self.mode == "training":
            assert b.time_to_train_s is not None
            lines.append(
                f"  {b.samples_per_s:,.0f} samples/s ({b.samples_per_s_per_gpu:,.0f} per GPU); time to train "
                f"{b.time_to_train_s / HOUR_S:.2f} h, {b.gpu_hours or 0:,.1f} GPU-hours"
                + (f", ${b.cost_usd:,.0f} on demand" if b.cost_usd is not None else "")
            )
        else:
            assert b.latency_p99_s is not None
            lines.append(
                f"  p99 latency {b.latency_p99_s * 1e3:.2f} ms; {b.samples_per_s_per_gpu:,.0f} samples/s per GPU "
                "at the utilisation target"
                + (f"; ${b.cost_usd:,.2f}/h on demand" if b.cost_usd is not None else "")
            )
        p = b.placement
        lines.append(
            f"  tables: HBM {p['hbm_table_bytes'] / GB:,.1f} GB, host {p['host_bytes'] / GB:,.1f} GB, "
            f"SSD {p['ssd_bytes'] / GB:,.1f} GB; HBM cache {p['hbm_cache_bytes'] / GB:,.1f} GB hits "
            f"{p['cache_hit_rate']:.0%}"
        )
        step = ", ".join(f"{k.removesuffix('_s')} {v * 1e3:.3f} ms" for k, v in b.step.items() if v)
        lines.append(f"  step breakdown: {step}")
        if b.comm.get("pooled_all_to_all_bytes"):
            lines.append(
                f"  all-to-all per GPU: {b.comm['pooled_all_to_all_bytes'] / 1e6:,.1f} MB per direction"
            )
        lines.append(
            f"  memory per GPU: embeddings {b.memory['embedding_budget_bytes'] / GiB:.1f} GiB of "
            f"{b.memory['capacity_bytes'] / GiB:.1f} GiB"
        )
        for opt, why in self.alternatives:
            lines.append(f"alternative: {opt.gpus} x {opt.accelerator}: {why}")
        for acc, why in self.rejected:
            lines.append(f"rejected: {acc}: {why}")
        lines += [f"assumption: {a}" for a in self.assumptions]
        return "\n".join(lines)
