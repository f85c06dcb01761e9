"""Sizing a chosen configuration into a complete bill of materials.

`size(demand, infrastructure, policy)` runs the sizing modules in dependency order:
nodes and racks -> fabric -> reliability (cluster MTBF) -> storage (checkpoint write
bandwidth from the MTBF) -> goodput with the storage as provisioned -> power and
cooling (throttling) -> cost (cloud options, on-premises TCO, break-even) -> recurring
pool -> margins -> growth stages -> sensitivity. Each module sees only the `Demand` and
the spec's `infrastructure` section, never the performance model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rightsize.catalog import get_node
from rightsize.catalog.prices import node_capex, onprem_defaults
from rightsize.catalog.reliability import Reliability, reliability
from rightsize.catalog.tpu_slices import slice_host
from rightsize.constants import HOURS_PER_MONTH
from rightsize.errors import BadInput
from rightsize.perf.checkpoint import lost_to_completion_s
from rightsize.search.demand import Demand
from rightsize.sizing.cost import CostPlan, size_cost
from rightsize.sizing.fabric import FabricPlan, size_fabric
from rightsize.sizing.growth import GrowthPlan, growth_plan
from rightsize.sizing.margins import (
    MarginLine,
    deadline_warning,
    policy_warnings,
    serving_margins,
    storage_margin,
    training_margins,
)
from rightsize.sizing.nodes_racks import NodesRacks, size_nodes_racks
from rightsize.sizing.pool import PoolPlan, size_pool
from rightsize.sizing.power import PowerPlan, size_power
from rightsize.sizing.reliability import Goodput, job_reliability, service_reliability
from rightsize.sizing.results import JobReliability, RunTime, ServiceReliability, WholeRun
from rightsize.sizing.sensitivity import (
    CLOUD_PRICE_RANGE,
    EFFICIENCY_RANGE,
    ENERGY_PRICE_RANGE,
    FAILURE_RATE_FACTORS,
    GROWTH_FACTORS,
    Swing,
    ranked,
    swing,
    time_at_efficiency,
)
from rightsize.sizing.storage import StoragePlan, size_storage
from rightsize.sizing.whole_run import before_throttling, with_throttling
from rightsize.spec.infrastructure import Infrastructure


@dataclass
class Sizing:
    demand: Demand
    nodes: NodesRacks
    fabric: FabricPlan
    storage: StoragePlan
    reliability: JobReliability | ServiceReliability
    power: PowerPlan
    cost: CostPlan
    run: RunTime
    margins: list[MarginLine]
    growth: GrowthPlan
    sensitivity: list[Swing]
    pool: PoolPlan | None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "workload": self.demand.workload,
            "run": self.run.as_dict(),
            "nodes": self.nodes.as_dict(),
            "fabric": self.fabric.as_dict(),
            "storage": self.storage.as_dict(),
            "reliability": self.reliability.as_dict(),
            "power": self.power.as_dict(),
            "cost": self.cost.as_dict(),
            "pool": self.pool.as_dict() if self.pool else None,
            "margins": [m.as_dict() for m in self.margins],
            "growth": self.growth.as_dict(),
            "sensitivity": [s.as_dict() for s in self.sensitivity],
            "warnings": self.warnings,
        }


def headline_cost(cost: CostPlan, demand: Demand) -> tuple[float | None, bool]:
    """The cost the sensitivity moves: cloud on-demand per run (per month for a service or
    recurring jobs), else the on-premises figure; and whether it is the cloud's."""
    monthly = demand.continuous or demand.runs_per_month is not None
    if cost.cloud and "on_demand" in cost.cloud:
        od = cost.cloud["on_demand"]
        return (od.usd_per_month if monthly else od.usd_per_run), True
    if cost.onprem is not None:
        return (cost.onprem.usd_per_month if monthly else cost.onprem.usd_per_run), False
    return None, False


def size(
    demand: Demand,
    infra: Infrastructure,
    policy: Any = None,
    extra: dict[str, Any] | None = None,
    rel: Reliability | None = None,
) -> Sizing:
    """The bill of materials of one planned configuration.

    Longer than 80 lines for one reason: it is the one place that runs the sizing stages in their
    order (nodes, fabric, reliability, storage, the whole run, power, cost, pool, margins, growth,
    sensitivity), each reading the figures the stages before it own."""
    extra = extra or {}
    rel = rel or reliability()
    margin = float(getattr(policy, "headroom", infra.margins.safety_margin))
    util = float(getattr(policy, "utilisation_target", infra.margins.utilisation_target))
    warnings = policy_warnings(margin, util)
    # a TPU slice's hosts carry as many chips as its shape puts on one VM (4 on a multi-host slice)
    node = slice_host(get_node(demand.node), demand.gpus_per_replica or demand.gpus)
    nr = size_nodes_racks(demand, node, infra.facility)
    n = nr.nodes
    fab = size_fabric(demand, node, n, infra.fabric, nodes_per_rack=nr.nodes_per_rack)

    # Reliability first with the catalog's write rate (for the MTBF), then storage sized to
    # it, then goodput again with the checkpoint written at the rate the storage provides.
    job = not demand.continuous and demand.checkpoint_bytes > 0
    mtbf_s = 3600.0 / (demand.gpus * rel.failure_rate_per_gpu_hour)
    # How the chosen option saves (perf.checkpoint, as the search planned it): an asynchronous
    # save's storage is sized to finish each write within the interval, not within a stall.
    save = extra.get("checkpoint") or {}
    blocking = float(save["checkpoint_write_s"]) if job and save.get("async_save") else None
    st = size_storage(
        demand, infra.storage, node, n, mtbf_s if job else None, margin, async_blocking_s=blocking
    )
    rel_out, gp = _reliability(demand, st, rel, n, job, save)
    # a preemption, like a failure, also loses an asynchronous save's write still under way
    interval_s, restart_s = (
        (gp.checkpoint_interval_s, gp.restart_s + lost_to_completion_s(gp)) if gp else (None, None)
    )
    run_ideal = demand.run_s or 0.0
    # The whole run by part (phases, stalls, checkpoints, failures); thermal
    # throttling joins it once the power sizing has found it.
    whole = before_throttling(demand, gp, st, extra.get("whole_run")) if demand.run_s else None
    run_failures = whole.total_s if whole is not None else run_ideal
    pw = size_power(
        demand,
        node,
        n,
        nr.racks,
        fab.power_w,
        st.power_w,
        infra.facility,
        run_failures or None,
        cooling=nr.cooling,
    )
    whole = with_throttling(whole, pw.throttle_slowdown) if whole is not None else None
    run_s = whole.total_s if whole is not None and run_failures else None
    run = _run_time(demand, run_ideal, run_failures, run_s, pw.throttle_slowdown, whole)
    cost = size_cost(
        demand,
        node,
        n,
        run_s,
        fab.capex_usd,
        st.capex_usd,
        st.cloud_usd_per_month,
        pw.facility_power_typical_w,  # energy is paid at the typical draw
        pw.it_power_typical_w,
        interval_s,
        restart_s,
        infra.cost,
        infra.facility.deployment,
    )
    pool = None
    if infra.schedule is not None and run_s:
        pool = size_pool(infra.schedule, run_s, demand.gpus, util)
        if not pool.meets_turnaround:
            warnings.append(
                f"A job takes {pool.job_hours:.1f} h, over the {pool.turnaround_hours:.1f} h turnaround target."
            )

    margins = _margin_lines(demand, extra, run_s, st, margin, util)
    warnings += deadline_warning(extra.get("bare_deadline_s"), run_s, margin)
    per_node_capex = _capex_per_node(node.id, fab.capex_usd, st.capex_usd, n)
    gr = growth_plan(
        demand,
        infra.growth,
        n,
        node.gpus_per_node,
        per_node_capex,
        pw.facility_power_w,
        fab.max_nodes,
        infra.facility.power_cap_w,
    )
    swings = _sensitivity(demand, infra, rel, n, node.gpus_per_node, run_s, cost, pw, gr, per_node_capex, fab)
    warnings += list(getattr(nr, "warnings", []) or [])
    warnings += list(getattr(pw, "warnings", []) or [])
    warnings += list(getattr(rel_out, "warnings", ()) or [])
    warnings += [c for c in gr.checks if "outgrows" in c or "over the" in c]
    return Sizing(demand, nr, fab, st, rel_out, pw, cost, run, margins, gr, swings, pool, warnings)


def _reliability(
    demand: Demand,
    st: StoragePlan,
    rel: Reliability,
    nodes: int,
    job: bool,
    save: dict[str, float] | None = None,
) -> tuple[JobReliability | ServiceReliability, Goodput | None]:
    """A job's goodput with the checkpoint written at what the file system provides (limited by
    the nodes' client bandwidth, the catalog's per-node write rate); a service's replica losses."""
    if not job:
        svc = service_reliability(demand.gpus, demand.gpus_per_replica or 1, demand.replicas or 1, rel)
        return svc, None
    provided = float(st.parallel_file_system.get("write_bytes_per_s") or 0.0)
    client = rel.checkpoint_write_bytes_per_s_per_node * nodes
    write = min(provided, client) if provided else client
    gp, out = job_reliability(demand.gpus, nodes, demand.checkpoint_bytes, rel, write, save)
    return out, gp


def _run_time(
    demand: Demand,
    ideal_s: float,
    with_failures_s: float,
    run_s: float | None,
    throttle: float,
    whole: WholeRun | None = None,
) -> RunTime:
    if not demand.run_s:
        return RunTime(hours_per_month=HOURS_PER_MONTH, gpu_hours_per_month=demand.gpus * HOURS_PER_MONTH)
    return RunTime(
        ideal_run_s=ideal_s,
        with_failures_run_s=with_failures_s,
        run_s=run_s,
        gpu_hours=whole.gpu_hours if whole is not None else demand.gpus * (run_s or 0.0) / 3600.0,
        thermal_slowdown_fraction=throttle,
        whole_run=whole,
    )


def _margin_lines(
    demand: Demand, extra: dict[str, Any], run_s: float | None, st: StoragePlan, margin: float, util: float
) -> list[MarginLine]:
    """The margins shown apart from the base need: a service's rate and replicas, or a job's
    time budget and GPUs; the storage capacity for both."""
    lines: list[MarginLine] = []
    if demand.continuous:
        cap = (demand.design_rate_rps or 0.0) and extra.get("replica_capacity_rps", 0.0)
        lines += serving_margins(demand, float(cap or 0.0), margin, util)
    else:
        lines += training_margins(
            extra.get("bare_deadline_s"), run_s, extra.get("base_gpus"), demand.gpus, margin
        )
    lines.append(storage_margin(st.file_system_bytes + st.object_store_bytes, margin))
    return lines


def _capex_per_node(node_id: str, fabric_usd: float, storage_usd: float, nodes: int) -> float | None:
    """Node price plus its share of fabric and storage: the cost of growing by one node."""
    try:
        return node_capex(node_id).capex_usd + (fabric_usd + storage_usd) / max(nodes, 1)
    except BadInput:
        return None


def _sensitivity(
    demand: Demand,
    infra: Infrastructure,
    rel: Reliability,
    nodes: int,
    gpus_per_node: int,
    run_s: float | None,
    cost: CostPlan,
    pw: PowerPlan,
    gr: GrowthPlan,
    per_node_capex: float | None,
    fab: FabricPlan,
) -> list[Swing]:
    priced_cost, cloud_headline = headline_cost(cost, demand)
    # Without a price (no cloud or on-prem figure for this hardware) the swings still show
    # time; their cost changes read 0.
    base_cost = priced_cost or 0.0
    hours = (run_s or 0.0) / 3600.0 if run_s else HOURS_PER_MONTH
    base_time = run_s or 1.0  # a service: 'time' stands for the capacity it needs
    out: list[Swing] = []

    def at_time(t: float) -> tuple[float, float]:
        return t, base_cost * t / base_time

    share = demand.compute_share_of_step
    lo, hi = 1.0 - EFFICIENCY_RANGE, 1.0 + EFFICIENCY_RANGE
    out.append(
        swing(
            "compute efficiency",
            (f"-{EFFICIENCY_RANGE:.0%}", f"+{EFFICIENCY_RANGE:.0%}"),
            (base_time, base_cost),
            at_time(time_at_efficiency(base_time, share, lo)),
            at_time(time_at_efficiency(base_time, share, hi)),
        )
    )
    fail = _failure_swing(demand, rel, nodes, run_s, at_time)
    if fail is not None:
        out.append(fail)
    bw = _bandwidth_swing(demand, (base_time, base_cost), at_time)
    if bw is not None:
        out.append(bw)
    price = _price_swing(infra, pw, hours, priced_cost, cloud_headline, (base_time, base_cost))
    if price is not None:
        out.append(price)
    grow = _growth_swing(demand, infra, nodes, gpus_per_node, per_node_capex, pw, gr, fab)
    if grow is not None:
        out.append(grow)
    return ranked(out)


Point = tuple[float, float]  # (time, cost)


def _failure_swing(
    demand: Demand, rel: Reliability, nodes: int, run_s: float | None, at_time: Any
) -> Swing | None:
    """The whole run with the failure rate scaled: every other part of it stays, so the run
    moves by the change of 1 / goodput."""
    if not (run_s and demand.checkpoint_bytes > 0 and demand.run_s):
        return None
    base_gp, _ = job_reliability(demand.gpus, nodes, demand.checkpoint_bytes, rel)
    ends = []
    for f in FAILURE_RATE_FACTORS:
        r = replace(rel, failure_rate_per_gpu_hour=rel.failure_rate_per_gpu_hour * f)
        gp, _ = job_reliability(demand.gpus, nodes, demand.checkpoint_bytes, r)
        ends.append(at_time(run_s * base_gp.goodput / gp.goodput))
    base_t = run_s
    return swing(
        "failure rate",
        (f"x{FAILURE_RATE_FACTORS[0]:g}", f"x{FAILURE_RATE_FACTORS[1]:g}"),
        at_time(base_t),
        ends[0],
        ends[1],
    )


def _bandwidth_swing(demand: Demand, base: Point, at_time: Any) -> Swing | None:
    if not (demand.step_s_by_nic_gbps and demand.step_s):
        return None
    rates = sorted(demand.step_s_by_nic_gbps)
    own = min(rates, key=lambda g: abs(demand.step_s_by_nic_gbps[g] - demand.step_s))  # type: ignore[operator]
    i = rates.index(own)
    if not 0 < i < len(rates) - 1:
        return None
    ratio_lo = demand.step_s_by_nic_gbps[rates[i - 1]] / demand.step_s
    ratio_hi = demand.step_s_by_nic_gbps[rates[i + 1]] / demand.step_s
    return swing(
        "scale-out bandwidth per GPU",
        (f"{rates[i - 1]:g} Gb/s", f"{rates[i + 1]:g} Gb/s"),
        base,
        at_time(base[0] * ratio_lo),
        at_time(base[0] * ratio_hi),
    )


def _price_swing(
    infra: Infrastructure,
    pw: PowerPlan,
    hours: float,
    priced_cost: float | None,
    cloud_headline: bool,
    base: Point,
) -> Swing | None:
    """The cloud price when the headline cost is the cloud's, else the energy price."""
    base_time, base_cost = base
    if priced_cost is None:
        return None
    if cloud_headline:
        return swing(
            "cloud price",
            (f"-{CLOUD_PRICE_RANGE:.0%}", f"+{CLOUD_PRICE_RANGE:.0%}"),
            base,
            (base_time, base_cost * (1 - CLOUD_PRICE_RANGE)),
            (base_time, base_cost * (1 + CLOUD_PRICE_RANGE)),
        )
    usd_per_kwh = infra.cost.electricity_usd_per_kwh or onprem_defaults().power_usd_per_kwh
    energy_usd = pw.facility_power_typical_w / 1000.0 * hours * usd_per_kwh
    return swing(
        "energy price",
        (f"-{ENERGY_PRICE_RANGE:.0%}", f"+{ENERGY_PRICE_RANGE:.0%}"),
        base,
        (base_time, base_cost - energy_usd * ENERGY_PRICE_RANGE),
        (base_time, base_cost + energy_usd * ENERGY_PRICE_RANGE),
    )


def _growth_swing(
    demand: Demand,
    infra: Infrastructure,
    nodes: int,
    gpus_per_node: int,
    per_node_capex: float | None,
    pw: PowerPlan,
    gr: GrowthPlan,
    fab: FabricPlan,
) -> Swing | None:
    """How the horizon's capital moves when every growth rate is scaled."""
    g = infra.growth
    if per_node_capex is None or gr.yearly_need_factor <= 1.0:
        return None
    total = sum(s.added_capex_usd or 0.0 for s in gr.stages)
    capex_ends: list[float] = []
    for f in GROWTH_FACTORS:
        scaled = g.model_copy(
            update={
                "model_growth_per_year": g.model_growth_per_year * f,
                "data_growth_per_year": g.data_growth_per_year * f,
                "traffic_growth_per_year": g.traffic_growth_per_year * f,
            }
        )
        alt = growth_plan(
            demand,
            scaled,
            nodes,
            gpus_per_node,
            per_node_capex,
            pw.facility_power_w,
            fab.max_nodes,
            infra.facility.power_cap_w,
        )
        capex_ends.append(sum(s.added_capex_usd or 0.0 for s in alt.stages))
    return Swing(
        "growth rates (horizon capital)",
        f"x{GROWTH_FACTORS[0]:g}",
        f"x{GROWTH_FACTORS[1]:g}",
        0.0,
        0.0,
        capex_ends[0] / total - 1.0 if total else 0.0,
        capex_ends[1] / total - 1.0 if total else 0.0,
    )
