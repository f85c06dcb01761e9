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
- Spot: the spot price, slowed by preemptions. Each node is preempted at rate p per hour;
  a synchronous job needs all its nodes, so it sees lambda_p = p x nodes. With failures at
  1/M (M the cluster MTBF), the checkpoint interval tau and restart R the run already plans
  for, Young's interval for the higher interruption rate lambda = 1/M + lambda_p is
  tau_s = tau sqrt((1/M) / lambda): each preemption loses half an interval plus a restart,
  and the shorter interval writes more checkpoints. The wall time per unit of useful work
  under exponential interruptions is Daly's complete model (Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps"):

      F(lambda, tau) = exp(lambda R) (exp(lambda (tau + delta)) - 1) / (lambda tau)

  (-> (1 + delta / tau) as lambda -> 0; to first order it is the Young/Daly form that
  `sizing.reliability` uses), with delta = tau^2 / (2M) the blocking checkpoint write that
  makes tau Young's interval. The spot run takes run_s x F(lambda, tau_s) / F(1/M, tau):
  exactly run_s with no preemptions. The complete model matters here: once preemptions
  come faster than restarts finish, the first-order form understates the loss many times
  over. A service (no checkpoint interval) loses R of a replica per preemption of any of its
  nodes: capacity factor 1 + p x nodes-per-replica x R.

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
from dataclasses import dataclass, field
from typing import Any

from rightsize.catalog.loader import Sourced
from rightsize.catalog.nodes import NodeType
from rightsize.catalog.prices import (
    CloudPrice,
    NodeCapex,
    OnPremDefaults,
    cloud_price,
    node_capex,
    onprem_defaults,
)
from rightsize.catalog.reliability import reliability
from rightsize.constants import HOUR_S, HOURS_PER_MONTH, HOURS_PER_YEAR
from rightsize.errors import BadInput
from rightsize.search.demand import Demand
from rightsize.spec.infrastructure import Cost

MONTH_S = HOURS_PER_MONTH * HOUR_S
MILLION = 1e6
DEPLOYMENTS = ("cloud", "onprem", "both")
_TERMS_H = {"reserved_1y": HOURS_PER_YEAR, "reserved_3y": 3 * HOURS_PER_YEAR}


def _src(name: str, s: Sourced) -> dict[str, Any]:
    return {"figure": name, "value": s.value, "source": s.source, "as_of": s.as_of}


def _per_million(usd: float | None, units: float | None) -> float | None:
    if usd is None or not units:
        return None
    return usd / units * MILLION


# --- spot ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpotSlowdown:
    """How much longer a run takes on spot; `factor` multiplies the on-demand wall time."""

    factor: float
    preemptions_per_hour: float  # whole job: per node-hour x nodes
    interval_s: float | None  # checkpoint interval on spot
    lost_s_per_preemption: float  # half an interval + restart
    extra_checkpoints_per_run: float | None


def daly_wall_factor(rate_per_s: float, interval_s: float, write_s: float, restart_s: float) -> float:
    """Wall time per unit of useful work with exponential interruptions (Daly 2006, complete model)."""
    if rate_per_s == 0:
        return 1.0 + write_s / interval_s
    x = rate_per_s * (interval_s + write_s)
    return math.exp(rate_per_s * restart_s) * math.expm1(x) / (rate_per_s * interval_s)


def spot_slowdown(
    preemptions_per_node_hour: float,
    nodes: int,
    mtbf_s: float,
    restart_s: float,
    checkpoint_interval_s: float | None,
    run_s: float | None,
) -> SpotSlowdown:
    """Wall-time factor of running on spot (formulas in the module docstring).

    `nodes` is how many nodes must all be up at once: the whole job for training, one
    replica's nodes for a service (then `checkpoint_interval_s` is None).
    """
    lam_p_h = preemptions_per_node_hour * nodes
    lam_p = lam_p_h / HOUR_S
    if checkpoint_interval_s is None:
        return SpotSlowdown(1.0 + lam_p * restart_s, lam_p_h, None, restart_s, None)
    tau = checkpoint_interval_s
    lam_f = 1.0 / mtbf_s
    lam = lam_f + lam_p
    delta = tau**2 / (2.0 * mtbf_s)
    tau_s = tau * math.sqrt(lam_f / lam)
    base = daly_wall_factor(lam_f, tau, delta, restart_s)
    spot = daly_wall_factor(lam, tau_s, delta, restart_s)
    extra = None
    if run_s is not None:
        useful_s = run_s / base
        extra = useful_s / tau_s - useful_s / tau
    return SpotSlowdown(spot / base, lam_p_h, tau_s, tau_s / 2.0 + restart_s, extra)


# --- the plan -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CloudOption:
    """One way of renting: its GPU-hour price and what the work costs with it."""

    option: str  # on_demand, reserved_1y, reserved_3y, spot
    usd_per_gpu_hour: float
    usd_per_run: float | None  # what one run pays (None for a service)
    usd_per_month: float  # a service's or recurring jobs' month; a one-off's burn rate while running
    usd_per_million_units: float | None
    pays: str  # what the per-run figure is
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "usd_per_run": self.usd_per_run,
            "usd_per_month": self.usd_per_month,
            "usd_per_million_units": self.usd_per_million_units,
            "pays": self.pays,
            **self.details,
        }


@dataclass(frozen=True)
class OnPremCost:
    capex_usd: float
    capex_breakdown_usd: dict[str, float]
    amortisation_years: float
    usd_per_year: float
    usd_per_year_breakdown: dict[str, float]
    usd_per_gpu_hour_owned: float  # every hour of the year, busy or not
    utilisation_fraction: float
    usd_per_useful_gpu_hour: float
    usd_per_run: float | None
    usd_per_month: float
    usd_per_million_units: float | None
    facility_power_w: float
    it_power_w: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "capex_usd": self.capex_usd,
            "capex_breakdown_usd": dict(self.capex_breakdown_usd),
            "amortisation_years": self.amortisation_years,
            "usd_per_year": self.usd_per_year,
            "usd_per_year_breakdown": dict(self.usd_per_year_breakdown),
            "tco_over_amortisation_usd": self.usd_per_year * self.amortisation_years,
            "usd_per_gpu_hour_owned": self.usd_per_gpu_hour_owned,
            "utilisation_fraction": self.utilisation_fraction,
            "usd_per_useful_gpu_hour": self.usd_per_useful_gpu_hour,
            "usd_per_run": self.usd_per_run,
            "usd_per_month": self.usd_per_month,
            "usd_per_million_units": self.usd_per_million_units,
            "facility_power_w": self.facility_power_w,
            "it_power_w": self.it_power_w,
        }


@dataclass(frozen=True)
class CostPlan:
    deployment: str
    accelerator: str
    node: str
    nodes: int
    gpus_used: int
    gpus_billed: int  # whole nodes
    schedule: str  # one-off, recurring, continuous
    run_s: float | None
    runs_per_month: float | None
    work_unit: str
    work_units_per_run: float | None
    work_units_per_month: float | None
    cloud: dict[str, CloudOption] | None
    cloud_unavailable: str | None
    onprem: OnPremCost | None
    onprem_unavailable: str | None
    breakeven_utilisation: dict[str, float] | None  # cloud option -> u*
    notes: tuple[str, ...] = ()
    sources: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment,
            "accelerator": self.accelerator,
            "node": self.node,
            "nodes": self.nodes,
            "gpus_used": self.gpus_used,
            "gpus_billed": self.gpus_billed,
            "schedule": self.schedule,
            "run_s": self.run_s,
            "runs_per_month": self.runs_per_month,
            "work_unit": self.work_unit,
            "work_units_per_run": self.work_units_per_run,
            "work_units_per_month": self.work_units_per_month,
            "cloud": None if self.cloud is None else {k: v.as_dict() for k, v in self.cloud.items()},
            "cloud_unavailable": self.cloud_unavailable,
            "onprem": None if self.onprem is None else self.onprem.as_dict(),
            "onprem_unavailable": self.onprem_unavailable,
            "breakeven_utilisation_fraction": (
                None if self.breakeven_utilisation is None else dict(self.breakeven_utilisation)
            ),
            "notes": list(self.notes),
            "sources": [dict(s) for s in self.sources],
        }


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
        units_month = demand.work_units_per_s * demand.duty_cycle * MONTH_S
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
    slow: SpotSlowdown,
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

    od_run, od_month = run_used(price.on_demand), month_used(price.on_demand)
    options["on_demand"] = CloudOption(
        "on_demand", price.on_demand, od_run, od_month, per_million(od_run, od_month), "hours used"
    )

    for name, rate in (("reserved_1y", price.reserved_1y), ("reserved_3y", price.reserved_3y)):
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
                "beats_on_demand_above_fraction": rate / price.on_demand,
            },
        )

    sp_run, sp_month = run_used(price.spot, slow.factor), month_used(price.spot, slow.factor)
    options["spot"] = CloudOption(
        "spot",
        price.spot,
        sp_run,
        sp_month,
        per_million(sp_run, sp_month),
        "hours used, lengthened by preemptions",
        {
            "slowdown_factor": slow.factor,
            "effective_usd_per_gpu_hour": price.spot * slow.factor,
            "preemptions_per_hour": slow.preemptions_per_hour,
            "preemptions_per_run": None
            if work.run_s is None
            else slow.preemptions_per_hour * work.run_h * slow.factor,
            "lost_s_per_preemption": slow.lost_s_per_preemption,
            "checkpoint_interval_s": slow.interval_s,
            "extra_checkpoints_per_run": slow.extra_checkpoints_per_run,
            "wall_s": None if work.run_s is None else work.run_s * slow.factor,
        },
    )
    return options


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
    rel = reliability()

    cloud: dict[str, CloudOption] | None = None
    cloud_missing: str | None = None
    if deployment in ("cloud", "both"):
        try:
            price = cloud_price(demand.accelerator)
        except BadInput as exc:
            if deployment == "cloud":
                raise _asked(deployment, exc) from None
            cloud_missing = exc.message()
        else:
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
            slow = spot_slowdown(per_node_h, together, mtbf, restart, checkpoint_interval_s, run_s)
            cloud = _cloud(price, gpus, work, storage_cloud_usd_per_month, slow)
            if slow.factor > 1.5:
                notes.append(
                    f"spot: {slow.preemptions_per_hour:.3g} preemptions/h make the work {slow.factor:.3g}x longer;"
                    " spot does not suit a job of this size"
                )
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
            defaults = onprem_defaults()
            if it_power_w <= 0:
                it_power_w = node.max_power_w * nodes
                notes.append("IT power not given: nodes x the node's max power")
                sources.append(_src(f"nodes.{node.id}.max_power_w", node.sources["max_power_w"]))
            if facility_power_w <= 0:
                facility_power_w = it_power_w * defaults.pue
                notes.append("facility power not given: IT power x the catalog PUE")
                sources.append(_src("prices.onprem_defaults.pue", defaults.sources["pue"]))
            onprem = _onprem(
                capex,
                defaults,
                cost,
                nodes,
                gpus,
                work,
                network_capex_usd,
                storage_capex_usd,
                facility_power_w,
                it_power_w,
            )
            sources.append(_src(f"prices.onprem.{capex.node}.capex_usd", capex.source))
            used = {"facility_usd_per_kw_per_month", "operations_fraction_of_capex_per_year"}
            if cost.amortisation_years is None:
                used.add("amortisation_years")
            if cost.electricity_usd_per_kwh is None:
                used.add("power_usd_per_kwh")
            sources += [
                _src(f"prices.onprem_defaults.{k}", v) for k, v in defaults.sources.items() if k in used
            ]
            notes.append("owned cluster powered all year at the facility power (conservative)")

    breakeven: dict[str, float] | None = None
    if cloud is not None and onprem is not None:
        storage_per_gpu_h = storage_cloud_usd_per_month / (HOURS_PER_MONTH * gpus)
        breakeven = {}
        for name, opt in cloud.items():
            rate = opt.details.get("effective_usd_per_gpu_hour", opt.usd_per_gpu_hour)
            breakeven[name] = breakeven_utilisation(onprem.usd_per_gpu_hour_owned, rate + storage_per_gpu_h)
        if all(u > 1.0 for u in breakeven.values()):
            notes.append("renting is cheaper than owning at every utilisation for every cloud option")

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
    )
