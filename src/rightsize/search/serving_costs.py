"""Price of GPUs per hour (cloud on-demand) under the prices in effect, and why there is none;
and the one place a cost or energy per unit of work is computed.

A cost objective ranks by these figures; an accelerator without one cannot win it (a missing
price is not a price of zero), and `no_price_reason` is what a rejection says.

Per-unit figures (cost per million tokens, per request, per image; energy per million
tokens) have ONE definition, `per_million` / `per_unit`: what is billed (or drawn) over a
period divided by the work actually served in that same period. For a service the work
served is the traffic profile's AVERAGE rate (`served_per_s`), never the design (peak x
headroom) rate and never the average rate times a duty cycle a second time. The search's
candidates, the sizing's cost and power records and every report read these figures; none
recomputes them another way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TypeVar

from rightsize.catalog.prices import cloud_price
from rightsize.catalog.providers import why_unpriced
from rightsize.errors import BadInput
from rightsize.spec.inference import InferenceSpec

T = TypeVar("T")

MILLION = 1e6


def per_unit(amount: float | None, units: float | None) -> float | None:
    """`amount` (USD, joules, kWh) over a period / the work units served in that period; None
    when either is missing or no work is served."""
    if amount is None or units is None or units <= 0:
        return None
    return amount / units


def per_million(amount: float | None, units: float | None) -> float | None:
    """`amount` over a period per million work units served in that period (see `per_unit`)."""
    one = per_unit(amount, units)
    return None if one is None else one * MILLION


def served_per_s(capacity_units_per_s: float, average_rps: float | None, units_per_request: float) -> float:
    """Work units a service actually serves per second, on average.

    With a traffic profile (`average_rps`, requests per second on average) it is the average
    rate x the mean units per request (e.g. output tokens), whatever the capacity; without one
    (offline, fixed batch: the engine runs flat out) it is the capacity's rate.
    """
    if average_rps:
        return average_rps * units_per_request
    return capacity_units_per_s


def llm_served(spec: InferenceSpec, capacity_output_tokens_per_s: float) -> tuple[float, float]:
    """(requests/s, output tokens/s) an LLM service serves on average: the traffic profile's
    average rate under `scenario: serving`; the engine's own rate offline or at a fixed batch."""
    tr = spec.traffic
    out_per_request = max(tr.output_tokens.mean_tokens, 1.0)
    average = (tr.rate_per_s or tr.peak_rate_per_s) if spec.serving.scenario == "serving" else None
    tokens = served_per_s(capacity_output_tokens_per_s, average, out_per_request)
    return tokens / out_per_request, tokens


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
        f"no price for {accelerator} in this deployment ({why_unpriced(accelerator)}), so it cannot be ranked by cost; "
        f"give one with `prices: {{{accelerator}: {{on_demand_usd_per_gpu_hour: ...}}}}` or `--prices FILE`"
    )


def keep_priced(
    options: list[T],
    cost: Callable[[T], float | None],
    accelerator: Callable[[T], str],
    unpriced: Iterable[str] = (),
) -> tuple[list[T], list[str]]:
    """For a cost objective: the options that have a price, and the accelerators dropped for
    having none (`unpriced`: more such accelerators, whose options the caller did not build).

    Raises `BadInput` when nothing allowed has a price: ranking by cost is then impossible,
    and ranking by something else under the name "cost" would mislead.
    """
    priced = [o for o in options if cost(o) is not None]
    dropped = sorted(({accelerator(o) for o in options} | set(unpriced)) - {accelerator(o) for o in priced})
    if not priced:
        raise BadInput(
            "objective: cost was asked, but no allowed accelerator has a price in this deployment.",
            "Unpriced: "
            + "; ".join(f"{a} ({why_unpriced(a)})" for a in dropped)
            + ". A missing price is not a price of zero.",
            f"Give prices (`prices: {{{dropped[0] if dropped else 'h100-sxm'}: {{on_demand_usd_per_gpu_hour: ...}}}}` "
            "or `--prices FILE`), allow a priced accelerator (`rightsize catalog`), "
            "or choose another objective (targets.objective).",
        )
    return priced, dropped
