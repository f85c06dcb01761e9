"""Issue 13: negotiated prices (`prices:` and `--prices FILE`), one basis per price column, and
unpriced accelerators that can never win a cost objective."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.catalog.loader import CatalogDataError, read_data_file
from rightsize.catalog.prices import (
    INSTANCE_FIELDS,
    ON_DEMAND,
    PRICES_FILE,
    RESERVED_1Y,
    SPOT,
    USER_SOURCE,
    cloud_price,
    parse_prices,
    price_basis,
    shipped_prices,
)
from rightsize.catalog.registry import accelerators, nodes
from rightsize.catalog.user_prices import merge_user_prices
from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.spec.prices import UserPrices

ROOT = Path(__file__).resolve().parent.parent

# A small LoRA job on one fixed H100 node: plans in well under a second.
LORA: dict[str, Any] = {
    "name": "lora-price-test",
    "model": "llama3-8b",
    "training": {
        "seq_len": 4096,
        "global_batch": 64,
        "train_tokens": "50M",
        "method": "lora",
        "lora": {"rank": 16, "alpha": 32, "targets": "all_linear"},
    },
    "targets": {"accelerators": ["h100-sxm"], "objective": "cost"},
    "infrastructure": {"facility": {"deployment": "cloud"}},
}

SERVE: dict[str, Any] = {
    "kind": "inference",
    "model": "llama3-8b",
    "traffic": {"rate": 5, "prompt_tokens": 512, "output_tokens": 128},
    "slo": {"ttft": "1s", "tpot": "100ms"},
    "targets": {"accelerators": ["h800-sxm", "h100-sxm"], "objective": "cost"},
}


def _with(spec: dict[str, Any], **top: Any) -> dict[str, Any]:
    out = copy.deepcopy(spec)
    out.update(top)
    return out


def _on_demand_run_usd(p: Any) -> float:
    return float(p.sizing.cost.cloud["on_demand"].usd_per_run)


# --- user prices ---------------------------------------------------------------------------


def test_spec_prices_change_the_cost_in_proportion() -> None:
    base = plan(LORA)
    rate = cloud_price("h100-sxm").on_demand
    assert rate is not None
    half = plan(_with(LORA, prices={"h100-sxm": {"on_demand_usd_per_gpu_hour": rate / 2}}))
    assert base.best.gpus == half.best.gpus
    od_base, od_half = base.sizing.cost.cloud["on_demand"], half.sizing.cost.cloud["on_demand"]
    assert od_half.usd_per_gpu_hour == pytest.approx(od_base.usd_per_gpu_hour / 2, rel=1e-12)
    # the headline is the bill of materials' figure; cloud storage is not a GPU price, so allow its share
    assert half.best.cost_usd == pytest.approx(_on_demand_run_usd(half), rel=1e-12)
    assert _on_demand_run_usd(half) == pytest.approx(_on_demand_run_usd(base) / 2, rel=0.02)


def test_user_figures_are_sourced_user_in_the_plan() -> None:
    p = plan(_with(LORA, prices={"h100-sxm": {"on_demand_usd_per_gpu_hour": 2.2}}))
    sources = {s["figure"]: s for s in p.sizing.cost.sources}
    assert sources[f"prices.cloud.h100-sxm.{ON_DEMAND}"]["source"] == USER_SOURCE
    assert any("h100-sxm on_demand_usd_per_gpu_hour $2.2" in a for a in p.assumptions)


def test_prices_file_over_the_spec_over_the_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "lora.yaml"
    spec.write_text(json.dumps(_with(LORA, prices={"h100-sxm": {"on_demand_usd_per_gpu_hour": 4.0}})))
    prices = tmp_path / "prices.yaml"
    prices.write_text("h100-sxm: {on_demand_usd_per_gpu_hour: 2.0}\n")
    assert main(["plan", str(spec), "--format", "json"]) == 0
    four = json.loads(capsys.readouterr().out)
    assert main(["plan", str(spec), "--format", "json", "--prices", str(prices)]) == 0
    two = json.loads(capsys.readouterr().out)
    assert four["sizing"]["cost"]["cloud"]["on_demand"]["usd_per_gpu_hour"] == 4.0
    assert two["sizing"]["cost"]["cloud"]["on_demand"]["usd_per_gpu_hour"] == 2.0
    assert two["best"]["cloud_cost_usd"] == pytest.approx(four["best"]["cloud_cost_usd"] / 2, rel=0.02)


def test_on_demand_alone_keeps_the_catalog_discounts() -> None:
    table = merge_user_prices(
        shipped_prices(), UserPrices.model_validate({"h100-sxm": {"on_demand_usd_per_gpu_hour": 2.0}})
    )
    old, new = shipped_prices().cloud["h100-sxm"], table.cloud["h100-sxm"]
    assert old.on_demand and old.reserved_1y and new.reserved_1y
    assert new.reserved_1y / 2.0 == pytest.approx(old.reserved_1y / old.on_demand)
    assert new.sources[RESERVED_1Y].source.startswith("derived: the user's on-demand")


@pytest.mark.parametrize(
    ("prices", "needle"),
    [
        ({"h100": {"on_demand_usd_per_gpu_hour": 2.0}}, "Did you mean"),  # a typo
        ({"hgx-h100": {"on_demand_usd_per_gpu_hour": 2.0}}, "is a node type"),  # node priced per GPU-hour
        ({"h100-sxm": {"on_demand_usd_per_gpu_hour": 98.32}}, "unit slip"),  # an 8-GPU instance's price
        ({"h100-sxm": {"reserved_1y_usd_per_gpu_hour": 20.0}}, "more per GPU-hour than"),  # above on-demand
        # a number where a mapping goes, beside the flat form (was a TypeError traceback)
        ({"nodes": 5, "h100-sxm": {"on_demand_usd_per_gpu_hour": 2.0}}, "prices.nodes must be a mapping"),
        ({"accelerators": [1], "hgx-h100": {"capex_usd": 1}}, "prices.accelerators must be a mapping"),
    ],
)
def test_bad_user_prices_name_the_cause(prices: dict[str, Any], needle: str) -> None:
    with pytest.raises(BadInput) as info:
        plan(_with(LORA, prices=prices))
    assert needle in info.value.message()


def test_unknown_price_key_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("h100-sxm: {on_demand: 2.0}\n")
    code = main(["plan", str(ROOT / "examples" / "llama3-8b-lora-weekly.yaml"), "--prices", str(prices)])
    assert code == 2
    assert "on_demand_usd_per_gpu_hour" in capsys.readouterr().err


# --- unpriced accelerators -----------------------------------------------------------------


def test_serving_cost_objective_never_picks_an_unpriced_accelerator() -> None:
    p = plan(SERVE)
    assert p.best.accelerator == "h100-sxm"
    reasons = dict(p.rejected)
    assert "no price for h800-sxm in this deployment" in reasons["h800-sxm"]


def test_a_user_price_makes_an_unpriced_accelerator_eligible() -> None:
    # A user's per-GPU price is billed on whole nodes (8 GPUs at $0.5 = $4/h), which must beat the
    # cheapest H100 shape in the catalog (1 x p5.4xlarge, $6.88/h) for the H800 to win on cost.
    p = plan(_with(SERVE, prices={"h800-sxm": {"on_demand_usd_per_gpu_hour": 0.5}}))
    assert p.best.accelerator == "h800-sxm"
    assert p.best.cost_usd_per_hour == pytest.approx(0.5 * p.sizing.cost.gpus_billed, rel=0.01)  # + storage


def test_training_rejects_an_unpriced_gpu_for_its_real_reason() -> None:
    spec = copy.deepcopy(LORA)
    spec["targets"]["accelerators"] = ["h100-sxm", "h800-sxm"]
    p = plan(spec)
    assert p.best.accelerator == "h100-sxm"
    reasons = {r.accelerator: r.reason for r in p.rejected}
    assert "no price for h800-sxm" in reasons["h800-sxm"]
    assert "deadline" not in reasons["h800-sxm"]


def test_cost_objective_with_nothing_priced_is_bad_input() -> None:
    spec = copy.deepcopy(LORA)
    spec["targets"]["accelerators"] = ["h800-sxm"]
    with pytest.raises(BadInput) as info:
        plan(spec)
    assert "no allowed accelerator has a price" in info.value.message()


# --- one basis per column ------------------------------------------------------------------


def test_every_cloud_figure_is_on_its_columns_basis() -> None:
    basis = price_basis()
    assert set(basis) >= {ON_DEMAND, SPOT}
    for b in basis.values():
        assert b.basis and b.as_of
    for acc, records in shipped_prices().offers.items():
        for price in records:
            for column, b in basis.items():
                if price.rate(column) is None:  # none sold, or no list price, for the instance
                    continue
                assert price.sources[column].source.startswith(b.sources_start_with), (acc, column)


def test_a_neocloud_on_demand_price_is_refused() -> None:
    doc = copy.deepcopy(read_data_file(PRICES_FILE))
    doc["cloud"]["h100-sxm"][0][INSTANCE_FIELDS[ON_DEMAND]]["source"] = (
        "Vast.ai marketplace, 8x H100 $12.16/h / 8"  # a marketplace bid, not a provider's list price
    )
    with pytest.raises(CatalogDataError, match="not on the column's basis"):
        parse_prices(doc, PRICES_FILE, accelerators(), nodes())


def test_a_users_rate_prices_the_same_instance_and_can_sell_spot_the_catalog_lacks() -> None:
    # p6-b200 has no spot in the catalog; a team with a negotiated spot rate gives it, and the
    # plan prices the same instance (its per-instance price derived from the user's rate).
    table = merge_user_prices(
        shipped_prices(), UserPrices.model_validate({"b200": {"spot_usd_per_gpu_hour": 4.0}})
    )
    price = table.cloud["b200"]
    assert price.instance is not None and price.instance.instance == "p6-b200.48xlarge"
    assert price.spot == 4.0 and price.instance_rate(SPOT) == 32.0
    assert shipped_prices().cloud["b200"].spot is None
