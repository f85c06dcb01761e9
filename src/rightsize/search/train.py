"""The training planner: for each allowed accelerator and GPU count, evaluate every
valid parallel layout (vectorised), keep what fits in memory, pick the fastest
layout per (accelerator, count), then rank counts and accelerators by the
objective under the deadline. Enumerate, cost, solve; reporting is elsewhere.
"""

from __future__ import annotations

import contextvars
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.catalog import (
    Accelerator,
    NodeType,
    get_accelerator,
    get_node,
    node_for,
    not_offered_notes,
    offered_accelerators,
)
from rightsize.catalog.reliability import reliability
from rightsize.catalog.tpu_slices import tpu_slices
from rightsize.catalog.whole_run import whole_run_factors
from rightsize.constants import DAY_S, HOUR_S, GiB
from rightsize.errors import BadInput, Infeasible
from rightsize.perf.attention_kernels import attention_notes
from rightsize.perf.checkpoint import async_save_for, checkpoint_goodput
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import memory_grid
from rightsize.perf.reliability import checkpoint_bytes
from rightsize.perf.remat import searched_policies
from rightsize.perf.step import StepBreakdown, train_memory_only, train_step
from rightsize.perf.whole_run import run_parts
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.search.calibrated import calibrated_hardware, power_limit_of
from rightsize.search.candidates import Candidate, explain_difference
from rightsize.search.constraints import (
    deadline_to_ask,
    span_text,
    under_power_cap,
)
from rightsize.search.demand import Demand
from rightsize.search.layout_check import LayoutRejection, no_layout_reason, splittable_counts
from rightsize.search.pareto import pareto_front
from rightsize.search.risk import P50, pick_per_count
from rightsize.search.scale_out import efficient, knee
from rightsize.search.serving_costs import billed_cost_usd_per_hour, billed_gpus, keep_priced, no_price_reason
from rightsize.search.space import enumerate_where, gpu_count_candidates
from rightsize.search.train_budget import Budget, budget_of
from rightsize.search.train_demand import dci_link, training_demand
from rightsize.search.whole_run_phases import PhaseTime, price_phases_rows
from rightsize.spec.training import DEFAULT_MAX_GPUS, TrainingSpec

# Largest cluster the search considers unless the user fixes a count or raises
# targets.max_gpus (its default; up to 1,048,576).
MAX_GPUS = DEFAULT_MAX_GPUS
# A layout is rejected while enumerating only when its memory exceeds the usable memory
# by more than rounding (`memory_grid` adds the same terms in another order).
MEMORY_CUT_MARGIN = 1e-9
# A fixed count past the default cap that the batch cannot split trains on the largest whole-node
# count below it that does, when that keeps at least this share of the GPUs (`_fixed_count`).
FIXED_COUNT_MIN_USED = 0.9
# Threads that evaluate accelerators side by side (at most the machine's cores).
SEARCH_THREADS = min(4, os.cpu_count() or 1)


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
    configs_evaluated: int  # every layout of the space, each checked against memory
    search_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    # Filled after the search: what the chosen configuration asks of the infrastructure,
    # and the bill of materials the sizing package derives from it (see api.plan).
    demand: Demand | None = None
    sizing: Any = None
    uncertainty: dict[str, Any] | None = None  # P10/P50/P90 from search.uncertainty
    configs_timed: int = 0  # of those, the ones that fit in memory and the step model timed

    def search_summary(self) -> str:
        """What the search did, in one sentence (the reports' last line)."""
        timed = (
            f": each checked against memory, the {self.configs_timed:,} that fit timed"
            if self.configs_timed
            else ""
        )
        return f"Searched {self.configs_evaluated:,} configurations in {self.search_seconds:.2f} s{timed}."


def workload_from_spec(spec: TrainingSpec) -> TrainWorkload:
    return TrainWorkload.from_spec(spec.model, spec.training)


def _candidate(
    st: StepBreakdown,
    cfg: ParallelConfigs,
    i: int,
    w: TrainWorkload,
    acc: Accelerator,
    node: NodeType,
    spec: TrainingSpec,
    risk: tuple[float, float] = (1.0, 0.5),
    phases: list[PhaseTime] | None = None,
    host_link_bytes_per_s: float = Hardware.host_link_bytes_per_s,
) -> Candidate:
    """Layout `i` as a candidate. With a run length its time to train is the whole run
    (`perf.whole_run.run_parts`): the steady steps at this layout's rate, the spec's phases
    priced on this layout (`phases`), evaluation, checkpoint stalls, failures, planned stops
    and unplanned losses. The deadline check, the ranking, the infeasible advice and every
    reported option read this one figure; the sizing reads the winner's parts and adds only
    what it alone knows (data-loader stalls against the storage as provisioned, throttling)."""
    gpus = int(cfg.gpus[i])
    step_s = float(st.step_time[i])
    tps_gpu = w.tokens_per_step / step_s / gpus
    ttt = None
    notes: dict[str, float] = {}
    parts = None
    train_tokens = spec.training.train_tokens
    if train_tokens:
        nodes = math.ceil(gpus / node.gpus_per_node)
        # LoRA/QLoRA checkpoints hold the adapters and their optimizer states only.
        ckpt = checkpoint_bytes(w.trainable_params, w.optimizer)
        # Saved as the exported stack saves it: asynchronously where it can (perf.checkpoint).
        gp = checkpoint_goodput(
            gpus,
            nodes,
            ckpt,
            reliability(),
            async_save=async_save_for(acc.vendor, spec.training.checkpoint_save),
            host_link_bytes_per_s=host_link_bytes_per_s,
        )
        notes = {**gp.as_dict(), "host_link_bytes_per_s": host_link_bytes_per_s}
        parts = run_parts(
            train_tokens / (tps_gpu * gpus),
            gpus,
            gp,
            whole_run_factors(),
            [p.as_dict() for p in phases or ()],
            _evaluation(spec),
        )
        ttt = parts.total_s
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
        gpu_hours_billed=billed_gpus(gpus, node.gpus_per_node, acc.id) * ttt / HOUR_S
        if ttt is not None
        else None,
        reliability=notes,
        cost_usd=_cloud_cost(acc.id, gpus, node.gpus_per_node, ttt),
        risk_factor=risk[0],
        risk_quantile=risk[1],
        whole_run=parts.as_dict() if parts is not None else None,
    )


def _evaluation(spec: TrainingSpec) -> dict[str, Any]:
    """The spec's evaluation schedule (None where it gives none: the catalog's default)."""
    return {"interval_steps": spec.training.eval_interval_steps, "batches": spec.training.eval_batches}


def _phases_of(
    spec: TrainingSpec, w: TrainWorkload, ev: _Evaluated, idx: np.ndarray
) -> list[list[PhaseTime]]:
    """The spec's phases priced on each layout `idx` of `ev` (empty lists without phases or a
    run length): one vectorised step-model call per phase, with the DCI the main steps saw."""
    if not spec.training.phases or not spec.training.train_tokens or idx.size == 0:
        return [[] for _ in range(idx.size)]
    return price_phases_rows(
        spec.training.phases,
        w,
        ev.cfg.take(idx),
        ev.hw,
        np.asarray(ev.st.step_time)[idx],
        dci_link(ev.node, float(ev.counts.max())),
    )


def _cloud_cost(acc_id: str, gpus: int, gpus_per_node: int, seconds: float | None) -> float | None:
    """On-demand cloud cost of the run (whole nodes billed) under the prices in effect, if any."""
    hourly = billed_cost_usd_per_hour(acc_id, gpus, gpus_per_node)
    return hourly * seconds / HOUR_S if hourly is not None and seconds is not None else None


@dataclass
class _Evaluated:
    """One accelerator's layouts: `cfg` and `st` hold those that may fit in memory
    (indices refer to them; `st.memory.fits` says which do)."""

    acc: Accelerator
    node: NodeType
    hw: Hardware
    cfg: ParallelConfigs
    st: StepBreakdown
    best_idx: np.ndarray
    counts: np.ndarray  # the GPU counts searched
    n_configs: int  # every layout of the space: rejected on memory while enumerated, or timed
    risk: dict[int, float] = field(default_factory=dict)  # config index -> risk factor
    quantile: float = P50


def _evaluate_accelerator(
    spec: TrainingSpec,
    w: TrainWorkload,
    acc: Accelerator,
    node: NodeType,
    hw: Hardware,
    counts: np.ndarray,
    quantile: float = P50,
) -> _Evaluated | str:
    # Every layout's memory is evaluated as it is enumerated (by parts, `memory_grid`);
    # those that cannot fit are counted and rejected, not built, and only the rest are
    # timed: most of a large model's layouts do not fit.
    usable = hw.hbm_bytes * hw.usable_fraction * (1.0 + MEMORY_CUT_MARGIN)
    cfg, excluded = enumerate_where(
        w.arch,
        w.seq_len,
        w.global_batch,
        counts,
        hw.domain_gpus,
        spec.parallel,
        lambda rows, rc, zero: memory_grid(w, rows, rc, zero, hw.framework_bytes) <= usable,
        searched_policies(acc.vendor, w.arch.is_moe, w.arch.is_mla, hw.host_link_bytes_per_s),
    )
    if len(cfg) + excluded == 0:
        gpus = int(counts[0]) if len(counts) == 1 else None
        what, why, _ = no_layout_reason(
            w.arch, w.seq_len, w.global_batch, gpus, hw.domain_gpus, spec.parallel
        )
        return LayoutRejection(f"{what} {why}")
    # its exact memory decides the layouts at the margin; counts past one building cross the DCI
    st = train_step(w, cfg, hw, dci=dci_link(node, float(counts.max())))
    # Per GPU count, the layout with the lowest risk-aware step time (search.risk).
    best, risk = pick_per_count(w, cfg, hw, st.step_time, st.memory.fits, quantile)
    return _Evaluated(acc, node, hw, cfg, st, best, counts, len(cfg) + excluded, risk, quantile)


def _smallest_memory_hint(evaluated: list[_Evaluated], w: TrainWorkload, spec: TrainingSpec) -> str:
    """The smallest footprint of any layout (every layout built and its memory evaluated
    again: only when nothing fits)."""
    best = None
    for ev in evaluated:
        every, _ = enumerate_where(
            w.arch,
            w.seq_len,
            w.global_batch,
            ev.counts,
            ev.hw.domain_gpus,
            spec.parallel,
            recompute_options=searched_policies(
                ev.acc.vendor, w.arch.is_moe, w.arch.is_mla, ev.hw.host_link_bytes_per_s
            ),
        )
        total = train_memory_only(w, every, ev.hw).total
        if total.size == 0:
            continue
        i = int(np.argmin(total))
        need = float(total[i])
        usable = ev.hw.hbm_bytes * ev.hw.usable_fraction
        if best is None or need / usable < best[0]:
            best = (need / usable, ev, every.row(i), need, usable)
    if best is None:
        return ""
    _, ev, row, need, usable = best
    layout = ", ".join(f"{k}={v}" for k, v in row.items())
    return (
        f"The smallest footprint found is {need / GiB:.1f} GiB per GPU on {ev.acc.id} ({layout}), "
        f"against {usable / GiB:.1f} GiB usable"
    )


def _fixed_count(
    spec: TrainingSpec, w: TrainWorkload, node: NodeType, domain_gpus: int, notes: dict[str, str]
) -> int:
    """The GPU count a fixed targets.gpus trains on. Past the default search cap (a cluster a
    buyer names, not a job size) a count the global batch cannot split, such as 100,000, runs
    the job on the largest count of whole nodes below it that splits, when that keeps at least
    FIXED_COUNT_MIN_USED of the GPUs; the rest are hot spares (large jobs leave part of the
    cluster idle: Llama 3 trained on 16,384 of 24,576 H100, Dubey et al. 2024, sec. 3.3).
    Otherwise the count as given (the search then says why it does not split). What it did
    goes into `notes` under the accelerator (the winner's joins the assumptions)."""
    gpus = spec.targets.gpus
    assert gpus is not None
    if gpus <= DEFAULT_MAX_GPUS:
        return gpus
    counts = splittable_counts(w.arch, w.seq_len, w.global_batch, domain_gpus, spec.parallel)
    if gpus in counts:
        return gpus
    fits = [c for c in counts if c <= gpus and c % node.gpus_per_node == 0]
    if not fits or fits[-1] < FIXED_COUNT_MIN_USED * gpus:
        return gpus
    used = fits[-1]
    notes[node.accelerator] = (
        f"The global batch of {w.global_batch:,} sequences does not split over {gpus:,} GPUs on "
        f"{node.accelerator}: the job trains on {used:,} of them ({used // node.gpus_per_node:,} whole nodes), "
        f"the largest count that splits, and the other {gpus - used:,} are hot spares. To use every GPU, "
        "make training.global_batch a multiple of the data-parallel size."
    )
    return used


def _evaluate_all(
    spec: TrainingSpec,
    w: TrainWorkload,
    ids: list[str],
    hw_overrides: dict[str, dict[str, float]] | None,
    quantile: float = P50,
    notes: dict[str, str] | None = None,
) -> tuple[list[_Evaluated], list[Rejection], tuple[int, int]]:
    """Every allowed accelerator's layouts over its GPU counts, evaluated; the accelerators
    that cannot run the workload, with why; and how many configurations were evaluated
    (all, and those timed)."""
    tgt = spec.targets
    notes = notes if notes is not None else {}
    rejected: list[Rejection] = []
    evaluated: list[_Evaluated] = []
    n_configs = n_timed = 0
    tasks: list[tuple[Accelerator, NodeType, Hardware, np.ndarray] | Rejection] = []
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
            tasks.append(Rejection(acc.id, f"has no {w.precision} support"))
            continue
        hw = calibrated_hardware(acc, node, w.precision, hw_overrides, power_limit_of(spec, acc.id))
        counts = (
            np.array([float(_fixed_count(spec, w, node, hw.domain_gpus, notes))])
            if tgt.gpus is not None
            else gpu_count_candidates(
                node.gpus_per_node, tgt.max_gpus, acc.scaleup_domain_gpus if acc.torus_dims else 0
            )
        )
        if tgt.gpus is None and (shapes := tpu_slices(acc.id)) is not None:  # slices GKE creates
            counts = counts[[shapes.job_slices(int(c)) is not None for c in counts]]
        tasks.append((acc, node, hw, counts))

    # Accelerators are independent, and numpy releases the GIL inside its array loops:
    # evaluating them on a few threads uses the machine's cores (results in input order).
    def run(
        t: tuple[Accelerator, NodeType, Hardware, np.ndarray] | Rejection,
    ) -> _Evaluated | str | Rejection:
        return t if isinstance(t, Rejection) else _evaluate_accelerator(spec, w, *t, quantile)

    threads = min(SEARCH_THREADS, len(tasks))
    if threads <= 1:
        results = [run(t) for t in tasks]
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:  # each task in a copy of the
            # caller's context, so context-scoped settings (prices in effect) reach it
            futures = [pool.submit(contextvars.copy_context().run, run, t) for t in tasks]
            results = [f.result() for f in futures]
    for task, ev in zip(tasks, results, strict=True):
        if isinstance(ev, Rejection):
            rejected.append(ev)
            continue
        assert isinstance(task, tuple)
        if isinstance(ev, str):
            rejected.append(Rejection(task[0].id, ev))
            continue
        n_configs += ev.n_configs
        n_timed += len(ev.cfg)
        evaluated.append(ev)
        if ev.best_idx.size == 0:
            rejected.append(Rejection(task[0].id, "no layout fits in its memory"))
    return evaluated, rejected, (n_configs, n_timed)


Option = tuple[Candidate, _Evaluated, int]  # a candidate, its accelerator's evaluation, its index


def _options(
    spec: TrainingSpec,
    w: TrainWorkload,
    ids: list[str],
    evaluated: list[_Evaluated],
    rejected: list[Rejection],
) -> list[Option]:
    """The best layout of each (accelerator, GPU count) as a candidate; `BadInput` when no
    layout is valid at all, `Infeasible` when none fits in memory."""
    options: list[Option] = []
    for ev in evaluated:
        idx = np.asarray(ev.best_idx, dtype=np.int64)
        for i, phases in zip(idx, _phases_of(spec, w, ev, idx), strict=True):
            risk = (ev.risk.get(int(i), 1.0), ev.quantile)
            c = _candidate(
                ev.st, ev.cfg, int(i), w, ev.acc, ev.node, spec, risk, phases, ev.hw.host_link_bytes_per_s
            )
            options.append((c, ev, int(i)))
    layout_rejected = [r for r in rejected if isinstance(r.reason, LayoutRejection)]
    if not evaluated and layout_rejected:  # the real cause is a divisibility rule, never memory
        domain = get_accelerator(layout_rejected[0].accelerator).scaleup_domain_gpus
        raise BadInput(
            *no_layout_reason(w.arch, w.seq_len, w.global_batch, spec.targets.gpus, domain, spec.parallel)
        )
    if not options:
        hint = _smallest_memory_hint(evaluated, w, spec)
        raise Infeasible(
            f"No configuration of {spec.model.name} fits in memory on {', '.join(ids)}.",
            (hint + ".") if hint else "Every layout was rejected.",
            "Allow an accelerator with more memory, allow more GPUs (larger tp/pp shard the model further), "
            "or shorten training.seq_len / the micro-batch.",
        )
    return options


def _in_time(spec: TrainingSpec, options: list[Option], budget: Budget, ids: list[str]) -> list[Option]:
    """The options that meet the planned deadline; `Infeasible` with the deadline that
    would do when none does."""
    deadline = budget.deadline
    in_time = [o for o in options if deadline is None or (o[0].time_to_train_s or 0.0) <= deadline]
    if in_time:
        return in_time
    fastest = min(options, key=lambda o: o[0].time_to_train_s or math.inf)[0]
    assert fastest.time_to_train_s is not None and deadline is not None
    assert budget.bare_deadline is not None
    need = deadline_to_ask(fastest.time_to_train_s * (1.0 + budget.margin))
    capped = spec.infrastructure.facility.power_cap_w
    raise Infeasible(
        f"The deadline of {span_text(budget.bare_deadline)} (planned to {span_text(deadline)} with "
        f"the {budget.margin:.0%} safety margin) cannot be met with {', '.join(ids)}.",
        f"The fastest plan found takes {span_text(fastest.time_to_train_s)} "
        f"({fastest.gpus} x {fastest.accelerator}, MFU {fastest.mfu:.0%}).",
        f"Extend targets.deadline to at least {need} (or lower "
        "infrastructure.margins.safety_margin), reduce training.train_tokens, or allow a faster accelerator"
        + (" or a higher infrastructure.facility.power_cap (it limits the cluster size)." if capped else "."),
    )


def _ranked(
    in_time: list[Option],
    objective: str,
    evaluated: list[_Evaluated],
    rejected: list[Rejection],
    deadline: float | None,
    assumptions: list[str],
) -> tuple[Option, list[tuple[Candidate, str]]]:
    """The winner by the objective, the best of each other accelerator with why it lost;
    the accelerators with no option left join `rejected`, with why."""
    unpriced: list[str] = []
    if objective == "cost":
        in_time, unpriced = keep_priced(in_time, lambda o: o[0].cost_usd, lambda o: o[0].accelerator)
        assumptions.append(
            "Cost is the on-demand cloud price per GPU-hour in effect (catalog or user prices)."
        )
    in_time = sorted(in_time, key=lambda o: (o[0].objective(objective), o[0].step_time_s))
    best = in_time[0][0]
    alternatives: list[tuple[Candidate, str]] = []
    seen = {best.accelerator}
    for c, _, _ in in_time[1:]:
        if c.accelerator not in seen:
            seen.add(c.accelerator)
            alternatives.append((c, explain_difference(c, best, objective)))
    rejected.extend(Rejection(a, no_price_reason(a)) for a in unpriced)
    why = f"no layout meets the {deadline / DAY_S:.0f}-day deadline" if deadline else "no feasible layout"
    for ev in evaluated:
        if ev.acc.id not in seen and ev.acc.id not in unpriced and ev.best_idx.size:
            rejected.append(Rejection(ev.acc.id, why))
    return in_time[0], alternatives


def plan_training(
    spec: TrainingSpec, hw_overrides: dict[str, dict[str, float]] | None = None
) -> TrainingPlan:
    """Search accelerators x GPU counts x parallel layouts for the spec's objective."""
    started = time.perf_counter()
    w = workload_from_spec(spec)
    assumptions: list[str] = []
    count_notes: dict[str, str] = {}  # accelerator -> how a fixed count was made to split
    budget = budget_of(spec, assumptions)
    tgt = spec.targets
    ids = list(tgt.accelerators) if tgt.accelerators else list(offered_accelerators())
    assumptions.extend(not_offered_notes(ids))
    evaluated, rejected, (n_configs, n_timed) = _evaluate_all(
        spec, w, ids, hw_overrides, budget.quantile, count_notes
    )
    options = _options(spec, w, ids, evaluated, rejected)
    options = under_power_cap(options, lambda o: o[0].gpus, lambda o: o[1].node, spec, assumptions)
    # The trade-off a buyer signs for (days against GPU-hours) over every count searched, before
    # the knee keeps one count per accelerator: going faster than the knee costs GPU-hours.
    front = pareto_front([o[0] for o in options])
    if budget.knee:
        options = knee(options)
    in_time = _in_time(spec, options, budget, ids)
    if tgt.objective == "time" and not budget.knee and tgt.gpus is None:
        in_time = efficient(in_time)
    (best, best_ev, best_i), alternatives = _ranked(
        in_time, tgt.objective, evaluated, rejected, budget.deadline, assumptions
    )
    if best.accelerator in count_notes:
        assumptions.insert(0, count_notes[best.accelerator])
    runner = _runner_up_layout(best_ev, best_i, w, spec, best)
    assumptions.extend(attention_notes(w, best_ev.hw))  # a kernel that cannot run the head width
    demand = training_demand(spec, w, best_ev.cfg, best_i, best_ev.hw, best)
    bare = budget.bare_deadline
    base = [
        o[0]
        for o in options
        if o[0].accelerator == best.accelerator
        and bare is not None
        and (o[0].time_to_train_s or math.inf) <= bare
    ]
    return TrainingPlan(
        name=spec.name or spec.model.name,
        model=spec.model.name,
        objective=tgt.objective,
        deadline_s=budget.deadline,
        best=best,
        alternatives=alternatives,
        runner_up_layout=runner,
        pareto=front,
        rejected=rejected,
        assumptions=assumptions,
        configs_evaluated=n_configs,
        configs_timed=n_timed,
        search_seconds=time.perf_counter() - started,
        demand=demand,
        extra={
            "bare_deadline_s": bare,
            "safety_margin": budget.margin,
            "base_gpus": min((c.gpus for c in base), default=None),
            # The chosen option's whole run by part, as the search ranked it: the sizing
            # reads it (and adds data-loader stalls and throttling), never recomputes it.
            "whole_run": best.whole_run,
            # How the chosen option saves its checkpoints (perf.checkpoint): the sizing prices
            # the storage as provisioned with the same mechanism.
            "checkpoint": best.reliability,
            "whole_run_phases": (best.whole_run or {}).get("phases", []),
        },
    )


def _runner_up_layout(
    ev: _Evaluated, best_i: int, w: TrainWorkload, spec: TrainingSpec, best: Candidate
) -> tuple[Candidate, str] | None:
    """The fastest other fitting layout on the same hardware and GPU count."""
    same = (ev.cfg.gpus == ev.cfg.gpus[best_i]) & ev.st.memory.fits
    same[best_i] = False
    idx = np.flatnonzero(same)
    if idx.size == 0:
        return None
    j = int(idx[np.argmin(ev.st.step_time[idx])])
    phases = _phases_of(spec, w, ev, np.array([j]))[0]
    risk = (ev.risk[j], ev.quantile) if j in ev.risk else (1.0, P50)  # not risk-ranked: compared as planned
    c = _candidate(
        ev.st,
        ev.cfg,
        j,
        w,
        ev.acc,
        ev.node,
        spec,
        risk,
        phases=phases,
        host_link_bytes_per_s=ev.hw.host_link_bytes_per_s,
    )
    return c, explain_difference(c, best, "time")
