"""Facility figures (``data/facility.yaml``): cooling types and the power model's defaults, each sourced.

Cooling types come in file order, least to most capable; `auto` cooling takes the first
that handles a rack (`rightsize.sizing.nodes_racks.choose_cooling`). The GPU idle share,
the utilisation at which a GPU reaches TDP, the host's typical share, the rack's
reserved units and power, and the thermal-throttling derate are read here and used by
`rightsize.sizing.power` and `rightsize.sizing.nodes_racks`. The `site` block (one
building's IT power and the data-centre interconnect between buildings) becomes `Site`,
read by `rightsize.search.train_demand.dci_link` and `rightsize.sizing.dci`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import cache
from typing import Any

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    check_schema,
    read_data_file,
    require_list,
    require_mapping,
    require_str,
    sourced,
)

FACILITY_FILE = "facility.yaml"
COOLING_TYPES = ("air", "rear_door", "direct_liquid", "immersion")

# (block, field, minimum, maximum): sanity bounds that catch unit slips (W for kW, % for fraction).
_FIGURES: tuple[tuple[str, str, float, float], ...] = (
    ("gpu", "idle_fraction_of_tdp", 0.01, 0.5),
    ("gpu", "utilisation_at_tdp", 0.05, 1.0),
    ("host", "typical_fraction_of_max", 0.05, 1.0),
    ("rack", "reserved_rack_units", 1, 20),
    ("rack", "overhead_w", 1, 10_000),
    ("throttle", "slowdown_fraction", 1e-4, 0.9),
    ("throttle", "max_overshoot_fraction", 1e-3, 2.0),
    ("site", "building_it_power_mw", 1, 5_000),
    ("site", "dci_tbps_per_building", 0.1, 100_000),
    ("site", "dci_distance_km", 0.01, 20_000),
    ("site", "dci_wavelength_gbps", 10, 10_000),
    ("site", "dci_wavelengths_per_fibre_pair", 1, 1_000),
    ("site", "dci_optic_power_w", 1, 1_000),
    ("site", "dci_optic_price_usd", 1, 1_000_000),
)
# Light in silica fibre (group index ~1.47) covers a kilometre in ~4.9 us: 5 us/km one way.
FIBRE_LATENCY_S_PER_KM = 5e-6
MEGA_W = 1e6


@dataclass(frozen=True)
class CoolingType:
    """One cooling type: the most sustained IT power per rack it removes, and the default rack budget."""

    id: str
    name: str
    max_rack_kw: float
    default_rack_kw: float
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class FacilityDefaults:
    """Cooling types (least capable first) and the power model's figures; `sources` keyed 'block.field'."""

    cooling: dict[str, CoolingType]
    gpu_idle_fraction_of_tdp: float
    gpu_utilisation_at_tdp: float
    host_typical_fraction_of_max: float
    rack_reserved_units: int
    rack_overhead_w: float
    throttle_slowdown_fraction: float
    throttle_max_overshoot_fraction: float
    sources: dict[str, Sourced]
    site: Site | None = None  # one building's power and the DCI between buildings
    # operator ("AWS") -> the PUE it publishes for its own halls, where the platform's facility
    # is the provider's (Trainium): the power a rented job draws at the wall there
    provider_pue: Mapping[str, Sourced] = dc_field(default_factory=dict)


@dataclass(frozen=True)
class Site:
    """One building's critical IT power and the data-centre interconnect (DCI) between buildings."""

    building_it_power_w: float
    dci_bytes_per_s_per_building: float
    dci_latency_s: float  # one way, fibre only
    dci_distance_km: float
    dci_wavelength_gbps: float
    dci_wavelengths_per_fibre_pair: int
    dci_optic_power_w: float
    dci_optic_price_usd: float

    def nodes_per_building(self, node_max_power_w: float) -> int:
        """Compute nodes one building powers at their maximum draw (at least one)."""
        return max(1, int(self.building_it_power_w // node_max_power_w))

    def buildings(self, nodes: float, node_max_power_w: float) -> int:
        """Buildings that ``nodes`` nodes need: ceil(nodes / nodes per building)."""
        return max(1, math.ceil(nodes / self.nodes_per_building(node_max_power_w)))


def _site(sources: dict[str, Sourced]) -> Site:
    v = {k.split(".", 1)[1]: s.value for k, s in sources.items() if k.startswith("site.")}
    return Site(
        building_it_power_w=v["building_it_power_mw"] * MEGA_W,
        dci_bytes_per_s_per_building=v["dci_tbps_per_building"] * 1e12 / 8.0,
        dci_latency_s=v["dci_distance_km"] * FIBRE_LATENCY_S_PER_KM,
        dci_distance_km=v["dci_distance_km"],
        dci_wavelength_gbps=v["dci_wavelength_gbps"],
        dci_wavelengths_per_fibre_pair=int(v["dci_wavelengths_per_fibre_pair"]),
        dci_optic_power_w=v["dci_optic_power_w"],
        dci_optic_price_usd=v["dci_optic_price_usd"],
    )


def parse_cooling(raw: Any, file: str, key: str) -> CoolingType:
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, frozenset({"id", "name", "max_rack_kw", "default_rack_kw"}), file, key)
    cid = require_str(raw, "id", file, key)
    if cid not in COOLING_TYPES:
        raise CatalogDataError(file, f"{key}.id", f"must be one of {COOLING_TYPES}, got {cid!r}")
    key = f"{key}({cid})"
    figures = {}
    for name in ("max_rack_kw", "default_rack_kw"):
        if name not in raw:
            raise CatalogDataError(file, key, f"missing '{name}'")
        figures[name] = sourced(raw[name], file, f"{key}.{name}", minimum=1.0, maximum=2_000.0)
    if figures["default_rack_kw"].value > figures["max_rack_kw"].value:
        raise CatalogDataError(file, f"{key}.default_rack_kw", "must not exceed max_rack_kw")
    return CoolingType(
        id=cid,
        name=require_str(raw, "name", file, key),
        max_rack_kw=figures["max_rack_kw"].value,
        default_rack_kw=figures["default_rack_kw"].value,
        sources=figures,
    )


def parse_facility(raw: Mapping[str, Any], file: str) -> FacilityDefaults:
    """Parse and check a facility document (pure: tests feed synthetic ones).

    Every cooling type must appear once, in order of rising capacity, so `auto` can take
    the first that fits.
    """
    check_schema(raw, file)
    blocks = {b for b, _, _, _ in _FIGURES}
    check_keys(raw, frozenset({"schema_version", "cooling", "provider_pue", *blocks}), file, "<document>")
    cooling: dict[str, CoolingType] = {}
    for i, entry in enumerate(require_list(raw, "cooling", file)):
        ct = parse_cooling(entry, file, f"cooling[{i}]")
        if ct.id in cooling:
            raise CatalogDataError(file, f"cooling[{i}].id", f"duplicate id {ct.id!r}")
        cooling[ct.id] = ct
    missing = set(COOLING_TYPES) - set(cooling)
    if missing:
        raise CatalogDataError(file, "cooling", f"missing cooling types {sorted(missing)}")
    caps = [c.max_rack_kw for c in cooling.values()]
    if caps != sorted(caps):
        raise CatalogDataError(file, "cooling", "list cooling types from the least to the most capable")
    sources: dict[str, Sourced] = {}
    for block_name in blocks:
        block = require_mapping(raw, block_name, file, "<document>")
        fields = frozenset(f for b, f, _, _ in _FIGURES if b == block_name)
        check_keys(block, fields, file, block_name)
    for block_name, field, lo, hi in _FIGURES:
        block = raw[block_name]
        if field not in block:
            raise CatalogDataError(file, block_name, f"missing '{field}'")
        integer = field in ("reserved_rack_units", "dci_wavelengths_per_fibre_pair")
        sources[f"{block_name}.{field}"] = sourced(
            block[field], file, f"{block_name}.{field}", integer=integer, minimum=lo, maximum=hi
        )
    return FacilityDefaults(
        cooling=cooling,
        gpu_idle_fraction_of_tdp=sources["gpu.idle_fraction_of_tdp"].value,
        gpu_utilisation_at_tdp=sources["gpu.utilisation_at_tdp"].value,
        host_typical_fraction_of_max=sources["host.typical_fraction_of_max"].value,
        rack_reserved_units=int(sources["rack.reserved_rack_units"].value),
        rack_overhead_w=sources["rack.overhead_w"].value,
        throttle_slowdown_fraction=sources["throttle.slowdown_fraction"].value,
        throttle_max_overshoot_fraction=sources["throttle.max_overshoot_fraction"].value,
        sources=sources,
        site=_site(sources),
        provider_pue=_provider_pue(raw.get("provider_pue") or {}, file),
    )


def _provider_pue(raw: Any, file: str) -> dict[str, Sourced]:
    """The ``provider_pue`` block: operator -> its published PUE (1 to 3)."""
    if not isinstance(raw, Mapping):
        raise CatalogDataError(
            file, "provider_pue", "expected a mapping of operator -> {value, source, as_of}"
        )
    return {str(k): sourced(v, file, f"provider_pue.{k}", minimum=1.0, maximum=3.0) for k, v in raw.items()}


@cache
def facility_defaults() -> FacilityDefaults:
    """The shipped facility figures, read and checked once."""
    return parse_facility(read_data_file(FACILITY_FILE), FACILITY_FILE)


def cooling_types() -> dict[str, CoolingType]:
    """Cooling types, least capable first (a fresh dict over cached objects)."""
    return dict(facility_defaults().cooling)
