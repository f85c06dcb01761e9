"""Price of one serving replica per hour (cloud on-demand), if the price table has it."""

from __future__ import annotations

from rightsize.errors import BadInput


def replica_cost_usd_per_hour(accelerator: str, tp: int) -> float | None:
    try:
        from rightsize.catalog.prices import cloud_price
    except ImportError:  # pragma: no cover - price table not installed
        return None
    try:
        return cloud_price(accelerator).on_demand * tp
    except BadInput:
        return None
