"""Ranking the per-accelerator options of an inference plan (vision and recommendation):
the facility's power cap first, only priced accelerators under a cost objective, then the
objective with the p99 latency as the tie-break."""

from __future__ import annotations

from typing import Any, TypeVar

from rightsize.catalog import get_node
from rightsize.search.constraints import under_power_cap
from rightsize.search.serving_costs import keep_priced, no_price_reason

Option = TypeVar("Option")


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
