"""The `infrastructure:` section every spec kind shares: facility, fabric, storage, cost,
margins, growth and recurring-job schedule. It says how the cluster around the
accelerators is to be built and paid for; the sizing package turns it, with a
`Demand`, into a bill of materials. Every field has a default, so a spec may omit the
section entirely and still get a complete plan.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, model_validator

from rightsize.spec.shared import POSITIVE
from rightsize.spec.units import Bytes, DurationS, PowerW, Utilisation, refuse_bare_durations

_CFG = ConfigDict(
    extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
)


class Facility(BaseModel):
    """Where the cluster lives: rack power, rack size, a power cap, a per-GPU power limit, PUE and cooling."""

    model_config = _CFG

    deployment: Literal["cloud", "onprem", "both"] = Field(
        default="both",
        description="Cost the plan in the cloud, on premises, or both (with the break-even utilisation).",
    )
    rack_power_kw: Annotated[float, POSITIVE] | None = Field(
        default=None,
        description="Power a rack can deliver and cool, kW; null takes the catalog default for the cooling type.",
    )
    rack_units: int = Field(default=42, gt=0, description="Usable rack units (U) per rack.")
    power_cap_w: PowerW | None = Field(
        default=None,
        validation_alias=AliasChoices("power_cap_w", "power_cap"),
        description="Most facility power (PUE included) the site can supply, e.g. '2 MW'; null for no cap.",
    )
    gpu_power_limit_w: PowerW | dict[str, PowerW] | None = Field(
        default=None,
        validation_alias=AliasChoices("gpu_power_limit_w", "gpu_power_limit"),
        description=(
            "Board power limit per accelerator (what `nvidia-smi -pl` sets): one value for every "
            "allowed accelerator, e.g. '400 W', or one per accelerator id, e.g. "
            "{h100-sxm: 500 W, a100-sxm-80gb: 350 W} (parts not named run at their TDP). At most "
            "the part's TDP and at least its minimum. Compute slows with the capped clock, "
            "memory-bound work less, and the power plan draws at most this per GPU. Null: the TDP."
        ),
    )
    pue: float | None = Field(
        default=None, ge=1.0, le=3.0, description="Power usage effectiveness; null takes the catalog default."
    )
    cooling: Literal["auto", "air", "rear_door", "direct_liquid", "immersion"] = Field(
        default="auto",
        description="Cooling the facility has; 'auto' picks the least that handles the rack density.",
    )

    def gpu_power_limit_for(self, accelerator_id: str) -> float | None:
        """The board power limit set for `accelerator_id` (None: its TDP)."""
        limit = self.gpu_power_limit_w
        return limit.get(accelerator_id) if isinstance(limit, dict) else limit


class Fabric(BaseModel):
    """The scale-out network between nodes."""

    model_config = _CFG

    kind: Literal["infiniband", "roce"] = Field(
        default="infiniband", description="InfiniBand or RoCE Ethernet switches and NICs."
    )
    topology: Literal["rail_optimized", "leaf_spine"] = Field(
        default="rail_optimized",
        description="Rail-optimised fat-tree (NIC i of every node on leaf i) or a plain leaf-spine.",
    )
    oversubscription: float = Field(
        default=1.0, ge=1.0, le=8.0, description="Leaf downlink:uplink ratio; 1 is non-blocking."
    )
    nic_gbps: float | None = Field(
        default=None, gt=0, description="Line rate per GPU in Gb/s; null keeps the node type's NICs."
    )


class Storage(BaseModel):
    """Dataset, checkpoints and the tiers they live on."""

    model_config = _CFG

    dataset_bytes: Bytes | None = Field(
        default=None,
        validation_alias=AliasChoices("dataset_bytes", "dataset"),
        description="Raw dataset size, e.g. '60 TB'; null derives it from the tokens (or samples) to train on.",
    )
    preprocessed_multiple: float = Field(
        default=1.0, ge=0, description="Preprocessed (tokenised, sharded) copy as a multiple of the raw size."
    )
    scratch_multiple: float = Field(
        default=0.5,
        ge=0,
        description="Scratch space (shuffles, evaluations, logs) as a multiple of the raw size.",
    )
    checkpoint_block_fraction: float = Field(
        default=0.05,
        gt=0,
        le=0.5,
        description="Most of the checkpoint interval a synchronous checkpoint write may block training for.",
    )
    checkpoints_retained: int = Field(
        default=5, ge=1, description="Full checkpoints kept on the file system."
    )


class Cost(BaseModel):
    """How the plan is paid for; null fields take the dated defaults in the price catalog."""

    model_config = _CFG

    amortisation_years: float | None = Field(
        default=None, gt=0, le=10, description="On-premises write-off period."
    )
    electricity_usd_per_kwh: float | None = Field(default=None, gt=0, description="Price of energy, $/kWh.")
    onprem_utilisation: float = Field(
        default=0.7,
        gt=0,
        le=1,
        description="Share of hours an owned cluster does useful work (for $/GPU-hour).",
    )
    spot_preemption_per_hour: float | None = Field(
        default=None, ge=0, description="Spot preemptions per node-hour; null takes the catalog figure."
    )


class Margins(BaseModel):
    """Safety margin and utilisation target, applied where each belongs and shown apart from the base need."""

    model_config = _CFG

    safety_margin: float = Field(
        default=0.2,
        ge=0,
        lt=1,
        validation_alias=AliasChoices("safety_margin", "headroom"),
        description="Margin on the need (deadline, peak load, storage); 0.15-0.25 is typical.",
    )
    utilisation_target: Utilisation = Field(
        default=0.8,
        validation_alias=AliasChoices("utilisation_target", "utilization_target"),
        description="Busiest a resource is planned to be, 0.05 to 1; 0.70-0.85 is typical.",
    )


class Growth(BaseModel):
    """How the need grows over the horizon; drives the staged expansion plan."""

    model_config = _CFG

    horizon_years: float = Field(default=3.0, gt=0, le=10, description="How far ahead to plan.")
    model_growth_per_year: float = Field(
        default=0.0, ge=0, description="Yearly growth of model size (compute per token), e.g. 1.0 = doubles."
    )
    data_growth_per_year: float = Field(
        default=0.0, ge=0, description="Yearly growth of the dataset / tokens."
    )
    traffic_growth_per_year: float = Field(
        default=0.0, ge=0, description="Yearly growth of serving traffic or job count."
    )
    scalable_unit_nodes: int | None = Field(
        default=None,
        gt=0,
        description="Nodes per building block (scalable unit); null picks one from the fabric.",
    )
    purchase_interval_years: float = Field(
        default=1.0,
        gt=0,
        le=10,
        description=(
            "How often capacity is bought (the budget cycle), in years; the scalable units a cycle "
            "needs are bought together at its start, ahead of the need."
        ),
    )


class Schedule(BaseModel):
    """Recurring jobs on an elastic pool (fine-tuning, evaluation): how many and how fast."""

    model_config = _CFG

    jobs_per_week: float = Field(gt=0, description="Jobs submitted per week.")
    turnaround: DurationS | None = Field(
        default=None, description="Longest a job may take from start to finish, e.g. '8h'."
    )

    @model_validator(mode="before")
    @classmethod
    def _turnaround_has_unit(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("turnaround",), seconds_key=False)


class Infrastructure(BaseModel):
    """Everything around the accelerators: facility, fabric, storage, cost, margins, growth, schedule."""

    model_config = _CFG

    facility: Facility = Field(default_factory=Facility, description="Racks, power, cooling.")
    fabric: Fabric = Field(default_factory=Fabric, description="Scale-out network.")
    storage: Storage = Field(default_factory=Storage, description="Dataset and checkpoint storage.")
    cost: Cost = Field(default_factory=Cost, description="Pricing assumptions.")
    margins: Margins = Field(default_factory=Margins, description="Safety margin and utilisation target.")
    growth: Growth = Field(default_factory=Growth, description="Growth over the planning horizon.")
    schedule: Schedule | None = Field(default=None, description="Recurring jobs on an elastic pool.")
