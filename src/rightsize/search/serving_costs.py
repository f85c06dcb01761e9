"""Price of GPUs per hour (cloud on-demand) under the prices in effect, and why there is none.

A cost objective ranks by these figures; an accelerator without one cannot win it (a missing
price is not a price of zero), and `no_price_reason` is what a rejection says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

from rightsize.catalog.prices import cloud_price
from rightsize.errors import BadInput

T = TypeVar("T")


def replica_cost_usd_per_hour(accelerator: str, gpus: int) -> float | None:
    """On-demand USD per hour of `gpus` accelerators, or None when the prices in effect have none."""
    try:
        rate = cloud_price(accelerator).on_demand
    except BadInput:
        return None
    return None if rate is None else rate * gpus


def billed_gpus(gpus: int, gpus_per_node: int) -> int:
    """GPUs paid for: instances and servers come whole, so a job pays for every GPU of its nodes."""
    return math.ceil(gpus / gpus_per_node) * gpus_per_node


def billed_cost_usd_per_hour(accelerator: str, gpus: int, gpus_per_node: int) -> float | None:
    """On-demand USD per hour of the whole nodes `gpus` accelerators occupy (None: no price)."""
    return replica_cost_usd_per_hour(accelerator, billed_gpus(gpus, gpus_per_node))


def no_price_reason(accelerator: str) -> str:
    """Why an unpriced accelerator cannot be ranked by cost, and the fix."""
    return (
        f"no price for {accelerator} in this deployment (cloud on-demand), so it cannot be ranked by cost; "
        f"give one with `prices: {{{accelerator}: {{on_demand_usd_per_gpu_hour: ...}}}}` or `--prices FILE`"
    )


def keep_priced(
    options: list[T], cost: Callable[[T], float | None], accelerator: Callable[[T], str]
) -> tuple[list[T], list[str]]:
    """For a cost objective: the options that have a price, and the accelerators dropped for having none.

    Raises `BadInput` when nothing allowed has a price: ranking by cost is then impossible,
    and ranking by something else under the name "cost" would mislead.
    """
    priced = [o for o in options if cost(o) is not None]
    dropped = sorted({accelerator(o) for o in options} - {accelerator(o) for o in priced})
    if not priced:
        raise BadInput(
            "objective: cost was asked, but no allowed accelerator has a price in this deployment.",
            "Unpriced: " + ", ".join(dropped) + ". A missing price is not a price of zero.",
            f"Give prices (`prices: {{{dropped[0] if dropped else 'h100-sxm'}: {{on_demand_usd_per_gpu_hour: ...}}}}` "
            "or `--prices FILE`), allow a priced accelerator (`rightsize catalog`), "
            "or choose another objective (targets.objective).",
        )
    return priced, dropped
