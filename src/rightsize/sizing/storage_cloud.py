"""Storage rented from the cloud operator whose halls hold the plan (Trainium on AWS, TPUs on
Google Cloud): its managed file system's tier and instances as the hot tier, its object store,
and the comparison cloud's services for a plan in the buyer's own halls (`sizing.storage`
sizes the needs and reads these)."""

from __future__ import annotations

import math
from typing import Any

from rightsize.catalog.nodes import NodeType
from rightsize.catalog.platforms import platform_for
from rightsize.catalog.storage import Cloud, CloudFileSystemTier, ObjectStore, StorageCatalog
from rightsize.constants import TB, GiB, TiB

_EPS = 1e-9  # keeps ceil(250e12 / 250e12) at 1 despite float noise


def ceil_units(need: float, per_unit: float) -> int:
    return max(0, math.ceil(need / per_unit - _EPS)) if need > 0 else 0


def with_margin(x: float, margin: float) -> float:
    return x * (1.0 + margin)


def rents_file_system(node: NodeType, cat: StorageCatalog) -> str | None:
    """The operator whose managed file system holds the hot tier (the platform's halls are its
    own and storage.yaml ``clouds`` prices its services), else None (an appliance in the buyer's
    halls)."""
    plat = platform_for(node.accelerator)
    return plat.operator if plat.provider_facility and plat.operator in cat.clouds else None


def rented_tier(cfs: dict[str, Any], needs: Any, margin: float, operator: str) -> dict[str, Any]:
    """The provider's managed file system as the hot tier, shaped like the parallel file system's
    entry (the checkpoint rate and the reports read one place): its throughput is what the
    provisioned TiB buy; nothing is bought, racked or powered in the buyer's halls."""
    split = f" over {cfs['instances']} instances" if cfs["instances"] > 1 else ""
    return {
        "tier": "cloud_file_system",
        "building_block": f"none: {cfs['service']} ({cfs['tier']}), rented from {operator}",
        "blocks": 0,
        "reason": (
            f"the halls are {operator}'s: the hot tier is {cfs['service']} at {cfs['tier']}, "
            f"{cfs['provisioned_bytes'] / TB:,.2f} TB provisioned (limited by {cfs['limited_by']}){split}, "
            f"billed monthly; no appliance to buy, rack or power"
        ),
        "limited_by": cfs["limited_by"],
        "capacity_needed_bytes": with_margin(needs.file_system_bytes, margin),
        "read_needed_bytes_per_s": with_margin(needs.read_bytes_per_s, margin),
        "write_needed_bytes_per_s": with_margin(needs.write_bytes_per_s, margin),
        "usable_bytes": cfs["provisioned_bytes"],
        "read_bytes_per_s": cfs["throughput_bytes_per_s"],
        "write_bytes_per_s": cfs["throughput_bytes_per_s"],
        "rack_units": 0,
        "capex_usd": None,  # rented: in cloud_usd_per_month
        "power_w": None,  # in the provider's halls, within its PUE and price
    }


def _cloud_tier_cost(
    tier: CloudFileSystemTier, cap: float, read: float, write: float
) -> tuple[float, str, float]:
    by = {
        "capacity": cap / TiB,
        "read": read / tier.throughput_bytes_per_s_per_tib,
        "write": write / tier.throughput_bytes_per_s_per_tib,
        "the tier's smallest instance": (tier.min_capacity_gib or 0.0) * GiB / TiB,
    }
    limited_by = max(by, key=lambda k: by[k])
    tib = by[limited_by]
    return tib, limited_by, tib * TiB / GiB * tier.usd_per_gib_month


def cloud_file_system(needs: Any, margin: float, cloud: Cloud) -> tuple[dict[str, Any], CloudFileSystemTier]:
    cap = with_margin(needs.file_system_bytes, margin)
    read = with_margin(needs.read_bytes_per_s, margin)
    write = with_margin(needs.write_bytes_per_s, margin)
    options = [(t, *_cloud_tier_cost(t, cap, read, write)) for t in cloud.file_system.tiers]
    tier, tib, limited_by, usd = min(options, key=lambda o: o[3])
    largest_tib = (tier.max_capacity_gib or math.inf) * GiB / TiB
    return {
        "service": cloud.file_system.name,
        "provider": cloud.operator,
        "tier": tier.name,
        "instances": ceil_units(tib, largest_tib) if math.isfinite(largest_tib) else 1,
        "throughput_bytes_per_s_per_tib": tier.throughput_bytes_per_s_per_tib,
        "provisioned_bytes": tib * TiB,
        "limited_by": limited_by,
        "throughput_bytes_per_s": tib * tier.throughput_bytes_per_s_per_tib,
        "usd_per_month": usd,
        "usd_per_month_by_tier": {t.name: c for t, _, _, c in options},
    }, tier


def object_store_plan(
    capacity_bytes: float, safety_margin: float, obj: ObjectStore, cloud: Cloud
) -> dict[str, Any]:
    """The object store: capacity with the margin, the cloud's price, and owned capex and power."""
    obj_tb = with_margin(capacity_bytes, safety_margin) / TB
    return {
        "capacity_bytes": capacity_bytes,
        "capacity_with_margin_bytes": obj_tb * TB,
        "cloud_service": cloud.object_store.name,
        "cloud_usd_per_month": capacity_bytes / GiB * cloud.object_store.usd_per_gib_month,
        "onprem_capex_usd": obj_tb * obj.onprem_usd_per_tb,
        "onprem_power_w": obj_tb * obj.onprem_power_w_per_tb,
    }
