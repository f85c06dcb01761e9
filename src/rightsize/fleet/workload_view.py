"""What the fleet reads from one workload's own plan: the ONE place that knows plan result types.

Every planner (training, fine-tuning, serving, vision, recommendation) returns a result with a
`demand` (`search.demand.Demand`: accelerator, GPUs, run time, replicas, data) and a `sizing`
(`sizing.plan.Sizing`: run time with failures, storage, fabric, cost). The fleet needs a dozen
numbers from those; `view_of` reads them here, so a change of result types (a typed Plan) is
adapted in this module alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rightsize.catalog import get_node
from rightsize.errors import BadInput
from rightsize.search.demand import Demand


@dataclass(frozen=True)
class WorkloadView:
    """One workload as planned alone, reduced to what pooling needs. Quantities in SI units."""

    name: str
    kind: str  # pretraining | fine_tuning | serving | batch_inference
    accelerator: str
    node: str
    gpus_per_node: int
    gpus: int  # GPUs of its own plan (a job's gang, a service's replicas x GPUs each)
    run_s: float | None = None  # one run's wall time, failures included (jobs)
    replicas: int | None = None
    gpus_per_replica: int | None = None
    output_tokens_per_s: float = 0.0  # whole deployment, while busy (batch inference)
    mean_output_tokens: float = 0.0  # per request (batch inference volume in requests)
    peak_to_average: float | None = None  # from the spec's traffic (services)
    growth_per_year: float = 0.0  # the spec's traffic growth (services)
    jobs_per_week: float | None = None  # the spec's schedule (recurring jobs)
    turnaround_s: float | None = None
    dataset_bytes: float = 0.0
    checkpoint_bytes: float = 0.0
    storage_bytes: float = 0.0  # file system + object store of its own plan, base need
    needs_fabric: bool = False
    fabric_nodes: int = 0
    spot_slowdown_factor: float | None = None  # wall-time factor on spot (None: no spot price)
    fabric_capex_usd: float = 0.0  # its own plan's scale-out fabric, bought
    failure_rate_per_gpu_hour: float = 0.0  # its own plan's reliability model
    summary: dict[str, Any] = field(default_factory=dict)
    demand: Demand | None = None  # kept for the shared sizing (fabric, power)

    @property
    def is_service(self) -> bool:
        return self.kind == "serving"

    @property
    def is_job(self) -> bool:
        return self.kind in ("pretraining", "fine_tuning")


def _layout(result: Any, demand: Demand) -> str:
    best = getattr(result, "best", None)
    par = getattr(best, "parallel", None)
    if isinstance(par, dict) and "tp" in par:
        text = f"TP{par['tp']} PP{par['pp']} DP{par['dp']}"
        return text + (f" CP{par['cp']}" if par.get("cp", 1) > 1 else "")
    if demand.replicas:
        return f"{demand.replicas} replica(s) x {demand.gpus_per_replica or 1} GPU(s)"
    return f"{demand.gpus} GPU(s)"


def view_of(name: str, spec: Any, result: Any) -> WorkloadView:
    """Read a planned workload (any planner's result after sizing) into a `WorkloadView`."""
    demand: Demand | None = getattr(result, "demand", None)
    sizing = getattr(result, "sizing", None)
    if demand is None or sizing is None:
        raise BadInput(
            f"Workload '{name}' has no sized plan to pool.",
            f"Its planner ({type(result).__name__}) returned no demand or sizing.",
            "Plan it alone with `rightsize plan` to see why; only fully sized workloads join a fleet.",
        )
    run = getattr(sizing, "run", None)  # typed RunTime (older plans: a dict)
    run_s = (run.get("run_s") if isinstance(run, dict) else getattr(run, "run_s", None)) or demand.run_s
    traffic = getattr(spec, "traffic", None)
    infra = getattr(spec, "infrastructure", None)
    schedule = getattr(infra, "schedule", None)
    growth = getattr(infra, "growth", None)
    peak_to_avg = None
    if traffic is not None and getattr(traffic, "rate_per_s", None):
        peak_to_avg = float(traffic.peak_rate_per_s or traffic.rate_per_s) / float(traffic.rate_per_s)
    mean_out = float(traffic.output_tokens.mean_tokens) if traffic is not None else 0.0
    cost = getattr(sizing, "cost", None)
    spot = (getattr(cost, "cloud", None) or {}).get("spot")
    fabric = getattr(sizing, "fabric", None)
    storage = getattr(sizing, "storage", None)
    best = getattr(result, "best", None)
    summary = {
        "accelerator": demand.accelerator,
        "node": demand.node,
        "gpus": demand.gpus,
        "layout": _layout(result, demand),
        "run_s": run_s,
        "replicas": demand.replicas,
        "gpus_per_replica": demand.gpus_per_replica,
        "replica_capacity_rps": getattr(best, "replica_capacity_rps", None),
        "design_rate_rps": demand.design_rate_rps,
        "work_unit": demand.work_unit,
        "work_units_per_s": demand.work_units_per_s,
    }
    return WorkloadView(
        name=name,
        kind=demand.workload,
        accelerator=demand.accelerator,
        node=demand.node,
        gpus_per_node=get_node(demand.node).gpus_per_node,
        gpus=int(demand.gpus),
        run_s=float(run_s) if run_s else None,
        replicas=demand.replicas,
        gpus_per_replica=demand.gpus_per_replica,
        output_tokens_per_s=float(demand.work_units_per_s) if demand.work_unit == "output_token" else 0.0,
        mean_output_tokens=mean_out,
        peak_to_average=peak_to_avg,
        growth_per_year=float(getattr(growth, "traffic_growth_per_year", 0.0) or 0.0),
        jobs_per_week=float(schedule.jobs_per_week) if schedule is not None else None,
        turnaround_s=float(schedule.turnaround) if schedule is not None and schedule.turnaround else None,
        dataset_bytes=float(demand.dataset_bytes),
        checkpoint_bytes=float(demand.checkpoint_bytes),
        storage_bytes=float(storage.total_bytes) if storage is not None else 0.0,
        needs_fabric=bool(getattr(fabric, "needed", False)),
        fabric_nodes=int(getattr(fabric, "nodes", 0) or 0),
        fabric_capex_usd=float(getattr(fabric, "capex_usd", 0.0) or 0.0)
        if getattr(fabric, "needed", False)
        else 0.0,
        failure_rate_per_gpu_hour=float(
            getattr(getattr(sizing, "reliability", None), "failure_rate_per_gpu_hour", 0.0) or 0.0
        ),
        spot_slowdown_factor=float(spot.details["slowdown_factor"]) if spot is not None else None,
        summary=summary,
        demand=demand,
    )
