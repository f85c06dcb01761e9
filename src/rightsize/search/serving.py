"""The serving planner: for each allowed accelerator and tensor-parallel degree, find the
highest request rate one replica sustains within every SLO (simulating continuous
batching), then the replicas the peak load needs with the policy's headroom and
utilisation target, and rank the options by cost (or GPUs, or latency).

The capacity of a replica is found by bisection on the simulated rate; the analytic
roofline bounds the bracket (a replica can never exceed its offline throughput), and
options whose lower-bound cost already exceeds the best found are not simulated.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rightsize.catalog import get_accelerator, get_node, node_for, not_offered_notes, offered_accelerators
from rightsize.errors import BadInput, Infeasible
from rightsize.perf.inference import Replica, offline_throughput
from rightsize.perf.serving_multinode import gpus_of
from rightsize.perf.serving_sim import EngineModel, PreparedRequests, SimResult
from rightsize.perf.serving_slo import SloStop, meets
from rightsize.search.calibrated import Calibration, power_limit_of
from rightsize.search.constraints import margins_of, under_power_cap
from rightsize.search.serving_batch import plan_batch_scenario
from rightsize.search.serving_capacity import capacity_rps, first_leaf, leaf_rate
from rightsize.search.serving_costs import (
    billed_cost_usd_per_hour,
    keep_priced,
    llm_served,
    no_price_reason,
    per_million,
    per_unit,
    replica_cost_usd_per_hour,
)
from rightsize.search.serving_demand import serving_demand
from rightsize.search.serving_disagg import weigh_disaggregation
from rightsize.search.serving_engine import EngineModels, Workload, run, slo_check, workload
from rightsize.search.serving_layouts import (
    layout_for,
    precision_ok,
    replica_options,
    slice_ok,
    tpu_serving_note,
    tpu_slice_note,
)
from rightsize.search.serving_plan import TP_OPTIONS, ServingCandidate, ServingPlan
from rightsize.search.serving_start import start_rate
from rightsize.spec.inference import InferenceSpec

CAPACITY_REQUESTS = 3000  # simulated requests per bisection step
REPORT_REQUESTS = 20000  # simulated requests for the reported percentiles
BISECTION_STEPS = 9


PRUNED = -1.0  # replica_capacity's answer when the option cannot beat what it must


class ReplicaRuns:
    """One replica's simulated runs on the search's workload: its engine models and the
    request set, prepared once for every rate (`serving_engine.run` and `passes` afresh
    give the same runs bit for bit)."""

    def __init__(self, rep: Replica, spec: InferenceSpec, wl: Workload) -> None:
        self.models, self.spec, self.wl = EngineModels(rep, spec), spec, wl
        self.check = slo_check(spec)
        self._ready: tuple[PreparedRequests, SloStop] | None = None
        self._verdicts: dict[float, bool] = {}  # `passes` by rate: a run is deterministic

    def _prepared(self, model: EngineModel) -> tuple[PreparedRequests, SloStop]:
        if self._ready is None:
            wl = self.wl
            req = PreparedRequests(
                wl.unit_arrivals, wl.prompts, wl.outputs, model, self.spec.traffic.prefix_cache_hit_rate
            )
            self._ready = (req, SloStop.of(self.check, req.out_sorted))
        return self._ready

    def run(self, rate: float) -> SimResult:
        """The whole run at `rate`."""
        model = self.models.at(self.wl, rate)
        res = self._prepared(model)[0].run_at(rate, model)
        assert res is not None  # no stop rule: the run serves every request
        return res

    def passes(self, rate: float) -> bool:
        """Whether the replica meets every SLO at `rate` (the run stops once it cannot)."""
        if rate not in self._verdicts:
            model = self.models.at(self.wl, rate)
            req, stop = self._prepared(model)
            res = req.run_at(rate, model, stop)
            self._verdicts[rate] = res is not None and meets(res, self.check)
        return self._verdicts[rate]


def _bracket(rep: Replica, wl: Workload, models: EngineModels) -> tuple[float, float] | None:
    """The capacity search's rates: a trickle (1/1000 of the roofline rate) and the roofline
    rate x 1.05 (None: no throughput at all)."""
    upper = offline_throughput(rep, wl.mean_prompt, wl.mean_output)["output_tokens_per_s"] / wl.mean_output
    if upper <= 0:
        return None
    upper *= models.tokens_per_step  # the roofline counts one token per step; speculation yields more
    return upper * 1e-3, upper * 1.05


def replica_capacity(
    rep: Replica,
    spec: InferenceSpec,
    wl: Workload,
    worth: Callable[[float], bool] | None = None,
    runs: ReplicaRuns | None = None,
) -> float:
    """Highest request rate one replica serves within every SLO (0 if even a trickle fails).

    Geometric bisection between a trickle (1/1000 of the roofline rate) and the roofline
    rate x 1.05, BISECTION_STEPS halvings, found as `serving_capacity` finds it: the top
    leaf first (most options are bound by throughput, not by an SLO, and end there), then
    galloping down from it; each run stops as soon as its verdict is certain.

    `worth(capacity)` says whether a capacity would make the option worth having (monotone
    in the capacity); when given, the lowest worthwhile leaf is tried first and PRUNED is
    returned if it fails: the option's capacity is then below it, whatever it is exactly.
    `runs`: the replica's runs on `wl`, when the caller keeps them for more runs.
    """
    runs = runs or ReplicaRuns(rep, spec, wl)
    models = runs.models
    bracket = _bracket(rep, wl, models)
    if bracket is None:
        return 0.0
    lo, hi = bracket
    ok = runs.passes

    known = None
    if worth is not None:
        known = first_leaf(lo, hi, BISECTION_STEPS, worth)
        if known is None or not ok(leaf_rate(lo, hi, BISECTION_STEPS, known)):
            return PRUNED
    start = start_rate(models, wl, spec)
    if start == 0.0 and known is None:  # the trickle probably fails: one run settles it (monotone)
        if not ok(leaf_rate(lo, hi, BISECTION_STEPS, 0)):
            return 0.0
        known = 0
    return capacity_rps(ok, lo, hi, BISECTION_STEPS, known_pass=known, start_rate=start)


class _Passed(Exception):
    """The first passing run of a search that asks only whether any rate meets the SLOs."""


class _UntilPass(ReplicaRuns):
    """A replica's runs that end its capacity search at the first run that passes."""

    def passes(self, rate: float) -> bool:
        if super().passes(rate):
            raise _Passed
        return False


def _dropped_for_price(spec: InferenceSpec, rep: Replica) -> bool:
    """Whether the plan drops this option for want of a price whatever its capacity: ranked
    by cost (`keep_priced`), with no facility power cap (which counts every option)."""
    return (
        spec.targets.objective == "cost"
        and spec.infrastructure.facility.power_cap_w is None
        and replica_cost_usd_per_hour(rep.hw.accelerator_id, gpus_of(rep)) is None
    )


def _meets_at_some_rate(rep: Replica, spec: InferenceSpec, wl: Workload) -> bool:
    """Whether `replica_capacity` (without pruning) finds a capacity above 0. A passing
    trickle (leaf 0) settles it: the search's answer is then at least leaf 0 (it ends there
    when everything above fails). A failing trickle almost always means that nothing passes,
    but where meeting the SLOs is not monotone in the rate the search may still pass higher:
    then its own runs, in its order, up to the first that passes (from there its answer is a
    passing rate), the trickle's run remembered."""
    runs = _UntilPass(rep, spec, wl)
    bracket = _bracket(rep, wl, runs.models)
    try:
        if bracket is not None:
            runs.passes(leaf_rate(*bracket, BISECTION_STEPS, 0))
        return replica_capacity(rep, spec, wl, None, runs) > 0
    except _Passed:
        return True


def _beats(
    spec: InferenceSpec, rep: Replica, node_id: str, design: float, best: float
) -> Callable[[float], bool] | None:
    """Whether a capacity would make this option cheaper than `best` (its accelerator's best
    so far): the replicas it would need, billed in whole nodes, cost less. None when that
    test cannot prune exactly (fixed replicas, no price, a facility power cap that may yet
    drop the best)."""
    acc_id = rep.hw.accelerator_id
    if (
        spec.targets.objective != "cost"
        or spec.targets.replicas
        or not math.isfinite(best)
        or spec.infrastructure.facility.power_cap_w is not None
    ):
        return None
    per_node, gpus, util = get_node(node_id).gpus_per_node, gpus_of(rep), margins_of(spec).utilisation_target
    if billed_cost_usd_per_hour(acc_id, gpus, per_node, gpus) is None:
        return None

    def cheaper(cap: float) -> bool:
        replicas = max(1, math.ceil(design / (cap * util)))
        cost = billed_cost_usd_per_hour(acc_id, replicas * gpus, per_node, gpus)
        return cost is not None and cost < best

    return cheaper


def _latencies(res: SimResult) -> dict[str, float]:
    out = {}
    for metric in ("ttft_s", "tpot_s", "e2e_s"):
        values = getattr(res, metric)
        at = np.full(4, math.nan) if np.all(np.isnan(values)) else np.nanpercentile(values, (50, 90, 95, 99))
        for p, v in zip((50, 90, 95, 99), at, strict=True):
            out[f"{metric.removesuffix('_s')}_p{p}_s"] = float(v)
    return out


def _check_tpot_possible(spec: InferenceSpec, ids: list[str]) -> None:
    limit = spec.slo.tpot_s
    if limit is None:
        return
    best = math.inf
    where = ""
    for acc_id in ids:
        acc = get_accelerator(acc_id)
        node = node_for(acc.id)
        for tp in TP_OPTIONS:
            if tp > acc.scaleup_domain_gpus or spec.model.heads % tp or not slice_ok(acc, tp):
                continue
            if not precision_ok(acc, spec.serving.weight_precision):
                break
            rep = Replica.build(
                spec.model,
                acc,
                node,
                tp,
                spec.serving.weight_precision,
                spec.serving.kv_precision,
                power_limit_w=power_limit_of(spec, acc.id),
            )
            if not rep.fits:
                continue
            t = float(rep.decode_step_s(1.0, 1.0))
            if t < best:
                best, where = t, f"{tp} x {acc.id}"
    if math.isfinite(best) and best > limit:  # (nothing fitting is reported by the fit check)
        raise Infeasible(
            f"No allowed accelerator can meet a TPOT of {limit * 1e3:.1f} ms for {spec.model.name}.",
            f"Reading the weights once per token takes at least {best * 1e3:.1f} ms even at batch 1 "
            f"(best: {where}, {spec.serving.weight_precision} weights).",
            f"Relax slo.tpot to at least {math.ceil(best * 1e4) / 10:.1f}ms, quantise the weights further, "
            "or allow a faster accelerator.",
        )


def _smallest_fit_hint(spec: InferenceSpec, ids: list[str]) -> str:
    """The smallest change that makes the model fit: a lower weight precision on an allowed
    accelerator, or an accelerator with more memory from the catalog."""
    ladder = ["bf16", "fp8", "int8", "int4"]
    start = ladder.index(spec.serving.weight_precision) + 1 if spec.serving.weight_precision in ladder else 1
    for prec in ladder[start:]:
        for acc_id in ids:
            acc = get_accelerator(acc_id)
            for tp in TP_OPTIONS:
                if tp > acc.scaleup_domain_gpus or spec.model.heads % tp or not slice_ok(acc, tp):
                    continue
                if not precision_ok(acc, prec):
                    break
                rep = Replica.build(spec.model, acc, node_for(acc.id), tp, prec, spec.serving.kv_precision)
                if rep.fits:
                    return f"Set serving.weight_precision: {prec} (fits on {tp} x {acc.id})."
    for acc in offered_accelerators().values():
        for tp in TP_OPTIONS:
            if tp > acc.scaleup_domain_gpus or spec.model.heads % tp or not slice_ok(acc, tp):
                continue
            if not precision_ok(acc, spec.serving.weight_precision):
                break
            rep = Replica.build(
                spec.model,
                acc,
                node_for(acc.id),
                tp,
                spec.serving.weight_precision,
                spec.serving.kv_precision,
            )
            if rep.fits:
                return f"Allow {acc.id} (fits on {tp} GPUs) in targets.accelerators."
    return "Quantise the weights further or use a smaller model."


Replicas = dict[int, Replica]  # the replica a candidate was simulated on, by id(candidate)
Bounded = tuple[float, Replica, str, int]  # (lower bound of the objective, replica, node id, tp)


def _fitting_replicas(
    spec: InferenceSpec,
    ids: list[str],
    wl: Any,
    design: float,
    cal: Calibration,
    rejected: list[tuple[str, str]],
) -> list[Bounded]:
    """Every replica (accelerator x tp x weight precision) that fits, with a lower bound of
    its objective at the design rate (offline throughput as the capacity); accelerators on
    which nothing fits join `rejected`."""
    tgt, pol = spec.targets, margins_of(spec)
    options: list[Bounded] = []
    for acc_id in ids:
        acc = get_accelerator(acc_id)
        node = get_node(tgt.node) if tgt.node else node_for(acc.id)
        fitted = False
        precisions = list(dict.fromkeys(tgt.weight_precisions or [spec.serving.weight_precision]))
        for rep in (r for p in precisions for r in replica_options(spec, acc, node, p, cal)):
            fitted = True
            upper = (
                offline_throughput(rep, wl.mean_prompt, wl.mean_output)["output_tokens_per_s"]
                / wl.mean_output
            )
            min_replicas = max(1, math.ceil(design / max(upper * pol.utilisation_target, 1e-12)))
            cost = replica_cost_usd_per_hour(acc.id, gpus_of(rep))
            bound = (cost if cost is not None else gpus_of(rep)) * min_replicas
            options.append((bound, rep, node.id, rep.tp))
        if not fitted:
            why = (
                f"{spec.model.name} in {spec.serving.weight_precision} does not fit at any tp "
                f"within {tgt.max_nodes_per_replica} node(s) per replica"
            )
            if not precision_ok(acc, spec.serving.weight_precision):
                why = f"the serving engine loads no {spec.serving.weight_precision} weights on {acc.id}"
            rejected.append((acc.id, why))
    return options


def _evaluate_bounded(
    options: list[Bounded],
    spec: InferenceSpec,
    wl: Any,
    design: float,
    rejected: list[tuple[str, str]],
    reps: Replicas,
    unpriced: set[str],
) -> list[ServingCandidate]:
    """The candidates worth simulating, cheapest bound first: each replica's SLO capacity
    and the replicas the design rate needs.

    Ranked by cost (and no facility power cap, which counts every option), an accelerator
    without a price is dropped whatever its options' capacities (`keep_priced`): of those
    only whether some rate meets the SLOs shows in the plan, so its options are searched
    only up to their first passing run and not built; the accelerators that have one join
    `unpriced`."""
    tgt, pol = spec.targets, margins_of(spec)
    options.sort(key=lambda o: o[0])
    evaluated: list[ServingCandidate] = []
    best_of: dict[str, float] = {}  # best score found per accelerator
    for bound, rep, node_id, tp in options:
        acc_id = rep.hw.accelerator_id
        # Branch and bound: an option whose roofline lower bound cannot beat its own
        # accelerator's best is skipped; each accelerator keeps its best for the report.
        if spec.targets.objective == "cost" and bound > best_of.get(acc_id, math.inf):
            continue
        if _dropped_for_price(spec, rep):
            if _meets_at_some_rate(rep, spec, wl):
                unpriced.add(acc_id)
            else:
                rejected.append((acc_id, f"tp{tp}: even a trickle of requests misses the SLOs"))
            continue
        runs = ReplicaRuns(rep, spec, wl)
        cap = replica_capacity(
            rep, spec, wl, _beats(spec, rep, node_id, design, best_of.get(acc_id, math.inf)), runs
        )
        if cap == PRUNED:  # its capacity cannot make it cheaper than its accelerator's best
            continue
        if cap <= 0:
            rejected.append((rep.hw.accelerator_id, f"tp{tp}: even a trickle of requests misses the SLOs"))
            continue
        replicas = tgt.replicas or max(1, math.ceil(design / (cap * pol.utilisation_target)))
        cand = _candidate(rep, spec, runs, node_id, tp, replicas, cap, design, reps)
        evaluated.append(cand)
        score = _score(cand, spec.targets.objective)
        best_of[acc_id] = min(best_of.get(acc_id, math.inf), score)
    return evaluated


def plan_serving(spec: InferenceSpec, calibration: Calibration | None = None) -> ServingPlan:
    """Search accelerators x tensor parallelism x weight precisions for the SLOs at the
    design rate; `calibration` replaces catalog efficiencies per accelerator."""
    started = time.perf_counter()
    cal = calibration or {}
    tgt, pol = spec.targets, margins_of(spec)
    ids = list(tgt.accelerators) if tgt.accelerators else list(offered_accelerators())
    assumptions: list[str] = not_offered_notes(ids)
    rejected: list[tuple[str, str]] = []
    if spec.serving.scenario != "serving":
        return plan_batch_scenario(spec, ids, started, cal)
    peak = spec.traffic.peak_rate_per_s or spec.traffic.rate_per_s
    if peak is None:
        raise BadInput(
            "traffic.rate or traffic.peak_rate is required for serving.",
            fix="Add `traffic: {peak_rate: 50}`.",
        )
    design = peak * (1.0 + pol.headroom)
    assumptions.append(
        f"Sized for the peak {peak:g} req/s plus {pol.headroom:.0%} headroom = {design:g} req/s, "
        f"each replica at most {pol.utilisation_target:.0%} of its SLO capacity."
    )
    assumptions.append(
        "Requests are spread evenly over replicas; each replica sees its share of the arrival process."
    )
    _check_tpot_possible(spec, ids)
    wl = workload(spec, CAPACITY_REQUESTS)
    options = _fitting_replicas(spec, ids, wl, design, cal, rejected)
    if not options:
        raise Infeasible(
            f"{spec.model.name} does not fit on any allowed accelerator at any tensor-parallel degree.",
            f"Its {spec.serving.weight_precision} weights and a minimal KV cache exceed what one scale-up "
            "domain of the allowed accelerators holds"
            + tpu_serving_note(ids, spec.serving.weight_precision)
            + ".",
            _smallest_fit_hint(spec, ids),
        )
    reps: Replicas = {}  # the replica each candidate was simulated on, by id(candidate)
    unpriced: set[str] = set()  # unpriced accelerators with an option that meets the SLOs (not built)
    evaluated = _evaluate_bounded(options, spec, wl, design, rejected, reps, unpriced)
    if not evaluated and not unpriced:
        raise Infeasible(
            "No configuration meets the SLOs at any load.",
            "Every allowed accelerator and tensor-parallel degree misses an SLO even with one request at a time.",
            "Relax slo.ttft / slo.tpot / slo.e2e, shorten prompts, or allow faster accelerators.",
        )
    evaluated = under_power_cap(evaluated, lambda c: c.gpus, lambda c: get_node(c.node), spec, assumptions)
    if spec.targets.objective == "cost":
        evaluated, dropped = keep_priced(
            evaluated, lambda c: c.cost_usd_per_hour, lambda c: c.accelerator, unpriced
        )
        rejected.extend((a, no_price_reason(a)) for a in dropped)
    evaluated.sort(key=lambda c: _score(c, spec.targets.objective))
    best = evaluated[0]
    _report(best, spec, REPORT_REQUESTS, reps)
    if best.layout is not None and (note := tpu_slice_note(get_accelerator(best.accelerator), best.layout)):
        assumptions.append(note)
    if spec.serving.disaggregation != "never":
        _weigh_disaggregation(best, spec, wl, reps[id(best)], assumptions)
    alternatives: list[tuple[ServingCandidate, str]] = []
    for c in evaluated[1:]:
        if c.accelerator not in {a.accelerator for a, _ in alternatives} | {best.accelerator}:
            alternatives.append((c, _why(c, best, spec.targets.objective)))
    return ServingPlan(
        name=spec.name or spec.model.name,
        model=spec.model.name,
        scenario="serving",
        objective=spec.targets.objective,
        best=best,
        alternatives=alternatives,
        pareto=_pareto(evaluated),
        rejected=rejected,
        assumptions=assumptions,
        seconds=time.perf_counter() - started,
        demand=serving_demand(spec, best),
    )


def _weigh_disaggregation(
    best: ServingCandidate, spec: InferenceSpec, wl: Workload, rep: Replica, assumptions: list[str]
) -> None:
    """Size and simulate disaggregated prefill/decode pools on the chosen layout; state the
    choice; when disaggregated wins, the plan's replicas become its two pools."""
    acc, node = get_accelerator(best.accelerator), get_node(best.node)
    design = best.design_rate_rps
    agg_run = run(rep, spec, wl, design / best.replicas)
    out = weigh_disaggregation(rep, spec, wl, design, acc, node, (best.gpus, agg_run))
    best.disaggregation = out.decision
    assumptions.append(f"Aggregated or disaggregated prefill/decode: {out.decision.reason}")
    if out.result is None:
        return
    res = out.result
    best.replicas = out.replicas
    best.replica_capacity_rps = design / out.replicas  # the pools' design load per replica
    best.latency_s = _latencies(res)
    best.output_tokens_per_s = res.output_tokens_per_s
    best.cost_usd_per_hour = (
        out.decision.disaggregated.cost_usd_per_hour if out.decision.disaggregated else None
    )
    if best.cost_usd_per_hour is not None:
        rps, out_tps = llm_served(spec, best.output_tokens_per_s)
        best.cost_usd_per_m_output_tokens = per_million(best.cost_usd_per_hour, out_tps * 3600)
        best.cost_usd_per_request = per_unit(best.cost_usd_per_hour, rps * 3600)
    best.output_tokens_per_joule = best.output_tokens_per_s / (best.gpus * rep.hw.tdp_w)
    slo = spec.slo
    for limit, metric in ((slo.ttft_s, "ttft_s"), (slo.tpot_s, "tpot_s"), (slo.e2e_s, "e2e_s")):
        if limit is not None:
            best.slo_headroom[metric] = limit / max(res.percentile(metric, slo.percentile), 1e-12)
    best.goodput = res.goodput(ttft_s=slo.ttft_s, tpot_s=slo.tpot_s, e2e_s=slo.e2e_s)


def _score(c: ServingCandidate, objective: str) -> float:
    if objective == "gpus":
        return float(c.gpus)
    if objective == "latency":
        return c.latency_s.get("ttft_p95_s", 0.0) + c.latency_s.get("e2e_p95_s", 0.0)
    # a missing price is not a price of zero: unpriced options rank after every priced one
    return c.cost_usd_per_hour if c.cost_usd_per_hour is not None else math.inf


def _why(loser: ServingCandidate, winner: ServingCandidate, objective: str) -> str:
    parts = [
        f"{loser.replicas} x {_shape(loser)} ({loser.weight_precision}) = {loser.gpus} GPUs vs {winner.gpus}"
    ]
    if loser.cost_usd_per_hour is not None and winner.cost_usd_per_hour:
        parts.append(f"{loser.cost_usd_per_hour / winner.cost_usd_per_hour - 1:+.0%} cost per hour")
    parts.append(f"{loser.replica_capacity_rps:.2f} req/s per replica within SLO")
    return "; ".join(parts)


def _shape(c: ServingCandidate) -> str:
    return c.replica_shape


def _pareto(cands: list[ServingCandidate]) -> list[ServingCandidate]:
    pts = sorted(cands, key=lambda c: (c.latency_s.get("e2e_p95_s", math.inf), _score(c, "cost")))
    front, best = [], math.inf
    for c in pts:
        s = _score(c, "cost")
        if s < best:
            front.append(c)
            best = s
    return front


def _candidate(
    rep: Replica,
    spec: InferenceSpec,
    runs: ReplicaRuns,
    node_id: str,
    tp: int,
    replicas: int,
    cap: float,
    design: float,
    reps: Replicas,
) -> ServingCandidate:
    res = runs.run(design / replicas)
    c = ServingCandidate(
        accelerator=rep.hw.accelerator_id,
        node=node_id,
        tp=tp,
        replicas=replicas,
        weight_precision=rep.weight_precision,
        kv_precision=rep.kv_precision,
        replica_capacity_rps=cap,
        design_rate_rps=design,
        latency_s=_latencies(res),
        memory=rep.memory_record(),
    )
    node = get_node(node_id)
    c.layout = layout_for(rep, get_accelerator(c.accelerator), node)
    c.pp, c.nodes_per_replica = c.layout.pp, c.layout.nodes
    reps[id(c)] = rep
    _costs(c, rep, spec, res, design)
    return c


def _costs(c: ServingCandidate, rep: Replica, spec: InferenceSpec, res: SimResult, design: float) -> None:
    c.output_tokens_per_s = res.output_tokens_per_s * c.replicas
    per_node = get_node(c.node).gpus_per_node
    hourly = billed_cost_usd_per_hour(rep.hw.accelerator_id, c.gpus, per_node, gpus_of(rep))
    if hourly is not None:
        c.cost_usd_per_hour = hourly  # whole instances: the cheapest shapes that hold each replica
        # the hour's bill over the hour's work actually served (the average rate, not the design rate)
        rps, out_tps = llm_served(spec, c.output_tokens_per_s)
        c.cost_usd_per_m_output_tokens = per_million(hourly, out_tps * 3600)
        c.cost_usd_per_request = per_unit(hourly, rps * 3600)
    power_w = c.gpus * rep.hw.tdp_w
    c.output_tokens_per_joule = c.output_tokens_per_s / power_w if power_w else None
    slo, p = spec.slo, spec.slo.percentile
    for limit, metric in ((slo.ttft_s, "ttft_s"), (slo.tpot_s, "tpot_s"), (slo.e2e_s, "e2e_s")):
        if limit is not None:
            c.slo_headroom[metric] = limit / max(res.percentile(metric, p), 1e-12)
    if any(v is not None for v in (slo.ttft_s, slo.tpot_s, slo.e2e_s)):
        c.goodput = res.goodput(ttft_s=slo.ttft_s, tpot_s=slo.tpot_s, e2e_s=slo.e2e_s)


def _report(c: ServingCandidate, spec: InferenceSpec, n: int, reps: Replicas) -> None:
    """Re-simulate the chosen option with more requests for the reported percentiles."""
    rep = reps[id(c)]
    wl = workload(spec, n)
    res = run(rep, spec, wl, c.design_rate_rps / c.replicas)
    c.latency_s = _latencies(res)
    _costs(c, rep, spec, res, c.design_rate_rps)
