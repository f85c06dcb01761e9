"""Issue 28: every accelerator of every family is either priced from a public list (source and
date on the figure) or a plan on it says, in its own output, that it has no price and how to
give one; a cost plan restricted to it is refused with the same explanation."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.catalog.families import families
from rightsize.catalog.prices import ON_DEMAND, cloud_prices, shipped_prices
from rightsize.errors import BadInput
from rightsize.report.render import render

PARTS = sorted({a for f in families().values() for a in f.accelerators})
UNPRICED = [a for a in PARTS if a not in cloud_prices()]
# A part that cannot hold a 7B model's training state alone still plans a small job.
SPEC: dict[str, Any] = {
    "name": "price-check",
    "model": "llama3-8b",
    "training": {"seq_len": 4096, "global_batch": 64, "train_tokens": "50M"},
}
CLOUD = {"facility": {"deployment": "cloud"}}


@pytest.mark.parametrize("acc", [a for a in PARTS if a in cloud_prices()])
def test_a_priced_part_carries_source_and_date_on_every_offer(acc: str) -> None:
    for offer in shipped_prices().offers[acc]:
        fig = offer.sources[ON_DEMAND]
        assert fig.value > 0 and fig.source.strip() and fig.as_of.strip(), acc


def test_the_unpriced_parts_are_the_ones_the_price_file_names() -> None:
    """Each part without a price is named in prices.yaml's header with why (no public list found)."""
    from importlib import resources

    head = (
        (resources.files("rightsize.catalog") / "data" / "prices.yaml").read_text().split("schema_version")[0]
    )
    for acc in UNPRICED:
        names = {"tpu-v7": "TPU v7", "gaudi3": "Gaudi 3", "mi350x": "MI350X", "h20": "H20",
                 "rtx-pro-6000": "RTX PRO 6000", "h800-sxm": "h800"}  # fmt: skip
        assert names.get(acc, acc) in head, f"{acc} has no price and prices.yaml does not say why"


@cache
def _plan(acc: str) -> Any:
    return plan({**SPEC, "targets": {"accelerators": [acc], "objective": "gpu_hours"}})


@pytest.mark.parametrize("acc", [a for a in UNPRICED if a in ("tpu-v7", "gaudi3", "mi350x", "h20")])
def test_a_plan_on_an_unpriced_part_says_so_in_every_format(acc: str) -> None:
    p = _plan(acc)  # deployment 'both' (the default): the cloud side says it has no price
    assert p.best.accelerator == acc
    for fmt in ("table", "markdown", "html"):
        assert f"No price for accelerator '{acc}'" in render(p, fmt).replace("&#x27;", "'"), fmt
    assert f"No price for accelerator '{acc}'" in json.dumps(json.loads(render(p, "json")))
    # and in the headline, where a priced plan shows its cost (not silence)
    assert f"| cost | not priced: {acc} has no public cloud list price" in render(p, "markdown")
    with pytest.raises(BadInput, match=f"{acc} \\(no public cloud list price"):
        plan({**SPEC, "targets": {"accelerators": [acc], "objective": "cost"}, "infrastructure": CLOUD})
