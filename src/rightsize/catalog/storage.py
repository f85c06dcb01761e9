"""Storage tiers (``data/storage.yaml``): node NVMe, a parallel file system block, owned object
storage, each cloud operator's managed file system and object store, and serving defaults, each
figure sourced and dated.

Lookups are pure functions over a table that is read and checked once. The sizing formulas
live in `rightsize.sizing.storage`; this module only says what the hardware and services
deliver and cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    check_schema,
    read_data_file,
    require_mapping,
    require_str,
    sourced,
)

STORAGE_FILE = "storage.yaml"

_TOP_KEYS = frozenset(
    {
        "schema_version",
        "node_nvme",
        "parallel_file_system",
        "object_store",
        "comparison_cloud",
        "clouds",
        "serving_defaults",
    }
)

# (field, minimum, maximum): sanity bounds that catch unit slips ("6.4" written for 6.4 GB/s).
_NVME_FIELDS: tuple[tuple[str, float, float], ...] = (
    ("drive_bytes", 1e11, 1e15),
    ("read_bytes_per_s_per_drive", 1e8, 1e11),
    ("write_bytes_per_s_per_drive", 1e8, 1e11),
)
_PFS_FIELDS: tuple[tuple[str, float, float], ...] = (
    ("usable_bytes", 1e12, 1e17),
    ("read_bytes_per_s", 1e9, 1e13),
    ("write_bytes_per_s", 1e9, 1e13),
    ("power_w", 100, 100_000),
    ("price_usd", 1_000, 100_000_000),
    ("rack_units", 1, 48),
)
_OBJECT_FIELDS: tuple[tuple[str, float, float], ...] = (
    ("onprem_usd_per_tb", 1.0, 10_000),
    ("onprem_power_w_per_tb", 0.01, 100),
)
_TIER_FIELDS: tuple[tuple[str, float, float], ...] = (
    ("throughput_bytes_per_s_per_tib", 1e6, 1e11),
    ("usd_per_gib_month", 1e-3, 10.0),
)
# optional per tier: the provider's smallest and largest instance
_TIER_LIMITS: tuple[tuple[str, float, float], ...] = (
    ("min_capacity_gib", 1.0, 1e9),
    ("max_capacity_gib", 1.0, 1e10),
)
_CLOUD_OBJECT_FIELDS: tuple[tuple[str, float, float], ...] = (("usd_per_gib_month", 1e-4, 1.0),)
_SERVING_FIELDS: tuple[tuple[str, float, float], ...] = (
    ("weights_load_s", 1, 86_400),
    ("log_bytes_per_request", 10, 1e7),
    ("log_retention_s", 3_600, 10 * 365 * 86_400),
)


@dataclass(frozen=True)
class NodeNvme:
    """One node-local NVMe data drive; a node holds ``ceil(local_nvme_bytes / drive_bytes)`` of them."""

    name: str
    drive_bytes: float
    read_bytes_per_s_per_drive: float
    write_bytes_per_s_per_drive: float
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class ParallelFileSystemBlock:
    """One building block (appliance) of an on-premises parallel file system."""

    name: str
    usable_bytes: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    power_w: float
    price_usd: float
    rack_units: int
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class ObjectStore:
    """The durable capacity tier bought per usable TB on premises (a rented one: CloudObjectStore)."""

    onprem_usd_per_tb: float
    onprem_power_w_per_tb: float
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class CloudFileSystemTier:
    """One throughput tier of a managed cloud file system: throughput is bought per TiB provisioned."""

    name: str
    throughput_bytes_per_s_per_tib: float  # read and write, per TiB (2^40 bytes) provisioned
    usd_per_gib_month: float
    sources: dict[str, Sourced]
    min_capacity_gib: float | None = None  # the provider's smallest instance at this tier
    max_capacity_gib: float | None = None  # and its largest: more capacity is more instances


@dataclass(frozen=True)
class CloudFileSystem:
    name: str
    tiers: tuple[CloudFileSystemTier, ...]


@dataclass(frozen=True)
class CloudObjectStore:
    """A cloud operator's object store, rented per GiB-month (2^30 bytes)."""

    name: str
    usd_per_gib_month: float
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class Cloud:
    """What one cloud operator (platforms.yaml ``operator``) rents: its managed parallel file
    system and its object store."""

    operator: str
    file_system: CloudFileSystem
    object_store: CloudObjectStore


@dataclass(frozen=True)
class ServingDefaults:
    """What a serving plan assumes when the spec does not say."""

    weights_load_s: float
    log_bytes_per_request: float
    log_retention_s: float
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class StorageCatalog:
    node_nvme: NodeNvme
    parallel_file_system: ParallelFileSystemBlock
    object_store: ObjectStore
    clouds: Mapping[str, Cloud]  # by operator
    comparison_cloud: str  # the operator whose prices a plan in the buyer's halls is compared to
    serving: ServingDefaults

    def cloud(self, operator: str | None = None) -> Cloud:
        """`operator`'s services, or the comparison cloud's where the catalog prices none of its."""
        return self.clouds.get(operator or "") or self.clouds[self.comparison_cloud]


def _figures(
    block: Mapping[str, Any],
    fields: tuple[tuple[str, float, float], ...],
    file: str,
    key: str,
    *,
    extra_keys: frozenset[str] = frozenset(),
) -> dict[str, Sourced]:
    check_keys(block, frozenset(f for f, _, _ in fields) | extra_keys, file, key)
    figures: dict[str, Sourced] = {}
    for field, lo, hi in fields:
        if field not in block:
            raise CatalogDataError(file, key, f"missing '{field}'")
        figures[field] = sourced(block[field], file, f"{key}.{field}", minimum=lo, maximum=hi)
    return figures


def _parse_tiers(raw: Any, file: str, at: str) -> tuple[CloudFileSystemTier, ...]:
    if not isinstance(raw, list) or not raw:
        raise CatalogDataError(file, f"{at}.tiers", "must be a non-empty list")
    tiers: list[CloudFileSystemTier] = []
    for i, entry in enumerate(raw):
        key = f"{at}.tiers[{i}]"
        if not isinstance(entry, Mapping):
            raise CatalogDataError(file, key, f"expected a mapping, got {type(entry).__name__}")
        limits = tuple(f for f in _TIER_LIMITS if f[0] in entry)
        figures = _figures(entry, _TIER_FIELDS + limits, file, key, extra_keys=frozenset({"name"}))
        lo, hi = figures.get("min_capacity_gib"), figures.get("max_capacity_gib")
        if lo and hi and lo.value > hi.value:
            raise CatalogDataError(file, key, "min_capacity_gib is above max_capacity_gib")
        tiers.append(
            CloudFileSystemTier(
                name=require_str(entry, "name", file, key),
                throughput_bytes_per_s_per_tib=figures["throughput_bytes_per_s_per_tib"].value,
                usd_per_gib_month=figures["usd_per_gib_month"].value,
                sources=figures,
                min_capacity_gib=lo.value if lo else None,
                max_capacity_gib=hi.value if hi else None,
            )
        )
    for prev, cur in zip(tiers, tiers[1:], strict=False):
        if cur.throughput_bytes_per_s_per_tib <= prev.throughput_bytes_per_s_per_tib:
            raise CatalogDataError(file, f"{at}.tiers", "tiers must be listed in rising throughput per TiB")
    return tuple(tiers)


def _parse_clouds(raw: Mapping[str, Any], file: str) -> tuple[dict[str, Cloud], str]:
    """The ``clouds`` block (operator -> file_system and object_store) and ``comparison_cloud``."""
    block = require_mapping(raw, "clouds", file, "<document>")
    clouds: dict[str, Cloud] = {}
    for operator, entry in block.items():
        at = f"clouds.{operator}"
        if not isinstance(entry, Mapping):
            raise CatalogDataError(file, at, f"expected a mapping, got {type(entry).__name__}")
        check_keys(entry, frozenset({"file_system", "object_store"}), file, at)
        fs = require_mapping(entry, "file_system", file, at)
        check_keys(fs, frozenset({"name", "tiers"}), file, f"{at}.file_system")
        obj = require_mapping(entry, "object_store", file, at)
        obj_fig = _figures(
            obj, _CLOUD_OBJECT_FIELDS, file, f"{at}.object_store", extra_keys=frozenset({"name"})
        )
        clouds[str(operator)] = Cloud(
            operator=str(operator),
            file_system=CloudFileSystem(
                name=require_str(fs, "name", file, f"{at}.file_system"),
                tiers=_parse_tiers(fs.get("tiers"), file, f"{at}.file_system"),
            ),
            object_store=CloudObjectStore(
                name=require_str(obj, "name", file, f"{at}.object_store"),
                usd_per_gib_month=obj_fig["usd_per_gib_month"].value,
                sources=obj_fig,
            ),
        )
    comparison = require_str(raw, "comparison_cloud", file, "<document>")
    if comparison not in clouds:
        raise CatalogDataError(
            file, "comparison_cloud", f"'{comparison}' is not one of clouds: {', '.join(sorted(clouds))}"
        )
    return clouds, comparison


def parse_storage(raw: Mapping[str, Any], file: str = STORAGE_FILE) -> StorageCatalog:
    """Parse and check a storage document (pure: tests feed synthetic ones)."""
    check_schema(raw, file)
    check_keys(raw, _TOP_KEYS, file, "<document>")

    nvme = require_mapping(raw, "node_nvme", file, "<document>")
    nvme_fig = _figures(nvme, _NVME_FIELDS, file, "node_nvme", extra_keys=frozenset({"name"}))

    pfs = require_mapping(raw, "parallel_file_system", file, "<document>")
    pfs_fig = _figures(pfs, _PFS_FIELDS, file, "parallel_file_system", extra_keys=frozenset({"name"}))
    if not pfs_fig["rack_units"].value.is_integer():
        raise CatalogDataError(file, "parallel_file_system.rack_units.value", "must be a whole number")

    obj = require_mapping(raw, "object_store", file, "<document>")
    obj_fig = _figures(obj, _OBJECT_FIELDS, file, "object_store")

    clouds, comparison = _parse_clouds(raw, file)

    serving = require_mapping(raw, "serving_defaults", file, "<document>")
    serving_fig = _figures(serving, _SERVING_FIELDS, file, "serving_defaults")

    return StorageCatalog(
        node_nvme=NodeNvme(
            name=require_str(nvme, "name", file, "node_nvme"),
            drive_bytes=nvme_fig["drive_bytes"].value,
            read_bytes_per_s_per_drive=nvme_fig["read_bytes_per_s_per_drive"].value,
            write_bytes_per_s_per_drive=nvme_fig["write_bytes_per_s_per_drive"].value,
            sources=nvme_fig,
        ),
        parallel_file_system=ParallelFileSystemBlock(
            name=require_str(pfs, "name", file, "parallel_file_system"),
            usable_bytes=pfs_fig["usable_bytes"].value,
            read_bytes_per_s=pfs_fig["read_bytes_per_s"].value,
            write_bytes_per_s=pfs_fig["write_bytes_per_s"].value,
            power_w=pfs_fig["power_w"].value,
            price_usd=pfs_fig["price_usd"].value,
            rack_units=int(pfs_fig["rack_units"].value),
            sources=pfs_fig,
        ),
        object_store=ObjectStore(
            onprem_usd_per_tb=obj_fig["onprem_usd_per_tb"].value,
            onprem_power_w_per_tb=obj_fig["onprem_power_w_per_tb"].value,
            sources=obj_fig,
        ),
        clouds=clouds,
        comparison_cloud=comparison,
        serving=ServingDefaults(
            weights_load_s=serving_fig["weights_load_s"].value,
            log_bytes_per_request=serving_fig["log_bytes_per_request"].value,
            log_retention_s=serving_fig["log_retention_s"].value,
            sources=serving_fig,
        ),
    )


@cache
def storage_catalog() -> StorageCatalog:
    """The shipped storage tiers, read and checked once."""
    return parse_storage(read_data_file(STORAGE_FILE), STORAGE_FILE)
