"""What a plan costs in the cloud and on premises, and the utilisation at which owning pays.

Cloud (USD per GPU-hour derived from the instance prices in ``prices.yaml`` and ``shapes.yaml``;
instances are rented whole, so the billed GPUs are those of the cheapest whole instances that
hold each replica, `catalog.billing`: a 1-GPU plan on a 1-GPU shape where one is sold, whole
nodes where none is or a replica spans nodes; a TPU plan on the VMs of its slices, each at its
chips x the rate per chip-hour). A job runs `run_s` seconds (its goodput-adjusted wall time); a
service runs all month (730 h). Cloud storage (`storage_cloud_usd_per_month`) is added for
the time it is held.

- On-demand: the hours used.
- Reserved 1 or 3 years: a commitment is paid for every hour of its term, used or not.
  `committed_usd` is the whole term, `monthly_payment_usd` a month of it, `used_hours_usd`
  the hours the work uses and `idle_usd` the rest. A one-off run is charged
  `used_hours_usd / u`, u the utilisation assumed for owned hardware
  (`cost.onprem_utilisation`): the rest of the term is taken as filled by other work at
  the same rate an owned cluster is, so the two compare like for like (the whole
  commitment stays stated beside it). Recurring runs share the committed hours of each
  month; a service uses them all. A commitment beats on-demand once it is busy more than
  reserved / on-demand of its hours.
- Spot: the spot price x the wall-time factor of preemptions x (nodes + spare pool) / nodes,
  from `sizing.spot` (per-node preemption rates from the price catalog, checkpoint-restart
  by Daly's complete model, a spare pool sized to the preemptions in one replacement time;
  a service under latency SLOs keeps a replica's nodes spare). Where spot would cost no
  less than on-demand, stretch the run beyond `spot.SPOT_MAX_SLOWDOWN`, or put one
  synchronous job on more than `spot.SPOT_MAX_SYNC_NODES` nodes, it is marked not
  applicable with the reason, and has no cost; where the provider sells no spot for the
  instance (the price record's spot is null) there is no spot figure at all, only why.

Every option also states the billed instance's price per hour, its date, and a note when
that date is more than `prices.STALE_AFTER_MONTHS` before the plan. Per-unit figures
(`usd_per_million_units`) are the period's bill over the work served in it
(`search.serving_costs.per_million`; a service's work at its average rate).

On premises (owning; figures from ``prices.yaml`` unless the spec's `cost:` overrides):

    capex  = node capex x nodes + network capex + storage capex
    annual = capex / amortisation years
           + facility power (PUE included) x 8760 h x $/kWh   (powered all year: conservative)
           + IT power (kW) x facility $/kW-month x 12
           + operations fraction x capex
    $/GPU-hour owned        = annual / (GPUs x 8760)
    $/useful GPU-hour       = $/GPU-hour owned / onprem_utilisation

A job is charged its GPU-hours at the useful rate; a month costs annual / 12 whatever runs.

Break-even: owning matches a cloud price c (per GPU-hour, cloud storage included) when
annual / (GPUs x 8760 x u) = c, i.e. u* = ($/GPU-hour owned) / c. Above u* owning is
cheaper; u* > 1 means renting is cheaper even for a cluster busy every hour.

Missing prices: with deployment "cloud" (or "onprem") the user asked for exactly that
costing, so a missing price is a `BadInput` naming the accelerator (or node) and
``prices.yaml``. With "both" the side that has no price is reported as unavailable, with
the reason, and the plan still costs the other side.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.catalog.billing import Billing, smaller_shapes
from rightsize.catalog.loader import Sourced
from rightsize.catalog.nodes import NodeType
from rightsize.catalog.prices import (
    ON_DEMAND,
    RESERVED_1Y,
    RESERVED_3Y,
    SPOT,
    CloudPrice,
    NodeCapex,
    OnPremDefaults,
    active_prices,
    cloud_price,
    node_capex,
    onprem_defaults,
    spot_replacement,
    stale_note,
)
from rightsize.catalog.providers import choice_note
from rightsize.catalog.reliability import reliability
from rightsize.constants import HOUR_S, HOURS_PER_MONTH, HOURS_PER_YEAR
from rightsize.errors import BadInput
from rightsize.search.demand import Demand
from rightsize.search.serving_costs import billing
from rightsize.sizing.cloud_cost import Work, cloud_options, per_million_of, period_hours, work_of
from rightsize.sizing.cost_records import CloudOption, CostPlan, OnPremCost
from rightsize.sizing.spot import SpotSlowdown, daly_wall_factor, plan_spot, spot_slowdown
from rightsize.spec.infrastructure import Cost

# The records (cost_records) and the spot model's pieces are re-exported.
__all__ = [
    "CloudOption",
    "CostPlan",
    "OnPremCost",
    "SpotSlowdown",
    "daly_wall_factor",
    "size_cost",
    "spot_slowdown",
]

DEPLOYMENTS = ("cloud", "onprem", "both")


def _src(name: str, s: Sourced) -> dict[str, Any]:
    return {"figure": name, "value": s.value, "source": s.source, "as_of": s.as_of}


def _onprem(
    capex: NodeCapex,
    defaults: OnPremDefaults,
    cost: Cost,
    nodes: int,
    gpus: int,
    work: Work,
    network_capex_usd: float,
    storage_capex_usd: float,
    facility_power_w: float,
    it_power_w: float,
) -> OnPremCost:
    years = cost.amortisation_years or defaults.amortisation_years
    kwh = cost.electricity_usd_per_kwh or defaults.power_usd_per_kwh
    capex_parts = {
        "nodes": capex.capex_usd * nodes,
        "network": network_capex_usd,
        "storage": storage_capex_usd,
    }
    total_capex = sum(capex_parts.values())
    year_parts = {
        "amortisation": total_capex / years,
        "energy": facility_power_w / 1e3 * HOURS_PER_YEAR * kwh,
        "facility": it_power_w / 1e3 * defaults.facility_usd_per_kw_per_month * 12.0,
        "operations": defaults.operations_fraction_of_capex_per_year * total_capex,
    }
    annual = sum(year_parts.values())
    owned = annual / (gpus * HOURS_PER_YEAR)
    useful = owned / cost.onprem_utilisation
    month = annual / 12.0
    run = None if work.run_s is None else gpus * work.run_h * useful
    per_m = (
        per_million_of(month, work.units_per_month)
        if work.schedule == "continuous"
        else per_million_of(run, work.units_per_run)
    )
    return OnPremCost(
        capex_usd=total_capex,
        capex_breakdown_usd=capex_parts,
        amortisation_years=years,
        usd_per_year=annual,
        usd_per_year_breakdown=year_parts,
        usd_per_gpu_hour_owned=owned,
        utilisation_fraction=cost.onprem_utilisation,
        usd_per_useful_gpu_hour=useful,
        usd_per_run=run,
        usd_per_month=month,
        usd_per_million_units=per_m,
        facility_power_w=facility_power_w,
        it_power_w=it_power_w,
    )


def breakeven_utilisation(owned_usd_per_gpu_hour: float, cloud_usd_per_gpu_hour: float) -> float:
    """Share of hours an owned cluster must be busy for its useful GPU-hour to cost `cloud`."""
    return owned_usd_per_gpu_hour / cloud_usd_per_gpu_hour


def _asked(deployment: str, exc: BadInput) -> BadInput:
    """A missing price when the user asked for exactly that side's costing."""
    other = "onprem" if deployment == "cloud" else "cloud"
    return BadInput(
        f"deployment: {deployment} was asked, but there is n{exc.what[1:]}",
        exc.why,
        f"{exc.fix} Or set infrastructure.facility.deployment to '{other}' or 'both'"
        " ('both' reports the side that has prices and says which one has none).",
    )


def _cloud_options(
    demand: Demand,
    node: NodeType,
    nodes: int,
    billed: Billing,
    work: Any,
    storage_cloud_usd_per_month: float,
    cost: Cost,
    timing: tuple[float | None, float | None, float | None, float | None],
    notes: list[str],
    sources: list[dict[str, Any]],
) -> dict[str, CloudOption]:
    """The cloud options at `price` (on demand, reserved, spot with its preemption model);
    `timing` is (run, checkpoint interval, restart, cluster MTBF) seconds; what was assumed
    goes to `notes` and `sources`. Priced on `billed`, the instances rented."""
    price = billed.price
    run_s, checkpoint_interval_s, restart_s, mtbf_s = timing
    rel = reliability()
    per_node_h = (
        cost.spot_preemption_per_hour
        if cost.spot_preemption_per_hour is not None
        else price.spot_preemptions_per_hour
    )
    mtbf = mtbf_s if mtbf_s is not None else HOUR_S / (demand.gpus * rel.failure_rate_per_gpu_hour)
    restart = restart_s if restart_s is not None else rel.restart_s
    together = nodes
    if run_s is None:  # a service: one replica's nodes fail together, not the fleet's
        per_replica = demand.gpus_per_replica or node.gpus_per_node
        together = max(1, math.ceil(per_replica / node.gpus_per_node))
        checkpoint_interval_s = None
    spot = None
    if price.spot is not None:
        slow = spot_slowdown(per_node_h, together, mtbf, restart, checkpoint_interval_s, run_s)
        replacement = spot_replacement()
        slo = together if run_s is None and demand.workload == "serving" else None
        spot = plan_spot(slow, nodes, price.spot, price.on_demand, replacement.value, run_s is not None, slo)
        if slo and spot.applicable:
            notes.append(
                f"spot for a service under latency SLOs: over-provisioned by {spot.spare_nodes} spare "
                f"node{'s' if spot.spare_nodes != 1 else ''} (a replica's worth), billed at the spot price, "
                "so a preemption takes spare capacity, not the capacity the SLO is sized on"
            )
        if not spot.applicable:
            notes.append(f"spot is not applicable: {spot.reason}")
        elif spot.spare_nodes:
            sources.append(_src("prices.spot.replacement_s", replacement))
    cloud = cloud_options(
        price, billed.gpus, work, storage_cloud_usd_per_month, spot, cost.onprem_utilisation
    )
    _date_prices(cloud, price, notes)
    sources += [_src(f"prices.cloud.{price.accelerator}.{k}", v) for k, v in price.sources.items()]
    if cost.spot_preemption_per_hour is not None:
        notes.append("spot preemption rate from the spec's cost.spot_preemption_per_hour")
    if mtbf_s is None:
        sources.append(
            _src("reliability.failure_rate_per_gpu_hour", rel.sources["failure_rate_per_gpu_hour"])
        )
    if restart_s is None:
        sources.append(_src("reliability.restart_s", rel.sources["restart_s"]))
    if work.schedule == "one-off":
        notes.append("a one-off run's usd_per_month is the burn rate while it runs")
    return cloud


_COLUMNS = {"on_demand": ON_DEMAND, "reserved_1y": RESERVED_1Y, "reserved_3y": RESERVED_3Y, "spot": SPOT}


def _date_prices(cloud: dict[str, CloudOption], price: CloudPrice, notes: list[str]) -> None:
    """Each option's instance price, its date, and a note next to a stale one."""
    for name, opt in cloud.items():
        column = _COLUMNS.get(name)
        figure = price.sources.get(column) if column else None
        if figure is None:
            continue
        stale = stale_note(figure)
        opt.details["usd_per_instance_hour"] = price.instance_rate(column) if column else None
        opt.details["price_as_of"] = figure.as_of
        opt.details["price_stale"] = stale
        if stale:
            notes.append(f"{name.replace('_', ' ')} {stale}")


def _owned(
    capex: Any,
    node: NodeType,
    nodes: int,
    work: Any,
    cost: Cost,
    other_capex_usd: tuple[float, float],
    power_w: tuple[float, float],
    notes: list[str],
    sources: list[dict[str, Any]],
) -> OnPremCost:
    """The owned cluster's cost (`other_capex_usd`: network and storage; `power_w`: facility
    and IT, each taken from the node's nameplate and the catalog PUE when not given); what
    was assumed goes to `notes` and `sources`."""
    defaults = onprem_defaults()
    facility_power_w, it_power_w = power_w
    if it_power_w <= 0:
        it_power_w = node.max_power_w * nodes
        notes.append("IT power not given: nodes x the node's max power")
        sources.append(_src(f"nodes.{node.id}.max_power_w", node.sources["max_power_w"]))
    if facility_power_w <= 0:
        facility_power_w = it_power_w * defaults.pue
        notes.append("facility power not given: IT power x the catalog PUE")
        sources.append(_src("prices.onprem_defaults.pue", defaults.sources["pue"]))
    network_capex_usd, storage_capex_usd = other_capex_usd
    onprem = _onprem(
        capex, defaults, cost, nodes, nodes * node.gpus_per_node, work,
        network_capex_usd, storage_capex_usd, facility_power_w, it_power_w,
    )  # fmt: skip
    sources.append(_src(f"prices.onprem.{capex.node}.capex_usd", capex.source))
    used = {"facility_usd_per_kw_per_month", "operations_fraction_of_capex_per_year"}
    if cost.amortisation_years is None:
        used.add("amortisation_years")
    if cost.electricity_usd_per_kwh is None:
        used.add("power_usd_per_kwh")
    sources += [_src(f"prices.onprem_defaults.{k}", v) for k, v in defaults.sources.items() if k in used]
    notes.append("owned cluster powered all year at the facility power (conservative)")
    return onprem


def _breakeven(
    cloud: dict[str, CloudOption],
    onprem: OnPremCost,
    storage_cloud_usd_per_month: float,
    gpus: int,
    notes: list[str],
) -> dict[str, float]:
    """Per cloud option, the utilisation above which owning is cheaper than renting."""
    storage_per_gpu_h = storage_cloud_usd_per_month / (HOURS_PER_MONTH * gpus)
    breakeven: dict[str, float] = {}
    for name, opt in cloud.items():
        if opt.details.get("applicable") is False:
            continue
        rate = opt.details.get("effective_usd_per_gpu_hour") or opt.usd_per_gpu_hour
        if rate is None:  # not sold for this instance
            continue
        breakeven[name] = breakeven_utilisation(onprem.usd_per_gpu_hour_owned, rate + storage_per_gpu_h)
    if all(u > 1.0 for u in breakeven.values()):
        notes.append("renting is cheaper than owning at every utilisation for every cloud option")
    return breakeven


def _priced(billed: Billing) -> str:
    """The instance the cloud prices are for: 'gcp ct6e-standard-1t (1 chip) in us-east1' for a
    TPU VM (its chips at the rate per chip-hour), the record's own words otherwise."""
    main = billed.main
    inst = main.price.instance
    if inst is None:
        return "per GPU-hour, as given (no instance named)"
    if main.tpu_vm is None:
        return inst.describe()
    return (
        f"{inst.provider} {inst.instance} ({inst.gpus} chip{'s' if inst.gpus != 1 else ''}) in {inst.region}"
    )


def _shape_note(billed: Billing, node_price: CloudPrice, nodes: int) -> str:
    """What a plan billed on instance shapes smaller than its node pays, and what whole nodes would."""
    if billed.main.tpu_vm is not None:  # the slices' VMs, at the price list's rate per chip-hour
        listed = node_price.instance
        quoted = f" (the price list quotes {listed.instance})" if listed is not None else ""
        return (
            f"billed on {billed.describe()}, ${billed.on_demand_usd_per_hour:,.2f}/h on demand: the VMs of the "
            f"TPU slices the plan runs (catalog/data/tpu_vms.yaml), each at its chips x the rate per "
            f"chip-hour{quoted}, as Google prices Cloud TPU per chip-hour"
        )
    whole = node_price.instance_rate(ON_DEMAND)
    alt = (
        f"; {nodes} whole {node_price.instance.describe()} would cost ${whole * nodes:,.2f}/h"
        if whole is not None and node_price.instance is not None
        else ""
    )
    return (
        f"billed on {billed.describe()}, ${billed.on_demand_usd_per_hour:,.2f}/h on demand: the cheapest whole "
        f"instances that hold each replica (catalog/data/shapes.yaml){alt}"
    )


def _idle_note(billed_gpus: int, used: int, billed: Billing | None) -> str:
    """Why GPUs are billed beyond those used: whole instances, and which."""
    if billed is None:
        return f"{billed_gpus} GPUs billed for {used} used: whole nodes are rented and bought"
    if billed.main.tpu_vm is not None:
        return (
            f"{billed_gpus} chips billed for {used} used: Google grants whole slices of the shapes it "
            f"offers, on their VMs ({billed.describe()})"
        )
    if billed.whole_nodes:
        return (
            f"{billed_gpus} GPUs billed for {used} used: whole nodes are rented ({billed.describe()}); "
            "no smaller instance shape in the price catalog holds the replicas for less"
        )
    return f"{billed_gpus} GPUs billed for {used} used: instances come whole ({billed.describe()})"


def size_cost(
    demand: Demand,
    node: NodeType,
    nodes: int,
    run_s: float | None,
    network_capex_usd: float,
    storage_capex_usd: float,
    storage_cloud_usd_per_month: float,
    facility_power_w: float,
    it_power_w: float,
    checkpoint_interval_s: float | None,
    restart_s: float | None,
    cost: Cost,
    deployment: str,
    *,
    mtbf_s: float | None = None,
) -> CostPlan:
    """Cloud (on-demand, reserved, spot) and on-premises cost of `nodes` nodes running `demand`.

    `run_s` is one run's goodput-adjusted wall time (None: a continuous service, costed per
    730-hour month). `mtbf_s` (cluster MTBF) and `restart_s` default to the reliability catalog.

    Longer than 80 lines for one reason: its signature (the sizing stages' figures, one argument each) and
    the CostPlan record it fills; the costing lives in `_cloud_options`, `_owned` and
    `_breakeven`.
    """
    if deployment not in DEPLOYMENTS:
        raise BadInput(
            f"Unknown deployment '{deployment}'.",
            f"Known: {', '.join(DEPLOYMENTS)}.",
            "Set infrastructure.facility.deployment to one of them.",
        )
    if nodes < 1:
        raise BadInput(f"Cannot cost {nodes} nodes.", "A plan needs at least one node.")
    gpus = nodes * node.gpus_per_node  # bought (on premises), and billed when the cloud is unpriced
    work = work_of(demand, run_s)
    notes: list[str] = []
    sources: list[dict[str, Any]] = []
    billed: Billing | None = None
    billed_on: str | None = None

    cloud: dict[str, CloudOption] | None = None
    cloud_missing: str | None = None
    priced: str | None = None
    if deployment in ("cloud", "both"):
        try:
            price = cloud_price(demand.accelerator)
        except BadInput as exc:
            if deployment == "cloud":
                raise _asked(deployment, exc) from None
            cloud_missing = exc.message()
        else:
            billed = billing(demand.accelerator, demand.gpus, node.gpus_per_node, demand.gpus_per_replica)
            assert billed is not None  # priced: cloud_price found a record
            cloud = _cloud_options(
                demand, node, nodes, billed, work, storage_cloud_usd_per_month, cost,
                (run_s, checkpoint_interval_s, restart_s, mtbf_s), notes, sources,
            )  # fmt: skip
            priced = _priced(billed)
            billed_on = billed.describe()
            chosen = choice_note(active_prices(), price.accelerator)
            if chosen and billed.whole_nodes:
                notes.append(chosen)
            elif not billed.whole_nodes:
                notes.append(_shape_note(billed, price, nodes))
    cloud_gpus = billed.gpus if billed is not None else gpus
    if cloud_gpus > demand.gpus:
        notes.append(_idle_note(cloud_gpus, demand.gpus, billed))
    if billed is not None and gpus > demand.gpus and deployment != "cloud":
        notes.append(f"{gpus} GPUs bought for {demand.gpus} used on premises: a server is bought whole")

    onprem: OnPremCost | None = None
    onprem_missing: str | None = None
    if deployment in ("onprem", "both"):
        try:
            capex = node_capex(node.id)
        except BadInput as exc:
            if deployment == "onprem":
                raise _asked(deployment, exc) from None
            onprem_missing = exc.message()
        else:
            onprem = _owned(
                capex, node, nodes, work, cost, (network_capex_usd, storage_capex_usd),
                (facility_power_w, it_power_w), notes, sources,
            )  # fmt: skip

    breakeven: dict[str, float] | None = None
    if cloud is not None and onprem is not None:
        breakeven = _breakeven(cloud, onprem, storage_cloud_usd_per_month, cloud_gpus, notes)

    return CostPlan(
        deployment=deployment,
        accelerator=demand.accelerator,
        node=node.id,
        nodes=nodes,
        gpus_used=demand.gpus,
        gpus_billed=cloud_gpus,
        schedule=work.schedule,
        run_s=run_s,
        runs_per_month=work.runs_per_month,
        work_unit=demand.work_unit,
        work_units_per_run=work.units_per_run,
        work_units_per_month=work.units_per_month,
        cloud=cloud,
        cloud_unavailable=cloud_missing,
        onprem=onprem,
        onprem_unavailable=onprem_missing,
        breakeven_utilisation=breakeven,
        notes=tuple(notes),
        sources=tuple(sources),
        priced_instance=priced,
        billed_instances=billed_on,
        billed_on_whole_nodes=billed.whole_nodes if billed is not None else True,
        smaller_shape_holds_replica=billed is not None  # rented: on premises a server is bought whole
        and any(
            s.instance is not None and s.instance.gpus >= (demand.gpus_per_replica or demand.gpus)
            for s in smaller_shapes(demand.accelerator, node.gpus_per_node)
        ),
        **period_hours(work, cloud_gpus, demand.gpus, storage_cloud_usd_per_month),
    )
