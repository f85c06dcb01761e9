"""Ranking the options of a vision or recommendation plan.

Inference: the facility's power cap first, only priced accelerators under a cost objective,
then the objective with the p99 latency as the tie-break. Training: the options that meet
the planned deadline (the safety margin taken off it), then the objective with the time to
train as the tie-break, and the best option of each other accelerator as an alternative."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from rightsize.catalog import get_node
from rightsize.constants import HOUR_S
from rightsize.errors import Infeasible
from rightsize.search.constraints import (
    deadline_note,
    deadline_to_ask,
    margins_of,
    planned_deadline,
    span_text,
    under_power_cap,
)
from rightsize.search.serving_costs import keep_priced, no_price_reason

Option = TypeVar("Option")

OBJECTIVE_LABELS = {"time": "time to train", "gpu_hours": "GPU-hours", "cost": "cost", "gpus": "GPUs"}


class RankedOption:
    """What a vision or recommendation option ranks by (mixed into their records, which
    hold these fields): time to train, cost, GPU-hours, or GPUs."""

    gpus: int
    time_to_train_s: float | None
    gpu_hours: float | None
    gpu_hours_billed: float | None  # whole nodes x hours: what `gpu_hours` ranks by
    cost_usd: float | None

    def objective(self, name: str) -> float:
        if name == "time" and self.time_to_train_s is not None:
            return self.time_to_train_s
        if name == "cost" and self.cost_usd is not None:
            return self.cost_usd
        if name == "gpu_hours" and self.gpu_hours_billed is not None:
            return self.gpu_hours_billed
        if self.gpu_hours is not None and name != "gpus":
            return self.gpu_hours
        return float(self.gpus)


def objective_gap(loser: RankedOption, winner: RankedOption, objective: str) -> str:
    """How much worse `loser` is on the objective ('+12% GPU-hours', or 'same cost')."""
    ratio = loser.objective(objective) / winner.objective(objective) - 1.0
    label = OBJECTIVE_LABELS[objective]
    return f"{ratio:+.0%} {label}" if abs(ratio) >= 0.005 else f"same {label}"


def rank_by_objective_then_latency(
    options: list[Option], spec: Any, objective: str, notes: list[str], rejected: list[tuple[str, str]]
) -> list[Option]:
    """`options` (each with gpus, node, accelerator, cost_usd, latency_p99_s and
    objective()) in rank order; accelerators left out for want of a price join `rejected`,
    what the power cap did joins `notes`."""
    kept: list[Any] = under_power_cap(options, lambda o: o.gpus, lambda o: get_node(o.node), spec, notes)
    if objective == "cost":
        kept, unpriced = keep_priced(kept, lambda o: o.cost_usd, lambda o: o.accelerator)
        rejected.extend((a, no_price_reason(a)) for a in unpriced)
    kept.sort(key=lambda o: (o.objective(objective), o.latency_p99_s or 0.0))
    return kept


def in_time(
    options: list[Option], spec: Any, notes: list[str], fastest_text: Callable[[Any], str], fewer: str
) -> tuple[list[Option], float | None]:
    """The options that finish by the planned deadline, and that deadline (None without one);
    `Infeasible` naming the fastest option (`fastest_text(option)`, in brackets) and the
    deadline that would do when none does; `fewer` names what to train less of."""
    bare, margin = spec.targets.deadline_s, margins_of(spec).safety_margin
    deadline = planned_deadline(bare, margin)
    if bare:
        notes.append(deadline_note(bare, margin, HOUR_S, "hours"))
    every: list[Any] = options
    kept: list[Any] = [o for o in every if deadline is None or (o.time_to_train_s or 0.0) <= deadline]
    if kept:
        return kept, deadline
    fastest = min(every, key=lambda o: o.time_to_train_s or math.inf)
    assert fastest.time_to_train_s is not None and deadline is not None and bare is not None
    raise Infeasible(
        f"The deadline of {span_text(bare)} (planned to {span_text(deadline)} with the "
        f"{margin:.0%} safety margin) cannot be met.",
        f"The fastest plan found takes {span_text(fastest.time_to_train_s)} ({fastest_text(fastest)}).",
        f"Extend targets.deadline to at least {deadline_to_ask(fastest.time_to_train_s * (1 + margin))} "
        f"(or lower infrastructure.margins.safety_margin), {fewer}, or allow a faster accelerator.",
    )


def rank_by_objective_then_time(
    options: list[Option],
    objective: str,
    rejected: list[tuple[str, str]],
    explain: Callable[[Any, Any, str], str],
) -> tuple[Option, list[tuple[Option, str]]]:
    """The best option by the objective (time to train breaks ties) and the best of each
    other accelerator with why it lost; under a cost objective only priced accelerators
    rank, the others join `rejected`."""
    ranked: list[Any] = options
    if objective == "cost":
        ranked, unpriced = keep_priced(ranked, lambda o: o.cost_usd, lambda o: o.accelerator)
        rejected.extend((a, no_price_reason(a)) for a in unpriced)
    ranked = sorted(ranked, key=lambda o: (o.objective(objective), o.time_to_train_s or 0.0))
    best = ranked[0]
    alternatives, seen = [], {best.accelerator}
    for o in ranked[1:]:
        if o.accelerator not in seen:
            seen.add(o.accelerator)
            alternatives.append((o, explain(o, best, objective)))
    return best, alternatives
