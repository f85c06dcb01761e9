"""Issue 26: several providers' list prices, the cheapest allowed one chosen and named, a
restriction by `targets.providers` or `prices: {provider: ...}`, and a maintainer's stale check."""

from __future__ import annotations

import copy
import warnings
from datetime import date
from typing import Any

import pytest
from pydantic import ValidationError

from rightsize.api import plan
from rightsize.catalog.loader import CatalogDataError, read_data_file
from rightsize.catalog.prices import (
    ON_DEMAND,
    PRICES_FILE,
    STALE_AFTER_MONTHS,
    cloud_price,
    parse_prices,
    prices_in_effect,
    shipped_prices,
    stale_prices,
)
from rightsize.catalog.providers import choice_note, dropped, restrict_providers
from rightsize.catalog.registry import accelerators, nodes
from rightsize.errors import BadInput
from rightsize.spec.inference import InferenceTargets
from rightsize.spec.prices import PROVIDERS, UserPrices
from rightsize.spec.recsys import RecsysTargets
from rightsize.spec.training import Targets
from rightsize.spec.vision import VisionTargets

LORA: dict[str, Any] = {
    "name": "providers-test",
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


def _providers(acc: str) -> list[str]:
    return [o.instance.provider for o in shipped_prices().offers[acc] if o.instance]


# --- the catalog -----------------------------------------------------------------------------


def test_several_providers_are_priced_each_record_sourced_dated_and_placed() -> None:
    table = shipped_prices()
    seen = {o.instance.provider for recs in table.offers.values() for o in recs if o.instance}
    assert {"aws", "azure", "gcp", "oracle", "lambda"} <= seen
    assert set(_providers("h100-sxm")) == {"aws", "azure", "oracle"}
    for acc, records in table.offers.items():
        for o in records:
            assert o.instance is not None and o.instance.instance and o.instance.region, acc
            figure = o.sources[ON_DEMAND]
            assert figure.source and figure.as_of, (acc, o.instance.provider)


def test_default_prices_each_accelerator_at_its_cheapest_on_demand_offer() -> None:
    table = shipped_prices()
    for acc, records in table.offers.items():
        assert table.cloud[acc].on_demand == min(o.on_demand or 0 for o in records), acc
    # Oracle's BM.GPU.A100-v2.8 ($32/h) is below AWS's p4de.24xlarge ($40.97/h)
    chosen = table.cloud["a100-sxm-80gb"].instance
    assert chosen is not None and chosen.provider == "oracle" and chosen.instance == "BM.GPU.A100-v2.8"


def test_known_list_prices_of_the_new_providers() -> None:
    assert cloud_price("h100-sxm", "oracle").instance_rate(ON_DEMAND) == pytest.approx(80.0)
    assert cloud_price("h100-sxm", "azure").instance_rate(ON_DEMAND) == pytest.approx(98.0)
    assert cloud_price("h100-sxm", "aws").instance_rate(ON_DEMAND) == pytest.approx(55.04)
    lam = cloud_price("h100-pcie", "lambda")
    assert lam.on_demand == pytest.approx(2.86) and lam.spot is None and lam.reserved_1y is None


def test_a_provider_without_a_record_says_who_rents_it() -> None:
    with pytest.raises(BadInput) as info:
        cloud_price("l4", "oracle")
    assert "aws" in info.value.message()


def test_two_records_of_one_provider_are_refused() -> None:
    doc = copy.deepcopy(read_data_file(PRICES_FILE))
    doc["cloud"]["h100-sxm"].append(copy.deepcopy(doc["cloud"]["h100-sxm"][0]))
    with pytest.raises(CatalogDataError, match="one per provider"):
        parse_prices(doc, PRICES_FILE, accelerators(), nodes())


def test_an_unknown_provider_in_the_catalog_is_refused() -> None:
    doc = copy.deepcopy(read_data_file(PRICES_FILE))
    doc["cloud"]["h100-sxm"][1]["provider"] = "orcale"
    with pytest.raises(CatalogDataError, match="unknown provider"):
        parse_prices(doc, PRICES_FILE, accelerators(), nodes())


# --- restricting providers ---------------------------------------------------------------------


def test_restriction_reprices_and_drops_what_no_allowed_provider_rents() -> None:
    table = restrict_providers(shipped_prices(), ["azure", "oracle"])
    h100 = table.cloud["h100-sxm"].instance
    assert h100 is not None and h100.provider == "oracle"  # $10 against Azure's $12.25 per GPU-hour
    assert "l4" not in table.cloud and dropped(table)["l4"] == "aws"
    note = choice_note(table, "h100-sxm")
    assert (
        note is not None
        and "oracle BM.GPU.H100.8" in note
        and "aws p5.48xlarge in us-east-1 $6.88 (not allowed)" in note
    )
    with prices_in_effect(table), pytest.raises(BadInput) as info:
        cloud_price("l4")
    assert "rented only by aws" in info.value.why


def test_prices_provider_restricts_a_plan_and_the_plan_names_what_it_priced() -> None:
    p = plan({**LORA, "prices": {"provider": "oci"}})
    assert p.sizing.cost.priced_instance.startswith("oracle BM.GPU.H100.8")
    assert any("cheapest among oracle" in n for n in p.sizing.cost.notes)
    default = plan(LORA)
    assert default.sizing.cost.priced_instance.startswith("aws p5.48xlarge")
    ratio = p.sizing.cost.cloud["on_demand"].usd_per_run / default.sizing.cost.cloud["on_demand"].usd_per_run
    assert ratio == pytest.approx(80.0 / 55.04, rel=0.02)  # same nodes and hours, Oracle's list price


def test_a_users_provider_pins_one_accelerator_and_its_figures_price_that_instance() -> None:
    table = shipped_prices()
    from rightsize.catalog.user_prices import merge_user_prices

    merged = merge_user_prices(
        table,
        UserPrices.model_validate(
            {
                "h100-sxm": {"provider": "azure"},
                "b200": {"provider": "oracle", "on_demand_usd_per_gpu_hour": 9},
            }
        ),
    )
    assert merged.cloud["h100-sxm"] == cloud_price("h100-sxm", "azure")
    b200 = merged.cloud["b200"]
    assert b200.instance is not None and b200.instance.instance == "BM.GPU.B200.8" and b200.on_demand == 9
    with pytest.raises(BadInput, match="has no price of"):
        merge_user_prices(table, UserPrices.model_validate({"l4": {"provider": "azure"}}))


@pytest.mark.parametrize("model", [Targets, InferenceTargets, VisionTargets, RecsysTargets])
def test_targets_providers_are_checked_with_a_did_you_mean(model: Any) -> None:
    assert model(providers="OCI").providers == ["oracle"]
    assert model(providers=["aws", "Google", "aws"]).providers == ["aws", "gcp"]
    assert model(providers="all").providers is None
    assert "cheapest on-demand" in (model.model_fields["providers"].description or "")
    with pytest.raises(ValidationError, match="did you mean lambda"):
        model(providers=["lamda"])
    assert set(PROVIDERS) >= {"aws", "azure", "gcp", "oracle", "lambda"}


# --- the maintainer's stale check ---------------------------------------------------------------


def test_stale_check_flags_every_provider_record_older_than_twelve_months() -> None:
    later = date(2027, 6, 1)  # Oracle's 2026-04 list is 14 months old then
    stale = dict(stale_prices(today=later))
    assert "cloud.h100-sxm[oracle].on_demand_usd_per_instance_hour" in stale
    assert "cloud.h100-sxm[azure].on_demand_usd_per_instance_hour" not in stale  # 2026-06: 12 months
    assert not any("[oracle]" in k for k in stale_prices(today=date(2026, 11, 25)))


def test_maintainer_report_of_stale_prices_today() -> None:
    """Lists (as a warning, not a failure) what a maintainer must re-check now."""
    stale = stale_prices()
    if stale:
        warnings.warn(
            f"{len(stale)} price figure(s) dated over {STALE_AFTER_MONTHS} months ago in {PRICES_FILE}: "
            + ", ".join(k for k, _ in stale[:8]),
            stacklevel=1,
        )
    assert all(s.as_of for _, s in stale)


# --- the headline says what was dropped and which price is stale (issue 26, 28) ----------------

COMPARE: dict[str, Any] = {
    "name": "tpu-or-gaudi",
    "model": "llama3-8b",
    "training": {"seq_len": 4096, "global_batch": 64, "train_tokens": "50M"},
    # Gaudi 3 has no public rental list price (trn2 has one since issue 28)
    "targets": {"accelerators": ["tpu-v5p", "gaudi3"], "objective": "cost"},
    "infrastructure": {"facility": {"deployment": "cloud"}},
}


@pytest.mark.parametrize("fmt", ["table", "markdown", "html"])
def test_a_cost_plan_says_in_its_headline_which_parts_it_dropped_for_no_price(fmt: str) -> None:
    from rightsize.report.render import render

    p = plan(COMPARE)
    assert p.best.accelerator == "tpu-v5p"
    text = render(p, fmt)
    head = text[: text.index("gaudi3") + 200] if "gaudi3" in text else ""
    assert "not priced, dropped" in text and "gaudi3" in head
    assert "no public cloud list price" in text


def test_the_dropped_part_and_why_are_in_the_json() -> None:
    import json

    from rightsize.report.render import render

    d = json.loads(render(plan(COMPARE), "json"))
    reasons = {r["accelerator"]: r["reason"] for r in d["rejected"]}
    assert "no public cloud list price" in reasons["gaudi3"]


def test_a_provider_restriction_is_the_stated_reason_a_part_was_dropped() -> None:
    from rightsize.report.plan_doc import training_document

    spec = copy.deepcopy(COMPARE)
    spec["targets"]["accelerators"] = ["tpu-v5p", "l4"]
    spec["prices"] = {"provider": "gcp"}
    rows = dict(training_document(plan(spec)).key_numbers)
    assert "l4: rented only by aws" in rows["not priced, dropped"]
    assert "allows only gcp" in rows["not priced, dropped"]


@pytest.mark.parametrize("fmt", ["table", "markdown", "html", "json"])
def test_a_stale_price_is_said_next_to_the_cost_it_priced(fmt: str) -> None:
    import json

    from rightsize.report.plan_doc import training_document
    from rightsize.report.render import render

    spec = copy.deepcopy(COMPARE)
    spec["targets"]["accelerators"] = ["a100-sxm-80gb"]  # AWS p4de list of 2025-05, before the cut
    spec["prices"] = {"provider": "aws"}
    p = plan(spec)
    kn = training_document(p).key_numbers
    labels = [k for k, _ in kn]
    at = labels.index("price date (stale)")
    assert labels[at - 1].startswith("cost") and "2025-05" in kn[at][1]
    text = render(p, fmt)
    if fmt == "json":
        opt = json.loads(text)["sizing"]["cost"]["cloud"]["on_demand"]
        assert opt["price_as_of"] == "2025-05" and "2025-05" in opt["price_stale"]
    else:
        assert "price dated 2025-05" in text
    fresh = copy.deepcopy(COMPARE)
    fresh["targets"]["accelerators"] = ["tpu-v5p"]
    assert "price date (stale)" not in dict(training_document(plan(fresh)).key_numbers)


def test_a_provider_priced_per_region_where_its_prices_differ() -> None:
    # AWS lists p5 and p5en at 1.25x in us-west-1 (N. California) against us-east-1.
    aws = [o for o in shipped_prices().offers["h100-sxm"] if o.instance and o.instance.provider == "aws"]
    by_region = {o.instance.region: o.instance_rate(ON_DEMAND) for o in aws if o.instance}
    assert by_region == {"us-east-1": pytest.approx(55.04), "us-west-1": pytest.approx(68.80)}
    west = next(
        o for o in shipped_prices().offers["h200-sxm"] if o.instance and o.instance.region == "us-west-1"
    )
    assert west.instance_rate(ON_DEMAND) == pytest.approx(79.12)
    chosen = cloud_price("h100-sxm", "aws").instance
    assert chosen is not None and chosen.region == "us-east-1"  # a provider's cheapest region
    stale = dict(stale_prices(today=date(2027, 6, 1)))
    assert "cloud.h100-sxm[aws us-west-1].on_demand_usd_per_instance_hour" in stale  # 2025-11


def _api_applies_targets_providers() -> bool:
    import inspect

    import rightsize.api as api

    return "restrict_providers" in inspect.getsource(api)


@pytest.mark.skipif(
    not _api_applies_targets_providers(),
    reason="rightsize.api._run must apply targets.providers (restrict_providers) before the user's prices",
)
def test_targets_providers_restricts_the_plan_and_states_what_it_dropped() -> None:
    from rightsize.report.plan_doc import training_document

    spec = copy.deepcopy(LORA)
    spec["targets"] = {"accelerators": ["h100-sxm", "l4"], "objective": "cost", "providers": ["oracle"]}
    p = plan(spec)
    assert p.best.accelerator == "h100-sxm"
    assert p.sizing.cost.priced_instance.startswith("oracle BM.GPU.H100.8")
    rows = dict(training_document(p).key_numbers)
    assert "l4: rented only by aws" in rows["not priced, dropped"]
