"""Plan a fleet: each workload alone through the existing pipeline, then the pool for all of them.

`plan_fleet(fleet, plan_one)` takes a resolved fleet (`spec.fleet_load`) and the single-workload
planner (`api` passes its own, since `fleet` sits below `api` in the layers). Each workload keeps the
plan it gets alone (accelerator, GPUs, layout or replicas); only with `pools: single` and a different
accelerator is it re-planned on the pool's accelerator. Demand over time (`fleet.demand`) and the
prices of each capacity kind (`fleet.prices`) go to one mixed-integer program (`fleet.solver`); the
same program with each workload alone gives the dedicated cost. The pooled plan is never worse than
the dedicated ones together: their sum is a solution of the pooled program, and is used if the
solver's (within its gap) costs more.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.errors import BadInput, RightsizeError
from rightsize.fleet import timeline as tl
from rightsize.fleet.blocks import KIND as BLOCK
from rightsize.fleet.blocks import block_cap_gpus
from rightsize.fleet.caps import ON_DEMAND_GPUS, SPOT_GPUS, burst_caps
from rightsize.fleet.dedicated import dedicated_solutions
from rightsize.fleet.demand import Calendar, WorkloadDemand, booked_gang, job_demand, service_demand
from rightsize.fleet.fleet_cost import Parts
from rightsize.fleet.gangs import Holdings, holdings
from rightsize.fleet.prices import PoolPrices, pool_prices
from rightsize.fleet.progress import Progress
from rightsize.fleet.shared import pool_fabric
from rightsize.fleet.solver import Limits, Solution, SolveStopped, combine, solve
from rightsize.fleet.workload_view import WorkloadView, view_of
from rightsize.sizing.reliability import REPAIR_HOURS, SPARE_CONFIDENCE
from rightsize.spec.fleet import FleetPolicy, month_text
from rightsize.spec.fleet_load import FleetEntry, ResolvedFleet

PlanOne = Callable[[Any], Any]
STOPPED_STATUS = "time limit reached before any pooled plan: the dedicated plans combined (not pooled)"


@dataclass
class FleetPlan:
    """Everything the fleet reports; `to_dict` is the JSON (kind 'fleet_plan')."""

    name: str
    start: str
    horizon_months: int
    policy: FleetPolicy
    views: list[WorkloadView]
    demands: list[WorkloadDemand]
    pools: dict[str, PoolPrices]
    solution: Solution
    dedicated: dict[str, Solution]
    timeline: list[dict[str, Any]]
    hourly_profile: dict[str, Any]
    utilisation_by_hour: list[float | None]
    purchases: list[dict[str, Any]]
    deadlines: list[dict[str, Any]]
    shared: dict[str, Any] = field(default_factory=dict)
    quotas: dict[str, Any] = field(default_factory=dict)
    findings: list[Any] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    entries: list[dict[str, Any]] = field(default_factory=list)
    solo_plans: dict[str, int] = field(default_factory=dict)
    holdings: Holdings | None = None
    parts: dict[str, Any] = field(default_factory=dict)  # shared parts and spares, pooled and alone

    @property
    def pooled_usd(self) -> float:
        """Capacity plus the shared parts and spares (`fleet.fleet_cost`)."""
        return self.solution.cost_usd + float(self.parts.get("pooled", {}).get("total_usd", 0.0))

    def dedicated_one_usd(self, name: str) -> float:
        own = self.parts.get("dedicated", {}).get(name, {})
        return self.dedicated[name].cost_usd + float(own.get("total_usd", 0.0))

    @property
    def dedicated_usd(self) -> float:
        return sum(self.dedicated_one_usd(n) for n in self.dedicated)

    def cost(self) -> dict[str, Any]:
        saving = self.dedicated_usd - self.pooled_usd
        by_kind: dict[str, float] = {}
        for p in self.purchases:
            by_kind[p["kind"]] = by_kind.get(p["kind"], 0.0) + p["usd_in_horizon"]
        for name, od in self.solution.values.items():
            if name.startswith("od:"):
                price = self.pools[name[3:]].usd_per_gpu_hour["on_demand"]
                by_kind["on_demand"] = by_kind.get("on_demand", 0.0) + float(
                    od.sum(axis=1) @ self._days() * price
                )
        spot = sum(
            float(self.solution.values[n].sum(axis=1) @ self._days() * p)
            for n, p in self.solution.spot_prices.items()
        )
        if spot:
            by_kind["spot"] = spot
        pooled_parts = self.parts.get("pooled", {})
        for part in ("fabric_usd", "storage_usd", "spares_usd"):
            if pooled_parts.get(part):
                by_kind[part.removesuffix("_usd")] = float(pooled_parts[part])
        capital = [p for p in self.purchases if p.get("capex_usd")]
        return {
            "pooled_usd": self.pooled_usd,
            "dedicated_usd": self.dedicated_usd,
            "saving_usd": saving,
            "saving_fraction": saving / self.dedicated_usd if self.dedicated_usd else 0.0,
            "pooled_capacity_usd": self.solution.cost_usd,
            "pooled_by_kind_usd": by_kind,
            "dedicated_by_workload_usd": {n: self.dedicated_one_usd(n) for n in self.dedicated},
            "parts": self.parts,
            "owned_capital_usd": sum(float(p["capex_usd"]) for p in capital),
            "owned_residual_value_usd": sum(float(p.get("residual_value_usd") or 0.0) for p in capital),
            "horizon_months": self.horizon_months,
            "what": "accelerator capacity over the horizon (owned nodes bought outright: capital in full and "
            "running cost for the months inside the horizon; reserved commitments; on-demand and spot "
            "hours) plus the shared parts (scale-out fabric where nodes are owned, storage) and spare "
            "nodes, pooled and dedicated alike; owned_residual_value_usd is the capital's life beyond "
            "the horizon (straight line), not subtracted",
        }

    def _days(self) -> np.ndarray:
        return Calendar(_month_index(self.start), self.horizon_months).days

    def to_dict(self) -> dict[str, Any]:
        from rightsize.fleet.report_data import fleet_dict

        return fleet_dict(self)


def _month_index(text: str) -> int:
    from rightsize.spec.fleet import month_index

    return month_index(text)


def _flags(view: WorkloadView, entry: FleetEntry) -> tuple[bool, bool]:
    job = not view.is_service
    w = entry.workload
    return (job if w.deferrable is None else w.deferrable), (job if w.preemptible is None else w.preemptible)


class SoloCache:
    """Solo plans by spec content: workloads that differ only in their fleet settings (schedule,
    window, priority, name) share one plan of their spec."""

    def __init__(self, plan_one: PlanOne) -> None:
        self.plan_one = plan_one
        self.results: dict[str, Any] = {}
        self.hits = 0

    def __call__(self, spec: Any) -> Any:
        key = _spec_key(spec)
        if key is None:
            return self.plan_one(spec)
        if key in self.results:
            self.hits += 1
            return self.results[key]
        result = self.plan_one(spec)
        self.results[key] = result
        return result


def _spec_key(spec: Any) -> str | None:
    dump = getattr(spec, "model_dump_json", None)
    if dump is None:
        return None
    try:
        return f"{type(spec).__module__}.{type(spec).__qualname__}:{dump()}"
    except (TypeError, ValueError):  # a spec that cannot be serialised is planned every time
        return None


def _plan_entry(entry: FleetEntry, policy: FleetPolicy, plan_one: PlanOne) -> tuple[WorkloadView, str | None]:
    """Plan one workload alone; on a single pool of another accelerator, again restricted to it."""
    result = _planned(entry, plan_one, entry.spec)
    view = view_of(entry.name, entry.spec, result)
    if policy.pools != "single" or view.accelerator == policy.accelerator:
        return view, None
    targets = getattr(entry.spec, "targets", None)
    if targets is None or "accelerators" not in type(targets).model_fields:
        raise BadInput(
            f"Workload '{entry.name}' cannot be moved to {policy.accelerator}.",
            "Its spec has no targets.accelerators.",
            "Use pools: per_accelerator.",
        )
    moved = entry.spec.model_copy(
        update={"targets": targets.model_copy(update={"accelerators": [policy.accelerator]})}
    )
    alone = view.accelerator
    view = view_of(entry.name, moved, _planned(entry, plan_one, moved))
    return view, f"re-planned on {policy.accelerator} for the single pool (alone it chose {alone})"


def _planned(entry: FleetEntry, plan_one: PlanOne, spec: Any) -> Any:
    """Plan one workload; its errors say which workload of the fleet they belong to."""
    try:
        return plan_one(spec)
    except RightsizeError as exc:
        raise type(exc)(f"Workload '{entry.name}' ({entry.source}): {exc.what}", exc.why, exc.fix) from None


def _demand(view: WorkloadView, entry: FleetEntry, cal: Calendar) -> WorkloadDemand:
    deferrable, preemptible = _flags(view, entry)
    w = entry.workload
    if view.kind == "batch_inference" and w.batch is None:
        raise BadInput(
            f"Workload '{entry.name}' is offline batch inference but says nothing of its volume.",
            "A batch job's GPU-hours follow from how much it processes per run and when it may run.",
            "Add `batch: {requests: 2M, window: '22:00-06:00'}` to its entry in the fleet.",
        )
    if view.is_service:
        if w.batch is not None:
            raise BadInput(
                f"Workload '{entry.name}' is a service, but has `batch:`.",
                "batch: is for offline inference.",
                "Remove it, or use serving.scenario: offline.",
            )
        fixed = service_demand(view, w, cal, entry.start_month, entry.end_month, entry.demand_scale)
        mask = fixed > 0
        per, unit_note = booked_gang(view.accelerator, view.gpus_per_replica or 1)
        d = WorkloadDemand(
            view.name,
            view.accelerator,
            view.kind,
            per,
            w.priority,
            False,
            False,
            None,
            fixed,
            mask,
            0.0,
            False,
            [],
            [],
            view.gpus,
        )
        d.unit_note = unit_note
        return d
    return job_demand(
        view, w, cal, entry.start_month, entry.end_month, deferrable, preemptible, entry.demand_scale
    )


def _limits(policy: FleetPolicy, budget: bool = True) -> Limits:
    o = policy.solver
    return Limits(
        policy.utilisation_target,
        policy.budget_usd if budget else None,
        policy.power_limit_w,
        o.time_limit_s,
        o.mip_gap,
        o.random_seed,
    )


def solve_pool(
    days: np.ndarray,
    pools: dict[str, PoolPrices],
    demands: list[WorkloadDemand],
    policy: FleetPolicy,
    progress: Progress | None = None,
    parts: Parts | None = None,
) -> tuple[Solution, dict[str, Solution]]:
    """The pooled solution and each workload's dedicated one (alone on its own capacity, no budget).
    The dedicated solutions together are a solution of the pooled program too; it is taken when it
    costs less, shared parts and spares counted (`parts`), so pooling never costs more."""
    step = (lambda done, total: progress.step("dedicated solves", done, total)) if progress else None
    dedicated = dedicated_solutions(
        days, pools, demands, _limits(policy, budget=False), policy.solver.workers, step
    )
    if progress is not None:
        progress.note(f"pooled solve of {len(demands)} workloads")
    summed = combine(list(dedicated.values()), days, pools, demands, _limits(policy))
    t0 = time.perf_counter()
    try:
        pooled = solve(days, pools, demands, _limits(policy))
    except SolveStopped:
        if summed is None:
            raise
        # No pooled plan within the time limit: the dedicated plans together are one (never
        # cheaper than a pooled plan would be); the headline says so.
        summed.status, summed.seconds = STOPPED_STATUS, time.perf_counter() - t0
        summed.stopped_at_time_limit = True
        summed.time_limit_s, summed.gap_limit = policy.solver.time_limit_s, policy.solver.mip_gap
        return summed, dedicated

    def total(sol: Solution) -> float:
        return sol.cost_usd + sol.penalty_usd + (parts.pooled(sol)["total_usd"] if parts else 0.0)

    if summed is not None and total(summed) < total(pooled) - 1e-6:
        summed.seconds = pooled.seconds
        summed.stopped_at_time_limit = pooled.stopped_at_time_limit
        summed.time_limit_s, summed.gap_limit = pooled.time_limit_s, pooled.gap_limit
        summed.mip_gap, summed.gap_usd, summed.bound_from = pooled.mip_gap, pooled.gap_usd, pooled.bound_from
        pooled = summed
    return pooled, dedicated


def plan_fleet(fleet: ResolvedFleet, plan_one: PlanOne, progress: Progress | None = None) -> FleetPlan:
    policy = fleet.spec.policy
    progress = progress if progress is not None else Progress()
    t0 = time.perf_counter()
    cal = Calendar(fleet.start_month, fleet.horizon_months)
    views, notes = [], []
    solo = SoloCache(plan_one)
    for i, entry in enumerate(fleet.entries):
        view, note = _plan_entry(entry, policy, solo)
        views.append(view)
        notes.append(note)
        progress.step("workloads planned alone", i + 1, len(fleet.entries))
    t_plan = time.perf_counter() - t0
    demands = [_demand(v, e, cal) for v, e in zip(views, fleet.entries, strict=True)]
    pools = _pools(views, policy, fleet)
    days = cal.days
    t1 = time.perf_counter()
    found = pool_fabric(views, fleet.spec.infrastructure)
    keys = {e.name: _spec_key(e.spec) or e.name for e in fleet.entries}
    parts = Parts(views, pools, cal, float(found[1].capex_usd) if found else 0.0, keys)
    pooled, dedicated = solve_pool(days, pools, demands, policy, progress, parts)
    t_solve = time.perf_counter() - t1
    u = tl.usage(pooled, cal, pools, demands, policy.utilisation_target)
    held = holdings(pooled, cal, pools, demands, u.usable)
    line = tl.timeline(u, cal, demands, pools, pooled, held)
    peak = int(np.argmax([m["demand_gpus"] for m in line]))
    plan = FleetPlan(
        fleet.name,
        month_text(fleet.start_month),
        fleet.horizon_months,
        policy,
        views,
        demands,
        pools,
        pooled,
        dedicated,
        line,
        tl.hourly_profile(u, cal, peak, held),
        tl.utilisation_by_hour(u, cal),
        tl.purchases(pooled, cal, pools),
        tl.deadlines(pooled, cal, demands, u),
    )
    plan.holdings = held
    plan.parts = {
        "pooled": parts.pooled(pooled),
        "dedicated": {n: parts.alone(n, sol) for n, sol in dedicated.items()},
        "repair_hours": REPAIR_HOURS,
        "spare_confidence": SPARE_CONFIDENCE,
    }
    _parts_by_month(plan.timeline, plan.parts["pooled"], cal)
    plan.entries = [
        _entry_dict(e, v, d, n) for e, v, d, n in zip(fleet.entries, views, demands, notes, strict=True)
    ]
    _finish(plan, fleet, u)
    plan.seconds = {"planning_workloads_s": t_plan, "solver_s": t_solve, "total_s": time.perf_counter() - t0}
    plan.solo_plans = {
        "workloads": len(fleet.entries),
        "distinct_specs_planned": len(solo.results),
        "shared": solo.hits,
    }
    return plan


def _parts_by_month(line: list[dict[str, Any]], pooled: dict[str, Any], cal: Calendar) -> None:
    """The shared parts in the monthly costs: fabric and storage bought in the first month, spares
    held every month."""
    share = cal.days / cal.days.sum()
    for m, entry in enumerate(line):
        bought = (pooled["fabric_usd"] + pooled["storage_usd"]) if m == 0 else 0.0
        entry["parts_usd"] = bought + pooled["spares_usd"] * float(share[m])
        entry["cost_usd"] += entry["parts_usd"]


def _finish(plan: FleetPlan, fleet: ResolvedFleet, u: tl.Usage) -> None:
    from rightsize.fleet.findings import fleet_findings
    from rightsize.fleet.quotas import kueue_quotas
    from rightsize.fleet.shared import shared_parts

    plan.shared = shared_parts(plan, fleet.spec.infrastructure)
    plan.quotas = kueue_quotas(plan, u)
    plan.findings = fleet_findings(plan, u)
    plan.assumptions = _assumptions(plan)


def _pools(views: list[WorkloadView], policy: FleetPolicy, fleet: ResolvedFleet) -> dict[str, PoolPrices]:
    pools: dict[str, PoolPrices] = {}
    for v in views:
        if v.accelerator not in pools and v.demand is not None:
            pools[v.accelerator] = pool_prices(v.demand, list(policy.capacity), fleet.spec.infrastructure)
    caps = burst_caps(policy.burst_caps)
    pools = {
        acc: dataclasses.replace(
            pr,
            burst_caps_gpus={
                **caps,
                BLOCK: block_cap_gpus(pr.gpus_per_node, policy.burst_caps.capacity_block_gpus),
            },
            owned_capital=policy.owned_capital,
        )
        for acc, pr in pools.items()
    }
    for acc, pr in pools.items():
        if not set(pr.usd_per_gpu_hour) - {"spot", BLOCK}:
            why = (
                "; ".join(f"{k}: {w}" for k, w in pr.unavailable.items())
                or "only spot and capacity blocks are allowed"
            )
            raise BadInput(
                f"The {acc} pool has no capacity it may use for services and fixed work.",
                why,
                "Allow another capacity kind in policy.capacity, or add a price for it (cost overrides).",
            )
    return pools


def _entry_dict(entry: FleetEntry, view: WorkloadView, d: WorkloadDemand, note: str | None) -> dict[str, Any]:
    return {
        "name": view.name,
        "kind": view.kind,
        "source": entry.source,
        "start": month_text(entry.start_month),
        "end": month_text(entry.end_month),
        "priority": d.priority,
        "deferrable": d.deferrable,
        "preemptible": d.preemptible,
        "pool": d.pool,
        "plan": dict(view.summary),
        "solo_gpus": d.solo_gpus,
        "gang_gpus": d.gang_gpus,
        "spot_slowdown_factor": view.spot_slowdown_factor,
        "note": "; ".join(n for n in (note, d.unit_note) if n) or None,
    }


def _assumptions(plan: FleetPlan) -> list[str]:
    p = plan.policy
    return [
        "Each workload is planned alone by the same pipeline as `rightsize plan` and keeps that plan in the pool.",
        "Demand is modelled per month on a representative day of 24 hours: a grid value is the average "
        "GPUs in use in that hour over the month's days.",
        "Services: their own plan's replicas scaled by the hour's share of the daily peak and by traffic "
        "growth, rounded up to whole replicas, at least one.",
        f"The committed pool is planned busy at most {p.utilisation_target:.0%} of its GPUs "
        "(policy.utilisation_target); commitments are bought in whole nodes.",
        "Reservations running past the horizon are charged for their months inside it (what they still "
        "owe after it is stated with each purchase); owned nodes are "
        "bought outright (capital in full when bought, running cost inside the horizon), their life "
        "beyond the horizon stated as the value left (straight line), not subtracted.",
        "Shared parts in both costs: a scale-out fabric where nodes are owned (pooled: one, for the "
        "largest job; dedicated: each its own), storage bought per usable TB (pooled: one copy of a "
        "spec's datasets), and spare nodes for committed capacity from each workload's GPU failure "
        f"rate, {REPAIR_HOURS:.0f} h to replace a node, covering {SPARE_CONFIDENCE:.0%} of the time.",
        "Spot work takes more GPU-hours by each workload's spot slowdown (its preemption cost: lost work "
        "and restarts), and spot is used only within the spot cap.",
        "Whole gangs: a job holds whole copies of its gang (whole nodes when it spans nodes) in every hour "
        "it runs, each copy on one kind of capacity (the committed pool, on-demand or spot), and a service "
        "whole replicas; the timeline and the holdings report whole GPUs. A one-off run holds its gang "
        "through the day on the days it runs; one that may be preempted is split into checkpointed "
        "segments across months, one that may not runs as one block of consecutive months.",
        "Burst is capped per pool by what a provider plausibly has (policy.burst_caps, or the bundled "
        f"{ON_DEMAND_GPUS} on-demand and {SPOT_GPUS} spot GPUs). Alone, each workload gets a share of "
        "the caps in proportion to its own peak, so the dedicated plans together fit the same provider.",
        f"Cloud quotas carry a {p.safety_margin:.0%} margin over the planned burst peak (policy.safety_margin).",
        "Capacity blocks (short-term reserved GPUs, catalog capacity_blocks.yaml, e.g. AWS EC2 Capacity "
        "Blocks) are booked by a job for whole days of whole gangs, every hour of those days paid, within "
        "the provider's limit (policy.burst_caps.capacity_block_gpus, or AWS's 256 instances across blocks); "
        "a block price is that provider's, even where another provider prices the pool's on-demand.",
    ]
