"""The recommendation plan and its options: the shared records (`search.job_plan`) with the
recommendation model's own fields (rates in samples, table placement, all-to-all) and text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rightsize.constants import GB, HOUR_S, GiB
from rightsize.search.job_plan import JobOption, JobPlan, step_line
from rightsize.search.option_rank import objective_gap


@dataclass(kw_only=True)
class RecsysOption(JobOption):
    """One evaluated configuration, as plain values."""

    batch: int  # training: global samples per step; inference: samples per replica batch
    samples_per_s: float
    samples_per_s_per_gpu: float
    placement: dict[str, float]  # bytes per tier, cache hit rate, lookups per sample by tier
    comm: dict[str, float]  # bytes one GPU sends, per direction
    gpus_per_replica: int | None = None
    replicas: int | None = None

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


@dataclass(kw_only=True)
class RecsysPlan(JobPlan):
    """The outcome of a recommendation search."""

    KIND = "recommendation_plan"

    best: RecsysOption
    alternatives: list[tuple[RecsysOption, str]]
    tables: dict[str, Any]

    def model_dict(self) -> dict[str, Any]:
        return {"tables": self.tables}

    def model_lines(self) -> list[str]:
        t = self.tables
        return [
            f"model {self.model}: {t['count']} tables, {t['rows']:,.0f} rows x {t['embedding_dim']} = "
            f"{t['total_bytes'] / GB:,.1f} GB ({t['precision']}), {t['lookups_per_sample']:g} lookups per sample, "
            f"dense {t['dense_params'] / 1e6:.1f}M parameters"
        ]

    def best_lines(self) -> list[str]:
        b = self.best
        head = f"best: {b.gpus} x {b.accelerator} ({b.node})"
        if self.mode == "inference":
            head += f" = {b.replicas} replicas of {b.gpus_per_replica} GPU(s), batch {b.batch:,} samples"
        else:
            head += f", global batch {b.batch:,}"
        lines = [head]
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
        lines.append(step_line(b.step, 3))
        if b.comm.get("pooled_all_to_all_bytes"):
            lines.append(
                f"  all-to-all per GPU: {b.comm['pooled_all_to_all_bytes'] / 1e6:,.1f} MB per direction"
            )
        lines.append(
            f"  memory per GPU: embeddings {b.memory['embedding_budget_bytes'] / GiB:.1f} GiB of "
            f"{b.memory['capacity_bytes'] / GiB:.1f} GiB"
        )
        return lines
