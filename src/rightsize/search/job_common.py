"""What the vision and recommendation planners share, written once: which accelerators a spec
allows, the GPU counts a training search tries, the batches a serving search tries (a fixed batch,
or a list to pick from under a p99 latency bound), the run figures of a training option
(goodput, time to train, GPU-hours, cost), and the ranking of training and serving options.
Their infrastructure demand is built in `search.job_demand`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rightsize.catalog import Accelerator, NodeType, get_accelerator, get_node, node_for, offered_accelerators
from rightsize.catalog.reliability import reliability
from rightsize.catalog.whole_run import whole_run_factors
from rightsize.constants import HOUR_S
from rightsize.errors import Infeasible
from rightsize.perf.hardware import Hardware
from rightsize.perf.reliability import daly_goodput, goodput
from rightsize.perf.whole_run import run_parts
from rightsize.search.calibrated import calibrated_hardware, power_limit_of
from rightsize.search.constraints import under_power_cap
from rightsize.search.option_rank import in_time, rank_by_objective_then_latency, rank_by_objective_then_time
from rightsize.search.serving_costs import billed_cost_usd_per_hour, billed_gpus

Opt = TypeVar("Opt")


@dataclass(frozen=True)
class TrainingRank(Generic[Opt]):
    """A ranked training search: the best option, the alternatives with why each lost, the
    planned deadline (None without one) and the options under the power cap."""

    best: Opt
    alternatives: list[tuple[Opt, str]]
    deadline_s: float | None
    options: list[Opt]


def accelerator_ids(spec: Any) -> list[str]:
    """The accelerators the spec allows (every one offered for purchase or rent when it names none)."""
    return list(spec.targets.accelerators) if spec.targets.accelerators else list(offered_accelerators())


def allowed_hardware(
    spec: Any, precision: str, calibration: Any, rejected: list[tuple[str, str]]
) -> Iterator[tuple[Accelerator, NodeType, Hardware]]:
    """(accelerator, node, calibrated hardware at `precision`) of every accelerator the spec
    allows; those without the precision join `rejected`."""
    for acc_id in accelerator_ids(spec):
        acc = get_accelerator(acc_id)
        node = node_for(acc.id)
        if not acc.supports(precision):
            rejected.append((acc.id, f"has no {precision} support"))
            continue
        yield acc, node, calibrated_hardware(acc, node, precision, calibration, power_limit_of(spec, acc.id))


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


def capped_batches(batches: Sequence[int], max_batch: int | None) -> list[int]:
    """The batches an engine built for `max_batch` can run: those up to it, and it (all when None)."""
    if max_batch is None:
        return list(batches)
    return sorted({b for b in batches if b <= max_batch} | {max_batch})


def meets_latency(latency_s: float, bound_s: float, fixed_batch: int | None) -> bool:
    """Whether a batch's p99 latency is acceptable: always for a batch the spec fixed (its
    latency is reported, not enforced), else when it is within the bound."""
    return fixed_batch is not None or latency_s <= bound_s


def batch_notes(fixed_batch: int | None, latency_s: float | None, bound_s: float) -> list[str]:
    """What a plan says of its batch: a fixed batch's p99 against the bound (reported, not
    enforced), or that the batch was picked under the bound."""
    if fixed_batch is None:
        return [
            f"Batch picked by the objective among those whose p99 meets the {bound_s * 1e3:.0f} ms bound."
        ]
    got = f"{latency_s * 1e3:.1f} ms" if latency_s is not None else "unknown"
    over = latency_s is not None and latency_s > bound_s
    return [
        f"Batch fixed at {fixed_batch:,} by the spec: p99 {got} against the {bound_s * 1e3:.0f} ms bound "
        + ("(over it: reported, not enforced)." if over else "(within it).")
    ]


@dataclass(frozen=True)
class RunFigures:
    """A training option's whole run: goodput, time to train, GPU-hours (used and billed), cost."""

    goodput: float
    time_to_train_s: float
    gpu_hours: float
    gpu_hours_billed: float
    cost_usd: float | None
    whole_run: dict[str, Any] | None = (
        None  # by part (`perf.whole_run.RunParts`): time_to_train_s is its total
    )


def run_figures(
    acc_id: str, node: NodeType, gpus: int, units_total: float, units_per_s: float, checkpoint_bytes: float
) -> RunFigures:
    """The whole run of `units_total` work units at `units_per_s` on `gpus` (`perf.whole_run.
    run_parts`: evaluation, checkpoints and failures through the reliability model, planned
    stops, unplanned losses), computed once: the deadline check, the ranking and the sizing
    read it; billed by the node-hour on demand."""
    nodes = math.ceil(gpus / node.gpus_per_node)
    gp = daly_goodput(goodput(gpus, nodes, checkpoint_bytes, reliability()))
    parts = run_parts(units_total / units_per_s, gpus, gp, whole_run_factors())
    ttt = parts.total_s
    hourly = billed_cost_usd_per_hour(acc_id, gpus, node.gpus_per_node)
    return RunFigures(
        goodput=gp.goodput,
        time_to_train_s=ttt,
        gpu_hours=gpus * ttt / HOUR_S,
        gpu_hours_billed=billed_gpus(gpus, node.gpus_per_node, acc_id) * ttt / HOUR_S,
        cost_usd=hourly * ttt / HOUR_S if hourly is not None else None,
        whole_run=parts.as_dict(),
    )


def rank_training(
    options: list[Opt],
    spec: Any,
    objective: str,
    rejected: list[tuple[str, str]],
    assumptions: list[str],
    fastest_text: Callable[[Any], str],
    fewer: str,
    explain: Callable[[Any, Any, str], str],
) -> TrainingRank[Opt]:
    """A training search's options ranked: under the facility's power cap, those that meet the
    planned deadline, by the objective then the time to train; every accelerator that neither
    wins nor is an alternative joins `rejected` with why."""
    kept: list[Opt] = under_power_cap(
        options,
        lambda o: o.gpus,  # type: ignore[attr-defined]
        lambda o: get_node(o.node),  # type: ignore[attr-defined]
        spec,
        assumptions,
    )
    timely, deadline = in_time(kept, spec, assumptions, fastest_text, fewer)
    if deadline is None and not spec.targets.gpus:
        assumptions.append("No deadline or GPU count: the plan minimises the objective alone.")
    best, alternatives = rank_by_objective_then_time(timely, objective, rejected, explain)
    seen = {best.accelerator} | {o.accelerator for o, _ in alternatives}  # type: ignore[attr-defined]
    for acc_id in dict.fromkeys(o.accelerator for o in kept):  # type: ignore[attr-defined]
        if acc_id not in seen and acc_id not in {a for a, _ in rejected}:
            why = f"no GPU count meets the {deadline / HOUR_S:.1f} h deadline" if deadline else "ranked out"
            rejected.append((acc_id, why))
    return TrainingRank(best, alternatives, deadline, kept)


def rank_serving(
    options: list[Opt],
    spec: Any,
    objective: str,
    notes: list[str],
    rejected: list[tuple[str, str]],
    explain: Callable[[Any, Any, str], str],
) -> tuple[Opt, list[tuple[Opt, str]]]:
    """A serving search's options ranked (power cap, priced ones under a cost objective, the
    objective then the p99 latency): the best and the alternatives with why each lost.
    `Infeasible` when none is left, naming every accelerator's reason."""
    ranked = rank_by_objective_then_latency(options, spec, objective, notes, rejected)
    if not ranked:
        raise Infeasible(
            "No serving option is left after the power cap and the price check.",
            "; ".join(f"{a}: {r}" for a, r in rejected) or "No accelerator allowed.",
            "Raise the facility's power cap, give prices for the accelerators (`prices:`), or use objective: gpus.",
        )
    best = ranked[0]
    return best, [(o, explain(o, best, objective)) for o in ranked[1:]]
