"""What the vision and recommendation planners share, written once: which accelerators a spec
allows, the GPU counts a training search tries, the batches a serving search tries (a fixed batch,
or a list to pick from under a p99 latency bound), and the run figures of a training option
(goodput, time to train, GPU-hours, cost)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rightsize.catalog import NodeType, accelerators
from rightsize.catalog.reliability import reliability
from rightsize.constants import HOUR_S
from rightsize.perf.reliability import goodput
from rightsize.search.serving_costs import billed_cost_usd_per_hour, billed_gpus


def accelerator_ids(spec: Any) -> list[str]:
    """The accelerators the spec allows (every catalogued one when it names none)."""
    return list(spec.targets.accelerators) if spec.targets.accelerators else list(accelerators())


def gpu_counts(node: NodeType, max_gpus: int) -> list[int]:
    """1, 2, 4 below a node, then whole nodes doubling up to `max_gpus`."""
    counts = [g for g in (1, 2, 4) if g < node.gpus_per_node]
    g = node.gpus_per_node
    while g <= max_gpus:
        counts.append(g)
        g *= 2
    return counts


def serve_batches(fixed: int | None, candidates: Sequence[int]) -> list[int]:
    """The batches a serving search tries: the spec's fixed batch alone, or every candidate."""
    return [fixed] if fixed else list(candidates)


def meets_latency(latency_s: float, bound_s: float, fixed_batch: int | None) -> bool:
    """Whether a batch's p99 latency is acceptable: always for a batch the spec fixed (its
    latency is reported, not enforced), else when it is within the bound."""
    return fixed_batch is not None or latency_s <= bound_s


@dataclass(frozen=True)
class RunFigures:
    """A training option's whole run: goodput, time to train, GPU-hours (used and billed), cost."""

    goodput: float
    time_to_train_s: float
    gpu_hours: float
    gpu_hours_billed: float
    cost_usd: float | None


def run_figures(
    acc_id: str, node: NodeType, gpus: int, units_total: float, units_per_s: float, checkpoint_bytes: float
) -> RunFigures:
    """The run of `units_total` work units at `units_per_s` on `gpus`, with failures and
    restarts through the reliability model (goodput) and on-demand node-hour billing."""
    nodes = math.ceil(gpus / node.gpus_per_node)
    gp = goodput(gpus, nodes, checkpoint_bytes, reliability()).goodput
    ttt = units_total / units_per_s / gp
    hourly = billed_cost_usd_per_hour(acc_id, gpus, node.gpus_per_node)
    return RunFigures(
        goodput=gp,
        time_to_train_s=ttt,
        gpu_hours=gpus * ttt / HOUR_S,
        gpu_hours_billed=billed_gpus(gpus, node.gpus_per_node) * ttt / HOUR_S,
        cost_usd=hourly * ttt / HOUR_S if hourly is not None else None,
    )
