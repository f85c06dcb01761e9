"""The headline figures of a plan, read from its versioned JSON (`report.render.result_dict`):
accelerator, count, time, GPU-hours, cost and power, each with its number (for comparing what-ifs),
its text (formatted by `report.units`), the JSON path it was read from, and the report section
that shows how it was computed and from which sources. Nothing is computed here but a fleet's
totals over its months; every figure is the plan's own.
"""

from __future__ import annotations

from typing import Any

from rightsize.report import units

Figure = dict[str, Any]
HEADLINE_IDS = ("accelerator", "count", "time", "gpu_hours", "cost", "power")
# Report sections that also explain a figure (those a plan's report has): the step time behind a
# run's length, the alternatives behind the choice of accelerator and count, the uncertainty.
ALSO_EXPLAINED_BY = {
    "accelerator": ("alternatives", "pareto"),
    "count": ("alternatives",),
    "time": ("step", "latency", "uncertainty"),
    "gpu_hours": ("uncertainty",),
    "cost": ("pareto",),
}


def _get(d: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(d, dict):
            return None
        d = d.get(part)
    return d


def _figure(fid: str, label: str, plan: dict[str, Any], path: str, key: str, section: str) -> Figure:
    """One figure read at `path`, formatted by the unit its `key` names."""
    value = _get(plan, path)
    text = units.value(key, value) if not isinstance(value, str) else value
    number = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return {"id": fid, "label": label, "value": number, "text": text, "path": path, "section": section}


def _cost_path(plan: dict[str, Any]) -> tuple[str, str, str]:
    """(path, unit key, label) of the on-demand cloud cost: per run for a run, else per month."""
    cost = _get(plan, "sizing.cost") or {}
    per_run = cost.get("period") == "run"
    leaf = "usd_per_run" if per_run else "usd_per_month"
    if _get(cost, f"cloud.on_demand.{leaf}") is not None:
        return (
            f"sizing.cost.cloud.on_demand.{leaf}",
            "usd",
            f"cost (cloud on demand, per {'run' if per_run else 'month'})",
        )
    for path in ("best.cloud_cost_usd", "best.cost_usd"):
        if _get(plan, path) is not None:
            return path, "usd", "cost"
    return "sizing.cost.onprem.usd_per_month", "usd", "cost (on premises, per month)"


def _hours_path(plan: dict[str, Any]) -> tuple[str, str]:
    """(path, label) of the GPU-hours: a run's, per run when the plan is costed per month (a job that
    recurs); else the billed hours of the costing period (a service's month)."""
    monthly = (_get(plan, "sizing.cost.period") or "run") != "run"
    if _get(plan, "best.gpu_hours") is not None:
        return "best.gpu_hours", "GPU-hours (per run)" if monthly else "GPU-hours"
    return "sizing.cost.gpu_hours_billed", "GPU-hours (per month)" if monthly else "GPU-hours"


def _time_path(plan: dict[str, Any]) -> tuple[str, str, str, str]:
    """(path, unit key, label, section) of the time that matters: the run's length, else latency."""
    if _get(plan, "best.time_to_train_s") is not None:
        return "best.time_to_train_s", "time_to_train_s", "time to train", "sizing-run"
    if _get(plan, "best.latency_s.ttft_p95_s") is not None:
        return "best.latency_s.ttft_p95_s", "ttft_s", "time to first token (p95)", "latency"
    return "best.latency_p99_s", "latency_p99_s", "latency (p99)", "best"


def beside(plan: dict[str, Any], path: str) -> list[list[str]]:
    """The figures next to the one at `path` (its parent's scalars) as [key, value in its unit]:
    what the drill-down shows beside a headline figure."""
    parent = _get(plan, path.rsplit(".", 1)[0]) if "." in path else plan.get(path)
    if not isinstance(parent, dict):
        return []
    return [[key, units.value(key, v)] for key, v in parent.items() if not isinstance(v, dict | list)]


def plan_headline(plan: dict[str, Any]) -> list[Figure]:
    """The six headline figures of a plan, each with the figures beside it."""
    figures = _workload_headline(plan) if plan.get("kind") != "fleet_plan" else fleet_headline(plan)
    for f in figures:
        f["beside"] = beside(plan, f["path"])
        f["sections"] = list(dict.fromkeys([f["section"], *ALSO_EXPLAINED_BY.get(f["id"], ())]))
    return figures


def _workload_headline(plan: dict[str, Any]) -> list[Figure]:
    """The six headline figures of a workload plan (training, serving, vision, recommendation)."""
    time_path, time_key, time_label, time_section = _time_path(plan)
    cost_path, cost_key, cost_label = _cost_path(plan)
    hours_path, hours_label = _hours_path(plan)
    return [
        _figure("accelerator", "accelerator", plan, "best.accelerator", "accelerator", "sizing-nodes"),
        _figure("count", "accelerators", plan, "best.gpus", "gpus", "sizing-nodes"),
        _figure("time", time_label, plan, time_path, time_key, time_section),
        _figure("gpu_hours", hours_label, plan, hours_path, "gpu_hours", "sizing-cost"),
        _figure("cost", cost_label, plan, cost_path, cost_key, "sizing-cost"),
        _figure(
            "power",
            "facility power",
            plan,
            "sizing.power.facility_power_w",
            "facility_power_w",
            "sizing-power",
        ),
    ]


def fleet_headline(plan: dict[str, Any]) -> list[Figure]:
    """A fleet's headline: its pools, its peak demand, horizon, GPU-hours and cost over the horizon."""
    timeline = [m for m in plan.get("timeline") or [] if isinstance(m, dict)]
    peak = max((m.get("demand_gpus") or 0 for m in timeline), default=None)
    hours = sum(float(m.get("demand_gpu_hours") or 0.0) for m in timeline) if timeline else None
    pools = ", ".join(str(p) for p in plan.get("pools") or {})
    horizon = plan.get("horizon_months")
    return [
        {
            "id": "accelerator",
            "label": "pools",
            "value": None,
            "text": pools or "-",
            "path": "pools",
            "section": "workloads",
        },
        {
            "id": "count",
            "label": "peak demand (GPUs)",
            "value": peak,
            "text": units.value("gpus", peak),
            "path": "timeline",
            "section": "timeline",
        },
        {
            "id": "time",
            "label": "horizon",
            "value": horizon,
            "text": f"{horizon} months" if horizon else "-",
            "path": "horizon_months",
            "section": "timeline",
        },
        {
            "id": "gpu_hours",
            "label": "GPU-hours demanded",
            "value": hours,
            "text": units.value("gpu_hours", hours),
            "path": "timeline",
            "section": "utilisation",
        },
        _figure("cost", "cost (pooled, over the horizon)", plan, "cost.pooled_usd", "usd", "cost"),
        _figure("power", "power limit", plan, "policy.power_limit_w", "power_limit_w", "assumptions"),
    ]


def workload_shares(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Each fleet workload's GPU-hours over the horizon (the sum of its monthly GPU-hours in the
    timeline) and its share of the fleet's, largest first."""
    totals: dict[str, float] = {}
    for month in plan.get("timeline") or []:
        for name, held in ((month or {}).get("by_workload") or {}).items():
            totals[name] = totals.get(name, 0.0) + float((held or {}).get("gpu_hours") or 0.0)
    whole = sum(totals.values())
    rows = [
        {"workload": name, "gpu_hours": hours, "share": hours / whole if whole else None}
        for name, hours in totals.items()
    ]
    return sorted(rows, key=lambda r: -r["gpu_hours"])
