"""The price table: provenance, internal order, known magnitudes, and errors a person can act on."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

import rightsize.catalog as catalog
from rightsize.catalog import accelerators, nodes
from rightsize.catalog.loader import CatalogDataError, iter_numbers, read_data_file
from rightsize.catalog.prices import (
    INSTANCE_FIELDS,
    ON_DEMAND,
    PREEMPTIONS,
    PRICES_FILE,
    RESERVED_1Y,
    RESERVED_3Y,
    SPOT,
    CloudPrice,
    cloud_price,
    cloud_prices,
    node_capex,
    node_capexes,
    onprem_defaults,
    parse_prices,
    shipped_prices,
    stale_note,
    stale_prices,
)
from rightsize.catalog.providers import provider_offer
from rightsize.errors import BadInput

PRICED_ACCELERATORS = [
    "a100-sxm-40gb",
    "a100-sxm-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200-sxm",
    "b200",
    "gb200",
    "mi300x",
    "mi325x",
    "l40s",
    "l4",
]
PRICED_NODES = [
    "dgx-a100-80gb",
    "dgx-a100-40gb",
    "hgx-h100",
    "hgx-h200",
    "hgx-b200",
    "gb200-nvl72-tray",
    "h100-pcie-server",
    "mi300x-platform",
    "mi325x-platform",
    "l40s-server",
    "l4-server",
]
ALL_FIGURES = (ON_DEMAND, RESERVED_1Y, RESERVED_3Y, SPOT, PREEMPTIONS)


# --- presence and provenance ------------------------------------------------------------


@pytest.mark.parametrize("acc_id", PRICED_ACCELERATORS)
def test_accelerator_has_a_cloud_price(acc_id: str) -> None:
    assert cloud_price(acc_id).accelerator == acc_id


@pytest.mark.parametrize("node_id", PRICED_NODES)
def test_node_has_a_capex(node_id: str) -> None:
    assert node_capex(node_id).node == node_id


def test_every_number_in_raw_yaml_is_sourced() -> None:
    numbers = list(iter_numbers(read_data_file(PRICES_FILE)))
    assert len(numbers) > 50
    for path, _value, holder in numbers:
        assert holder is not None, f"{path} is a bare number; write {{value, source, as_of}}"
        assert isinstance(holder.get("source"), str) and holder["source"].strip(), path
        assert isinstance(holder.get("as_of"), str) and holder["as_of"].strip(), path


def test_every_parsed_price_has_source_and_as_of() -> None:
    for acc_id, price in cloud_prices().items():
        expected = set(ALL_FIGURES) - {f for f in (RESERVED_1Y, RESERVED_3Y, SPOT) if price.rate(f) is None}
        assert set(price.sources) == expected, acc_id
        assert price.instance is not None, acc_id
        for field, s in price.sources.items():
            assert s.source and s.as_of, (acc_id, field)
        assert price.on_demand == price.sources[ON_DEMAND].value
        assert price.spot_preemptions_per_hour == price.sources[PREEMPTIONS].value
    for node_id, capex in node_capexes().items():
        assert capex.source.source and capex.source.as_of, node_id
        assert capex.capex_usd == capex.source.value
    defaults = onprem_defaults()
    assert len(defaults.sources) == 7
    for field, s in defaults.sources.items():
        assert s.source and s.as_of, field
        assert getattr(defaults, field) == s.value


def test_ratio_derived_figures_are_labelled_estimates() -> None:
    # A figure computed as on-demand x a typical discount is not a quoted price: say so.
    for acc_id, price in cloud_prices().items():
        for field, s in price.sources.items():
            if any(ratio in s.source for ratio in ("x 0.60", "x 0.45", "x 0.27")):
                assert s.source.startswith("estimate:"), (acc_id, field)


def test_priced_ids_are_catalog_ids() -> None:
    assert set(cloud_prices()) <= set(accelerators())
    assert set(node_capexes()) <= set(nodes())


# --- internal order: commitments and spot never cost more than on-demand ----------------


@pytest.mark.parametrize("acc_id", PRICED_ACCELERATORS)
def test_price_order(acc_id: str) -> None:
    for p in shipped_prices().offers[acc_id]:  # every provider's record
        assert p.on_demand is not None
        commitments = [r for r in (p.reserved_3y, p.reserved_1y) if r is not None]
        assert commitments == sorted(commitments) and all(0 < r <= p.on_demand for r in commitments)
        assert p.spot is None or 0 < p.spot <= p.on_demand
    assert 0 < p.spot_preemptions_per_hour < 1


# --- known magnitudes -------------------------------------------------------------------

# (description, check): each a fact about the market the table must keep.
MAGNITUDES: list[tuple[str, Callable[[], bool]]] = [
    ("H100 on-demand is $2-15 per GPU-hour", lambda: 2 <= cloud_price("h100-sxm").on_demand <= 15),
    (
        "A100 80GB rents for less than H100",
        lambda: cloud_price("a100-sxm-80gb").on_demand < cloud_price("h100-sxm").on_demand,
    ),
    (
        "B200 rents for more than H100",
        lambda: cloud_price("b200").on_demand > cloud_price("h100-sxm").on_demand,
    ),
    (
        "A100 40GB rents for no more than A100 80GB at the same provider",
        lambda: cloud_price("a100-sxm-40gb").on_demand <= cloud_price("a100-sxm-80gb", "aws").on_demand,
    ),
    ("L4 rents for less than L40S", lambda: cloud_price("l4").on_demand < cloud_price("l40s").on_demand),
    (
        "L40S rents for less than H100",
        lambda: cloud_price("l40s").on_demand < cloud_price("h100-sxm").on_demand,
    ),
    ("every GPU-hour is $0.30-$20", lambda: all(0.3 <= p.on_demand <= 20 for p in cloud_prices().values())),
    (
        "spot is at least 40% off on-demand",
        lambda: all(p.spot <= 0.6 * p.on_demand for p in cloud_prices().values() if p.spot is not None),
    ),
    (
        "H100 on demand is AWS's post-June-2025 p5.48xlarge list price ($55.04/h, $6.88 per GPU-hour)",
        lambda: (
            cloud_price("h100-sxm").instance_rate(ON_DEMAND) == 55.04
            and cloud_price("h100-sxm").on_demand == 6.88
        ),
    ),
    (
        "H200 on demand is AWS's p5en.48xlarge list price ($63.296/h)",
        lambda: abs((cloud_price("h200-sxm").instance_rate(ON_DEMAND) or 0) - 63.296) < 1e-9,
    ),
    (
        "no spot is sold for p6-b200, GB200 or MI325X",
        lambda: all(cloud_price(a).spot is None for a in ("b200", "gb200", "mi325x")),
    ),
    (
        "an HGX B200 costs more than an HGX H100",
        lambda: node_capex("hgx-b200").capex_usd > node_capex("hgx-h100").capex_usd,
    ),
    (
        "an HGX H100 node costs $150k-$600k",
        lambda: 150_000 <= node_capex("hgx-h100").capex_usd <= 600_000,
    ),
    (
        "an L4 server costs less than an L40S server",
        lambda: node_capex("l4-server").capex_usd < node_capex("l40s-server").capex_usd,
    ),
    ("amortisation is 4 years", lambda: onprem_defaults().amortisation_years == 4),
    ("PUE is 1.0-2.0", lambda: 1.0 <= onprem_defaults().pue <= 2.0),
    ("power is $0.03-$0.30 per kWh", lambda: 0.03 <= onprem_defaults().power_usd_per_kwh <= 0.30),
    (
        "colocation is $50-$500 per kW-month",
        lambda: 50 <= onprem_defaults().facility_usd_per_kw_per_month <= 500,
    ),
]


@pytest.mark.parametrize(("what", "check"), MAGNITUDES, ids=[m[0] for m in MAGNITUDES])
def test_known_magnitudes(what: str, check: Callable[[], bool]) -> None:
    assert check(), what


# --- lookups and errors -----------------------------------------------------------------


def test_lookup_is_case_and_underscore_insensitive() -> None:
    assert cloud_price(" H100_SXM ") is cloud_price("h100-sxm")
    assert node_capex("HGX_H100") is node_capex("hgx-h100")


def test_listing_returns_a_fresh_dict() -> None:
    prices = cloud_prices()
    prices.pop("h100-sxm")
    assert "h100-sxm" in cloud_prices()


def test_unpriced_catalog_accelerator_says_how_to_fix() -> None:
    # h800-sxm is in the hardware catalog but has no public rental price.
    with pytest.raises(BadInput) as exc:
        cloud_price("h800-sxm")
    msg = str(exc.value)
    assert exc.value.exit_code == 2
    assert "No price for accelerator 'h800-sxm' in the price table; add one or choose" in msg
    assert "in the hardware catalog" in msg
    assert "prices.yaml" in msg and "To fix:" in msg
    assert "h100-sxm" in msg  # the priced choices are listed
    assert "Did you mean" not in msg  # the name is right; the price is missing


def test_misspelt_accelerator_gets_did_you_mean() -> None:
    with pytest.raises(BadInput, match="Did you mean h100-sxm"):
        cloud_price("h100-sx")


def test_unpriced_node_says_how_to_fix() -> None:
    with pytest.raises(BadInput) as exc:
        node_capex("hgx-h800")
    msg = str(exc.value)
    assert "No price for node type 'hgx-h800'" in msg
    assert "`onprem:`" in msg and "hgx-h100" in msg


def test_public_names_are_exported() -> None:
    for name in ("CloudPrice", "NodeCapex", "OnPremDefaults", "cloud_price", "cloud_prices", "node_capex"):
        assert name in catalog.__all__
    assert catalog.onprem_defaults is onprem_defaults
    assert catalog.CloudPrice is CloudPrice


# --- synthetic documents: broken data fails loudly, naming file and key -----------------


def _doc() -> dict[str, Any]:
    return copy.deepcopy(read_data_file(PRICES_FILE))


def _parse(doc: dict[str, Any]) -> Any:
    return parse_prices(doc, PRICES_FILE, accelerators(), nodes())


def _h100(d: dict[str, Any]) -> dict[str, Any]:
    """The h100-sxm AWS record (the first of its provider list)."""
    entry: dict[str, Any] = d["cloud"]["h100-sxm"][0]
    return entry


def _col(field: str) -> str:
    return INSTANCE_FIELDS[field]


BROKEN: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    # (case, mutation, text the error must contain)
    (
        "1y above on-demand",
        lambda d: _h100(d)[_col(RESERVED_1Y)].update(value=60.0),
        f"h100-sxm[0].{_col(RESERVED_1Y)}",
    ),
    (
        "3y above 1y",
        lambda d: _h100(d)[_col(RESERVED_3Y)].update(value=34.0),
        f"h100-sxm[0].{_col(RESERVED_3Y)}",
    ),
    ("spot above on-demand", lambda d: _h100(d)[_col(SPOT)].update(value=60.0), f"h100-sxm[0].{_col(SPOT)}"),
    ("per-GPU price x 8 twice", lambda d: _h100(d)[_col(ON_DEMAND)].update(value=440.32), "check the unit"),
    ("missing source", lambda d: _h100(d)[_col(ON_DEMAND)].pop("source"), "missing 'source'"),
    ("missing as_of", lambda d: _h100(d)[_col(SPOT)].pop("as_of"), "missing 'as_of'"),
    ("missing spot column", lambda d: _h100(d).pop(_col(SPOT)), f"missing '{_col(SPOT)}'"),
    ("missing instance type", lambda d: _h100(d).pop("instance"), "missing 'instance'"),
    ("missing GPUs per instance", lambda d: _h100(d).pop("gpus_per_instance"), "missing 'gpus_per_instance'"),
    (
        "fractional GPUs per instance",
        lambda d: _h100(d)["gpus_per_instance"].update(value=7.5),
        "gpus_per_instance",
    ),
    ("typo in a field", lambda d: _h100(d).update(on_demand_usd=_h100(d)[_col(ON_DEMAND)]), "on_demand_usd"),
    ("unknown accelerator", lambda d: d["cloud"].update({"h100-sxm5": _h100(d)}), "cloud.h100-sxm5"),
    (
        "unknown node",
        lambda d: d["onprem"].update({"hgx-h1000": d["onprem"]["hgx-h100"]}),
        "onprem.hgx-h1000",
    ),
    (
        "capex in thousands",
        lambda d: d["onprem"]["hgx-h100"]["capex_usd"].update(value=290),
        "check the unit",
    ),
    ("missing default", lambda d: d["onprem_defaults"].pop("pue"), "missing 'pue'"),
    ("PUE below 1", lambda d: d["onprem_defaults"]["pue"].update(value=0.9), "onprem_defaults.pue"),
    ("missing spot default", lambda d: d["spot"].pop("default_preemptions_per_hour"), "default_preemptions"),
    ("wrong schema", lambda d: d.update(schema_version=2), "schema_version"),
]


@pytest.mark.parametrize(("case", "mutate", "expected"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_document_raises(case: str, mutate: Callable[[dict[str, Any]], None], expected: str) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(CatalogDataError) as exc:
        _parse(doc)
    assert expected in str(exc.value), case
    assert exc.value.file == PRICES_FILE


def test_shipped_document_parses_as_synthetic() -> None:
    table = _parse(_doc())
    assert table.cloud["h100-sxm"] == cloud_price("h100-sxm")


def test_per_accelerator_preemption_rate_overrides_the_default() -> None:
    doc = _doc()
    _h100(doc)[PREEMPTIONS] = {"value": 0.2, "source": "test", "as_of": "2026-11"}
    table = _parse(doc)
    assert table.cloud["h100-sxm"].spot_preemptions_per_hour == 0.2
    default = doc["spot"]["default_preemptions_per_hour"]["value"]
    assert table.cloud["b200"].spot_preemptions_per_hour == default


def test_spot_null_means_no_spot() -> None:
    doc = _doc()
    _h100(doc)[_col(SPOT)] = None
    table = _parse(doc)
    assert table.cloud["h100-sxm"].spot is None
    assert SPOT not in table.cloud["h100-sxm"].sources


def test_per_gpu_price_is_derived_from_the_instance() -> None:
    for acc_id, price in cloud_prices().items():
        assert price.instance is not None
        for field in (ON_DEMAND, RESERVED_1Y, RESERVED_3Y, SPOT):
            rate = price.rate(field)
            if rate is not None:
                assert price.instance_rate(field) == pytest.approx(rate * price.instance.gpus), (
                    acc_id,
                    field,
                )


def test_one_basis_every_instance_is_the_node_that_is_billed() -> None:
    # A10G and T4 used to be priced from 1-GPU instances beside 8-GPU ones: every instance
    # now has as many GPUs as the node a plan bills whole (h100-pcie: Azure rents 1 or 2).
    from rightsize.catalog import get_node, node_for

    for acc_id, price in cloud_prices().items():
        assert price.instance is not None
        if acc_id == "h100-pcie":
            continue
        assert price.instance.gpus == get_node(node_for(acc_id).id).gpus_per_node, acc_id


def test_stale_prices_are_flagged() -> None:
    from datetime import date

    stale = dict(stale_prices(today=date(2026, 11, 25)))
    assert (
        "cloud.a100-sxm-80gb[aws].on_demand_usd_per_instance_hour" in stale
    )  # 2025-05: before AWS's June-2025 cut
    assert "cloud.a100-sxm-40gb.on_demand_usd_per_instance_hour" not in stale  # refreshed 2026-03
    assert "cloud.h100-sxm.on_demand_usd_per_instance_hour" not in stale  # 2025-11, post-cut
    figure = provider_offer("a100-sxm-80gb", "aws").sources[ON_DEMAND]
    note = stale_note(figure, date(2026, 11, 25))
    assert note is not None and "2025-05" in note and "18 months" in note
    assert stale_note(figure, date(2025, 12, 1)) is None
