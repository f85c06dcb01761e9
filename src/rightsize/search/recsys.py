"""The recommendation planner: DLRM-style models whose embedding tables may exceed GPU memory.

Training: for each accelerator and GPU count, place the tables (HBM, host DRAM, SSD), time a step
(lookups, the all-to-all sharding causes, the dense MLPs, the dense gradient all-reduce), and pick
the count that meets the deadline best by the objective. Inference: for each accelerator, GPUs per
replica (the GPUs that hold one copy of the tables) and batch, time a batch, keep those whose p99
latency meets the SLO, and size the replicas for the query rate.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from rightsize.catalog import Accelerator, NodeType, get_accelerator, node_for
from rightsize.errors import BadInput, Infeasible
from rightsize.perf import datapipe
from rightsize.perf.hardware import Hardware
from rightsize.perf.recsys import (
    DENSE_TRAIN_BYTES_PER_PARAM,
    Placement,
    dense_allreduce_s,
    dense_macs_per_sample,
    dense_params,
    dense_serve_bytes,
    dense_time_s,
    dense_train_bytes,
    embedding_budget_per_gpu,
    embedding_comm,
    lookup_time,
    place_tables,
    row_bytes,
    state_bytes_per_row,
)
from rightsize.perf.vision import DTYPE_BYTES, batched_latency_s, gradient_allreduce_exposed_s
from rightsize.search.calibrated import power_limit_of
from rightsize.search.constraints import (
    margins_of,
    training_extra,
)
from rightsize.search.demand import Demand
from rightsize.search.job_common import (
    allowed_hardware,
    batch_notes,
    capped_batches,
    gpu_counts,
    meets_latency,
    rank_serving,
    rank_training,
    run_figures,
    serve_batches,
)
from rightsize.search.job_demand import KindFacts, nic_sweep, serving_demand, training_demand
from rightsize.search.recsys_plan import RecsysOption, RecsysPlan, explain
from rightsize.search.serving_costs import billed_cost_usd_per_hour
from rightsize.spec.recsys import RecsysModel, RecsysSpec

MAX_GPUS = 1024
REPLICA_GPUS = (1, 2, 4, 8)
# Queries per batch a serving search tries (x samples per query); engines batch hundreds of
# thousands of samples (MLPerf DLRMv2 H100 engines: 102,400 pairs under a 60 ms bound).
BATCH_QUERIES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
VALUE_BYTES = 4.0  # stored label, dense feature and index values (int32 / fp32)
TRAIN_CPU_CORES_PER_GPU = 2.0  # reading pre-processed binary samples; no decode
SERVE_CPU_CORES_PER_GPU = 2.0  # request parsing, feature assembly, the server itself
Calibration = dict[str, dict[str, float]]


# ------------------------------------------------------------------------------------ helpers


def _tables(spec: RecsysSpec) -> tuple[list[float], list[float]]:
    m = spec.arch
    mult = spec.embeddings.rows_multiplier
    return [t.rows * mult for t in m.tables], [t.pooling for t in m.tables]


def _placement_dict(p: Placement) -> dict[str, float]:
    return {
        "hbm_table_bytes": p.hbm_table_bytes,
        "hbm_cache_bytes": p.hbm_cache_bytes,
        "host_bytes": p.host_bytes,
        "ssd_bytes": p.ssd_bytes,
        "cache_hit_rate": p.cache_hit_rate,
        "hbm_lookups_per_sample": p.lookups_per_sample["hbm"],
        "host_lookups_per_sample": p.lookups_per_sample["host"],
        "ssd_lookups_per_sample": p.lookups_per_sample["ssd"],
        "tables_in_hbm": float(sum(1 for t in p.tables if t.tier == "hbm")),
        "tables_in_host": float(sum(1 for t in p.tables if t.tier == "host")),
        "tables_in_ssd": float(sum(1 for t in p.tables if t.tier == "ssd")),
        "row_sharded_tables": float(sum(1 for t in p.tables if t.sharding == "row")),
    }


def _sample_bytes(m: RecsysModel) -> float:
    """Stored bytes of one sample: label, dense features and every index, 4 B each."""
    return VALUE_BYTES * (1 + m.dense_features + m.lookups_per_sample)


def _comm_bytes(precision: str) -> float:
    return 4.0 if precision in ("fp32", "tf32") else 2.0


def plan_recsys(spec: RecsysSpec, calibration: Calibration | None = None) -> RecsysPlan:
    """Plan a recommendation workload: training or online inference, per `spec.mode`."""
    if spec.mode == "inference":
        return _plan_inference(spec, calibration)
    return _plan_training(spec, calibration)


def _table_summary(spec: RecsysSpec, precision_row_bytes: float) -> dict[str, Any]:
    m = spec.arch
    rows, pooling = _tables(spec)
    return {
        "count": len(rows),
        "rows": sum(rows),
        "embedding_dim": m.embedding_dim,
        "precision": spec.embeddings.precision,
        "row_bytes": precision_row_bytes,
        "total_bytes": sum(rows) * precision_row_bytes,
        "largest_table_bytes": max(rows) * precision_row_bytes,
        "lookups_per_sample": sum(pooling),
        "dense_params": dense_params(m),
        "dense_macs_per_sample": dense_macs_per_sample(m),
        "bytes_by_table": [r * precision_row_bytes for r in rows],
    }


# ----------------------------------------------------------------------------------- training


def _train_option(
    spec: RecsysSpec, acc: Accelerator, node: NodeType, hw: Hardware, gpus: int
) -> RecsysOption | str:
    t = spec.train
    assert t is not None
    m = spec.arch
    emb = spec.embeddings
    batch = t.global_batch
    local = batch / gpus
    act = _comm_bytes(t.precision)
    other = dense_train_bytes(m, local, act)
    budget = embedding_budget_per_gpu(hw, other)
    if budget <= 0:
        return f"the dense part and activations of {local:,.0f} samples per GPU fill its memory"
    rows, pooling = _tables(spec)
    stored_row = row_bytes(m.embedding_dim, emb.precision) + state_bytes_per_row(m.embedding_dim, m.optimizer)
    host_total = (
        node.host_memory_bytes
        * datapipe.tier("host_memory_fraction_for_embeddings")
        * gpus
        / node.gpus_per_node
    )
    pl = place_tables(rows, pooling, stored_row, gpus, budget, host_total, emb.sharding, emb.cache_hit_rate)
    state = state_bytes_per_row(m.embedding_dim, m.optimizer)
    look = lookup_time(
        pl, hw, local, row_bytes(m.embedding_dim, emb.precision), training=True, state_row=state
    )
    comm = embedding_comm(m, pl, hw, batch, act, training=True)
    dense = dense_time_s(m, hw, local, act, training=True)
    ar = dense_allreduce_s(m, hw, gpus)
    exposed = gradient_allreduce_exposed_s(ar, dense * 2.0 / 3.0, dense_params(m) * 4.0)
    step_s = look.total_s + comm.time_s + dense + exposed
    sps = batch / step_s
    samples = (t.samples or m.train_samples or 0.0) * t.epochs
    ckpt = sum(rows) * stored_row + dense_params(m) * DENSE_TRAIN_BYTES_PER_PARAM
    run = run_figures(acc.id, node, gpus, samples, sps, ckpt)
    return RecsysOption(
        accelerator=acc.id,
        node=node.id,
        gpus=gpus,
        batch=batch,
        samples_per_s=sps,
        samples_per_s_per_gpu=sps / gpus,
        step={
            "step_s": step_s,
            "lookup_hbm_s": look.hbm_s,
            "lookup_host_s": look.host_s,
            "lookup_ssd_s": look.ssd_s,
            "all_to_all_s": comm.time_s,
            "dense_s": dense,
            "allreduce_exposed_s": exposed,
            "access_latency_s": look.latency_s,
        },
        placement=_placement_dict(pl),
        comm=comm.as_dict(),
        memory={
            "embedding_budget_bytes": budget,
            "dense_and_activation_bytes": other,
            "capacity_bytes": hw.hbm_bytes,
        },
        **asdict(run),
    )


def _training_options(
    spec: RecsysSpec, calibration: Calibration | None
) -> tuple[list[RecsysOption], list[tuple[str, str]]]:
    """Every (accelerator, GPU count) option that can train the model, and the accelerators
    that cannot, with the last reason found."""
    t = spec.train
    assert t is not None
    tgt = spec.targets
    options: list[RecsysOption] = []
    rejected: list[tuple[str, str]] = []
    for acc, node, hw in allowed_hardware(spec, t.precision, calibration, rejected):
        counts = (
            [tgt.gpus] if tgt.gpus else [g for g in gpu_counts(node, MAX_GPUS) if t.global_batch % g == 0]
        )
        why = "no GPU count evaluated"
        found = False
        for g in counts:
            o = _train_option(spec, acc, node, hw, g)
            if isinstance(o, str):
                why = o
            else:
                options.append(o)
                found = True
        if not found:
            rejected.append((acc.id, why))
    return options, rejected


def _training_demand(spec: RecsysSpec, best: RecsysOption, calibration: Calibration | None) -> Demand:
    """What the chosen training cluster asks of the infrastructure, with the step time at
    each NIC speed of the sweep."""
    t = spec.train
    assert t is not None
    m = spec.arch
    row_b = row_bytes(m.embedding_dim, spec.embeddings.precision)
    acc = get_accelerator(best.accelerator)
    node = node_for(acc.id)

    def step_at(hw: Hardware) -> float | None:
        o = _train_option(spec, acc, node, hw, best.gpus)
        return None if isinstance(o, str) else o.step["step_s"]

    sweep = nic_sweep(acc, node, t.precision, calibration, step_at, power_limit_of(spec, acc.id))
    rows, _ = _tables(spec)
    stored_row = row_b + state_bytes_per_row(m.embedding_dim, m.optimizer)
    samples = t.samples or m.train_samples or 0.0
    sample_bytes = t.bytes_per_sample or _sample_bytes(m)
    peak = Hardware.from_catalog(acc, node, t.precision).peak_flops_per_s
    facts = KindFacts(
        unit="sample",
        unit_bytes=sample_bytes,
        params=sum(rows) * m.embedding_dim + dense_params(m),
        weights_bytes=sum(rows) * row_b + dense_params(m) * 4.0,
        checkpoint_bytes=sum(rows) * stored_row + dense_params(m) * DENSE_TRAIN_BYTES_PER_PARAM,
        host_memory_bytes_per_gpu=best.placement["host_bytes"] / best.gpus
        + datapipe.dataloader_host_bytes(TRAIN_CPU_CORES_PER_GPU),
        cpu_cores_per_gpu=TRAIN_CPU_CORES_PER_GPU,
        compute_utilisation=3 * 2 * dense_macs_per_sample(m) * best.samples_per_s_per_gpu / peak,
        compute_share_of_step=best.step["dense_s"] / best.step["step_s"],
    )
    units = (best.samples_per_s, samples * t.epochs, samples * sample_bytes)
    return training_demand(spec.name or m.title, best, facts, units, sweep)


def _plan_training(spec: RecsysSpec, calibration: Calibration | None) -> RecsysPlan:
    t = spec.train
    assert t is not None
    m = spec.arch
    if t.samples is None and m.train_samples is None:
        raise BadInput(
            f"No training set size for {m.name}.",
            "The preset has no dataset and train.samples is not given.",
            "Set `train.samples: 4.2B`.",
        )
    tgt = spec.targets
    objective = "gpu_hours" if tgt.objective == "gpus" else tgt.objective
    row_b = row_bytes(m.embedding_dim, spec.embeddings.precision)
    options, rejected = _training_options(spec, calibration)
    if not options:
        raise Infeasible(
            f"No configuration can train {m.title}.",
            "; ".join(f"{a}: {r}" for a, r in rejected) or "No accelerator allowed.",
            "Allow more accelerators or GPUs, or lower train.global_batch.",
        )
    assumptions: list[str] = []
    assumptions += [
        "Embedding all-to-all is exposed (between the lookups and the dense part); the dense gradient "
        "all-reduce overlaps the dense backward pass in DDP buckets.",
        "Tables are balanced over the GPUs (as a sharding planner does); capacity is checked in aggregate, "
        "and a table larger than one GPU's share is row-wise sharded.",
        f"Sample stored as 4-byte values: {_sample_bytes(m):.0f} B (label, {m.dense_features} dense, "
        f"{m.lookups_per_sample:g} indices).",
        f"Embedding optimizer {m.optimizer} fused into the backward pass: each looked-up row is read twice "
        f"and written once per step, and its {state_bytes_per_row(m.embedding_dim, m.optimizer):.0f} B of "
        "optimizer state read and written once.",
    ]
    bare, margin = tgt.deadline_s, margins_of(spec).safety_margin
    ranked = rank_training(
        options,
        spec,
        objective,
        rejected,
        assumptions,
        lambda o: f"{o.gpus} x {o.accelerator}",
        "train on fewer samples",
        explain,
    )
    best, deadline = ranked.best, ranked.deadline_s
    samples = (t.samples or m.train_samples or 0.0) * t.epochs
    demand = _training_demand(spec, best, calibration)
    return RecsysPlan(
        name=spec.name or m.title,
        model=m.name,
        mode="training",
        objective=objective,
        best=best,
        alternatives=ranked.alternatives,
        rejected=rejected,
        assumptions=assumptions,
        tables=_table_summary(spec, row_b),
        targets={
            "deadline_s": deadline,
            "gpus": tgt.gpus,
            "samples": samples,
            "global_batch": t.global_batch,
        },
        demand=demand,
        extra=training_extra(ranked.options, best, bare, margin),
    )


# ---------------------------------------------------------------------------------- inference


def _serve_option(
    spec: RecsysSpec, acc: Accelerator, node: NodeType, hw: Hardware, g: int, batch: int, design_sps: float
) -> RecsysOption | str:
    inf = spec.inference
    assert inf is not None
    m = spec.arch
    emb = spec.embeddings
    act = DTYPE_BYTES[inf.precision]
    local = batch / g
    other = dense_serve_bytes(m, local, act)
    budget = embedding_budget_per_gpu(hw, other)
    if budget <= 0:
        return "the dense part fills its memory"
    rows, pooling = _tables(spec)
    row = row_bytes(m.embedding_dim, emb.precision)
    # Replicas on one node share one read-only host copy of the spilled tables.
    host_total = node.host_memory_bytes * datapipe.tier("host_memory_fraction_for_embeddings")
    pl = place_tables(rows, pooling, row, g, budget, host_total, emb.sharding, emb.cache_hit_rate)
    look = lookup_time(pl, hw, local, row, training=False)
    comm = embedding_comm(m, pl, hw, batch, _comm_bytes(inf.precision), training=False)
    dense = dense_time_s(m, hw, local, act, training=False)
    service = look.total_s + comm.time_s + dense
    latency = batched_latency_s(service)
    if not meets_latency(latency, inf.latency_p99_s, inf.batch):
        return f"{latency * 1e3:.1f} ms p99 at batch {batch:,}"
    util = margins_of(spec).utilisation_target
    capacity = util * batch / service
    replicas = max(1, math.ceil(design_sps / capacity))
    gpus = replicas * g
    hourly = billed_cost_usd_per_hour(acc.id, gpus, node.gpus_per_node, g)
    return RecsysOption(
        accelerator=acc.id,
        node=node.id,
        gpus=gpus,
        batch=batch,
        samples_per_s=capacity * replicas,
        samples_per_s_per_gpu=capacity / g,
        step={
            "step_s": service,
            "lookup_hbm_s": look.hbm_s,
            "lookup_host_s": look.host_s,
            "lookup_ssd_s": look.ssd_s,
            "access_latency_s": look.latency_s,
            "all_to_all_s": comm.time_s,
            "dense_s": dense,
        },
        placement=_placement_dict(pl),
        comm=comm.as_dict(),
        memory={
            "embedding_budget_bytes": budget,
            "dense_and_activation_bytes": other,
            "capacity_bytes": hw.hbm_bytes,
        },
        gpus_per_replica=g,
        replicas=replicas,
        latency_p99_s=latency,
        cost_usd=hourly,
    )


def serving_capacity(
    spec: RecsysSpec,
    acc: Accelerator,
    node: NodeType,
    hw: Hardware,
    gpus_per_replica: int = 1,
    max_batch: int | None = None,
) -> tuple[int, float, float] | None:
    """(batch, samples/s one GPU serves at full load, p99 latency) at the batch that serves most
    within the spec's bound (or at its fixed batch), among batches up to `max_batch` (an engine
    built for that largest batch); None when no batch meets it."""
    inf = spec.inference
    assert inf is not None
    best: tuple[int, float, float] | None = None
    candidates = serve_batches(inf.batch, [q * inf.samples_per_query for q in BATCH_QUERIES])
    for batch in capped_batches(candidates, max_batch):
        o = _serve_option(spec, acc, node, hw, gpus_per_replica, batch, 1.0)
        if isinstance(o, str) or o.latency_p99_s is None:
            continue
        rate = batch / o.step["step_s"] / gpus_per_replica
        if best is None or rate > best[1]:
            best = (batch, rate, o.latency_p99_s)
    return best


def _serving_options(
    spec: RecsysSpec, calibration: Calibration | None, objective: str, design_sps: float
) -> tuple[list[RecsysOption], list[tuple[str, str]]]:
    """Per accelerator, the best replica (GPUs per replica x batch) that meets the latency
    target at the design rate (samples/s); the accelerators with none, with why."""
    inf = spec.inference
    assert inf is not None
    tgt = spec.targets
    options: list[RecsysOption] = []
    rejected: list[tuple[str, str]] = []
    for acc, node, hw in allowed_hardware(spec, inf.precision, calibration, rejected):
        sizes = (
            [tgt.gpus_per_replica]
            if tgt.gpus_per_replica
            else [g for g in REPLICA_GPUS if g <= node.gpus_per_node]
        )
        mine: list[RecsysOption] = []
        why = ""
        batches = serve_batches(inf.batch, [q * inf.samples_per_query for q in BATCH_QUERIES])
        for g in sizes:
            for batch in batches:
                o = _serve_option(spec, acc, node, hw, g, batch, design_sps)
                if isinstance(o, str):
                    why = why or o
                else:
                    mine.append(o)
        if not mine:
            rejected.append((acc.id, f"no replica meets the {inf.latency_p99_s * 1e3:.0f} ms p99 ({why})"))
            continue
        mine.sort(key=lambda o: (o.objective(objective), o.latency_p99_s or 0.0))
        options.append(mine[0])
    return options, rejected


def _serving_demand(spec: RecsysSpec, best: RecsysOption, design_qps: float, load: float) -> Demand:
    """What the chosen serving fleet asks of the infrastructure (`load`: the share of its
    capacity the base rate uses)."""
    inf = spec.inference
    assert inf is not None and best.replicas is not None
    m = spec.arch
    margins = margins_of(spec)
    rows, _ = _tables(spec)
    row_b = row_bytes(m.embedding_dim, spec.embeddings.precision)
    request_bytes = inf.samples_per_query * _sample_bytes(m)
    node = node_for(best.accelerator)
    peak = Hardware.from_catalog(get_accelerator(best.accelerator), node, inf.precision).peak_flops_per_s
    facts = KindFacts(
        unit="query",
        unit_bytes=request_bytes,
        params=sum(rows) * m.embedding_dim + dense_params(m),
        weights_bytes=sum(rows) * row_b + dense_params(m) * DTYPE_BYTES[inf.precision],
        checkpoint_bytes=0.0,
        host_memory_bytes_per_gpu=best.placement["host_bytes"] / node.gpus_per_node,
        cpu_cores_per_gpu=SERVE_CPU_CORES_PER_GPU,
        compute_utilisation=2
        * dense_macs_per_sample(m)
        * best.samples_per_s_per_gpu
        / margins.utilisation_target
        / peak,
        compute_share_of_step=best.step["dense_s"] / best.step["step_s"],
    )
    assert best.gpus_per_replica is not None
    rates = (inf.qps, design_qps, load)
    return serving_demand(spec.name or m.title, best, facts, rates, (best.replicas, best.gpus_per_replica))


def _plan_inference(spec: RecsysSpec, calibration: Calibration | None) -> RecsysPlan:
    inf = spec.inference
    assert inf is not None
    m = spec.arch
    tgt = spec.targets
    objective = "cost" if tgt.objective == "cost" else "gpus"
    margins = margins_of(spec)
    design_qps = inf.qps * (1.0 + margins.headroom)
    design_sps = design_qps * inf.samples_per_query
    options, rejected = _serving_options(spec, calibration, objective, design_sps)
    if not options:
        raise Infeasible(
            f"No deployment of {m.title} meets the {inf.latency_p99_s * 1e3:.0f} ms p99 latency.",
            "; ".join(f"{a}: {r}" for a, r in rejected) or "No accelerator allowed.",
            "Relax inference.latency_p99, store tables in fp16/int8, or allow GPUs with more memory.",
        )
    cap_notes: list[str] = []
    best, alternatives = rank_serving(options, spec, objective, cap_notes, rejected, explain)
    rows, _ = _tables(spec)
    row_b = row_bytes(m.embedding_dim, spec.embeddings.precision)
    assert best.replicas is not None and best.gpus_per_replica is not None
    load = inf.qps * inf.samples_per_query / (best.samples_per_s / margins.utilisation_target)
    assumptions = [
        "Latency = two batch service times (the batch in flight, then its own) under dynamic batching; "
        "queueing jitter beyond that is not modelled.",
        "Replicas on one node share one read-only host-memory copy of the tables that spill from HBM.",
        f"Capacity sized for {inf.qps:,.0f} queries/s x (1 + headroom {margins.headroom:.0%}) x "
        f"{inf.samples_per_query} candidates at {margins.utilisation_target:.0%} utilisation.",
        *cap_notes,
        *batch_notes(inf.batch, best.latency_p99_s, inf.latency_p99_s),
    ]
    demand = _serving_demand(spec, best, design_qps, load)
    return RecsysPlan(
        name=spec.name or m.title,
        model=m.name,
        mode="inference",
        objective=objective,
        best=best,
        alternatives=alternatives,
        rejected=rejected,
        assumptions=assumptions,
        tables=_table_summary(spec, row_b),
        targets={
            "qps": inf.qps,
            "samples_per_query": inf.samples_per_query,
            "latency_p99_s": inf.latency_p99_s,
            "headroom": margins.headroom,
            "utilisation_target": margins.utilisation_target,
        },
        demand=demand,
        extra={
            # A replica's capacity at full load (the plan keeps it at the utilisation target).
            "replica_capacity_rps": best.samples_per_s
            / margins.utilisation_target
            / inf.samples_per_query
            / best.replicas,
            "safety_margin": margins.headroom,
        },
    )
