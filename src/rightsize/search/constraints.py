"""Constraints every workload's search applies the same way, after its own evaluation:
the safety margin and utilisation target (one pair per plan, whichever section of the spec
sets them), the margin on a deadline, and the facility power cap.

Margins. `infrastructure.margins` holds the plan's safety margin and utilisation target; an
inference spec's `policy` (headroom, utilisation target) overrides them where the user set
it. On a deadline the plan aims to finish by deadline / (1 + margin); on a request, frame or
query rate the capacity is sized for peak x (1 + margin).

Power cap. Clusters whose facility power at the nodes' maximum draw (perf.power's
screening estimate, before fabric and storage are sized) exceeds
`infrastructure.facility.power_cap` are dropped; none left is infeasible, with the cap the
smallest would need. Sizing checks the full nameplate again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rightsize.catalog import NodeType
from rightsize.errors import Infeasible
from rightsize.perf.power import default_pue, facility_power_estimate_w

T = TypeVar("T")


@dataclass(frozen=True)
class PlanMargins:
    """The safety margin and utilisation target a plan is held to (`headroom` is the same
    safety margin under the name sizing and serving policies use)."""

    safety_margin: float
    utilisation_target: float

    @property
    def headroom(self) -> float:
        return self.safety_margin


def margins_of(spec: Any) -> PlanMargins:
    """The plan's margins: `policy` where the spec sets it, else `infrastructure.margins`."""
    infra = spec.infrastructure.margins
    margin, util = infra.safety_margin, infra.utilisation_target
    policy: Any = getattr(spec, "policy", None)
    given: set[str] = set(getattr(policy, "model_fields_set", ()) or ())
    if "headroom" in given:
        margin = policy.headroom
    if "utilisation_target" in given:
        util = policy.utilisation_target
    return PlanMargins(float(margin), float(util))


def planned_deadline(bare_s: float | None, margin: float) -> float | None:
    """The deadline the search plans against: bare / (1 + margin)."""
    return bare_s / (1.0 + margin) if bare_s else None


def span_text(seconds: float) -> str:
    """A duration in the unit that reads best ('45 s', '12 min', '7.5 h', '60.0 days'): a deadline
    of a second is not '0.0 days'."""
    if seconds < 120:
        return f"{seconds:,.3g} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:,.3g} h"
    return f"{seconds / 86400:,.1f} days"


def deadline_to_ask(seconds: float) -> str:
    """The shortest round deadline, in spec units, that is at least `seconds` ('17min', '9h', '45d')."""
    if seconds <= 3600:
        return f"{max(1, math.ceil(seconds / 60))}min"
    if seconds <= 2 * 86400:
        return f"{math.ceil(seconds / 3600)}h"
    return f"{math.ceil(seconds / 86400)}d"


def deadline_note(bare_s: float, margin: float, unit_s: float, unit: str) -> str:
    return (
        f"Safety margin {margin:.0%} on the time budget: the plan aims to finish within "
        f"{bare_s / (1.0 + margin) / unit_s:.1f} of the {bare_s / unit_s:.1f} {unit}."
    )


def under_power_cap(
    options: Sequence[T],
    gpus_of: Callable[[T], int],
    node_of: Callable[[T], NodeType],
    spec: Any,
    assumptions: list[str],
) -> list[T]:
    """The options whose facility power fits under the spec's cap (all when there is none)."""
    facility = spec.infrastructure.facility
    cap_w = facility.power_cap_w
    if cap_w is None or not options:
        return list(options)
    pue = default_pue(facility.pue)

    def need(o: T) -> float:
        return facility_power_estimate_w(gpus_of(o), node_of(o), pue)

    fits = [o for o in options if need(o) <= cap_w]
    if fits:
        assumptions.append(
            f"Facility power cap {cap_w / 1e6:.2f} MW (PUE {pue:g}, nodes at maximum draw): "
            f"{len(options) - len(fits)} of {len(options)} options exceed it."
        )
        return fits
    smallest = min(options, key=need)
    node = node_of(smallest)
    raise Infeasible(
        f"No cluster fits under the facility power cap of {cap_w / 1e6:.3g} MW.",
        f"The smallest feasible cluster ({gpus_of(smallest)} x {node.accelerator}) needs "
        f"{need(smallest) / 1e6:.3g} MW at the nodes' maximum draw with PUE {pue:g}.",
        f"Raise infrastructure.facility.power_cap to at least {math.ceil(need(smallest) / 1e3)} kW, lower the "
        "PUE, or allow a smaller model or more memory per GPU.",
    )


def training_extra(
    options: Sequence[Any], best: Any, bare_deadline_s: float | None, margin: float
) -> dict[str, Any]:
    """What the sizing needs from a job's search: the bare deadline, the margin, the fewest GPUs
    of the chosen accelerator that meet the bare deadline (its margin lines), and the chosen
    option's whole run by part (read, not recomputed, for the headline and its table)."""
    base = [
        o.gpus
        for o in options
        if o.accelerator == best.accelerator
        and bare_deadline_s is not None
        and (o.time_to_train_s or math.inf) <= bare_deadline_s
    ]
    return {
        "bare_deadline_s": bare_deadline_s,
        "safety_margin": margin,
        "base_gpus": min(base, default=None),
        "whole_run": getattr(best, "whole_run", None),
    }
