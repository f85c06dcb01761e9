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

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator, model_validator

from rightsize.spec.job_kinds import KIND_CONFIG, KindSpec, KindTargets, PresetTable, ServingBatch
from rightsize.spec.shared import POSITIVE
from rightsize.spec.units import Bytes, Count, CountInt, DurationS

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


def _build(name: str, e: dict[str, Any]) -> RecsysModel:
    return RecsysModel(
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


PRESETS = PresetTable("recsys_models.yaml", "recommendation", _build)


def recsys_model_names() -> list[str]:
    return PRESETS.names()


def get_recsys_model(name: str) -> RecsysModel:
    """The preset for a name or alias; ValueError naming the known ones when unknown."""
    return PRESETS.get(name)


# ------------------------------------------------------------------------------------------- spec


class Embeddings(BaseModel):
    """How the embedding tables are stored, sharded and cached."""

    model_config = KIND_CONFIG

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

    model_config = KIND_CONFIG

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


class RecsysInference(ServingBatch):
    """Online ranking: queries arrive at a rate; each scores a number of candidates (samples)."""

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


class RecsysTargets(KindTargets):
    """Which hardware the plan may use and what it minimises."""

    gpus_per_replica: Annotated[CountInt, POSITIVE] | None = Field(
        default=None,
        description="Inference: GPUs that hold one copy of the tables (1, 2, 4, 8); null lets the search choose.",
    )


class RecsysSpec(KindSpec):
    """A recommendation workload to size: model, embeddings, mode and its section, targets."""

    kind: Literal["recommendation"] = Field(
        description="Spec kind; 'recommendation' for DLRM-style models with large embedding tables."
    )
    model: str = Field(
        description="Recommendation preset, e.g. dlrm-dcnv2-criteo (spec/data/recsys_models.yaml)."
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
        default=None,
        description="The serving load: queries per second, candidates per query, a batch or a p99 latency bound.",
    )
    targets: RecsysTargets = Field(
        default_factory=RecsysTargets, description="Accelerator choices, deadline or GPU count, objective."
    )

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        return get_recsys_model(value).name

    @model_validator(mode="after")
    def _check_mode(self) -> RecsysSpec:
        problems = self.mode_problems(
            "samples, epochs, global_batch", "qps, samples_per_query, latency_p99 or batch"
        )
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
