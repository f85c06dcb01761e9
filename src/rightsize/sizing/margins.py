"""Margins, shown apart from the base need they sit on.

Two policy knobs, each applied where it belongs:
- the safety margin m (default 20%, typical 15-25%) covers model error and surprises:
  on a training deadline the plan aims to finish by deadline / (1 + m); on serving it is
  the headroom on the peak rate (capacity for peak x (1 + m)); on storage it is spare
  capacity (base x (1 + m));
- the utilisation target u (default 80%, typical 70-85%) is how busy a shared resource is
  planned to be: a serving replica at most u of its SLO capacity (queueing delay grows as
  1 / (1 - u)), a recurring-job pool at most u busy, and the scaling knee (each GPU keeps at
  least u of its best throughput) when no deadline fixes the size.
Each line states the base need, the planned figure and the factor between them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from rightsize.search.demand import Demand

TYPICAL_SAFETY_MARGIN = (0.15, 0.25)
TYPICAL_UTILISATION_TARGET = (0.70, 0.85)


@dataclass(frozen=True)
class MarginLine:
    what: str
    unit: str
    base: float
    planned: float
    margin_fraction: float  # planned / base - 1
    applied: str  # which knob, and how

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _line(what: str, unit: str, base: float, planned: float, applied: str) -> MarginLine:
    return MarginLine(what, unit, base, planned, planned / base - 1.0 if base else 0.0, applied)


def policy_warnings(safety_margin: float, utilisation_target: float) -> list[str]:
    """Margins outside the typical range are allowed but called out."""
    out = []
    lo, hi = TYPICAL_SAFETY_MARGIN
    if not lo <= safety_margin <= hi:
        out.append(
            f"Safety margin {safety_margin:.0%} is outside the typical {lo:.0%}-{hi:.0%}: "
            + ("little protection against model error." if safety_margin < lo else "likely over-provisioned.")
        )
    lo, hi = TYPICAL_UTILISATION_TARGET
    if not lo <= utilisation_target <= hi:
        out.append(
            f"Utilisation target {utilisation_target:.0%} is outside the typical {lo:.0%}-{hi:.0%}: "
            + (
                "capacity will sit idle."
                if utilisation_target < lo
                else "queues and tail latency grow quickly near full load."
            )
        )
    return out


def serving_margins(
    demand: Demand, replica_capacity_rps: float, safety_margin: float, utilisation_target: float
) -> list[MarginLine]:
    """Replicas for the bare peak, then with the utilisation target, then with headroom too."""
    peak = demand.base_rate_rps
    if not peak or not replica_capacity_rps or demand.replicas is None:
        return []
    bare = max(1, math.ceil(peak / replica_capacity_rps))
    at_target = max(1, math.ceil(peak / (replica_capacity_rps * utilisation_target)))
    return [
        _line(
            "peak request rate",
            "req/s",
            peak,
            peak * (1 + safety_margin),
            f"safety margin {safety_margin:.0%}",
        ),
        _line(
            "replicas",
            "replicas",
            bare,
            at_target,
            f"utilisation target {utilisation_target:.0%} (each replica at most that busy at peak)",
        ),
        _line(
            "replicas",
            "replicas",
            at_target,
            demand.replicas,
            f"safety margin {safety_margin:.0%} on the peak rate, on top of the utilisation target",
        ),
    ]


def training_margins(
    deadline_s: float | None, run_s: float | None, base_gpus: int | None, gpus: int, safety_margin: float
) -> list[MarginLine]:
    """The deadline the plan aims at, and the GPUs the margin adds over the bare need."""
    out: list[MarginLine] = []
    if deadline_s:
        out.append(
            _line(
                "time budget",
                "days",
                deadline_s / 86400.0,
                deadline_s / (1 + safety_margin) / 86400.0,
                f"safety margin {safety_margin:.0%}: plan to finish by deadline / {1 + safety_margin:g}",
            )
        )
        if base_gpus:
            out.append(
                _line(
                    "GPUs", "GPUs", base_gpus, gpus, "the fewest GPUs that meet the bare deadline vs the plan"
                )
            )
    if deadline_s and run_s:
        out.append(
            _line(
                "slack at the deadline",
                "days",
                run_s / 86400.0,
                deadline_s / 86400.0,
                "predicted wall time (failures included) against the deadline",
            )
        )
    return out


def deadline_warning(deadline_s: float | None, run_s: float | None, safety_margin: float) -> list[str]:
    """A warning when the run as sized passes the deadline the search planned against (the
    search checked its whole-run figure; only what the sizing adds, slower storage or thermal
    throttling, can push it past)."""
    planned = deadline_s / (1 + safety_margin) if deadline_s else None
    if deadline_s is None or planned is None or run_s is None or run_s <= planned:
        return []
    return [
        f"The run as sized takes {run_s / 86400.0:.1f} days, past the {planned / 86400.0:.1f} days planned "
        f"({deadline_s / 86400.0:.1f} days less the {safety_margin:.0%} safety margin): the storage or cooling "
        "as provisioned slows it (see the whole run by part); provision them for the need or extend the deadline."
    ]


def storage_margin(base_bytes: float, safety_margin: float) -> MarginLine:
    return _line(
        "storage capacity",
        "bytes",
        base_bytes,
        base_bytes * (1 + safety_margin),
        f"safety margin {safety_margin:.0%}",
    )
