"""Which provider prices each accelerator: the cheapest on-demand list price among those allowed.

The price catalog holds one instance record per provider that rents an accelerator
(`PriceTable.offers`). A plan prices each accelerator at one of them (`PriceTable.cloud`):
the cheapest on demand per GPU-hour among the providers allowed (`targets.providers`, or
`prices: {provider: ...}`; every provider in the catalog by default). An accelerator none of
the allowed providers rents has no cloud price in that plan, and `dropped` says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from rightsize.catalog.prices import CloudPrice, PriceTable, active_prices, cheapest
from rightsize.catalog.registry import accelerators
from rightsize.errors import BadInput


def restrict_providers(table: PriceTable, providers: Collection[str] | None) -> PriceTable:
    """`table` pricing each accelerator at the cheapest record among `providers` (names as the
    catalog spells them; None: every provider). Accelerators none of them rents lose their
    cloud price."""
    if providers is None:
        return table
    allowed = tuple(providers)
    cloud: dict[str, CloudPrice] = {}
    for acc_id, records in table.offers.items():
        kept = [r for r in records if r.instance is not None and r.instance.provider in allowed]
        if kept:
            cloud[acc_id] = cheapest(kept)
    for acc_id, price in table.cloud.items():  # the user's own figures stay
        if price not in table.offers.get(acc_id, ()):
            cloud[acc_id] = price
    return dataclasses.replace(table, cloud=cloud, providers=allowed)


def dropped(table: PriceTable) -> dict[str, str]:
    """Accelerators the catalog prices that the providers allowed do not rent: id -> who does."""
    if table.providers is None:
        return {}
    return {
        acc_id: ", ".join(dict.fromkeys(r.instance.provider for r in records if r.instance))
        for acc_id, records in table.offers.items()
        if acc_id not in table.cloud
    }


def choice_note(table: PriceTable, acc_id: str) -> str | None:
    """How the accelerator's price was chosen, for the plan: the provider and instance priced,
    and the other providers' on-demand price per GPU-hour (None when only one provider lists it)."""
    chosen = table.cloud.get(acc_id)
    records = table.offers.get(acc_id, ())
    if chosen is None or chosen.instance is None:
        return None
    others = [
        r for r in records if r.instance is not None and r.instance.provider != chosen.instance.provider
    ]
    allowed = "every provider in the price catalog" if table.providers is None else ", ".join(table.providers)
    if chosen not in records:  # the user's figures
        return f"{acc_id} priced at {chosen.instance.describe()} with your figures (prices:)"
    if not others:
        return None
    listed = "; ".join(
        f"{r.instance.provider} {r.instance.instance} in {r.instance.region} ${r.on_demand:.2f}"
        + ("" if table.providers is None or r.instance.provider in table.providers else " (not allowed)")
        for r in others
        if r.instance is not None and r.on_demand is not None
    )
    return (
        f"{acc_id} priced at {chosen.instance.describe()}, ${chosen.on_demand or 0:.2f} per GPU-hour on demand: "
        f"the cheapest among {allowed} (also listed, per GPU-hour: {listed}); "
        "choose with targets.providers or prices: {provider: ...}"
    )


def provider_offer(acc_id: str, provider: str) -> CloudPrice:
    """`provider`'s record for the accelerator in the table in effect (the user's figures when
    they priced that provider's instance); `BadInput` naming who does rent it otherwise."""
    t = active_prices()
    key = acc_id.strip().lower().replace("_", "-")
    chosen = t.cloud.get(key)
    if chosen is not None and chosen.instance is not None and chosen.instance.provider == provider:
        return chosen
    theirs = [o for o in t.offers.get(key, ()) if o.instance is not None and o.instance.provider == provider]
    if theirs:
        return cheapest(theirs)  # its cheapest region
    rents = list(dict.fromkeys(o.instance.provider for o in t.offers.get(key, ()) if o.instance))
    raise BadInput(
        f"No {provider} price for accelerator '{acc_id}'.",
        f"The price catalog lists {', '.join(rents) or 'no provider'} for it.",
        f"Choose one of those providers, or give {provider}'s price with "
        f"`prices: {{{key}: {{provider: {provider}, on_demand_usd_per_gpu_hour: ...}}}}`.",
    )


def why_unpriced(acc_id: str) -> str:
    """Why the accelerator has no cloud on-demand price in the table in effect, in a clause."""
    acc = accelerators().get(acc_id)
    if acc is not None and not acc.offered:
        return "no price, as it is not a part one can buy or rent (a hyperscaler's own variant)"
    t = active_prices()
    rents = list(dict.fromkeys(o.instance.provider for o in t.offers.get(acc_id, ()) if o.instance))
    if rents and t.providers is not None:
        return f"rented only by {', '.join(rents)} in the price catalog, and this plan allows only {', '.join(t.providers)}"
    return "no public cloud list price in the price catalog"
