"""The fleet spec (`kind: fleet`): many workloads over months on one pool of accelerators.

A fleet lists workloads, each a workload spec of any kind rightsize plans (a path relative to the
fleet file, or the spec inline), with when it runs (`start`/`end`, YYYY-MM), whether it may wait
(`deferrable`) or be interrupted (`preemptible`), and what the single-workload spec cannot say:
a service's daily load shape and growth, a recurring job's cadence, a batch-inference job's volume
and nightly window. The `policy` says which kinds of capacity may be bought or rented and the
limits (utilisation target, margin, budget, power). Building a spec computes nothing; loading
(with includes, cycles and duplicate names checked) is in `fleet_load.py`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from rightsize.spec.finite import finite_numbers
from rightsize.spec.infrastructure import Infrastructure
from rightsize.spec.shared import POSITIVE
from rightsize.spec.units import Count, DurationS, PowerW, Utilisation, refuse_bare_durations

_CFG = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
_MONTH_RE = re.compile(r"^\s*(\d{4})-(\d{1,2})\s*$")
_WINDOW_RE = re.compile(r"^\s*(\d{1,2})(?::00)?\s*-\s*(\d{1,2})(?::00)?\s*$")

CapacityKind = Literal["onprem", "reserved_1y", "reserved_3y", "capacity_block", "on_demand", "spot"]
CAPACITY_KINDS: tuple[str, ...] = (
    "onprem",
    "reserved_1y",
    "reserved_3y",
    "capacity_block",
    "on_demand",
    "spot",
)
Cadence = Literal["once", "daily", "weekly", "monthly", "quarterly"]
RUNS_PER_MONTH: dict[str, float | None] = {
    "once": None,
    "daily": 365.0 / 12.0,
    "weekly": 52.0 / 12.0,
    "monthly": 1.0,
    "quarterly": 1.0 / 3.0,
}


def month_index(text: str) -> int:
    """'2027-03' -> months since year 0 (2027 * 12 + 2); raises ValueError naming the format."""
    match = _MONTH_RE.match(str(text))
    if match is None or not 1 <= int(match[2]) <= 12:
        # no "(got ...)": the spec's error list adds the value to every field error
        raise ValueError("write a month as YYYY-MM, e.g. 2027-03")
    return int(match[1]) * 12 + int(match[2]) - 1


def month_text(index: int) -> str:
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def _month(value: Any) -> Any:
    if value is None:
        return None
    if hasattr(value, "year") and hasattr(value, "month"):  # YAML may read 2027-03-01 as a date
        return f"{value.year:04d}-{value.month:02d}"
    month_index(str(value))
    return str(value).strip()


class DailyLoad(BaseModel):
    """A service's load over a day: 24 hourly factors, or a peak-to-average ratio."""

    model_config = _CFG

    hourly: list[Annotated[float, Field(ge=0)]] | None = Field(
        default=None,
        description=(
            "24 factors, hour 0 to 23 (local time), relative to each other: the busiest hour runs at the "
            "spec's peak rate, the others in proportion."
        ),
    )
    peak_to_average: float | None = Field(
        default=None,
        ge=1.0,
        description=(
            "Peak rate / average rate; with no `hourly`, a smooth day (a cosine peaking at 14:00) with this "
            "ratio. Defaults to the spec's traffic.peak_rate / traffic.rate."
        ),
    )

    @field_validator("hourly")
    @classmethod
    def _24(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and len(value) != 24:
            raise ValueError(f"give 24 hourly factors (hour 0 to 23); got {len(value)}")
        if value is not None and max(value) <= 0:
            raise ValueError("give 24 hourly factors with at least one above 0; every one is 0")
        return value


class BatchJob(BaseModel):
    """An offline batch-inference job: how much work per run and the hours it may run in."""

    model_config = _CFG

    requests: Annotated[Count, POSITIVE] | None = Field(
        default=None, description="Requests per run, e.g. '2M' (lengths from the spec's traffic)."
    )
    output_tokens: Annotated[Count, POSITIVE] | None = Field(
        default=None, description="Generated tokens per run instead of requests, e.g. '400M'."
    )
    window: str = Field(
        default="0-24",
        description="Hours of the day the job may run, 'HH:00-HH:00' (wraps midnight: '22:00-06:00').",
    )

    @field_validator("window")
    @classmethod
    def _window(cls, value: str) -> str:
        match = _WINDOW_RE.match(value)
        if match is None or int(match[1]) > 24 or int(match[2]) > 24 or int(match[1]) == int(match[2]) % 24:
            raise ValueError("write the window as whole hours 'HH:00-HH:00', e.g. '22:00-06:00'")
        return value

    @model_validator(mode="after")
    def _one_volume(self) -> BatchJob:
        if (self.requests is None) == (self.output_tokens is None):
            raise ValueError("give exactly one of batch.requests and batch.output_tokens")
        return self

    def hours(self) -> list[int]:
        """The hours of the day (0-23) inside the window."""
        match = _WINDOW_RE.match(self.window)
        assert match is not None  # checked by the validator
        a, b = int(match[1]) % 24, int(match[2]) % 24
        if a == 0 and int(match[2]) == 24:
            return list(range(24))
        return [h % 24 for h in range(a, a + (b - a) % 24)]


class FleetWorkload(BaseModel):
    """One workload of the fleet: its spec and when and how it runs."""

    model_config = _CFG

    spec: str | dict[str, Any] = Field(
        description=(
            "A workload spec: a path relative to the fleet file, inside its folder (a `kind: fleet` file "
            "includes its workloads; RIGHTSIZE_ALLOW_OUTSIDE=1 allows paths outside), or the spec inline."
        )
    )
    name: str | None = Field(
        default=None, min_length=1, description="Name in reports; defaults to the spec's."
    )
    start: str | None = Field(
        default=None, description="First month it runs, YYYY-MM; null: the fleet's start."
    )
    end: str | None = Field(
        default=None,
        description="Last month it runs (a job: its deadline), YYYY-MM; null: the horizon's end.",
    )
    priority: int = Field(
        default=0,
        ge=-1_000_000_000,
        le=1_000_000_000,
        description=(
            "Higher is served first when capacity is short (Kueue priority; -10^9 to 10^9, the range of a "
            "Kubernetes PriorityClass a user may create)."
        ),
    )
    deferrable: bool | None = Field(
        default=None,
        description="May wait for capacity within its window; null: yes for jobs, no for services.",
    )
    preemptible: bool | None = Field(
        default=None,
        description="May be interrupted (spot, reclaimed quota); null: yes for jobs, no for services.",
    )
    load: DailyLoad | None = Field(
        default=None,
        validation_alias=AliasChoices("load", "traffic"),
        description="A service's daily load shape (hourly factors, or peak-to-average).",
    )
    growth_per_year: float | None = Field(
        default=None,
        ge=0,
        description="Yearly growth of a service's traffic; null: the spec's infrastructure.growth.",
    )
    cadence: Cadence | None = Field(
        default=None,
        description=(
            "How often a job runs: once, daily, weekly, monthly or quarterly; null: the spec's "
            "infrastructure.schedule (weekly jobs), daily for batch inference, else once."
        ),
    )
    turnaround: DurationS | None = Field(
        default=None, description="Longest one run may take from submission, e.g. '24h'; null: the spec's."
    )
    batch: BatchJob | None = Field(
        default=None, description="Offline batch inference: volume per run and the window it runs in."
    )

    @field_validator("start", "end", mode="before")
    @classmethod
    def _months(cls, value: Any) -> Any:
        return _month(value)

    @model_validator(mode="after")
    def _order(self) -> FleetWorkload:
        if self.start and self.end and month_index(self.end) < month_index(self.start):
            raise ValueError(
                f"end ({self.end}) is before start ({self.start}); a workload ends after it starts"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _turnaround_has_unit(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("turnaround",), seconds_key=False)


class SolverOptions(BaseModel):
    """How long and how closely the fleet's program is solved; same options, same plan."""

    model_config = _CFG

    time_limit_s: float = Field(
        default=120.0,
        ge=1,
        le=86_400,
        description=(
            "Most seconds HiGHS may spend on one program (the pooled one, each dedicated one). A solve "
            "stopped by it says so in the plan's headline, with the gap it reached."
        ),
    )
    mip_gap: float = Field(
        default=1e-3,
        ge=0,
        le=0.2,
        description="Relative gap at which a solve stops as good enough (0.001: within 0.1% of the best).",
    )
    random_seed: int = Field(
        default=0,
        ge=0,
        le=2_147_483_647,
        description="HiGHS's random seed (a fixed seed: the same plan twice).",
    )
    workers: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="Processes for the independent dedicated solves; null: the machine's CPU count.",
    )


class BurstCaps(BaseModel):
    """Most cloud GPUs a provider plausibly has for this fleet at once, per pool (accelerator)."""

    model_config = _CFG

    on_demand_gpus: int | None = Field(
        default=None,
        ge=0,
        le=10_000_000,
        description="Most on-demand GPUs at once in one pool; null: the bundled figure (fleet.caps).",
    )
    spot_gpus: int | None = Field(
        default=None,
        ge=0,
        le=10_000_000,
        description="Most spot GPUs at once in one pool; null: the bundled figure (fleet.caps).",
    )
    capacity_block_gpus: int | None = Field(
        default=None,
        ge=0,
        le=10_000_000,
        description=(
            "Most GPUs in short-term capacity blocks at once in one pool; null: the provider's account "
            "limit (capacity_blocks.yaml: AWS, 256 instances across blocks)."
        ),
    )


class FleetPolicy(BaseModel):
    """How the pool may be built and paid for."""

    model_config = _CFG

    capacity: list[CapacityKind] = Field(
        default_factory=lambda: list(CAPACITY_KINDS),  # type: ignore[arg-type]
        min_length=1,
        description=(
            "Kinds of capacity allowed: onprem (owned), reserved_1y, reserved_3y, capacity_block "
            "(short-term reserved GPUs, e.g. AWS EC2 Capacity Blocks: whole days of a job's gang, every "
            "hour paid), on_demand, spot."
        ),
    )
    pools: Literal["per_accelerator", "single"] = Field(
        default="per_accelerator",
        description="One pool per accelerator the workloads chose alone, or a single pool of `accelerator`.",
    )
    accelerator: str | None = Field(
        default=None, description="The accelerator of a single pool (catalog id); needed with pools: single."
    )
    utilisation_target: Utilisation = Field(
        default=0.85,
        validation_alias=AliasChoices("utilisation_target", "utilization_target"),
        description="Busiest the owned/reserved pool is planned to be (room for fragmentation and repair).",
    )
    safety_margin: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="Margin over the planned burst peak in the cloud quotas (on-demand and spot flavors).",
    )
    budget_usd: Annotated[float, POSITIVE] | None = Field(
        default=None, description="Most the fleet may cost over the horizon, USD; null: no limit."
    )
    power_limit_w: PowerW | None = Field(
        default=None,
        validation_alias=AliasChoices("power_limit_w", "power_limit"),
        description="Most facility power the owned racks may draw, e.g. '1.5 MW'; null: no limit.",
    )
    owned_capital: Literal["full", "depreciated"] = Field(
        default="full",
        description=(
            "How owned nodes count in the cost: full (the capital when bought, whatever life is left "
            "after the horizon; that life is stated) or depreciated (less the straight-line value left "
            "at the horizon's end)."
        ),
    )
    burst_caps: BurstCaps = Field(
        default_factory=BurstCaps,
        description="Most on-demand and spot GPUs a provider has for the fleet at once, per pool.",
    )
    solver: SolverOptions = Field(
        default_factory=SolverOptions, description="Time limit, gap, seed and workers of the solves."
    )

    @field_validator("power_limit_w")
    @classmethod
    def _a_server_at_least(cls, value: float | None) -> float | None:
        if value is not None and value < 1000:
            raise ValueError(
                "is under 1 kW, less than one server draws (allowed: 1 kW up); give the unit, e.g. '1.5 MW'"
            )
        return value

    @model_validator(mode="after")
    def _pool(self) -> FleetPolicy:
        if self.pools == "single" and self.accelerator is None:
            raise ValueError("pools: single needs policy.accelerator (the one accelerator of the pool)")
        if not set(self.capacity) - {"spot", "capacity_block"}:
            raise ValueError(
                "spot and capacity blocks (booked by jobs) cannot carry services; allow on_demand or a "
                "committed kind too"
            )
        return self


class FleetSpec(BaseModel):
    """A fleet to plan: workloads over a horizon on a shared pool, under a policy."""

    model_config = _CFG

    @model_validator(mode="before")
    @classmethod
    def _numbers_are_finite(cls, data: Any) -> Any:
        return finite_numbers(data)

    kind: Literal["fleet"] = Field(description="Spec kind; 'fleet' for many workloads on one pool.")
    name: str | None = Field(default=None, description="A name for this plan, shown in reports.")
    start: str | None = Field(
        default=None, description="First month of the horizon, YYYY-MM; null: the earliest workload start."
    )
    horizon_months: int = Field(default=24, ge=1, le=120, description="Months planned.")
    workloads: list[FleetWorkload] = Field(min_length=1, description="The workloads that share the pool.")
    policy: FleetPolicy = Field(default_factory=FleetPolicy, description="Capacity kinds and limits.")
    infrastructure: Infrastructure = Field(
        default_factory=Infrastructure,
        description="Facility, fabric, storage and cost of the shared parts (sized once for the pool).",
    )

    @field_validator("start", mode="before")
    @classmethod
    def _start(cls, value: Any) -> Any:
        return _month(value)
