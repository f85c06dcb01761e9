"""Many workloads over time on one pool: demand timeline, committed baseline and burst, deferrable
scheduling, shared parts, quotas. `plan_fleet(resolved_fleet, plan_one)` is the entry point; the
single-workload planner is passed in (it lives in `api`, above this package)."""

from rightsize.fleet.plan import FleetPlan, plan_fleet

__all__ = ["FleetPlan", "plan_fleet"]
