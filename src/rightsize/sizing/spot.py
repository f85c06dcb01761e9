"""Running on spot instances: how much longer the work takes, the spare pool it needs, and
whether spot applies at all.

Preemptions. Each spot instance (node) is preempted at rate p per hour, from the interruption
band of its instance type (``prices.yaml``, ``spot_preemptions_per_hour``). A synchronous
training job needs all its nodes, so it sees lambda_p = p x nodes. With failures at 1/M (M the
cluster MTBF), the checkpoint interval tau and restart R the run already plans for, Young's
interval for the higher interruption rate lambda = 1/M + lambda_p is
tau_s = tau sqrt((1/M) / lambda): each preemption loses half an interval plus a restart, and
the shorter interval writes more checkpoints. The wall time per unit of useful work under
exponential interruptions is Daly's complete model (Daly 2006, "A higher order estimate of
the optimum checkpoint interval for restart dumps"):

    F(lambda, tau) = exp(lambda R) (exp(lambda (tau + delta)) - 1) / (lambda tau)

(-> 1 + delta / tau as lambda -> 0), with delta = tau^2 / (2M) the blocking checkpoint write
that makes tau Young's interval. The spot run takes run_s x F(lambda, tau_s) / F(1/M, tau):
exactly run_s with no preemptions. A service (no checkpoint interval) loses R of a replica
per preemption of any of its nodes: capacity factor 1 + p x nodes-per-replica x R.

Spare pool. The restart R (``reliability.yaml``) assumes the job restarts on spare nodes that
are already up; a preempted spot node is not back until the provider has capacity again
(``spot.replacement_s``). The job keeps s spare nodes, s the 99th percentile of the Poisson
count of preemptions in one replacement time (lambda_p x replacement), billed at the spot
price for the whole run.

A service under latency SLOs on spot keeps at least one replica's nodes spare (more when the
Poisson count of its preemptions in one replacement time says so), billed at the spot price:
a preemption then removes spare capacity, not capacity the SLO was sized on. The plan states
the spare nodes; without them spot would be no plan for an SLO.

Capacity. One synchronous job on more than SPOT_MAX_SYNC_NODES spot nodes is not offered:
it needs every node at once, and providers guarantee no spot capacity (AWS: a spot request
is fulfilled when capacity is available; GPU spot pools are reported scarce, with queues
common for p5), so a pool of thousands of one instance type at once is not a plan.

Not sold. An instance the provider sells no spot for (the price record's spot is null) gets
no spot figure at all, only that reason (`sizing.cost`).

Not applicable. Spot is declared unsuitable, with the reason, when (a) the effective price
(spot x wall factor x (nodes + spares) / nodes) is no cheaper than on-demand, or (b) the
run would take more than SPOT_MAX_SLOWDOWN times as long: restarts then dominate the run,
and a plan that doubles its own wall time misses any deadline sized with a normal safety
margin. Either way the plan shows no spot cost, only why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rightsize.constants import HOUR_S

# Beyond this wall-time factor preemptions dominate the run; the usual 15-25% safety margin
# on a deadline (spec infrastructure.margins) absorbs far less.
SPOT_MAX_SLOWDOWN = 1.5
SPARE_POOL_QUANTILE = 0.99
# Largest spot pool one synchronous job is planned on (an estimate: 8 racks of 8-GPU nodes;
# providers publish no spot capacity, and AWS's Spot placement score caps a request's target
# capacity it will score at a few thousand vCPUs for GPU types). Above it, reserve capacity.
SPOT_MAX_SYNC_NODES = 64


@dataclass(frozen=True)
class SpotSlowdown:
    """How much longer a run takes on spot; `factor` multiplies the on-demand wall time."""

    factor: float
    preemptions_per_hour: float  # whole job: per node-hour x nodes
    interval_s: float | None  # checkpoint interval on spot
    lost_s_per_preemption: float  # half an interval + restart
    extra_checkpoints_per_run: float | None


@dataclass(frozen=True)
class SpotPlan:
    """Spot for one plan: slowdown, spare pool, the price factor they make, and whether it applies."""

    slow: SpotSlowdown
    spare_nodes: int
    cost_factor: float  # effective price / spot price: wall factor x (nodes + spares) / nodes
    applicable: bool
    reason: str | None  # why spot is not applicable (None when it is)


def daly_wall_factor(rate_per_s: float, interval_s: float, write_s: float, restart_s: float) -> float:
    """Wall time per unit of useful work with exponential interruptions (Daly 2006, complete model)."""
    if rate_per_s == 0:
        return 1.0 + write_s / interval_s
    x = rate_per_s * (interval_s + write_s)
    if rate_per_s * restart_s + x > 700:  # exp overflows: the work never finishes
        return math.inf
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


def poisson_quantile(mean: float, q: float) -> int:
    """Smallest k with P(N <= k) >= q for N ~ Poisson(mean)."""
    if mean <= 0:
        return 0
    k, term = 0, math.exp(-mean)
    total = term
    while total < q and k < 100_000:
        k += 1
        term *= mean / k
        total += term
    return k


def plan_spot(
    slow: SpotSlowdown,
    nodes: int,
    spot_usd_per_gpu_hour: float,
    on_demand_usd_per_gpu_hour: float | None,
    replacement_s: float,
    job: bool,
    slo_replica_nodes: int | None = None,
) -> SpotPlan:
    """The spare pool and the applicability of spot for a job, or a service (`slo_replica_nodes`:
    the nodes of one replica of a service under latency SLOs, kept spare on spot)."""
    spares = poisson_quantile(slow.preemptions_per_hour * replacement_s / HOUR_S, SPARE_POOL_QUANTILE)
    if not job:
        spares = max(spares, slo_replica_nodes or 0) if slo_replica_nodes else 0
    cost_factor = slow.factor * (nodes + spares) / nodes
    effective = spot_usd_per_gpu_hour * cost_factor
    losses = (
        f"{slow.preemptions_per_hour:.3g} preemptions an hour across the job's nodes, each losing "
        f"{slow.lost_s_per_preemption / 60:.0f} min (restart plus half a checkpoint interval)"
    )
    reason = None
    if not math.isfinite(slow.factor):
        reason = f"{losses}: preemptions come faster than the job can restart, so it would never finish"
    elif on_demand_usd_per_gpu_hour is not None and effective >= on_demand_usd_per_gpu_hour:
        reason = (
            f"{losses}: the run takes {slow.factor:.2f}x as long"
            + (f" and needs {spares} spare nodes" if spares else "")
            + f", so spot costs ${effective:.2f} per useful GPU-hour against ${on_demand_usd_per_gpu_hour:.2f} "
            "on demand"
        )
    elif slow.factor > SPOT_MAX_SLOWDOWN:
        reason = (
            f"{losses}: the run would take {slow.factor:.2f}x as long (more than {SPOT_MAX_SLOWDOWN:g}x), "
            "so restarts dominate it; use on-demand or reserved capacity, or run smaller jobs"
        )
    elif job and nodes > SPOT_MAX_SYNC_NODES:
        reason = (
            f"one synchronous job on {nodes:,} spot nodes (+{spares} spare): providers guarantee no spot "
            f"capacity and the job stops whenever any node is reclaimed, so spot is planned for at most "
            f"{SPOT_MAX_SYNC_NODES} nodes; reserve the capacity (a commitment or a capacity block) instead"
        )
    return SpotPlan(slow, spares, cost_factor, reason is None, reason)
