"""Prices for the parts a buyer can rent (issue 28): Trainium2, B300, GB300 and MI355X from a
provider's public list, with source and date; the parts with no public rental price stay
unpriced, and a cost plan restricted to them says which, why and how to give one."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.catalog.prices import ON_DEMAND, cloud_prices, shipped_prices
from rightsize.errors import BadInput
from rightsize.report.render import render

NEWLY_PRICED = {"trn2": "aws", "b300": "aws", "gb300": "oracle", "mi355x": "oracle"}
NO_PUBLIC_PRICE = ("gaudi3", "mi350x", "h20")

COMPARE: dict[str, Any] = {
    "name": "tpu-or-trainium",
    "model": "llama3-8b",
    "training": {"seq_len": 4096, "global_batch": 64, "train_tokens": "50M"},
    "targets": {"accelerators": ["tpu-v5p", "trn2"], "objective": "cost"},
    "infrastructure": {"facility": {"deployment": "cloud"}},
}


@pytest.mark.parametrize("acc", list(NEWLY_PRICED))
def test_a_rentable_part_has_a_sourced_dated_list_price(acc: str) -> None:
    offers = shipped_prices().offers[acc]
    providers = {o.instance.provider for o in offers if o.instance}
    assert NEWLY_PRICED[acc] in providers
    for o in offers:
        fig = o.sources[ON_DEMAND]
        assert fig.value > 0 and fig.as_of >= "2026" and len(fig.source) > 40
        assert not fig.source.startswith("estimate"), "a list price, not an estimate"


def test_trainium2_is_priced_per_chip_from_the_instance() -> None:
    p = cloud_prices()["trn2"]
    assert p.instance is not None and p.instance.instance == "trn2.48xlarge" and p.instance.gpus == 16
    assert p.on_demand == pytest.approx(35.76 / 16)


@pytest.mark.parametrize("acc", NO_PUBLIC_PRICE)
def test_a_part_with_no_public_rental_price_stays_unpriced(acc: str) -> None:
    assert acc not in cloud_prices()


def test_a_tpu_or_trainium_cost_comparison_prices_both() -> None:
    p = plan(COMPARE)
    d = json.loads(render(p, "json"))
    rejected = {r["accelerator"]: r["reason"] for r in d["rejected"]}
    assert "trn2" not in rejected  # compared, not dropped for want of a price
    assert {p.best.accelerator, *(c.accelerator for c, _ in p.alternatives)} == {"tpu-v5p", "trn2"}


def test_a_cost_plan_of_unpriced_parts_says_which_why_and_how() -> None:
    spec = {**COMPARE, "targets": {"accelerators": list(NO_PUBLIC_PRICE[:2]), "objective": "cost"}}
    with pytest.raises(BadInput) as err:
        plan(spec)
    text = str(err.value)
    for acc in NO_PUBLIC_PRICE[:2]:
        assert f"{acc} (no public cloud list price" in text
    assert "prices:" in text
