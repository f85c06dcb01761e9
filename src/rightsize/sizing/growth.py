"""Growth: a staged expansion plan in scalable units over the planning horizon.

The need grows each year by a factor F: for training (a fixed time budget per run) the
compute per run scales with model size x data, F = (1 + g_model)(1 + g_data); for serving
the compute scales with traffic x model size, F = (1 + g_traffic)(1 + g_model) (decode reads
every weight per step, so cost per token tracks parameter count); for recurring jobs with
the job count x model size. GPUs are assumed to scale linearly with the need (the knee
policy keeps the cluster in its near-linear range).

Stage 1 is the plan's own cluster, bought now: exactly the nodes the plan sizes, with its
capital cost. Every later stage is an INCREMENT over what is installed, in scalable units
(SU) of nodes with their share of fabric and storage (NVIDIA's DGX SuperPOD reference
architecture builds in SUs of 32 nodes; smaller clusters use their own size), with the date
it is due and its capital cost. Nobody buys 52 times in three years: purchases fall at the
start of budget cycles (`growth.purchase_interval_years`, a year by default).

- A training run (one-off or recurring) is sized by the plan; the need steps up with the
  next model, so the purchase at the start of cycle k (k >= 1) brings the cluster to the
  need of year k x cycle. Nothing more is due now: the plan's cluster is today's need.
- A service's traffic grows through the year, so the purchase at the start of cycle k
  (k >= 0) covers the need until the next purchase, ahead of it; the first such increment
  is the growth of the first cycle, bought with the build, and said so.

Each stage is checked against the fabric's largest size without a new switch tier and
against the facility's power cap.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from rightsize.search.demand import Demand
from rightsize.spec.infrastructure import Growth

# NVIDIA DGX SuperPOD (H100/H200/B200) reference architecture: one scalable unit = 32 nodes.
SUPERPOD_SU_NODES = 32


def _when(years: float) -> str:
    """When a purchase is due: at once (with the initial build), or at the start of a year."""
    return "due now, with the initial build" if years < 0.05 else f"due in year {years:g}"


OWN_CLUSTER = "the plan's own cluster"
GROWTH_INCREMENT = "growth increment over the installed cluster"
FIRST_CYCLE = "growth of the first budget cycle, bought ahead with the build"


def yearly_factor(demand: Demand, growth: Growth) -> float:
    if demand.continuous:
        return (1 + growth.traffic_growth_per_year) * (1 + growth.model_growth_per_year)
    if demand.runs_per_month is not None:  # recurring jobs: more jobs, bigger models
        return (1 + growth.traffic_growth_per_year) * (1 + growth.model_growth_per_year)
    return (1 + growth.model_growth_per_year) * (1 + growth.data_growth_per_year)


def scalable_unit_nodes(nodes_today: int, growth: Growth) -> int:
    if growth.scalable_unit_nodes:
        return growth.scalable_unit_nodes
    return min(SUPERPOD_SU_NODES, max(1, nodes_today))


@dataclass(frozen=True)
class Stage:
    stage: int  # 1: the plan's own cluster; later stages: increments over it
    needed_at_years: float
    nodes: int  # installed after this stage
    gpus: int
    scalable_units: int
    added_nodes: int
    added_capex_usd: float | None
    what: str  # the plan's own cluster, or a growth increment
    due: str  # when it is bought
    facility_power_w: float
    fabric_ok: bool
    power_ok: bool


@dataclass(frozen=True)
class GrowthPlan:
    horizon_years: float
    yearly_need_factor: float
    scalable_unit_nodes: int
    stages: list[Stage]
    checks: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "horizon_years": self.horizon_years,
            "yearly_need_factor": self.yearly_need_factor,
            "scalable_unit_nodes": self.scalable_unit_nodes,
            "stages": [asdict(s) for s in self.stages],
            "checks": self.checks,
        }


def growth_plan(
    demand: Demand,
    growth: Growth,
    nodes_today: int,
    gpus_per_node: int,
    capex_usd_per_node: float | None,
    facility_power_w_today: float,
    fabric_max_nodes: int,
    power_cap_w: float | None,
) -> GrowthPlan:
    factor = yearly_factor(demand, growth)
    su = scalable_unit_nodes(nodes_today, growth)
    w_per_node = facility_power_w_today / max(nodes_today, 1)

    def stage(number: int, at: float, installed: int, added: int, what: str) -> Stage:
        power = w_per_node * installed
        return Stage(
            stage=number,
            needed_at_years=at,
            nodes=installed,
            gpus=installed * gpus_per_node,
            scalable_units=math.ceil(installed / su),
            added_nodes=added,
            added_capex_usd=capex_usd_per_node * added if capex_usd_per_node is not None else None,
            what=what,
            due=_when(at),
            facility_power_w=power,
            fabric_ok=installed <= fabric_max_nodes,
            power_ok=power_cap_w is None or power <= power_cap_w,
        )

    stages = [stage(1, 0.0, nodes_today, nodes_today, OWN_CLUSTER)]
    checks: list[str] = []
    if factor > 1.0:
        stages += _increments(demand.continuous, growth, factor, nodes_today, su, stage)
    else:
        checks.append("No growth rates given: today's build is the whole plan.")
    last = stages[-1]
    if not last.fabric_ok:
        first_bad = next(s for s in stages if not s.fabric_ok)
        checks.append(
            f"Purchase {first_bad.stage} ({first_bad.nodes:,} nodes, {_when(first_bad.needed_at_years)}) outgrows the "
            f"fabric's {fabric_max_nodes}-node limit: plan the extra switch tier (or larger-radix switches) now."
        )
    if not last.power_ok:
        first_bad = next(s for s in stages if not s.power_ok)
        checks.append(
            f"Purchase {first_bad.stage} needs {first_bad.facility_power_w / 1e6:.2f} MW of facility power, over the "
            f"{(power_cap_w or 0) / 1e6:.2f} MW cap, {_when(first_bad.needed_at_years)}."
        )
    if last.fabric_ok and last.power_ok and factor > 1.0:
        checks.append("Today's fabric design and facility power take every stage of the horizon.")
    return GrowthPlan(growth.horizon_years, factor, su, stages, checks)


def _increments(
    continuous: bool, growth: Growth, factor: float, nodes_today: int, su: int, stage: Any
) -> list[Stage]:
    """The purchases after the plan's own cluster, each an increment of whole SUs (see the
    module docstring: a run's need steps up with the next model, a service's grows all year)."""
    horizon, cycle = growth.horizon_years, growth.purchase_interval_years
    final_need = math.ceil(nodes_today * factor**horizon - 1e-9)
    installed = nodes_today
    out: list[Stage] = []
    k = 0 if continuous else 1
    while installed < final_need and k * cycle <= horizon + 1e-9 and (not continuous or k * cycle < horizon):
        until = min((k + 1) * cycle, horizon) if continuous else k * cycle
        need = min(final_need, math.ceil(nodes_today * factor**until - 1e-9))
        units = max(0, math.ceil((need - installed) / su - 1e-9))
        if units:
            what = FIRST_CYCLE if k == 0 else GROWTH_INCREMENT
            out.append(stage(len(out) + 2, k * cycle, installed + units * su, units * su, what))
            installed += units * su
        k += 1
    return out
