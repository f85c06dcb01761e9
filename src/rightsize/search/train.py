"""The training planner: for each allowed accelerator and GPU count, evaluate every
valid parallel layout (vectorised), keep what fits in memory, pick the fastest
layout per (accelerator, count), then rank counts and accelerators by the
objective under the deadline. Enumerate, cost, solve; reporting is elsewhere.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.catalog import Accelerator, NodeType, accelerators, get_accelerator, get_node, node_for
from rightsize.catalog.reliability import reliability
from rightsize.constants import DAY_S, HOUR_S, GiB
from rightsize.errors import BadInput, Infeasible
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import ALLOCATOR_USABLE_FRACTION
from rightsize.perf.reliability import checkpoint_bytes, goodput
from rightsize.perf.step import StepBreakdown, train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.search.calibrated import calibrated_hardware
from rightsize.search.candidates import Candidate, explain_difference
from rightsize.search.constraints import margins_of, planned_deadline, under_power_cap
from rightsize.search.demand import Demand
from rightsize.search.pareto import pareto_front
from rightsize.search.serving_costs import replica_cost_usd_per_hour
from rightsize.search.space import enumerate_configs, gpu_count_candidates
from rightsize.search.train_demand import training_demand
from rightsize.spec.training import TrainingSpec

# Largest cluster the search considers unless the user fixes a count.
MAX_GPUS = 32768
# When a run length is given but neither a deadline nor a GPU count, scale out as
# far as each GPU keeps at least this share of the best per-GPU throughput (the knee
# of the scaling curve): the policy's default utilisation target, 80%.
UTILISATION_TARGET = 0.8


@dataclass
class Rejection:
    accelerator: str
    reason: str


@dataclass
class TrainingPlan:
    """The outcome of a training search."""

    name: str
    model: str
    objective: str
    deadline_s: float | None
    best: Candidate
    alternatives: list[tuple[Candidate, str]]  # best of each other accelerator, and why it lost
    runner_up_layout: tuple[Candidate, str] | None  # second-best layout on the chosen hardware
    pareto: list[Candidate]
    rejected: list[Rejection]
    assumptions: list[str]
    configs_evaluated: int
    search_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    # Filled after the search: what the chosen configuration asks of the infrastructure,
    # and the bill of materials the sizing package derives from it (see api.plan).
    demand: Demand | None = None
    sizing: Any = None
    uncertainty: dict[str, Any] | None = None  # P10/P50/P90 from search.uncertainty


def workload_from_spec(spec: TrainingSpec) -> TrainWorkload:
    return TrainWorkload.from_spec(spec.model, spec.training)


def _candidate(
    st: StepBreakdown,
    cfg: ParallelConfigs,
    i: int,
    w: TrainWorkload,
    acc: Accelerator,
    node: NodeType,
    train_tokens: float | None,
) -> Candidate:
    gpus = int(cfg.gpus[i])
    step_s = float(st.step_time[i])
    tps_gpu = w.tokens_per_step / step_s / gpus
    ttt = None
    notes: dict[str, float] = {}
    if train_tokens:
        nodes = math.ceil(gpus / node.gpus_per_node)
        # LoRA/QLoRA checkpoints hold the adapters and their optimizer states only.
        ckpt = checkpoint_bytes(w.trainable_params, w.optimizer)
        gp = goodput(gpus, nodes, ckpt, reliability())
        notes = gp.as_dict()
        ttt = train_tokens / (tps_gpu * gpus) / gp.goodput
    return Candidate(
        accelerator=acc.id,
        node=node.id,
        gpus=gpus,
        parallel=cfg.row(i),
        step=st.as_dict(i),
        memory=st.memory.as_dict(i),
        mfu=float(st.mfu[i]),
        hfu=float(st.hfu[i]),
        tokens_per_s_per_gpu=tps_gpu,
        time_to_train_s=ttt,
        gpu_hours=gpus * ttt / HOUR_S if ttt is not None else None,
        reliability=notes,
        cost_usd=_cloud_cost(acc.id, gpus, ttt),
    )


def _cloud_cost(acc_id: str, gpus: int, seconds: float | None) -> float | None:
    """On-demand cloud cost of the run from the dated price table, when it has the accelerator."""
    hourly = replica_cost_usd_per_hour(acc_id, gpus)
    return hourly * seconds / HOUR_S if hourly is not None and seconds is not None else None


def _best_per_count(gpus: np.ndarray, step_time: np.ndarray, fits: np.ndarray) -> np.ndarray:
    """Index of the fastest fitting configuration for each distinct GPU count."""
    idx = np.flatnonzero(fits)
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((step_time[idx], gpus[idx]))]
    first = np.ones(order.size, dtype=bool)
    first[1:] = gpus[order][1:] != gpus[order][:-1]
    return order[first]


@dataclass
class _Evaluated:
    acc: Accelerator
    node: NodeType
    hw: Hardware
    cfg: ParallelConfigs
    st: StepBreakdown
    best_idx: np.ndarray


def _evaluate_accelerator(
    spec: TrainingSpec, w: TrainWorkload, acc: Accelerator, node: NodeType, hw: Hardware, counts: np.ndarray
) -> _Evaluated | str:
    cfg, _ = enumerate_configs(w.arch, w.seq_len, w.global_batch, counts, hw.domain_gpus, spec.parallel)
    if len(cfg) == 0:
        return "no parallel layout satisfies the divisibility rules for these GPU counts and fixed settings"
    st = train_step(w, cfg, hw)
    best = _best_per_count(cfg.gpus, st.step_time, st.memory.fits)
    return _Evaluated(acc, node, hw, cfg, st, best)


def _smallest_memory_hint(evaluated: list[_Evaluated]) -> str:
    best = None
    for ev in evaluated:
        i = int(np.argmin(ev.st.memory.total))
        need = float(ev.st.memory.total[i])
        usable = ev.hw.hbm_bytes * ALLOCATOR_USABLE_FRACTION
        if best is None or need / usable < best[0]:
            best = (need / usable, ev, i, need, usable)
    if best is None:
        return ""
    _, ev, i, need, usable = best
    layout = ", ".join(f"{k}={v}" for k, v in ev.cfg.row(i).items())
    return (
        f"The smallest footprint found is {need / GiB:.1f} GiB per GPU on {ev.acc.id} ({layout}), "
        f"against {usable / GiB:.1f} GiB usable"
    )


def _evaluate_all(
    spec: TrainingSpec, w: TrainWorkload, ids: list[str], hw_overrides: dict[str, dict[str, float]] | None
) -> tuple[list[_Evaluated], list[Rejection], int]:
    """Every allowed accelerator's layouts over its GPU counts, evaluated; the accelerators
    that cannot run the workload, with why; and how many configurations were evaluated."""
    tgt = spec.targets
    rejected: list[Rejection] = []
    evaluated: list[_Evaluated] = []
    n_configs = 0
    for acc_id in ids:
        acc = get_accelerator(acc_id)
        node = get_node(tgt.node) if tgt.node else node_for(acc.id)
        if node.accelerator != acc.id:
            raise BadInput(
                f"Node type '{node.id}' holds {node.accelerator}, not {acc.id}.",
                "targets.node must be a node type of the allowed accelerator.",
                "Remove targets.node, or allow only that node's accelerator.",
            )
        if not acc.supports(w.precision):
            rejected.append(Rejection(acc.id, f"has no {w.precision} support"))
            continue
        hw = calibrated_hardware(acc, node, w.precision, hw_overrides)
        counts = (
            np.array([float(tgt.gpus)])
            if tgt.gpus is not None
            else gpu_count_candidates(
                node.gpus_per_node, MAX_GPUS, acc.scaleup_domain_gpus if acc.torus_dims else 0
            )
        )
        ev = _evaluate_accelerator(spec, w, acc, node, hw, counts)
        if isinstance(ev, str):
            rejected.append(Rejection(acc.id, ev))
            continue
        n_configs += len(ev.cfg)
        evaluated.append(ev)
        if ev.best_idx.size == 0:
            rejected.append(Rejection(acc.id, "no layout fits in its memory"))
    return evaluated, rejected, n_configs


def plan_training(
    spec: TrainingSpec, hw_overrides: dict[str, dict[str, float]] | None = None
) -> TrainingPlan:
    """Search accelerators x GPU counts x parallel layouts for the spec's objective."""
    started = time.perf_counter()
    w = workload_from_spec(spec)
    tgt = spec.targets
    assumptions: list[str] = []
    train_tokens = spec.training.train_tokens
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
            f"{deadline / DAY_S:.1f} of the {bare_deadline / DAY_S:.1f} days."
        )
    if tgt.gpus is None and train_tokens is None:
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

    ids = list(tgt.accelerators) if tgt.accelerators else list(accelerators())
    evaluated, rejected, n_configs = _evaluate_all(spec, w, ids, hw_overrides)
    options: list[tuple[Candidate, _Evaluated, int]] = []
    for ev in evaluated:
        for i in ev.best_idx:
            c = _candidate(ev.st, ev.cfg, int(i), w, ev.acc, ev.node, train_tokens)
            options.append((c, ev, int(i)))
    if not options:
        hint = _smallest_memory_hint(evaluated)
        raise Infeasible(
            f"No configuration of {spec.model.name} fits in memory on {', '.join(ids)}.",
            (hint + ".") if hint else "Every layout was rejected.",
            "Allow an accelerator with more memory, allow more GPUs (larger tp/pp shard the model further), "
            "or shorten training.seq_len / the micro-batch.",
        )
    cap = spec.infrastructure.facility.power_cap_w
    options = under_power_cap(options, lambda o: o[0].gpus, lambda o: o[1].node, spec, assumptions)
    if knee:
        options = _knee(options)
    in_time = [o for o in options if deadline is None or (o[0].time_to_train_s or 0.0) <= deadline]
    if not in_time:
        fastest = min(options, key=lambda o: o[0].time_to_train_s or math.inf)[0]
        assert fastest.time_to_train_s is not None and deadline is not None
        assert bare_deadline is not None
        need_days = math.ceil(fastest.time_to_train_s * (1.0 + margin) / DAY_S)
        raise Infeasible(
            f"The deadline of {bare_deadline / DAY_S:.1f} days (planned to {deadline / DAY_S:.1f} days with the "
            f"{margin:.0%} safety margin) cannot be met with {', '.join(ids)}.",
            f"The fastest plan found takes {fastest.time_to_train_s / DAY_S:.1f} days "
            f"({fastest.gpus} x {fastest.accelerator}, MFU {fastest.mfu:.0%}).",
            f"Extend targets.deadline to at least {need_days}d (or lower "
            "infrastructure.margins.safety_margin), reduce training.train_tokens, or allow a faster accelerator"
            + (
                " or a higher infrastructure.facility.power_cap (it limits the cluster size)." if cap else "."
            ),
        )
    objective = tgt.objective
    if objective == "cost":
        priced = [o for o in in_time if o[0].cost_usd is not None]
        if priced:
            assumptions.append("Cost is the on-demand cloud price per GPU-hour from the dated price table.")
            in_time = priced
        else:
            assumptions.append("No allowed accelerator has a price: the cost objective ranks by GPU-hours.")
            objective = "gpu_hours"

    def key(o: tuple[Candidate, _Evaluated, int]) -> tuple[float, float]:
        return (o[0].objective(objective), o[0].step_time_s)

    in_time.sort(key=key)
    best, best_ev, best_i = in_time[0]
    alternatives: list[tuple[Candidate, str]] = []
    seen = {best.accelerator}
    for c, _, _ in in_time[1:]:
        if c.accelerator not in seen:
            seen.add(c.accelerator)
            alternatives.append((c, explain_difference(c, best, objective)))
    for ev in evaluated:
        if ev.acc.id not in seen and ev.best_idx.size:
            rejected.append(
                Rejection(
                    ev.acc.id,
                    f"no layout meets the {deadline / DAY_S:.0f}-day deadline"
                    if deadline
                    else "no feasible layout",
                )
            )
    runner = _runner_up_layout(best_ev, best_i, w, train_tokens, best, objective)
    front = pareto_front([o[0] for o in options])
    demand = training_demand(spec, w, best_ev.cfg, best_i, best_ev.hw, best)
    base = [
        o[0]
        for o in options
        if o[0].accelerator == best.accelerator
        and bare_deadline is not None
        and (o[0].time_to_train_s or math.inf) <= bare_deadline
    ]
    extra = {
        "bare_deadline_s": bare_deadline,
        "safety_margin": margin,
        "base_gpus": min((c.gpus for c in base), default=None),
    }
    return TrainingPlan(
        name=spec.name or spec.model.name,
        model=spec.model.name,
        objective=objective,
        deadline_s=deadline,
        best=best,
        alternatives=alternatives,
        runner_up_layout=runner,
        pareto=front,
        rejected=rejected,
        assumptions=assumptions,
        configs_evaluated=n_configs,
        search_seconds=time.perf_counter() - started,
        demand=demand,
        extra=extra,
    )


def _knee(options: list[tuple[Candidate, _Evaluated, int]]) -> list[tuple[Candidate, _Evaluated, int]]:
    """Per accelerator, the fastest count whose per-GPU throughput stays within the
    utilisation target of that accelerator's best."""
    picked = []
    for acc in dict.fromkeys(o[0].accelerator for o in options):
        mine = [o for o in options if o[0].accelerator == acc]
        best_tps = max(o[0].tokens_per_s_per_gpu for o in mine)
        efficient = [o for o in mine if o[0].tokens_per_s_per_gpu >= UTILISATION_TARGET * best_tps]
        picked.append(min(efficient, key=lambda o: o[0].time_to_train_s or o[0].step_time_s))
    return picked


def _runner_up_layout(
    ev: _Evaluated, best_i: int, w: TrainWorkload, train_tokens: float | None, best: Candidate, objective: str
) -> tuple[Candidate, str] | None:
    """The fastest other fitting layout on the same hardware and GPU count."""
    same = (ev.cfg.gpus == ev.cfg.gpus[best_i]) & ev.st.memory.fits
    same[best_i] = False
    idx = np.flatnonzero(same)
    if idx.size == 0:
        return None
    j = int(idx[np.argmin(ev.st.step_time[idx])])
    c = _candidate(ev.st, ev.cfg, j, w, ev.acc, ev.node, train_tokens)
    return c, explain_difference(c, best, "time")
