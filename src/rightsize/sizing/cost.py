"""What a plan costs in the cloud and on premises, and the utilisation at which owning pays.

Cloud (USD per GPU-hour from ``prices.yaml``; instances are rented whole, so the billed GPUs
are nodes x GPUs per node). A job runs `run_s` seconds (its goodput-adjusted wall time); a
service runs all month (730 h). Cloud storage (`storage_cloud_usd_per_month`) is added for
the time it is held.

- On-demand: the hours used.
- Reserved 1 or 3 years: a commitment is paid for every hour of its term, used or not.
  `committed_usd` is the whole term, `used_hours_usd` the hours the work uses. A one-off
  run pays the whole commitment (nothing else uses the rest of the term); recurring runs
  share the committed hours of each month; a service uses them all. A commitment beats
  on-demand once it is busy more than reserved / on-demand of its hours.
- Spot: the spot price x the wall-time factor of preemptions x (nodes + spare pool) / nodes,
  from `sizing.spot` (per-node preemption rates from the price catalog, checkpoint-restart
  by Daly's complete model, a spare pool sized to the preemptions in one replacement time).
  Where spot would cost no less than on-demand or stretch the run beyond
  `spot.SPOT_MAX_SLOWDOWN`, it is marked not applicable with the reason, and has no cost.

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
from dataclasses import dataclass
from typing import Any

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
    cloud_price,
    node_capex,
    onprem_defaults,
    spot_replacement,
    stale_note,
)
from rightsize.catalog.reliability import reliability
from rightsize.constants import HOUR_S, HOURS_PER_MONTH, HOURS_PER_YEAR
from rightsize.errors import BadInput
from rightsize.search.demand import Demand
from rightsize.search.serving_costs import per_million
from rightsize.sizing.cost_records import CloudOption, CostPlan, OnPremCost
from rightsize.sizing.spot import SpotPlan, SpotSlowdown, daly_wall_factor, plan_spot, spot_slowdown
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

MONTH_S = HOURS_PER_MONTH * HOUR_S
MILLION = 1e6
DEPLOYMENTS = ("cloud", "onprem", "both")
_TERMS_H = {"reserved_1y": HOURS_PER_YEAR, "reserved_3y": 3 * HOURS_PER_YEAR}


def _src(name: str, s: Sourced) -> dict[str, Any]:
    return {"figure": name, "value": s.value, "source": s.source, "as_of": s.as_of}


def _per_million(usd: float | None, units: float | None) -> float | None:
    """The period's bill per million units served in it (one definition: search.serving_costs)."""
    return per_million(usd, units)


# --- the plan -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Work:
    """When the cluster works and how much it produces."""

    schedule: str
    run_s: float | None
    run_h: float
    busy_h_per_month: float
    runs_per_month: float | None
    units_per_run: float | None
    units_per_month: float | None


def _work(demand: Demand, run_s: float | None) -> _Work:
    if run_s is None:
        # the average rate served (a service's duty cycle is already in it: not applied twice)
        units_month = demand.work_units_per_s * MONTH_S
        return _Work("continuous", None, HOURS_PER_MONTH, HOURS_PER_MONTH, None, None, units_month)
    units = demand.work_units_total
    if units is None:
        units = demand.work_units_per_s * (demand.run_s if demand.run_s is not None else run_s)
    run_h = run_s / HOUR_S
    if demand.runs_per_month:
        n = demand.runs_per_month
        return _Work("recurring", run_s, run_h, n * run_h, n, units, n * units)
    return _Work("one-off", run_s, run_h, run_h, None, units, None)


def _cloud(
    price: CloudPrice,
    gpus: int,
    work: _Work,
    storage_month: float,
    spot: SpotPlan | None,
) -> dict[str, CloudOption]:
    options: dict[str, CloudOption] = {}
    storage_h = storage_month / HOURS_PER_MONTH

    def month_used(rate: float, factor: float = 1.0) -> float:
        if work.schedule == "one-off":  # burn rate while the run lasts
            return gpus * rate * HOURS_PER_MONTH + storage_month
        return gpus * rate * work.busy_h_per_month * factor + storage_month

    def run_used(rate: float, factor: float = 1.0) -> float | None:
        if work.run_s is None:
            return None
        return (gpus * rate + storage_h) * work.run_h * factor

    def per_million(run: float | None, month: float) -> float | None:
        if work.schedule == "continuous":
            return _per_million(month, work.units_per_month)
        return _per_million(run, work.units_per_run)

    if price.on_demand is not None:
        od_run, od_month = run_used(price.on_demand), month_used(price.on_demand)
        options["on_demand"] = CloudOption(
            "on_demand", price.on_demand, od_run, od_month, per_million(od_run, od_month), "hours used"
        )

    for name, maybe_rate in (("reserved_1y", price.reserved_1y), ("reserved_3y", price.reserved_3y)):
        if maybe_rate is None:  # an accelerator priced by the user without this figure
            continue
        rate = maybe_rate
        term_h = _TERMS_H[name]
        committed = gpus * rate * term_h
        if work.schedule == "one-off":
            terms = max(1, math.ceil(work.run_h / term_h - 1e-9))
            run: float | None = terms * committed + storage_h * work.run_h
            month = gpus * rate * HOURS_PER_MONTH + storage_month
            used = gpus * rate * work.run_h
            pays = "whole commitment (a one-off run leaves the rest of the term unused)"
            busy = work.run_h / (terms * term_h)
        else:
            month = gpus * rate * max(HOURS_PER_MONTH, work.busy_h_per_month) + storage_month
            run = None if work.runs_per_month is None else month / work.runs_per_month
            used = gpus * rate * work.busy_h_per_month * (term_h / HOURS_PER_MONTH)
            busy = min(1.0, work.busy_h_per_month / HOURS_PER_MONTH)
            pays = (
                "every committed hour (a service uses them all)"
                if work.schedule == "continuous"
                else "every committed hour, shared by the month's runs"
            )
        options[name] = CloudOption(
            name,
            rate,
            run,
            month,
            per_million(run, month),
            pays,
            {
                "term_hours": term_h,
                "committed_usd": committed,
                "used_hours_usd": used,
                "commitment_used_fraction": busy,
                "usd_per_used_gpu_hour": rate / busy if busy > 0 else None,
                "beats_on_demand_above_fraction": rate / price.on_demand if price.on_demand else None,
            },
        )

    if price.spot is not None and spot is not None:
        options["spot"] = _spot_option(price.spot, spot, gpus, work, storage_month, per_million)
    elif price.spot is None:  # the provider sells no spot for this instance: no figure, only why
        options["spot"] = _no_spot(price)
    return options


def _no_spot(price: CloudPrice) -> CloudOption:
    what = price.instance.describe() if price.instance else price.accelerator
    why = f"no spot is sold for {what} (the price record has none)"
    return CloudOption(
        "spot",
        None,
        None,
        None,
        None,
        "not applicable: " + why,
        {"applicable": False, "not_applicable_reason": why},
    )


def _spot_option(
    rate: float,
    spot: SpotPlan,
    gpus: int,
    work: _Work,
    storage_month: float,
    per_million: Any,
) -> CloudOption:
    """Spot with its spare pool and preemption slowdown; no cost where it does not apply."""
    slow = spot.slow
    details: dict[str, Any] = {
        "applicable": spot.applicable,
        "not_applicable_reason": spot.reason,
        "slowdown_factor": slow.factor,
        "spare_nodes": spot.spare_nodes,
        "effective_usd_per_gpu_hour": rate * spot.cost_factor if spot.applicable else None,
        "preemptions_per_hour": slow.preemptions_per_hour,
        "preemptions_per_run": None
        if work.run_s is None or not spot.applicable
        else slow.preemptions_per_hour * work.run_h * slow.factor,
        "lost_s_per_preemption": slow.lost_s_per_preemption,
        "checkpoint_interval_s": slow.interval_s,
        "extra_checkpoints_per_run": slow.extra_checkpoints_per_run if spot.applicable else None,
        "wall_s": None if work.run_s is None or not spot.applicable else work.run_s * slow.factor,
    }
    if not spot.applicable:
        return CloudOption("spot", rate, None, None, None, "not applicable: " + (spot.reason or ""), details)
    storage_h = storage_month / HOURS_PER_MONTH
    if work.run_s is None:
        run = None
    else:  # GPUs and spares for the lengthened run, storage held for it
        run = (gpus * rate * spot.cost_factor + storage_h * slow.factor) * work.run_h
    if work.schedule == "one-off":  # burn rate while the run lasts
        month = gpus * rate * spot.cost_factor / slow.factor * HOURS_PER_MONTH + storage_month
    else:
        month = gpus * rate * spot.cost_factor * work.busy_h_per_month + storage_month
    pays = "hours used, lengthened by preemptions" + (
        f", with {spot.spare_nodes} spare nodes" if spot.spare_nodes else ""
    )
    return CloudOption("spot", rate, run, month, per_million(run, month), pays, details)


def _onprem(
    capex: NodeCapex,
    defaults: OnPremDefaults,
    cost: Cost,
    nodes: int,
    gpus: int,
    work: _Work,
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
        _per_million(month, work.units_per_month)
        if work.schedule == "continuous"
        else _per_million(run, work.units_per_run)
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
    price: Any,
    work: Any,
    storage_cloud_usd_per_month: float,
    cost: Cost,
    timing: tuple[float | None, float | None, float | None, float | None],
    notes: list[str],
    sources: list[dict[str, Any]],
) -> dict[str, CloudOption]:
    """The cloud options at `price` (on demand, reserved, spot with its preemption model);
    `timing` is (run, checkpoint interval, restart, cluster MTBF) seconds; what was assumed
    goes to `notes` and `sources`."""
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
    cloud = _cloud(price, nodes * node.gpus_per_node, work, storage_cloud_usd_per_month, spot)
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
    gpus = nodes * node.gpus_per_node
    work = _work(demand, run_s)
    notes: list[str] = []
    sources: list[dict[str, Any]] = []
    if gpus > demand.gpus:
        notes.append(f"{gpus} GPUs billed for {demand.gpus} used: whole nodes are rented and bought")

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
            cloud = _cloud_options(
                demand, node, nodes, price, work, storage_cloud_usd_per_month, cost,
                (run_s, checkpoint_interval_s, restart_s, mtbf_s), notes, sources,
            )  # fmt: skip
            priced = (
                price.instance.describe() if price.instance else "per GPU-hour, as given (no instance named)"
            )

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
        breakeven = _breakeven(cloud, onprem, storage_cloud_usd_per_month, gpus, notes)

    return CostPlan(
        deployment=deployment,
        accelerator=demand.accelerator,
        node=node.id,
        nodes=nodes,
        gpus_used=demand.gpus,
        gpus_billed=gpus,
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
        **_period_hours(work, gpus, demand.gpus, storage_cloud_usd_per_month),
    )


def _period_hours(work: _Work, billed: int, used: int, storage_month: float) -> dict[str, Any]:
    """GPU-hours billed and used and the storage bill of one period (a job's run, a service's or
    recurring jobs' month): billed x the GPU-hour price + storage = the period's on-demand cost."""
    if work.schedule == "continuous" or work.run_s is None:
        return {
            "period": "month",
            "gpu_hours_billed": billed * HOURS_PER_MONTH,
            "gpu_hours_used": used * HOURS_PER_MONTH,
            "storage_usd": storage_month,
        }
    if work.schedule == "recurring":  # storage is held all month; the GPUs only while the runs run
        return {
            "period": "month",
            "gpu_hours_billed": billed * work.busy_h_per_month,
            "gpu_hours_used": used * work.busy_h_per_month,
            "storage_usd": storage_month,
        }
    return {
        "period": "run",
        "gpu_hours_billed": billed * work.run_h,
        "gpu_hours_used": used * work.run_h,
        "storage_usd": storage_month / HOURS_PER_MONTH * work.run_h,
    }
