"""The time budget of a training search: the deadline as given, the deadline the plan aims at
(less the safety margin), whether to scale to the knee of the scaling curve, and the quantile
of step time that ranks layouts; with the assumptions each brings to the plan."""

from __future__ import annotations

from dataclasses import dataclass

from rightsize.constants import DAY_S, HOUR_S
from rightsize.errors import BadInput
from rightsize.search.constraints import margins_of, planned_deadline
from rightsize.search.risk import P75, P90
from rightsize.search.scale_out import UTILISATION_TARGET
from rightsize.spec.training import TrainingSpec


def _span(seconds: float) -> str:
    """A deadline in days, or in hours when under two days ('1.7 h', not '0.1 days')."""
    return f"{seconds / DAY_S:.1f} days" if seconds >= 2 * DAY_S else f"{seconds / HOUR_S:.3g} h"


@dataclass(frozen=True)
class Budget:
    """The time budget of a training search and how it ranks."""

    bare_deadline: float | None  # as the user gave it (or the recurring job's turnaround)
    deadline: float | None  # planned: the bare deadline less the safety margin
    margin: float
    knee: bool  # neither a deadline nor a GPU count: scale to the knee of the scaling curve
    quantile: float  # of step time that ranks layouts: P90 under a deadline, else P75


def budget_of(spec: TrainingSpec, assumptions: list[str]) -> Budget:
    """The deadline, margin and ranking quantile of the spec, with the assumptions they bring."""
    tgt = spec.targets
    schedule = spec.infrastructure.schedule
    bare_deadline = tgt.deadline_s or (schedule.turnaround if schedule else None)
    margin = margins_of(spec).safety_margin
    # The safety margin applies to the time budget: plan to finish by deadline / (1 + m).
    deadline = planned_deadline(bare_deadline, margin)
    if bare_deadline and not tgt.deadline_s:
        assumptions.append(f"The recurring job's turnaround ({bare_deadline / 3600:g} h) is the deadline.")
    if deadline and bare_deadline:
        assumptions.append(
            f"Safety margin {margin:.0%} on the time budget: the plan aims to finish within "
            f"{_span(deadline)} of the {_span(bare_deadline)}."
        )
    if tgt.gpus is None and spec.training.train_tokens is None:
        raise BadInput(
            "Nothing to size against: neither a GPU count nor a run length was given.",
            "Without targets.gpus the planner needs training.train_tokens to compare cluster sizes.",
            "Add `training.train_tokens: 1T` (and a `targets.deadline`), or fix `targets.gpus: 64`.",
        )
    knee = deadline is None and tgt.gpus is None
    if knee:
        assumptions.append(
            "No deadline or GPU count given: each accelerator scales out as far as every GPU keeps "
            f"{UTILISATION_TARGET:.0%} of its best per-GPU throughput (the knee of the scaling curve)."
        )
    if not spec.training.flash_attention:
        assumptions.append("Attention without flash attention: s x s scores are materialised.")
    # Rank by the P75 of step time, or by its P90 when a deadline must be met (search.risk).
    assumptions.append(
        f"Layouts and clusters are ranked by the {'P90' if deadline else 'P75'} of their step time "
        "(efficiency spread and distance from validated runs), not by the optimistic base value."
    )
    return Budget(bare_deadline, deadline, margin, knee, P90 if deadline else P75)
