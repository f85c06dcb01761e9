"""Prometheus metric names of the DCGM exporter and vLLM, per version, with their units.

``data/metric_names.yaml`` lists each quantity rightsize reads from a running system (GPU
engine activity, power, KV-cache use, time to first token ...) under a stable ``key``,
with every name it has carried in the field, newest first, and the unit each name
reports. `rightsize monitor` queries the names in order and converts what it finds to SI
with `to_si`; `rightsize export --target prometheus` writes alert rules with them.

Units are the point: dcgm-exporter's DCP ratios are 0..1 under their ``DCGM_FI_PROF_*``
names but percent under the 1.x-compatibility names, ``DCGM_FI_DEV_GPU_UTIL`` is always a
percent, and vLLM's ``*_usage_perc`` gauges are 0..1 fractions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    read_data_file,
    require_list,
    require_mapping,
    require_str,
)

_FILE = "metric_names.yaml"

MetricType = Literal["gauge", "counter", "histogram"]
Exporter = Literal["dcgm-exporter", "vllm"]

# Multiply a value in the reported unit by this to get the SI unit named in ``si_unit``.
UNIT_TO_SI: dict[str, float] = {
    "ratio": 1.0,
    "percent": 0.01,
    "MiB": float(2**20),
    "W": 1.0,
    "mJ": 1e-3,
    "J": 1.0,
    "ns": 1e-9,
    "us": 1e-6,
    "s": 1.0,
    "count": 1.0,
    "tokens": 1.0,
    "requests": 1.0,
}
# Which reported units may stand for which SI unit.
_SI_OF_UNIT: dict[str, str] = {
    "ratio": "ratio",
    "percent": "ratio",
    "MiB": "bytes",
    "W": "W",
    "mJ": "J",
    "J": "J",
    "ns": "s",
    "us": "s",
    "s": "s",
    "count": "count",
    "tokens": "tokens",
    "requests": "requests",
}
_TYPES = frozenset({"gauge", "counter", "histogram"})
_EXPORTERS = frozenset({"dcgm-exporter", "vllm"})
_NAME_KEYS = frozenset({"name", "exporter", "since", "until", "type", "unit", "source", "as_of"})
_METRIC_KEYS = frozenset({"key", "si_unit", "description", "names"})


@dataclass(frozen=True)
class MetricName:
    """One name a quantity has been published under, in one range of exporter versions."""

    name: str
    exporter: Exporter
    since: str
    until: str | None
    type: MetricType
    unit: str
    source: str
    as_of: str

    @property
    def to_si(self) -> float:
        """Factor from the reported unit to the quantity's SI unit."""
        return UNIT_TO_SI[self.unit]

    @property
    def current(self) -> bool:
        """Still published by the newest versions."""
        return self.until is None

    @property
    def provenance(self) -> Sourced:
        """The source and date as a `Sourced` (value = the SI factor)."""
        return Sourced(value=self.to_si, source=self.source, as_of=self.as_of)


@dataclass(frozen=True)
class MetricSpec:
    """A quantity read from Prometheus and every name it has had, newest first."""

    key: str
    si_unit: str
    description: str
    names: tuple[MetricName, ...]

    @property
    def exporter(self) -> Exporter:
        return self.names[0].exporter

    @property
    def type(self) -> MetricType:
        return self.names[0].type

    @property
    def primary(self) -> MetricName:
        """The current name (the first listed)."""
        return self.names[0]

    def distinct_names(self) -> tuple[str, ...]:
        """Names in preference order, without repeats (a unit change keeps the name)."""
        seen: list[str] = []
        for entry in self.names:
            if entry.name not in seen:
                seen.append(entry.name)
        return tuple(seen)

    def entry(self, name: str, exporter_version: str | None = None) -> MetricName:
        """The entry for ``name``; with several (a unit change), the one covering the version.

        Without a version the newest entry is used. Versions compare as dotted numbers.
        """
        matches = [e for e in self.names if e.name == name]
        if not matches:
            raise KeyError(f"{name!r} is not a name of {self.key!r}; known: {list(self.distinct_names())}")
        if exporter_version is None or len(matches) == 1:
            return matches[0]
        wanted = version_tuple(exporter_version)
        for e in matches:
            if version_tuple(e.since) <= wanted and (e.until is None or wanted < version_tuple(e.until)):
                return e
        return matches[0]


def version_tuple(version: str) -> tuple[int, ...]:
    """``"4.4.2-4.7.1"`` -> (4, 4, 2, 4, 7, 1); ``"0.10.2"`` -> (0, 10, 2). Non-digits split."""
    parts: list[int] = []
    for chunk in version.replace("-", ".").split("."):
        digits = "".join(ch for ch in chunk if ch.isdigit())
        if digits:
            parts.append(int(digits))
    return tuple(parts)


def _parse_name(raw: Any, si_unit: str, key: str) -> MetricName:
    if not isinstance(raw, Mapping):
        raise CatalogDataError(_FILE, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, _NAME_KEYS, _FILE, key)
    exporter = require_str(raw, "exporter", _FILE, key)
    if exporter not in _EXPORTERS:
        raise CatalogDataError(
            _FILE, f"{key}.exporter", f"must be one of {sorted(_EXPORTERS)}, got {exporter!r}"
        )
    mtype = require_str(raw, "type", _FILE, key)
    if mtype not in _TYPES:
        raise CatalogDataError(_FILE, f"{key}.type", f"must be one of {sorted(_TYPES)}, got {mtype!r}")
    unit = require_str(raw, "unit", _FILE, key)
    if _SI_OF_UNIT.get(unit) != si_unit:
        raise CatalogDataError(_FILE, f"{key}.unit", f"{unit!r} cannot express {si_unit!r}")
    until = raw.get("until")
    if until is not None and not isinstance(until, str):
        raise CatalogDataError(_FILE, f"{key}.until", f"must be a quoted version or null, got {until!r}")
    since = require_str(raw, "since", _FILE, key)
    as_of = require_str(raw, "as_of", _FILE, key)
    return MetricName(
        name=require_str(raw, "name", _FILE, key),
        exporter=exporter,  # type: ignore[arg-type]
        since=since,
        until=until,
        type=mtype,  # type: ignore[arg-type]
        unit=unit,
        source=require_str(raw, "source", _FILE, key),
        as_of=as_of,
    )


def _parse_metric(raw: Any, index: int) -> MetricSpec:
    where = f"metrics[{index}]"
    if not isinstance(raw, Mapping):
        raise CatalogDataError(_FILE, where, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, _METRIC_KEYS, _FILE, where)
    key = require_str(raw, "key", _FILE, where)
    si_unit = require_str(raw, "si_unit", _FILE, where)
    names_raw = raw.get("names")
    if not isinstance(names_raw, list) or not names_raw:
        raise CatalogDataError(_FILE, f"{where}.names", "must be a non-empty list")
    names = tuple(_parse_name(n, si_unit, f"{key}.names[{i}]") for i, n in enumerate(names_raw))
    if len({n.exporter for n in names}) != 1 or len({n.type for n in names}) != 1:
        raise CatalogDataError(_FILE, f"{key}.names", "all names of one metric must share exporter and type")
    return MetricSpec(
        key=key, si_unit=si_unit, description=require_str(raw, "description", _FILE, where), names=names
    )


@cache
def metric_specs() -> dict[str, MetricSpec]:
    """Every known quantity by key, in file order."""
    raw = read_data_file(_FILE)
    specs: dict[str, MetricSpec] = {}
    for i, item in enumerate(require_list(raw, "metrics", _FILE)):
        spec = _parse_metric(item, i)
        if spec.key in specs:
            raise CatalogDataError(_FILE, f"metrics[{i}].key", f"duplicate key {spec.key!r}")
        specs[spec.key] = spec
    return specs


@cache
def exporter_labels() -> dict[str, dict[str, str]]:
    """Label names per exporter: ``{"dcgm-exporter": {"gpu": "gpu", "host": "Hostname", ...}}``."""
    raw = read_data_file(_FILE)
    block = require_mapping(raw, "labels", _FILE, "labels")
    out: dict[str, dict[str, str]] = {}
    for exporter, labels in block.items():
        if not isinstance(labels, Mapping):
            raise CatalogDataError(_FILE, f"labels.{exporter}", "expected a mapping of role -> label name")
        out[str(exporter)] = {str(k): require_str(labels, k, _FILE, f"labels.{exporter}") for k in labels}
    return out


def metric_spec(key: str) -> MetricSpec:
    """The quantity ``key``; an unknown key is a programming error, so it raises KeyError with the list."""
    specs = metric_specs()
    if key not in specs:
        raise KeyError(f"unknown metric key {key!r}; known: {sorted(specs)}")
    return specs[key]


def find_by_name(name: str) -> tuple[MetricSpec, MetricName] | None:
    """The quantity and newest entry published under ``name`` (any exporter), or None."""
    for spec in metric_specs().values():
        for entry in spec.names:
            if entry.name == name:
                return spec, entry
    return None


def to_si(value: float, unit: str) -> float:
    """Convert a value in a reported unit (``percent``, ``MiB``, ``mJ``, ``ns`` ...) to SI."""
    if unit not in UNIT_TO_SI:
        raise KeyError(f"unknown unit {unit!r}; known: {sorted(UNIT_TO_SI)}")
    return value * UNIT_TO_SI[unit]
