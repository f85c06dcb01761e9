"""A team's own prices (the spec's `prices:` or `--prices FILE`) merged over the dated catalog.

Every figure the user gives replaces the catalog's and carries the source "user". When the
user gives an accelerator's on-demand price and not its commitment or spot prices, those
keep the catalog's ratio to on-demand (a negotiated rate usually moves the whole price
list), and their source says so. An accelerator the catalog has no price for (h800-sxm)
gets exactly the figures given; a way of renting without a figure has no price.

`provider:` at the top level restricts every accelerator to those providers' records
(as `targets.providers`); on an accelerator it says whose instance the figures are for
(that provider's catalog record is the base), and alone it prices the accelerator there.
"""

from __future__ import annotations

import dataclasses
from datetime import date

from rightsize.catalog.loader import Sourced
from rightsize.catalog.prices import (
    CAPEX_USD_RANGE,
    ON_DEMAND,
    PREEMPTIONS,
    PRICE_FIELDS,
    RESERVED_1Y,
    RESERVED_3Y,
    SPOT,
    USD_PER_GPU_HOUR_RANGE,
    USER_SOURCE,
    CloudPrice,
    NodeCapex,
    PriceTable,
    cheapest,
)
from rightsize.catalog.providers import restrict_providers
from rightsize.catalog.registry import accelerators, nodes
from rightsize.errors import BadInput, did_you_mean
from rightsize.safe_read import clean_key
from rightsize.spec.prices import AcceleratorPrices, UserPrices

_ORDER = ((RESERVED_3Y, RESERVED_1Y), (RESERVED_1Y, ON_DEMAND), (SPOT, ON_DEMAND))


def _id(name: str, known: dict[str, object], other: dict[str, object], kind: str, example: str) -> str:
    key = name.strip().lower().replace("_", "-")
    if key in known:
        return key
    name = clean_key(name)  # a key from the user's file: printable and short in the message
    if key in other:
        why = f"'{name}' is a {'node type' if kind == 'accelerator' else 'accelerator'}, not a {kind}."
        fix = f"Give {'a node its `capex_usd`' if kind == 'accelerator' else 'an accelerator its per-GPU-hour prices'}."
    else:
        why = f"'{name}' is not a {kind} in the catalog (`rightsize catalog` lists them)."
        hint = did_you_mean(name, list(known))
        fix = (hint[0].upper() + hint[1:] + " " if hint else "") + f"Use a catalog id, e.g. {example}."
    raise BadInput(f"prices: cannot price '{name}'.", why, fix)


def _check_range(value: float, lo: float, hi: float, what: str, unit_hint: str) -> None:
    if not lo <= value <= hi:
        raise BadInput(
            f"prices: {what} = {value:g} is outside {lo:g} to {hi:g}.",
            f"That is almost surely a unit slip ({unit_hint}).",
            "Give the figure in the unit its key names.",
        )


def _merge_accelerator(
    acc_id: str, given: AcceleratorPrices, base: CloudPrice | None, default_preemptions: Sourced, as_of: str
) -> CloudPrice:
    figures = given.given()
    lo, hi = USD_PER_GPU_HOUR_RANGE
    for field, value in figures.items():
        _check_range(value, lo, hi, f"{acc_id}.{field}", "per GPU-hour, not per 8-GPU instance-hour")
    sources: dict[str, Sourced] = {}
    values: dict[str, float | None] = {}
    for field in PRICE_FIELDS:
        if field in figures:
            sources[field] = Sourced(figures[field], USER_SOURCE, as_of)
            values[field] = figures[field]
            continue
        old = base.rate(field) if base is not None else None
        if old is None or base is None:
            values[field] = None
            continue
        if ON_DEMAND in figures and field != ON_DEMAND and base.on_demand:
            ratio = old / base.on_demand
            values[field] = figures[ON_DEMAND] * ratio
            sources[field] = Sourced(
                values[field] or 0.0,
                f"derived: the user's on-demand ${figures[ON_DEMAND]:g} x {ratio:.3g} "
                f"(the catalog's {field} / on-demand; catalog figure: {base.sources[field].source})",
                as_of,
            )
        else:
            values[field] = old
            sources[field] = base.sources[field]
    sources[PREEMPTIONS] = base.sources[PREEMPTIONS] if base is not None else default_preemptions
    for low, high in _ORDER:
        lv, hv = values[low], values[high]
        if lv is not None and hv is not None and lv > hv * (1 + 1e-9):
            raise BadInput(
                f"prices: {acc_id}.{low} (${lv:.4g}) would cost more per GPU-hour than {high} (${hv:.4g}).",
                f"{low} comes from {'you' if low in figures else 'the catalog'}, "
                f"{high} from {'you' if high in figures else 'the catalog'}; a commitment or spot never costs "
                "more than on-demand.",
                f"Give {acc_id}.{high if high not in figures else low} too, consistent with the other.",
            )
    return CloudPrice(
        accelerator=acc_id,
        on_demand=values[ON_DEMAND],
        reserved_1y=values[RESERVED_1Y],
        reserved_3y=values[RESERVED_3Y],
        spot=values[SPOT],
        spot_preemptions_per_hour=sources[PREEMPTIONS].value,
        sources=sources,
        instance=base.instance if base is not None else None,  # the user prices the same instance
    )


def _base(table: PriceTable, acc_id: str, given: AcceleratorPrices) -> CloudPrice | None:
    """The catalog record of the provider the user named for `acc_id` (None: the catalog has
    none, so the user's figures stand alone); `BadInput` when they give no figure either."""
    theirs = [o for o in table.offers.get(acc_id, ()) if o.instance and o.instance.provider == given.provider]
    if theirs:
        return cheapest(theirs)  # the provider's cheapest region
    if given.on_demand_usd_per_gpu_hour is None:
        rents = list(dict.fromkeys(o.instance.provider for o in table.offers.get(acc_id, ()) if o.instance))
        raise BadInput(
            f"prices: {acc_id}.provider is {given.provider}, which the price catalog has no price of.",
            f"The catalog lists {', '.join(rents) or 'no provider'} for {acc_id}.",
            f"Name one of those, or give {given.provider}'s on_demand_usd_per_gpu_hour with it.",
        )
    return None


def merge_user_prices(table: PriceTable, user: UserPrices | None, origin: str = "spec prices:") -> PriceTable:
    """`table` with the user's figures over it; `BadInput` names an unknown id or an absurd figure."""
    if user is None or user.is_empty():
        return table
    as_of = date.today().isoformat()
    accs: dict[str, object] = dict.fromkeys(accelerators())
    node_ids: dict[str, object] = dict.fromkeys(nodes())
    notes: list[str] = []
    if user.provider is not None:
        table = restrict_providers(table, user.provider)
        notes.append(f"rent only from {', '.join(user.provider)} ({origin})")
    cloud = dict(table.cloud)
    for name, given in user.accelerators.items():
        acc_id = _id(name, accs, node_ids, "accelerator", "h100-sxm")
        base = _base(table, acc_id, given) if given.provider else table.cloud.get(acc_id)
        cloud[acc_id] = _merge_accelerator(acc_id, given, base, table.default_preemptions, as_of)
        notes += [f"{acc_id} {k} ${v:g} per GPU-hour ({origin})" for k, v in given.given().items()]
        if given.provider:
            where = base.instance.describe() if base is not None and base.instance else given.provider
            notes.append(f"{acc_id} priced at {where} ({origin})")
    onprem = dict(table.onprem)
    for name, node_price in user.nodes.items():
        node_id = _id(name, node_ids, accs, "node type", "hgx-h100")
        lo, hi = CAPEX_USD_RANGE
        _check_range(node_price.capex_usd, lo, hi, f"{node_id}.capex_usd", "USD per node of GPUs")
        onprem[node_id] = NodeCapex(
            node_id, node_price.capex_usd, Sourced(node_price.capex_usd, USER_SOURCE, as_of)
        )
        notes.append(f"{node_id} capex ${node_price.capex_usd:,.0f} per node ({origin})")
    defaults = table.defaults
    if user.power_usd_per_kwh is not None:
        kwh = Sourced(user.power_usd_per_kwh, USER_SOURCE, as_of)
        defaults = dataclasses.replace(
            defaults, power_usd_per_kwh=kwh.value, sources={**defaults.sources, "power_usd_per_kwh": kwh}
        )
        notes.append(f"power ${user.power_usd_per_kwh:g} per kWh ({origin})")
    return dataclasses.replace(
        table, cloud=cloud, onprem=onprem, defaults=defaults, user_notes=table.user_notes + tuple(notes)
    )
