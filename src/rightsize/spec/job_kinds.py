"""What the non-LLM workload kinds (vision, recommendation) share in their specs, written once:
the preset table with aliases, the targets, the serving fields (a fixed batch or a p99 latency
bound the plan picks the batch against), and the spec shell (name, mode, targets, policy,
infrastructure, prices) with its mode check. Each kind keeps only its own model and sections.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from importlib import resources
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from rightsize import yamlio
from rightsize.errors import did_you_mean
from rightsize.spec.checked import CheckedSpec
from rightsize.spec.inference import Policy
from rightsize.spec.infrastructure import Infrastructure
from rightsize.spec.prices import ProviderList, UserPrices, providers_field
from rightsize.spec.shared import ACCELERATORS_SCHEMA_EXTRA, MAX_ACCELERATORS, POSITIVE, all_means_every
from rightsize.spec.units import CountInt, DurationS, refuse_bare_durations

_SEPARATORS_RE = re.compile(r"[-_./\s]")
KIND_CONFIG = ConfigDict(
    extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
)
M = TypeVar("M")


def normalize_name(name: str) -> str:
    """A preset name as looked up: lower case, '-', '_', '.', '/' and spaces ignored."""
    return _SEPARATORS_RE.sub("", name.lower())


class PresetTable(Generic[M]):
    """Presets of one kind read from `spec/data/<file>` (`models:` with `aliases:`), built by
    `build(name, entry)`; looked up by name or alias."""

    def __init__(self, file: str, what: str, build: Callable[[str, dict[str, Any]], M]) -> None:
        self.file, self.what, self.build = file, what, build

    @functools.cached_property
    def _table(self) -> tuple[dict[str, M], dict[str, str]]:
        text = resources.files("rightsize.spec").joinpath(f"data/{self.file}").read_text(encoding="utf-8")
        models: dict[str, M] = {}
        lookup: dict[str, str] = {}
        for name, entry in yamlio.safe_load(text)["models"].items():
            models[name] = self.build(name, entry)
            for alias in (name, *entry.get("aliases", ())):
                lookup[normalize_name(alias)] = name
        return models, lookup

    def names(self) -> list[str]:
        return sorted(self._table[0])

    def find(self, name: str) -> M | None:
        models, lookup = self._table
        found = lookup.get(normalize_name(name))
        return models[found] if found is not None else None

    def get(self, name: str) -> M:
        """The preset; ValueError naming the known ones when unknown (a field error in a spec)."""
        model = self.find(name)
        if model is None:
            hint = did_you_mean(name, self.names())
            raise ValueError(
                f"unknown {self.what} model {name!r}; known: {', '.join(self.names())}"
                + (f" ({hint})" if hint else "")
            )
        return model


class KindTargets(BaseModel):
    """Which hardware the plan may use and what it minimises."""

    model_config = KIND_CONFIG

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
        description="Training: wall-clock time the run must finish within, e.g. '8h'.",
    )
    gpus: Annotated[CountInt, POSITIVE] | None = Field(
        default=None, description="Training: a fixed GPU count; null lets the search choose."
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


class ServingBatch(BaseModel):
    """How a serving engine batches: a fixed batch, or the largest batch whose p99 latency meets
    the bound (the plan picks it). Kinds set their own default bound."""

    model_config = KIND_CONFIG

    batch: Annotated[CountInt, POSITIVE] | None = Field(
        default=None,
        description=(
            "Fixed batch per engine (images, or samples for recommendation); the latency bound is then "
            "reported, not enforced. Null: the plan picks the batch that meets latency_p99."
        ),
    )
    latency_p99_s: Annotated[DurationS, POSITIVE] = Field(
        default=0.1,
        validation_alias=AliasChoices("latency_p99", "latency_p99_s", "latency"),
        description="Longest a request may take at the 99th percentile, e.g. '30ms'.",
    )

    @model_validator(mode="before")
    @classmethod
    def _latency_has_unit(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("latency_p99", "latency"))


class KindSpec(CheckedSpec):
    """The shell every non-LLM kind's spec shares: name, mode and its section, targets, policy,
    infrastructure, prices. Subclasses add `kind`, `model`, `train`, `inference`, `targets`."""

    model_config = KIND_CONFIG  # CheckedSpec's, with aliases read by name

    name: str | None = Field(
        default=None, max_length=200, description="A name for this plan, shown in reports."
    )
    mode: Literal["training", "inference"] = Field(
        default="training", description="'training' (needs `train:`) or 'inference' (needs `inference:`)."
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

    def mode_problems(self, train_needs: str, inference_needs: str) -> list[str]:
        """What is wrong between `mode` and the sections given (empty when nothing)."""
        train, inference = getattr(self, "train", None), getattr(self, "inference", None)
        problems = []
        if self.mode == "training" and train is None:
            problems.append(f"mode 'training' needs a `train:` section ({train_needs})")
        if self.mode == "inference" and inference is None:
            problems.append(f"mode 'inference' needs an `inference:` section ({inference_needs})")
        if self.mode == "training" and inference is not None:
            problems.append("`inference:` applies only to mode 'inference'; remove it or set mode: inference")
        if self.mode == "inference" and train is not None:
            problems.append("`train:` applies only to mode 'training'; remove it or set mode: training")
        return problems
