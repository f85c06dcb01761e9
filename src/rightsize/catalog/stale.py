"""The maintainer's stale check: every price figure in a table dated more than
`STALE_AFTER_MONTHS` before a date, keyed as in ``prices.yaml`` (a provider's record by
provider, and by region where the provider has several)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import date

from rightsize.catalog.loader import Sourced
from rightsize.catalog.prices import INSTANCE_FIELDS, CloudPrice, PriceTable, is_stale


def _record_tag(price: CloudPrice, records: Collection[CloudPrice]) -> str:
    """'' for an accelerator's only record, '[aws]' for a provider's only one, else '[aws us-west-1]'."""
    if len(records) == 1 or price.instance is None:
        return ""
    same = [r for r in records if r.instance and r.instance.provider == price.instance.provider]
    return f"[{price.instance.provider}" + (f" {price.instance.region}]" if len(same) > 1 else "]")


def stale_figures(t: PriceTable, today: date | None = None) -> list[tuple[str, Sourced]]:
    """Every price in the table older than `STALE_AFTER_MONTHS`, as (YAML key, figure): what a
    maintainer refreshing ``prices.yaml`` re-checks first."""
    out: list[tuple[str, Sourced]] = []
    for acc_id, records in (t.offers or {a: (p,) for a, p in t.cloud.items()}).items():
        for price in records:
            where = f"cloud.{acc_id}" + _record_tag(price, records)
            out += [
                (f"{where}.{INSTANCE_FIELDS.get(field, field)}", s)
                for field, s in price.sources.items()
                if field in INSTANCE_FIELDS and is_stale(s.as_of, today)
            ]
    out += [
        (f"onprem.{n}.capex_usd", c.source) for n, c in t.onprem.items() if is_stale(c.source.as_of, today)
    ]
    return out


def stale_shapes(today: date | None = None) -> list[tuple[str, Sourced]]:
    """Every price in ``shapes.yaml`` older than `STALE_AFTER_MONTHS`, keyed
    ``shapes.<accelerator>[<provider> <instance>].<column>``."""
    from rightsize.catalog.shapes import shapes  # shapes.yaml is parsed with prices.yaml's rules

    out: list[tuple[str, Sourced]] = []
    for acc_id, records in shapes().items():
        for price in records:
            tag = f"[{price.instance.provider} {price.instance.instance}]" if price.instance else ""
            out += [
                (f"shapes.{acc_id}{tag}.{INSTANCE_FIELDS[field]}", s)
                for field, s in price.sources.items()
                if field in INSTANCE_FIELDS and is_stale(s.as_of, today)
            ]
    return out
