"""Price of GPUs per hour (cloud on-demand), if the price table has the accelerator."""

from __future__ import annotations

from rightsize.catalog.prices import cloud_price
from rightsize.errors import BadInput


def replica_cost_usd_per_hour(accelerator: str, gpus: int) -> float | None:
    try:
        return cloud_price(accelerator).on_demand * gpus
    except BadInput:
        return None
