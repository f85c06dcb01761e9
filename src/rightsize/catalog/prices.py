"""Dated price table (``data/prices.yaml``): cloud GPU-hour prices and on-premises costs, each sourced.

Cloud prices are USD per GPU-hour per accelerator id (an instance price divided by its GPU
count): on-demand, 1- and 3-year commitments, spot, and how often spot instances are
preempted. On-premises figures are the purchase price of each node type plus the defaults
that turn capex into a cost per hour (amortisation, power, PUE, network, storage, facility,
operations). Lookups are pure functions over a table read and cross-checked once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    check_schema,
    read_data_file,
    require_mapping,
    sourced,
)
from rightsize.catalog.registry import accelerators, nodes
from rightsize.errors import BadInput, did_you_mean

PRICES_FILE = "prices.yaml"
_DATA_PATH = "rightsize/catalog/data/prices.yaml"

ON_DEMAND = "on_demand_usd_per_gpu_hour"
RESERVED_1Y = "reserved_1y_usd_per_gpu_hour"
RESERVED_3Y = "reserved_3y_usd_per_gpu_hour"
SPOT = "spot_usd_per_gpu_hour"
PREEMPTIONS = "spot_preemptions_per_hour"
_PRICE_FIELDS = (ON_DEMAND, RESERVED_1Y, RESERVED_3Y, SPOT)
_CLOUD_KEYS = frozenset({*_PRICE_FIELDS, PREEMPTIONS})

# Sanity bounds that catch unit slips: a GPU-hour above $30 is almost surely a whole
# 8-GPU instance's price; more than 10 preemptions an hour is a per-day figure.
_USD_PER_GPU_HOUR = (0.05, 30.0)
_PREEMPTIONS_PER_HOUR = (1e-6, 10.0)
_CAPEX_USD = (1_000.0, 10_000_000.0)

# (field, minimum, maximum) of onprem_defaults.
_DEFAULT_FIELDS: tuple[tuple[str, float, float], ...] = (
    ("amortisation_years", 1, 15),
    ("power_usd_per_kwh", 0.01, 1.0),
    ("pue", 1.0, 3.0),
    ("network_usd_per_switch_port", 10, 100_000),
    ("storage_usd_per_tb", 1, 10_000),
    ("facility_usd_per_kw_per_month", 10, 2_000),
    ("operations_fraction_of_capex_per_year", 1e-4, 1.0),
)


@dataclass(frozen=True)
class CloudPrice:
    """Renting one accelerator in the cloud, USD per GPU-hour; `sources` is keyed by the YAML field name."""

    accelerator: str  # an id in accelerators.yaml
    on_demand: float  # USD per GPU-hour, no commitment
    reserved_1y: float  # USD per GPU-hour with a 1-year commitment
    reserved_3y: float  # USD per GPU-hour with a 3-year commitment
    spot: float  # USD per GPU-hour, preemptible
    spot_preemptions_per_hour: float  # per spot INSTANCE (node); N instances see N times as many
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class NodeCapex:
    """Purchase price of one node (GPUs included; cluster network and storage excluded)."""

    node: str  # an id in nodes.yaml
    capex_usd: float
    source: Sourced


@dataclass(frozen=True)
class OnPremDefaults:
    """What turns a node's capex into a cost per hour on premises; `sources` is keyed by field name."""

    amortisation_years: float
    power_usd_per_kwh: float
    pue: float  # facility power / IT power, >= 1
    network_usd_per_switch_port: float  # one scale-out endpoint port, optics and switch share included
    storage_usd_per_tb: float  # usable TB of a parallel file system
    facility_usd_per_kw_per_month: float  # colocation, per kW of IT capacity
    operations_fraction_of_capex_per_year: float
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class PriceTable:
    """The parsed, cross-checked price table."""

    cloud: dict[str, CloudPrice]
    onprem: dict[str, NodeCapex]
    defaults: OnPremDefaults


def _check_not_above(
    lower: Sourced, upper: Sourced, lower_name: str, upper_name: str, file: str, key: str
) -> None:
    if lower.value > upper.value:
        raise CatalogDataError(
            file,
            f"{key}.{lower_name}",
            f"{lower.value!r} exceeds {upper_name} {upper.value!r}; it must not cost more per hour",
        )


def parse_cloud_price(raw: Any, file: str, key: str, acc_id: str, default_preemptions: Sourced) -> CloudPrice:
    """One ``cloud.<accelerator>`` entry; prices must fall in the order 3y <= 1y <= on-demand, spot <= on-demand."""
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, _CLOUD_KEYS, file, key)
    lo, hi = _USD_PER_GPU_HOUR
    figures: dict[str, Sourced] = {}
    for field in _PRICE_FIELDS:
        if field not in raw:
            raise CatalogDataError(file, key, f"missing '{field}'")
        figures[field] = sourced(raw[field], file, f"{key}.{field}", minimum=lo, maximum=hi)
    if PREEMPTIONS in raw:
        p_lo, p_hi = _PREEMPTIONS_PER_HOUR
        figures[PREEMPTIONS] = sourced(
            raw[PREEMPTIONS], file, f"{key}.{PREEMPTIONS}", minimum=p_lo, maximum=p_hi
        )
    else:
        figures[PREEMPTIONS] = default_preemptions
    _check_not_above(figures[RESERVED_3Y], figures[RESERVED_1Y], RESERVED_3Y, RESERVED_1Y, file, key)
    _check_not_above(figures[RESERVED_1Y], figures[ON_DEMAND], RESERVED_1Y, ON_DEMAND, file, key)
    _check_not_above(figures[SPOT], figures[ON_DEMAND], SPOT, ON_DEMAND, file, key)
    return CloudPrice(
        accelerator=acc_id,
        on_demand=figures[ON_DEMAND].value,
        reserved_1y=figures[RESERVED_1Y].value,
        reserved_3y=figures[RESERVED_3Y].value,
        spot=figures[SPOT].value,
        spot_preemptions_per_hour=figures[PREEMPTIONS].value,
        sources=figures,
    )


def parse_onprem_defaults(raw: Mapping[str, Any], file: str) -> OnPremDefaults:
    """The ``onprem_defaults`` block."""
    block = require_mapping(raw, "onprem_defaults", file, "<document>")
    check_keys(block, frozenset(f for f, _, _ in _DEFAULT_FIELDS), file, "onprem_defaults")
    figures: dict[str, Sourced] = {}
    for field, lo, hi in _DEFAULT_FIELDS:
        if field not in block:
            raise CatalogDataError(file, "onprem_defaults", f"missing '{field}'")
        figures[field] = sourced(block[field], file, f"onprem_defaults.{field}", minimum=lo, maximum=hi)
    return OnPremDefaults(
        amortisation_years=figures["amortisation_years"].value,
        power_usd_per_kwh=figures["power_usd_per_kwh"].value,
        pue=figures["pue"].value,
        network_usd_per_switch_port=figures["network_usd_per_switch_port"].value,
        storage_usd_per_tb=figures["storage_usd_per_tb"].value,
        facility_usd_per_kw_per_month=figures["facility_usd_per_kw_per_month"].value,
        operations_fraction_of_capex_per_year=figures["operations_fraction_of_capex_per_year"].value,
        sources=figures,
    )


def parse_prices(
    raw: Mapping[str, Any], file: str, accelerator_ids: Collection[str], node_ids: Collection[str]
) -> PriceTable:
    """Parse and cross-check a price document (pure: tests feed synthetic ones).

    Every ``cloud`` key must be an accelerator id and every ``onprem`` key a node id, so a
    typo in the data fails here instead of reading as "no price".
    """
    check_schema(raw, file)
    check_keys(
        raw, frozenset({"schema_version", "cloud", "spot", "onprem", "onprem_defaults"}), file, "<document>"
    )
    spot_block = require_mapping(raw, "spot", file, "<document>")
    check_keys(spot_block, frozenset({"default_preemptions_per_hour"}), file, "spot")
    p_lo, p_hi = _PREEMPTIONS_PER_HOUR
    default_preemptions = sourced(
        spot_block.get("default_preemptions_per_hour"),
        file,
        "spot.default_preemptions_per_hour",
        minimum=p_lo,
        maximum=p_hi,
    )
    cloud: dict[str, CloudPrice] = {}
    for acc_id, entry in require_mapping(raw, "cloud", file, "<document>").items():
        key = f"cloud.{acc_id}"
        if acc_id not in accelerator_ids:
            raise CatalogDataError(
                file, key, f"unknown accelerator {acc_id!r}; known: {', '.join(sorted(accelerator_ids))}"
            )
        cloud[acc_id] = parse_cloud_price(entry, file, key, acc_id, default_preemptions)
    onprem: dict[str, NodeCapex] = {}
    for node_id, entry in require_mapping(raw, "onprem", file, "<document>").items():
        key = f"onprem.{node_id}"
        if node_id not in node_ids:
            raise CatalogDataError(
                file, key, f"unknown node {node_id!r}; known: {', '.join(sorted(node_ids))}"
            )
        if not isinstance(entry, Mapping):
            raise CatalogDataError(file, key, f"expected a mapping, got {type(entry).__name__}")
        check_keys(entry, frozenset({"capex_usd"}), file, key)
        lo, hi = _CAPEX_USD
        capex = sourced(entry.get("capex_usd"), file, f"{key}.capex_usd", minimum=lo, maximum=hi)
        onprem[node_id] = NodeCapex(node=node_id, capex_usd=capex.value, source=capex)
    return PriceTable(cloud=cloud, onprem=onprem, defaults=parse_onprem_defaults(raw, file))


@cache
def _shipped() -> PriceTable:
    return parse_prices(read_data_file(PRICES_FILE), PRICES_FILE, accelerators(), nodes())


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _no_price(
    kind: str, name: str, priced: Collection[str], known: Collection[str], section: str
) -> BadInput:
    """What, why and how to fix a missing price; `known` holds the ids the hardware catalog has."""
    choices = sorted(priced)
    if _key(name) in known:
        why = f"'{name}' is in the hardware catalog, but {PRICES_FILE} has no sourced price for it."
        hint = ""
    else:
        why = f"'{name}' is not in the hardware catalog either."
        hint = did_you_mean(name, choices)
    fix = (hint[0].upper() + hint[1:] + " " if hint else "") + (
        f"Add one under `{section}:` in {_DATA_PATH} (each figure as value, source, as_of), "
        f"or choose a priced {kind}: {', '.join(choices)}."
    )
    return BadInput(
        f"No price for {kind} '{name}' in the price table; add one or choose a priced {kind}.", why, fix
    )


def cloud_prices() -> dict[str, CloudPrice]:
    """All cloud prices, accelerator id -> CloudPrice, in file order (a fresh dict over cached objects)."""
    return dict(_shipped().cloud)


def cloud_price(acc_id: str) -> CloudPrice:
    """Cloud price of one accelerator (case-insensitive, ``_`` taken as ``-``); `BadInput` with a fix if none."""
    table = _shipped().cloud
    price = table.get(_key(acc_id))
    if price is None:
        raise _no_price("accelerator", acc_id, table, accelerators(), "cloud")
    return price


def node_capexes() -> dict[str, NodeCapex]:
    """All node purchase prices, node id -> NodeCapex, in file order (a fresh dict over cached objects)."""
    return dict(_shipped().onprem)


def node_capex(node_id: str) -> NodeCapex:
    """Purchase price of one node type (case-insensitive, ``_`` taken as ``-``); `BadInput` with a fix if none."""
    table = _shipped().onprem
    capex = table.get(_key(node_id))
    if capex is None:
        raise _no_price("node type", node_id, table, nodes(), "onprem")
    return capex


def onprem_defaults() -> OnPremDefaults:
    """Amortisation, power, PUE, network, storage, facility and operations defaults for on-premises costs."""
    return _shipped().defaults
