"""The sweep spec (`kind: sweep`): one base spec (a workload or a fleet) planned under many
variations: a grid of values, named scenarios, and seeded random samples (price paths, growth).

```yaml
kind: sweep
name: price-paths
base: fleet-2027.yaml                 # relative to this file, inside its folder
grid:                                 # every combination (dotted paths into the base spec)
  policy.utilisation_target: [0.75, 0.85]
scenarios:                            # named, each a set of overrides
  - {name: chat-doubles, set: {workloads.2.growth_per_year: 1.0}}
samples:                              # seeded: the same sample every run, on any engine
  count: 200
  seed: 7
  uniform:
    prices.h100-sxm.on_demand_usd_per_gpu_hour: [1.8, 3.2]
report: [cost.pooled_usd]             # extra figures to keep (dotted paths into the plan's JSON)
```
Building the spec computes nothing; `sweep.scenarios` expands it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rightsize.spec.finite import finite_numbers

_CFG = ConfigDict(extra="forbid", frozen=True)
MAX_SCENARIOS = 100_000
_PATH = re.compile(r"^[A-Za-z0-9_.\-]+(\.[A-Za-z0-9_.\-]+)*$")
Value = str | int | float | bool | None | list[Any] | dict[str, Any]


def _check_path(path: str) -> str:
    if not _PATH.match(path) or ".." in path or path.startswith(".") or path.endswith("."):
        raise ValueError(
            f"{path!r} is not a dotted path into the spec (keys and list indices joined by '.', "
            "e.g. policy.utilisation_target or workloads.2.growth_per_year)"
        )
    return path


class Scenario(BaseModel):
    model_config = _CFG

    name: Annotated[str, Field(min_length=1, max_length=120)] = Field(
        description="The scenario's name in the results."
    )
    set: dict[str, Value] = Field(description="Dotted path into the base spec -> the value it takes.")

    @field_validator("set")
    @classmethod
    def _paths(cls, value: dict[str, Any]) -> dict[str, Any]:
        for path in value:
            _check_path(path)
        return value


class Samples(BaseModel):
    model_config = _CFG

    count: int = Field(ge=1, le=MAX_SCENARIOS, description="How many random scenarios.")
    seed: int = Field(
        default=0, ge=0, le=2**32 - 1, description="The generator's seed (same seed, same samples)."
    )
    uniform: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="Dotted path -> [low, high]: each sample draws uniformly in it."
    )
    lognormal: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="Dotted path -> [median, sigma]: each sample draws median x exp(sigma x N(0, 1)).",
    )

    @model_validator(mode="after")
    def _ranges(self) -> Samples:
        if not self.uniform and not self.lognormal:
            raise ValueError("samples needs at least one path under uniform: or lognormal:")
        for path, (low, high) in self.uniform.items():
            _check_path(path)
            if not low <= high:
                raise ValueError(f"uniform {path}: low {low:g} is above high {high:g}")
        for path, (median, sigma) in self.lognormal.items():
            _check_path(path)
            if median <= 0 or sigma < 0:
                raise ValueError(f"lognormal {path}: the median must be positive and sigma at least 0")
        return self


class SweepSpec(BaseModel):
    """A base spec planned under many variations."""

    model_config = _CFG

    @model_validator(mode="before")
    @classmethod
    def _numbers_are_finite(cls, data: Any) -> Any:
        return finite_numbers(data)

    kind: Literal["sweep"] = Field(description="Spec kind; 'sweep' for one spec under many variations.")
    name: str | None = Field(default=None, description="A name for the sweep, shown in reports.")
    base: str = Field(description="The spec to vary: a path relative to this file, inside its folder.")
    grid: dict[str, list[Value]] = Field(
        default_factory=dict, description="Dotted path -> values: every combination is a scenario."
    )
    scenarios: list[Scenario] = Field(
        default_factory=list, description="Named scenarios, each a set of overrides."
    )
    samples: Samples | None = Field(default=None, description="Seeded random scenarios.")
    include_base: bool = Field(
        default=True, description="Plan the base spec as it is, as the first scenario."
    )
    report: list[str] = Field(
        default_factory=list,
        description="Dotted paths into each plan's JSON to keep beside the headline figures.",
    )

    @field_validator("grid")
    @classmethod
    def _grid(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        size = 1
        for path, values in value.items():
            _check_path(path)
            if not values:
                raise ValueError(f"grid {path}: give at least one value")
            size *= len(values)
        if size > MAX_SCENARIOS:
            raise ValueError(f"the grid has {size:,} combinations; at most {MAX_SCENARIOS:,}")
        return value

    @field_validator("report")
    @classmethod
    def _report(cls, value: list[str]) -> list[str]:
        for path in value:
            _check_path(path)
        return value
