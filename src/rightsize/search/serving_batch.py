"""The fixed-batch and offline serving scenarios: the engine's latency and throughput at
one batch (or saturated) for each accelerator and tensor-parallel degree; no traffic to
simulate."""

from __future__ import annotations

import time

from rightsize.catalog import NodeType, get_accelerator, get_node, node_for
from rightsize.errors import Infeasible
from rightsize.perf.inference import Replica, fixed_batch_metrics, offline_throughput
from rightsize.search.calibrated import Calibration
from rightsize.search.serving_costs import billed_cost_usd_per_hour, llm_served, per_million, per_unit
from rightsize.search.serving_demand import serving_demand
from rightsize.search.serving_layouts import layout_for, replica_options, tpu_slice_note
from rightsize.search.serving_plan import ServingCandidate, ServingPlan
from rightsize.spec.inference import InferenceSpec


def _batch_candidate(
    spec: InferenceSpec, rep: Replica, node: NodeType, tp: int, lengths: tuple[int, int]
) -> ServingCandidate:
    """One replica at the scenario's batch (fixed_batch) or saturated (offline), with its
    cost and energy per output token; `lengths` is (prompt, output) tokens."""
    prompt, output = lengths
    acc_id = rep.hw.accelerator_id
    if spec.serving.scenario == "fixed_batch":
        m = fixed_batch_metrics(rep, int(spec.serving.batch or 1), prompt, output)
        lat = {
            "ttft_p50_s": m["ttft_s"],
            "tpot_p50_s": m["tpot_s"],
            "e2e_p50_s": m["ttft_s"] + m["tpot_s"] * (output - 1),
        }
        tps_out = m["output_tokens_per_s"]
    else:
        m = offline_throughput(rep, prompt, output, spec.engine.block_tokens, spec.engine.max_batch)
        lat = {}
        tps_out = m["output_tokens_per_s"]
    replicas = spec.targets.replicas or 1
    layout = layout_for(rep, get_accelerator(acc_id), node)
    c = ServingCandidate(
        accelerator=acc_id,
        node=node.id,
        tp=tp,
        replicas=replicas,
        weight_precision=rep.weight_precision,
        kv_precision=rep.kv_precision,
        replica_capacity_rps=tps_out / output,
        design_rate_rps=0.0,
        latency_s=lat,
        output_tokens_per_s=tps_out * replicas,
        memory=rep.memory_record(),
        pp=layout.pp,
        nodes_per_replica=layout.nodes,
        layout=layout,
    )
    hourly = billed_cost_usd_per_hour(acc_id, c.gpus, node.gpus_per_node, c.gpus // max(c.replicas, 1))
    if hourly is not None:
        c.cost_usd_per_hour = hourly
        rps, out_tps = llm_served(spec, c.output_tokens_per_s)  # flat out: the engine's own rate
        c.cost_usd_per_m_output_tokens = per_million(hourly, out_tps * 3600)
        c.cost_usd_per_request = per_unit(hourly, rps * 3600)
    c.output_tokens_per_joule = c.output_tokens_per_s / (c.gpus * rep.hw.tdp_w)
    return c


def plan_batch_scenario(spec: InferenceSpec, ids: list[str], started: float, cal: Calibration) -> ServingPlan:
    """fixed_batch and offline: the engine's latency and throughput for each option."""
    tr = spec.traffic
    prompt = max(1, round(tr.prompt_tokens.mean_tokens))
    output = max(1, round(tr.output_tokens.mean_tokens))
    cands: list[ServingCandidate] = []
    rejected: list[tuple[str, str]] = []
    for acc_id in ids:
        acc = get_accelerator(acc_id)
        node = get_node(spec.targets.node) if spec.targets.node else node_for(acc.id)
        reps = replica_options(spec, acc, node, spec.serving.weight_precision, cal)
        if not reps:
            rejected.append(
                (acc.id, f"weights do not fit within {spec.targets.max_nodes_per_replica} node(s)")
            )
        for rep in reps:
            cands.append(_batch_candidate(spec, rep, node, rep.tp, (prompt, output)))
    if not cands:
        raise Infeasible(
            f"{spec.model.name} does not fit on the allowed accelerators.",
            "; ".join(f"{a}: {r}" for a, r in rejected),
            "Quantise the weights or allow a larger tp / accelerators with more memory.",
        )
    key = (
        (lambda c: -c.output_tokens_per_s / c.gpus)
        if spec.targets.objective != "latency"
        else (lambda c: c.latency_s.get("tpot_p50_s", 0.0))
    )
    cands.sort(key=key)
    best = cands[0]
    note = tpu_slice_note(get_accelerator(best.accelerator), best.layout) if best.layout is not None else None
    return ServingPlan(
        name=spec.name or spec.model.name,
        model=spec.model.name,
        scenario=spec.serving.scenario,
        objective=spec.targets.objective,
        best=best,
        demand=serving_demand(spec, best),
        alternatives=[(c, "") for c in cands[1:6]],
        pareto=[],
        rejected=rejected,
        assumptions=[note] if note else [],
        seconds=time.perf_counter() - started,
    )
