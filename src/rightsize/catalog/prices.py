"""Dated price table (``data/prices.yaml``): cloud GPU-hour prices and on-premises costs, each sourced.

Cloud prices are USD per GPU-hour per accelerator id (an instance price divided by its GPU
count): on-demand, 1- and 3-year commitments, spot, and how often spot instances are
preempted. On-premises figures are the purchase price of each node type plus the defaults
that turn capex into a cost per hour (amortisation, power, PUE, network, storage, facility,
operations). Lookups are pure functions over a table read and cross-checked once.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
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
    require_str,
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
USER_SOURCE = "user"
PRICE_FIELDS = (ON_DEMAND, RESERVED_1Y, RESERVED_3Y, SPOT)
_CLOUD_KEYS = frozenset({*PRICE_FIELDS, PREEMPTIONS})

# Sanity bounds that catch unit slips: a GPU-hour above $30 is almost surely a whole
# 8-GPU instance's price; more than 10 preemptions an hour is a per-day figure.
USD_PER_GPU_HOUR_RANGE = (0.05, 30.0)
_PREEMPTIONS_PER_HOUR = (1e-6, 10.0)
CAPEX_USD_RANGE = (1_000.0, 10_000_000.0)

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
    """Renting one accelerator in the cloud, USD per GPU-hour; `sources` is keyed by the YAML field name.

    Every catalog entry has all four prices; an accelerator priced only by the user may lack
    some (None: that way of renting has no price).
    """

    accelerator: str  # an id in accelerators.yaml
    on_demand: float | None  # USD per GPU-hour, no commitment
    reserved_1y: float | None  # USD per GPU-hour with a 1-year commitment
    reserved_3y: float | None  # USD per GPU-hour with a 3-year commitment
    spot: float | None  # USD per GPU-hour, preemptible
    spot_preemptions_per_hour: float  # per spot INSTANCE (node); N instances see N times as many
    sources: dict[str, Sourced]

    def rate(self, field: str) -> float | None:
        """The price in the column named by its YAML field (e.g. ``on_demand_usd_per_gpu_hour``)."""
        return {
            ON_DEMAND: self.on_demand,
            RESERVED_1Y: self.reserved_1y,
            RESERVED_3Y: self.reserved_3y,
            SPOT: self.spot,
        }[field]


@dataclass(frozen=True)
class PriceBasis:
    """What every figure in one price column is (e.g. hyperscaler list price), and since when."""

    column: str
    basis: str
    sources_start_with: tuple[str, ...]
    as_of: str


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
    basis: dict[str, PriceBasis]
    default_preemptions: Sourced
    spot_replacement: Sourced  # how long a preempted spot node stays gone
    user_notes: tuple[str, ...] = ()  # what the user's prices changed, for the plan to show


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
    lo, hi = USD_PER_GPU_HOUR_RANGE
    figures: dict[str, Sourced] = {}
    for field in PRICE_FIELDS:
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
        raw,
        frozenset({"schema_version", "basis", "cloud", "spot", "onprem", "onprem_defaults"}),
        file,
        "<document>",
    )
    basis = parse_basis(raw, file)
    spot_block = require_mapping(raw, "spot", file, "<document>")
    check_keys(spot_block, frozenset({"default_preemptions_per_hour", "replacement_s"}), file, "spot")
    replacement = sourced(
        spot_block.get("replacement_s"), file, "spot.replacement_s", minimum=60, maximum=7 * 86400
    )
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
        check_basis(cloud[acc_id], basis, file, key)
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
        lo, hi = CAPEX_USD_RANGE
        capex = sourced(entry.get("capex_usd"), file, f"{key}.capex_usd", minimum=lo, maximum=hi)
        onprem[node_id] = NodeCapex(node=node_id, capex_usd=capex.value, source=capex)
    return PriceTable(
        cloud=cloud,
        onprem=onprem,
        defaults=parse_onprem_defaults(raw, file),
        basis=basis,
        default_preemptions=default_preemptions,
        spot_replacement=replacement,
    )


def parse_basis(raw: Mapping[str, Any], file: str) -> dict[str, PriceBasis]:
    """The ``basis`` block: one basis per cloud price column."""
    block = require_mapping(raw, "basis", file, "<document>")
    check_keys(block, frozenset(PRICE_FIELDS), file, "basis")
    out: dict[str, PriceBasis] = {}
    for column in PRICE_FIELDS:
        key = f"basis.{column}"
        entry = require_mapping(block, column, file, "basis")
        check_keys(entry, frozenset({"basis", "sources_start_with", "as_of"}), file, key)
        prefixes = entry.get("sources_start_with")
        if not isinstance(prefixes, list) or not prefixes or not all(isinstance(p, str) for p in prefixes):
            raise CatalogDataError(file, f"{key}.sources_start_with", "must be a non-empty list of strings")
        out[column] = PriceBasis(
            column,
            require_str(entry, "basis", file, key),
            tuple(prefixes),
            require_str(entry, "as_of", file, key),
        )
    return out


def check_basis(price: CloudPrice, basis: Mapping[str, PriceBasis], file: str, key: str) -> None:
    """Each figure in a column must be on that column's basis (its source says which provider it is)."""
    for column, b in basis.items():
        src = price.sources[column].source
        if not src.startswith(b.sources_start_with):
            raise CatalogDataError(
                file,
                f"{key}.{column}.source",
                f"{src[:60]!r}... is not on the column's basis ({b.basis}); "
                f"a source must start with one of {list(b.sources_start_with)}",
            )


@cache
def _shipped() -> PriceTable:
    return parse_prices(read_data_file(PRICES_FILE), PRICES_FILE, accelerators(), nodes())


# The table in effect while one plan is made: the shipped one, or it with the user's prices
# merged over it (`prices_in_effect`). A context variable, so concurrent plans do not mix.
_ACTIVE: ContextVar[PriceTable | None] = ContextVar("rightsize_prices", default=None)


def shipped_prices() -> PriceTable:
    """The price table shipped with the package, without any user prices."""
    return _shipped()


def active_prices() -> PriceTable:
    """The price table in effect: the user's prices merged over the catalog, or the catalog alone."""
    return _ACTIVE.get() or _shipped()


@contextmanager
def prices_in_effect(table: PriceTable) -> Iterator[PriceTable]:
    """Make `table` the one every price lookup uses inside the block."""
    token = _ACTIVE.set(table)
    try:
        yield table
    finally:
        _ACTIVE.reset(token)


def spot_replacement() -> Sourced:
    """How long a preempted spot node stays gone before capacity returns (sizes the spare pool)."""
    return active_prices().spot_replacement


def price_basis() -> dict[str, PriceBasis]:
    """One basis per cloud price column (what the figures are, and since when)."""
    return dict(_shipped().basis)


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
    example = (
        f"{{{_key(name)}: {{on_demand_usd_per_gpu_hour: 2.5}}}}"
        if section == "cloud"
        else f"{{{_key(name)}: {{capex_usd: 300000}}}}"
    )
    fix = (hint[0].upper() + hint[1:] + " " if hint else "") + (
        f"Give your own price in the spec (`prices: {example}`) or with `--prices FILE`, "
        f"add a sourced one under `{section}:` in {_DATA_PATH} (each figure as value, source, as_of), "
        f"or choose a priced {kind}: {', '.join(choices)}."
    )
    return BadInput(
        f"No price for {kind} '{name}' in the price table; add one or choose a priced {kind}.", why, fix
    )


def cloud_prices() -> dict[str, CloudPrice]:
    """All cloud prices, accelerator id -> CloudPrice, in file order (a fresh dict over cached objects)."""
    return dict(active_prices().cloud)


def cloud_price(acc_id: str) -> CloudPrice:
    """Cloud price of one accelerator (case-insensitive, ``_`` taken as ``-``); `BadInput` with a fix if none."""
    table = active_prices().cloud
    price = table.get(_key(acc_id))
    if price is None:
        raise _no_price("accelerator", acc_id, table, accelerators(), "cloud")
    return price


def node_capexes() -> dict[str, NodeCapex]:
    """All node purchase prices, node id -> NodeCapex, in file order (a fresh dict over cached objects)."""
    return dict(active_prices().onprem)


def node_capex(node_id: str) -> NodeCapex:
    """Purchase price of one node type (case-insensitive, ``_`` taken as ``-``); `BadInput` with a fix if none."""
    table = active_prices().onprem
    capex = table.get(_key(node_id))
    if capex is None:
        raise _no_price("node type", node_id, table, nodes(), "onprem")
    return capex


def onprem_defaults() -> OnPremDefaults:
    """Amortisation, power, PUE, network, storage, facility and operations defaults for on-premises costs."""
    return active_prices().defaults
