"""The cloud side of a plan's cost: the work a period holds (`Work`), and each way of renting
it (on demand, 1- and 3-year commitments, spot) as a `CloudOption`. `sizing.cost` documents
the formulas and assembles the plan; this module only prices the options."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rightsize.catalog.prices import CloudPrice
from rightsize.constants import HOUR_S, HOURS_PER_MONTH, HOURS_PER_YEAR
from rightsize.search.demand import Demand
from rightsize.search.serving_costs import per_million
from rightsize.sizing.cost_records import CloudOption
from rightsize.sizing.spot import SpotPlan

MONTH_S = HOURS_PER_MONTH * HOUR_S
TERMS_H = {"reserved_1y": HOURS_PER_YEAR, "reserved_3y": 3 * HOURS_PER_YEAR}


def per_million_of(usd: float | None, units: float | None) -> float | None:
    """The period's bill per million units served in it (one definition: search.serving_costs)."""
    return per_million(usd, units)


# --- the plan -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    """When the cluster works and how much it produces."""

    schedule: str
    run_s: float | None
    run_h: float
    busy_h_per_month: float
    runs_per_month: float | None
    units_per_run: float | None
    units_per_month: float | None


def work_of(demand: Demand, run_s: float | None) -> Work:
    if run_s is None:
        # the average rate served (a service's duty cycle is already in it: not applied twice)
        units_month = demand.work_units_per_s * MONTH_S
        return Work("continuous", None, HOURS_PER_MONTH, HOURS_PER_MONTH, None, None, units_month)
    units = demand.work_units_total
    if units is None:
        units = demand.work_units_per_s * (demand.run_s if demand.run_s is not None else run_s)
    run_h = run_s / HOUR_S
    if demand.runs_per_month:
        n = demand.runs_per_month
        return Work("recurring", run_s, run_h, n * run_h, n, units, n * units)
    return Work("one-off", run_s, run_h, run_h, None, units, None)


def cloud_options(
    price: CloudPrice,
    gpus: int,
    work: Work,
    storage_month: float,
    spot: SpotPlan | None,
    utilisation: float,
) -> dict[str, CloudOption]:
    """The cloud options; `utilisation` is the share of a commitment's (or an owned cluster's)
    hours other work fills, the one assumption both are costed per run with."""
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
            return per_million_of(month, work.units_per_month)
        return per_million_of(run, work.units_per_run)

    if price.on_demand is not None:
        od_run, od_month = run_used(price.on_demand), month_used(price.on_demand)
        options["on_demand"] = CloudOption(
            "on_demand", price.on_demand, od_run, od_month, per_million(od_run, od_month), "hours used"
        )

    for name, maybe_rate in (("reserved_1y", price.reserved_1y), ("reserved_3y", price.reserved_3y)):
        if maybe_rate is not None:  # an accelerator priced by the user may lack this figure
            options[name] = _reserved(
                name, maybe_rate, price, gpus, work, storage_month, utilisation, per_million
            )

    if price.spot is not None and spot is not None:
        options["spot"] = _spot_option(price.spot, spot, gpus, work, storage_month, per_million)
    elif price.spot is None:  # the provider sells no spot for this instance: no figure, only why
        options["spot"] = _no_spot(price)
    return options


def _reserved(
    name: str,
    rate: float,
    price: CloudPrice,
    gpus: int,
    work: Work,
    storage_month: float,
    utilisation: float,
    per_million: Any,
) -> CloudOption:
    """A 1- or 3-year commitment as a buyer signs it: the term, the monthly payment, what the
    work uses of it and what is left idle. A one-off run is charged its share of the term at
    the same utilisation assumed for owned hardware (the rest filled by other work), so the
    two compare like for like; the whole commitment stays stated beside it."""
    term_h = TERMS_H[name]
    committed = gpus * rate * term_h
    monthly = gpus * rate * HOURS_PER_MONTH
    storage_h = storage_month / HOURS_PER_MONTH
    if work.schedule == "one-off":
        terms = max(1, math.ceil(work.run_h / term_h - 1e-9))
        used = gpus * rate * work.run_h
        run: float | None = used / utilisation + storage_h * work.run_h
        month = monthly + storage_month
        busy = work.run_h / (terms * term_h)
        idle = terms * committed - used
        years = terms * term_h / HOURS_PER_YEAR
        pays = (
            f"its share of {_usd(terms * committed)} committed ({_usd(monthly)} a month for "
            f"{years:g} year{'s' if years != 1 else ''}; the run uses {busy:.1%}), at {utilisation:.0%} of the term "
            "used, as owned hardware is costed"
        )
    else:
        month = gpus * rate * max(HOURS_PER_MONTH, work.busy_h_per_month) + storage_month
        run = None if work.runs_per_month is None else month / work.runs_per_month
        used = gpus * rate * work.busy_h_per_month * (term_h / HOURS_PER_MONTH)
        busy = min(1.0, work.busy_h_per_month / HOURS_PER_MONTH)
        idle = committed - used
        pays = (
            "every committed hour (a service uses them all)"
            if work.schedule == "continuous"
            else "every committed hour, shared by the month's runs"
        )
    return CloudOption(
        name,
        rate,
        run,
        month,
        per_million(run, month),
        pays,
        {
            "term_hours": term_h,
            "monthly_payment_usd": monthly,
            "committed_usd": committed,
            "used_hours_usd": used,
            "idle_usd": idle if idle > 0 else None,  # None: every committed hour is used
            "commitment_used_fraction": busy,
            "utilisation_assumed_fraction": utilisation if work.schedule == "one-off" else None,
            "usd_per_used_gpu_hour": rate / busy if busy > 0 else None,
            "beats_on_demand_above_fraction": rate / price.on_demand if price.on_demand else None,
        },
    )


def _usd(v: float) -> str:
    return f"${v / 1e6:,.2f}M" if abs(v) >= 1e6 else f"${v:,.0f}"


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
    work: Work,
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
        f", with {spot.spare_nodes} spare node{'s' if spot.spare_nodes != 1 else ''}"
        if spot.spare_nodes
        else ""
    )
    return CloudOption("spot", rate, run, month, per_million(run, month), pays, details)


def period_hours(work: Work, billed: int, used: int, storage_month: float) -> dict[str, Any]:
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
