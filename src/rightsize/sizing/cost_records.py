"""The records of a plan's cost (`sizing.cost` computes them): each cloud option, the owned
cluster, and the plan's cost as a whole, each with its JSON view."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CloudOption:
    """One way of renting: its GPU-hour price and what the work costs with it."""

    option: str  # on_demand, reserved_1y, reserved_3y, spot
    usd_per_gpu_hour: float | None  # None: this way of renting is not sold for the instance
    usd_per_run: float | None  # what one run pays (None for a service, or an option that does not apply)
    usd_per_month: float | None  # a service's or recurring jobs' month; a one-off's burn rate while running
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
            "capex_breakdown_usd": {
                k: v for k, v in self.capex_breakdown_usd.items() if v > 0
            },  # bought parts
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
    gpus_billed: int  # every GPU of the whole instances rented (cloud priced), else of the whole nodes
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
    # Per `period` (one run of a job; a service's or recurring jobs' month): GPU-hours billed
    # (whole nodes x hours), GPU-hours the work uses, and the cloud storage in the bill, so that
    # billed GPU-hours x the on-demand price + storage = the on-demand cost of the period.
    period: str = "run"
    gpu_hours_billed: float | None = None
    gpu_hours_used: float | None = None
    storage_usd: float | None = None
    priced_instance: str | None = None  # the billed instance the cloud prices are for (the main kind)
    billed_instances: str | None = None  # all instances billed: "1 x gcp a2-ultragpu-1g (1 GPU) in ..."
    billed_on_whole_nodes: bool = True  # False: billed on instance shapes smaller than the node
    smaller_shape_holds_replica: bool = False  # a listed shape smaller than the node holds one replica

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
            "period": self.period,
            "gpu_hours_billed": self.gpu_hours_billed,
            "gpu_hours_used": self.gpu_hours_used,
            "storage_usd": self.storage_usd,
            "priced_instance": self.priced_instance,
            "billed_instances": self.billed_instances,
            "billed_on_whole_nodes": self.billed_on_whole_nodes,
            "smaller_shape_holds_replica": self.smaller_shape_holds_replica,
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
