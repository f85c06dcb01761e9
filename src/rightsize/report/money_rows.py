"""Headline rows about money that every plan document carries next to its figures: which
accelerators an `objective: cost` plan dropped for having no price (and why), and a price
older than `STALE_AFTER_MONTHS` next to the cost it priced."""

from __future__ import annotations

from typing import Any

from rightsize.report.document import Document

NO_PRICE = "no price for "


def _unpriced(plan: Any) -> list[tuple[str, str]]:
    """(accelerator, reason) of every candidate the search dropped for having no price."""
    out: list[tuple[str, str]] = []
    for r in getattr(plan, "rejected", None) or ():
        acc, reason = (r.accelerator, r.reason) if hasattr(r, "accelerator") else (r[0], r[1])
        if str(reason).startswith(NO_PRICE):
            out.append((str(acc), str(reason)))
    return out


def dropped_row(plan: Any) -> tuple[str, str] | None:
    """'not priced, dropped': the parts a cost objective could not rank, said in the headline
    (a buyer comparing 'TPU v5p or Trainium2' must not get TPU only without being told)."""
    dropped = _unpriced(plan)
    if not dropped:
        return None
    ids = [a for a, _ in dropped]
    whys = "; ".join(f"{a}: {_why(a, reason)}" for a, reason in dropped)
    return (
        "not priced, dropped",
        f"{whys}. The cost objective could not rank {'it' if len(ids) == 1 else 'them'}: give a price with "
        f"`prices: {{{ids[0]}: {{on_demand_usd_per_gpu_hour: ...}}}}` to compare",
    )


def _why(acc: str, reason: str) -> str:
    """The clause in brackets of `no price for ACC (WHY), so ...`, or the reason itself."""
    head = f"{NO_PRICE}{acc} in this deployment ("
    if reason.startswith(head) and "), so" in reason:
        return reason[len(head) : reason.index("), so")]
    return reason


def stale_row(plan: Any) -> tuple[str, str] | None:
    """'price date': the on-demand price a stale cost figure rests on, with its age."""
    cost = getattr(getattr(plan, "sizing", None), "cost", None)
    cloud = getattr(cost, "cloud", None) or {}
    stale = [
        (name, opt.details["price_stale"])
        for name, opt in cloud.items()
        if isinstance(getattr(opt, "details", None), dict) and opt.details.get("price_stale")
    ]
    if not stale:
        return None
    names = ", ".join(n.replace("_", " ") for n, _ in stale)
    return ("price date (stale)", f"{names}: {stale[0][1]}")


def chosen_unpriced_row(plan: Any, key_numbers: list[tuple[str, str]]) -> tuple[str, str] | None:
    """'cost': not priced, when the chosen part has no price and the headline would otherwise
    carry no cost at all (a plan on TPU v7 must say it is unpriced, not stay silent)."""
    if any(k.lower().startswith("cost") for k, _ in key_numbers):
        return None
    acc = getattr(getattr(plan, "best", None), "accelerator", None)
    cost = getattr(getattr(plan, "sizing", None), "cost", None)
    if not isinstance(acc, str) or cost is None:
        return None
    on_demand = (getattr(cost, "cloud", None) or {}).get("on_demand")
    if on_demand is not None and getattr(on_demand, "usd_per_month", None) is not None:
        return None
    from rightsize.catalog.providers import why_unpriced

    return (
        "cost",
        f"not priced: {acc} has {why_unpriced(acc)}; give one with "
        f"`prices: {{{acc}: {{on_demand_usd_per_gpu_hour: ...}}}}` or `--prices FILE`",
    )


def place(doc: Document, plan: Any) -> None:
    """Put the rows in the headline: the stale date right after the first cost figure, the
    dropped parts after the key numbers."""
    kn = doc.key_numbers
    unpriced = chosen_unpriced_row(plan, kn)
    if unpriced is not None:
        at = next((i for i, (k, _) in enumerate(kn) if k.lower().startswith(("gpu-hours", "chip-hours"))), 0)
        kn.insert(at + 1, unpriced)
    stale = stale_row(plan)
    if stale is not None:
        at = next((i for i, (k, _) in enumerate(kn) if k.lower().startswith("cost")), len(kn) - 1)
        kn.insert(at + 1, stale)
    dropped = dropped_row(plan)
    if dropped is not None:
        kn.append(dropped)
