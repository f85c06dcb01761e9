"""Over-provisioning rules: GPUs, time or money the plan buys beyond its need."""

from __future__ import annotations

import math

from rightsize.advise.findings.base import Finding, _deadline, _num
from rightsize.advise.findings.thresholds import (
    DEADLINE_MAX_SHARE,
    FASTER_THAN_NEEDED_SHARE,
    MFU_TARGET,
    MIN_SAVING,
    SERVING_UTILISATION_MIN,
)
from rightsize.advise.view import PlanView
from rightsize.constants import DAY_S


def low_utilisation(v: PlanView) -> Finding | None:
    b = v.best
    if b is None:
        return None
    if v.kind == "training":
        if b.mfu >= MFU_TARGET:
            return None
        return Finding(
            "low_utilisation",
            "over-provisioning",
            1.0 - b.mfu / MFU_TARGET,
            f"Low utilisation: MFU {b.mfu:.0%} is below the {MFU_TARGET:.0%} a well-run job reaches",
            {"mfu_fraction": b.mfu, "target_mfu_fraction": MFU_TARGET},
            "Fewer, busier GPUs: a layout with less exposed communication, a larger micro-batch, or a smaller "
            "GPU count at the same deadline (see the Pareto front).",
        )
    if v.kind in ("vision", "recommendation") and not v.is_job:
        return _service_utilisation(v)
    if v.kind == "serving" and b.design_rate_rps > 0 and b.replica_capacity_rps > 0:
        util = b.design_rate_rps / (b.replicas * b.replica_capacity_rps)
        if util >= SERVING_UTILISATION_MIN:
            return None
        need = max(1, math.ceil(b.design_rate_rps / (b.replica_capacity_rps * 0.8)))
        return Finding(
            "low_utilisation",
            "over-provisioning",
            1.0 - util / SERVING_UTILISATION_MIN,
            f"Over-provisioned: replicas run at {util:.0%} of their SLO capacity at the design peak",
            {
                "replicas": b.replicas,
                "design_rate_rps": b.design_rate_rps,
                "replica_capacity_rps": b.replica_capacity_rps,
                "utilisation_fraction": util,
            },
            f"{need} replica{'' if need == 1 else 's'} carry the design peak at 80% of capacity; scale down, or autoscale on load.",
        )
    return None


def faster_than_needed(v: PlanView) -> Finding | None:
    b = v.best
    deadline = _deadline(v)
    if v.kind != "training" or not deadline or b is None or not b.time_to_train_s or not b.gpu_hours:
        return None
    if b.time_to_train_s > FASTER_THAN_NEEDED_SHARE * deadline:
        return None
    ok = [
        c
        for c in v.plan.pareto
        if c.gpus < b.gpus
        and c.time_to_train_s
        and c.gpu_hours
        and c.time_to_train_s <= DEADLINE_MAX_SHARE * deadline
    ]
    if not ok:
        return None
    alt = min(ok, key=lambda c: c.gpus)
    saving = 1.0 - alt.gpu_hours / b.gpu_hours
    if saving < MIN_SAVING and alt.gpus > b.gpus / 2:
        return None
    return Finding(
        "faster_than_needed",
        "over-provisioning",
        max(saving, 1.0 - alt.gpus / b.gpus) * 0.5,
        f"More GPUs than the deadline needs: {b.gpus} finish in {b.time_to_train_s / DAY_S:.0f} of {deadline / DAY_S:.0f} days",
        {
            "gpus": b.gpus,
            "time_to_train_s": b.time_to_train_s,
            "deadline_s": deadline,
            "smaller_gpus": alt.gpus,
            "smaller_time_to_train_s": alt.time_to_train_s,
        },
        f"{alt.gpus} x {alt.accelerator} still finish in {alt.time_to_train_s / DAY_S:.0f} days "
        f"({saving:+.0%} GPU-hours saved) and free {b.gpus - alt.gpus} GPUs for other work.",
    )


def unplanned_spare_gpus(v: PlanView) -> Finding | None:
    b = v.best
    nodes = v.section("nodes")
    bought = _num(nodes, "gpus")
    if b is None or bought is None:
        return None
    need = float(b.gpus)
    gpn = _num(nodes, "gpus_per_node") or (v.node.gpus_per_node if v.node else 8.0)
    stages = [s for s in (v.section("growth").get("stages") or []) if isinstance(s, dict)]
    future = max([float(s.get("gpus", 0) or 0) for s in stages] + [0.0])
    spare = bought - need
    if spare < gpn or future >= bought:
        return None
    return Finding(
        "unplanned_spare_gpus",
        "over-provisioning",
        spare / bought,
        f"{spare:,.0f} GPUs bought beyond the {need:,.0f} the plan uses, for a future not in the growth plan",
        {"gpus_bought": bought, "gpus_used": need, "growth_max_gpus": future},
        "Buy what the plan uses and add the rest as a dated growth stage (infrastructure.growth), or "
        "keep them as rented burst capacity.",
    )


def idle_billed_gpus(v: PlanView) -> Finding | None:
    """Whole nodes are rented and bought: GPUs of the last node the plan pays for and leaves idle.
    Not when the price catalog lists a smaller instance shape that holds a replica: the plan is
    then billed on the cheapest shapes already (`catalog.billing`), and any GPUs still idle cost
    less than the smaller shapes would."""
    cost = v.section("cost")
    billed, used = _num(cost, "gpus_billed"), _num(cost, "gpus_used")
    if v.best is None or billed is None or used is None or billed <= used:
        return None
    if cost.get("smaller_shape_holds_replica"):
        return None
    idle = billed - used
    if v.is_job:
        fix = (
            f"Use all {billed:,.0f} (targets.gpus: {billed:,.0f}): the bill is the same and the run shorter; "
            "or rent an instance type with fewer GPUs."
        )
    else:
        fix = "Run more replicas on them for free headroom, or rent an instance type with fewer GPUs."
    return Finding(
        "idle_billed_gpus",
        "over-provisioning",
        idle / billed,
        f"{idle:,.0f} of the {billed:,.0f} GPUs billed sit idle: nodes come whole",
        {"gpus_billed": billed, "gpus_used": used, "idle_fraction": idle / billed},
        fix,
    )


def cheaper_per_unit(v: PlanView) -> Finding | None:
    """A faster (or chosen) accelerator that costs more per useful token than an alternative
    that also meets the targets."""
    b = v.best
    if b is None:
        return None
    if v.is_job and getattr(b, "time_to_train_s", None) is not None:
        deadline = _deadline(v)
        if b.cost_usd is None:
            return None
        alts = [
            c
            for c, _ in v.plan.alternatives
            if c.cost_usd is not None
            and c.time_to_train_s
            and (not deadline or c.time_to_train_s <= deadline)
        ]
        if not alts:
            return None
        alt = min(alts, key=lambda c: c.cost_usd or math.inf)
        assert alt.cost_usd is not None
        # Like with like: the chosen configuration's search estimate, on the alternatives' basis
        # (its headline cost is the sized bill, whole nodes and storage included).
        estimate = (getattr(v.plan, "extra", None) or {}).get("search_estimate") or {}
        mine = float(estimate.get("cost_usd") or b.cost_usd)
        saving = 1.0 - alt.cost_usd / mine
        unit, theirs = "run", alt.cost_usd
    elif v.kind == "serving":
        if b.cost_usd_per_m_output_tokens is None:
            return None
        alts = [c for c, _ in v.plan.alternatives if c.cost_usd_per_m_output_tokens is not None]
        if not alts:
            return None
        alt = min(alts, key=lambda c: c.cost_usd_per_m_output_tokens or math.inf)
        assert alt.cost_usd_per_m_output_tokens is not None
        saving = 1.0 - alt.cost_usd_per_m_output_tokens / b.cost_usd_per_m_output_tokens
        unit, mine, theirs = (
            "1M output tokens",
            b.cost_usd_per_m_output_tokens,
            alt.cost_usd_per_m_output_tokens,
        )
    elif v.kind in ("vision", "recommendation"):
        # A service of the same capacity: compare the price per hour.
        if b.cost_usd is None:
            return None
        alts = [c for c, _ in v.plan.alternatives if c.cost_usd is not None]
        if not alts:
            return None
        alt = min(alts, key=lambda c: c.cost_usd or math.inf)
        saving = 1.0 - alt.cost_usd / b.cost_usd
        unit, mine, theirs = "hour at the same capacity", b.cost_usd, alt.cost_usd
    else:
        return None
    if saving < MIN_SAVING:
        return None
    return Finding(
        "cheaper_per_unit",
        "over-provisioning",
        saving,
        f"{alt.accelerator} costs {saving:.0%} less per {unit} than {b.accelerator} and also meets the targets",
        {
            "chosen_usd": mine,
            "alternative_usd": theirs,
            "saving_fraction": saving,
            "objective": v.plan.objective,
        },
        f"If cost matters more than the '{v.plan.objective}' objective, choose {alt.gpus} x {alt.accelerator} "
        "(targets.objective: cost).",
    )


def _service_utilisation(v: PlanView) -> Finding | None:
    """Vision and recommendation services: replicas busy under half their capacity at the design peak."""
    d, cap = v.demand, (getattr(v.plan, "extra", None) or {}).get("replica_capacity_rps")
    if d is None or not cap or not d.replicas or not d.design_rate_rps:
        return None
    util = d.design_rate_rps / (d.replicas * cap)
    if util >= SERVING_UTILISATION_MIN:
        return None
    need = max(1, math.ceil(d.design_rate_rps / (cap * 0.8)))
    return Finding(
        "low_utilisation",
        "over-provisioning",
        1.0 - util / SERVING_UTILISATION_MIN,
        f"Over-provisioned: replicas run at {util:.0%} of their capacity at the design peak",
        {
            "replicas": d.replicas,
            "design_rate_rps": d.design_rate_rps,
            "replica_capacity_rps": cap,
            "utilisation_fraction": util,
        },
        f"{need} replica{'' if need == 1 else 's'} carry the design peak at 80% of capacity; scale down, or autoscale on load.",
    )
