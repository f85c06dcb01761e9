"""The recommendation spec (`kind: recommendation`): a DLRM-style model whose embedding tables may
exceed GPU memory, trained on click logs or served to a query rate under a p99 latency target, and
its presets (`data/recsys_models.yaml`: table rows and pooling factors, MLP widths, interaction).

    kind: recommendation
    mode: inference
    model: dlrm-dcnv2-criteo
    embeddings: {precision: fp16}
    inference: {qps: 5000, samples_per_query: 100, latency_p99: 30ms}
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from rightsize import yamlio
from rightsize.errors import did_you_mean
from rightsize.spec.checked import CheckedSpec
from rightsize.spec.inference import Policy
from rightsize.spec.infrastructure import Infrastructure
from rightsize.spec.prices import ProviderList, UserPrices, providers_field
from rightsize.spec.shared import ACCELERATORS_SCHEMA_EXTRA, MAX_ACCELERATORS, POSITIVE, all_means_every
from rightsize.spec.units import Bytes, Count, CountInt, DurationS, refuse_bare_durations

_SEPARATORS_RE = re.compile(r"[-_./\s]")
EmbeddingPrecision = Literal["fp32", "fp16", "bf16", "int8"]


@dataclass(frozen=True)
class EmbeddingTable:
    rows: int
    pooling: float  # indices looked up (and summed) per sample


@dataclass(frozen=True)
class RecsysModel:
    """A DLRM-style architecture."""

    name: str
    title: str
    source: str
    dense_features: int
    embedding_dim: int
    bottom_mlp: tuple[int, ...]
    top_mlp: tuple[int, ...]
    interaction: str  # 'dot' or 'dcn'
    dcn_layers: int
    dcn_low_rank: int
    optimizer: str
    tables: tuple[EmbeddingTable, ...]
    train_samples: float | None = None
    train_samples_source: str = ""

    @property
    def total_rows(self) -> int:
        return sum(t.rows for t in self.tables)

    @property
    def lookups_per_sample(self) -> float:
        return sum(t.pooling for t in self.tables)


def _normalize(name: str) -> str:
    return _SEPARATORS_RE.sub("", name.lower())


@functools.cache
def _table() -> tuple[dict[str, RecsysModel], dict[str, str]]:
    text = resources.files("rightsize.spec").joinpath("data/recsys_models.yaml").read_text(encoding="utf-8")
    doc = yamlio.safe_load(text)
    models: dict[str, RecsysModel] = {}
    lookup: dict[str, str] = {}
    for name, e in doc["models"].items():
        models[name] = RecsysModel(
            name=name,
            title=str(e["title"]),
            source=str(e["source"]),
            dense_features=int(e["dense_features"]),
            embedding_dim=int(e["embedding_dim"]),
            bottom_mlp=tuple(int(x) for x in e["bottom_mlp"]),
            top_mlp=tuple(int(x) for x in e["top_mlp"]),
            interaction=str(e["interaction"]),
            dcn_layers=int(e.get("dcn_layers", 0)),
            dcn_low_rank=int(e.get("dcn_low_rank", 0)),
            optimizer=str(e["optimizer"]),
            tables=tuple(EmbeddingTable(int(t["rows"]), float(t["pooling"])) for t in e["tables"]),
            train_samples=float(e["train_samples"]) if "train_samples" in e else None,
            train_samples_source=str(e.get("train_samples_source", "")),
        )
        for alias in (name, *e.get("aliases", ())):
            lookup[_normalize(alias)] = name
    return models, lookup


def recsys_model_names() -> list[str]:
    return sorted(_table()[0])


def get_recsys_model(name: str) -> RecsysModel:
    """The preset for a name or alias; ValueError naming the known ones when unknown."""
    models, lookup = _table()
    found = lookup.get(_normalize(name))
    if found is None:
        hint = did_you_mean(name, recsys_model_names())
        raise ValueError(
            f"unknown recommendation model {name!r}; known: {', '.join(recsys_model_names())}"
            + (f" ({hint})" if hint else "")
        )
    return models[found]


# ------------------------------------------------------------------------------------------- spec

_CFG = ConfigDict(
    extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
)


class Embeddings(BaseModel):
    """How the embedding tables are stored, sharded and cached."""

    model_config = _CFG

    precision: EmbeddingPrecision = Field(
        default="fp32",
        description="Numeric format of the table rows: fp32, fp16/bf16 or int8 (row-wise quantised).",
    )
    rows_multiplier: Annotated[float, POSITIVE] = Field(
        default=1.0,
        description="Scale every table's rows (plan for a larger catalogue or vocabulary than the preset's).",
    )
    sharding: Literal["auto", "table", "row", "column"] = Field(
        default="auto",
        description=(
            "How tables split over GPUs: 'table' (whole tables per GPU), 'row', 'column', or 'auto' "
            "(table-wise, row-wise for a table larger than one GPU's share)."
        ),
    )
    cache_hit_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description=(
            "Share of lookups into host- or SSD-resident tables served by the HBM cache; null estimates it "
            "from a Zipf(1) access distribution."
        ),
    )


class RecsysTraining(BaseModel):
    """A training run over logged samples (impressions with labels)."""

    model_config = _CFG

    samples: Annotated[Count, POSITIVE] | None = Field(
        default=None, description="Samples per epoch; null takes the preset's dataset (Criteo 1TB: 4.2B)."
    )
    epochs: Annotated[float, POSITIVE] = Field(default=1.0, description="Passes over the samples.")
    global_batch: Annotated[CountInt, POSITIVE] = Field(
        default=65536, description="Samples per optimizer step across all GPUs."
    )
    precision: Literal["fp32", "tf32", "bf16", "fp16"] = Field(
        default="bf16", description="Compute precision of the dense MLPs and the interaction."
    )
    bytes_per_sample: Bytes | None = Field(
        default=None,
        description="Stored bytes of one sample (labels, dense and sparse features); null: 4 B per value.",
    )


class RecsysInference(BaseModel):
    """Online ranking: queries arrive at a rate; each scores a number of candidates (samples)."""

    model_config = _CFG

    qps: Annotated[Count, POSITIVE] = Field(
        validation_alias=AliasChoices("qps", "rate", "peak_qps"),
        description="Peak queries per second to serve (capacity is sized for it plus policy.headroom).",
    )
    samples_per_query: Annotated[CountInt, POSITIVE] = Field(
        default=100, description="Candidates scored per query (each one sample through the model)."
    )
    latency_p99_s: Annotated[DurationS, POSITIVE] = Field(
        default=0.03,
        validation_alias=AliasChoices("latency_p99", "latency_p99_s", "latency"),
        description="Longest a query may take at the 99th percentile, e.g. '30ms'.",
    )
    precision: Literal["fp32", "bf16", "fp16", "fp8", "int8"] = Field(
        default="fp16", description="Compute precision of the dense part."
    )

    @model_validator(mode="before")
    @classmethod
    def _latency_has_unit(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("latency_p99", "latency"))


class RecsysTargets(BaseModel):
    """Which hardware the plan may use and what it minimises."""

    model_config = _CFG

    accelerators: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ACCELERATORS,
        json_schema_extra=ACCELERATORS_SCHEMA_EXTRA,
        description="Catalog ids of the accelerators allowed (see `rightsize catalog`); 'all' or null for every one.",
    )
    deadline_s: Annotated[DurationS, POSITIVE] | None = Field(
        default=None,
        validation_alias=AliasChoices("deadline", "deadline_s"),
        description="Training: wall-clock time the run must finish within, e.g. '2h'.",
    )
    gpus: Annotated[CountInt, POSITIVE] | None = Field(
        default=None, description="Training: a fixed GPU count; null lets the search choose."
    )
    gpus_per_replica: Annotated[CountInt, POSITIVE] | None = Field(
        default=None,
        description="Inference: GPUs that hold one copy of the tables (1, 2, 4, 8); null lets the search choose.",
    )
    providers: ProviderList = providers_field()
    objective: Literal["time", "gpu_hours", "cost", "gpus"] = Field(
        default="gpu_hours",
        description="What the search minimises among plans that meet the targets (inference: gpus or cost).",
    )

    @field_validator("accelerators", mode="before")
    @classmethod
    def _all_means_every(cls, value: Any) -> Any:
        return all_means_every(value)

    @model_validator(mode="before")
    @classmethod
    def _deadline_has_unit(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("deadline",))


class RecsysSpec(CheckedSpec):
    """A recommendation workload to size: model, embeddings, mode and its section, targets."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
    )  # CheckedSpec's, with aliases read by name

    kind: Literal["recommendation"] = Field(
        description="Spec kind; 'recommendation' for DLRM-style models with large embedding tables."
    )
    name: str | None = Field(
        default=None, max_length=200, description="A name for this plan, shown in reports."
    )
    model: str = Field(
        description="Recommendation preset, e.g. dlrm-dcnv2-criteo (spec/data/recsys_models.yaml)."
    )
    mode: Literal["training", "inference"] = Field(
        default="training", description="'training' (needs `train:`) or 'inference' (needs `inference:`)."
    )
    embeddings: Embeddings = Field(
        default_factory=Embeddings, description="Table precision, size multiplier, sharding, cache hit rate."
    )
    train: RecsysTraining | None = Field(
        default=None,
        validation_alias=AliasChoices("train", "training"),
        description="The training run: samples, epochs, global batch, precision.",
    )
    inference: RecsysInference | None = Field(
        default=None, description="The serving load: queries per second, candidates per query, p99 latency."
    )
    targets: RecsysTargets = Field(
        default_factory=RecsysTargets, description="Accelerator choices, deadline or GPU count, objective."
    )
    policy: Policy = Field(default_factory=Policy, description="Inference: headroom and utilisation margins.")
    infrastructure: Infrastructure = Field(
        default_factory=Infrastructure,
        description="Facility, fabric, storage, cost, margins, growth and schedule around the accelerators.",
    )
    _notes: tuple[str, ...] = PrivateAttr(default=())  # how unit-less figures were read (spec.load)
    prices: UserPrices = Field(
        default_factory=UserPrices,
        description=(
            "Negotiated prices merged over the catalog, keyed by accelerator or node id, e.g. "
            "{h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}, hgx-h100: {capex_usd: 250000}, power_usd_per_kwh: 0.07}."
        ),
    )

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        return get_recsys_model(value).name

    @model_validator(mode="after")
    def _check_mode(self) -> RecsysSpec:
        problems = []
        if self.mode == "training" and self.train is None:
            problems.append("mode 'training' needs a `train:` section (samples, epochs, global_batch)")
        if self.mode == "inference" and self.inference is None:
            problems.append(
                "mode 'inference' needs an `inference:` section (qps, samples_per_query, latency_p99)"
            )
        if self.mode == "training" and self.inference is not None:
            problems.append("`inference:` applies only to mode 'inference'; remove it or set mode: inference")
        if self.mode == "inference" and self.train is not None:
            problems.append("`train:` applies only to mode 'training'; remove it or set mode: training")
        train = self.train
        if (
            train is not None
            and train.samples is not None
            and train.samples * train.epochs < train.global_batch
        ):
            problems.append(
                f"train.samples x train.epochs ({train.samples * train.epochs:.4g}) is less than one step of "
                f"train.global_batch ({train.global_batch:,}); the run would not finish a step. "
                "Raise samples or epochs, or lower the global batch"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def arch(self) -> RecsysModel:
        return get_recsys_model(self.model)
