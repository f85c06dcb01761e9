"""Dated price table (``data/prices.yaml``): cloud instance prices and on-premises costs, each sourced.

Cloud prices are instance records, one or more per accelerator id (one per provider that
rents it): the instance that is billed (provider, instance type, GPUs per instance, region)
and its USD per INSTANCE-hour on demand, with 1- and 3-year commitments (None where the
provider lists none), spot where it is sold (None where not), and how often spot instances
are preempted. The table's `cloud` holds the record each accelerator is priced at (the
cheapest on demand among the providers allowed, `catalog.providers`), `offers` all of them.
Per-GPU-hour figures are derived (instance price / GPUs per instance): one basis. On-premises
figures are each node's purchase price plus the defaults that turn capex into a cost per hour.
`stale_prices` lists figures older than `STALE_AFTER_MONTHS` for the maintainer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from dataclasses import field as dc_field
from datetime import date
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
from rightsize.catalog.platforms import rented_only_by, unit_noun
from rightsize.catalog.registry import accelerators, nodes
from rightsize.errors import BadInput, did_you_mean
from rightsize.spec.prices import PROVIDERS

# A record's provider: a cloud that lists the price, or "estimate" (a part no provider lists,
# priced on the hyperscaler basis from a listed sibling).
ESTIMATE_PROVIDER = "estimate"
CATALOG_PROVIDERS = (*PROVIDERS, ESTIMATE_PROVIDER)

PRICES_FILE = "prices.yaml"
_DATA_PATH = "rightsize/catalog/data/prices.yaml"

ON_DEMAND = "on_demand_usd_per_gpu_hour"
RESERVED_1Y = "reserved_1y_usd_per_gpu_hour"
RESERVED_3Y = "reserved_3y_usd_per_gpu_hour"
SPOT = "spot_usd_per_gpu_hour"
PREEMPTIONS = "spot_preemptions_per_hour"
USER_SOURCE = "user"
PRICE_FIELDS = (ON_DEMAND, RESERVED_1Y, RESERVED_3Y, SPOT)
# The YAML column of each per-GPU figure: the catalog states the price of the whole instance.
INSTANCE_FIELDS = {field: field.replace("_per_gpu_hour", "_per_instance_hour") for field in PRICE_FIELDS}
_INSTANCE_KEYS = ("provider", "instance", "gpus_per_instance", "region")
_CLOUD_KEYS = frozenset({*INSTANCE_FIELDS.values(), *_INSTANCE_KEYS, PREEMPTIONS})
# A price dated more than this many months before the plan is flagged next to the figure.
STALE_AFTER_MONTHS = 12

# Sanity bounds that catch unit slips: a GPU-hour above $30 is almost surely a whole
# 8-GPU instance's price; more than 10 preemptions an hour is a per-day figure.
USD_PER_GPU_HOUR_RANGE = (0.05, 30.0)
USD_PER_INSTANCE_HOUR_RANGE = (0.05, 2_000.0)
_GPUS_PER_INSTANCE = (1, 72)
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
class InstanceType:
    """What a cloud price is the price of: one whole instance, as the provider bills it."""

    provider: str  # aws, azure, gcp, oracle, or estimate (a part no hyperscaler lists)
    instance: str  # the provider's instance type, e.g. p5.48xlarge
    gpus: int  # GPUs (or TPU chips) per instance
    region: str

    def describe(self) -> str:
        return f"{self.provider} {self.instance} ({self.gpus} GPUs) in {self.region}"


@dataclass(frozen=True)
class CloudPrice:
    """Renting one accelerator in the cloud. The figures are USD per GPU-hour DERIVED from the
    billed instance's price (`instance`: instance price / its GPUs); `sources` is keyed by the
    per-GPU field name and states the instance figure it came from.

    A catalog entry has on-demand and commitment prices, and spot only where the provider
    sells it (None otherwise); an accelerator priced only by the user may lack some (None:
    that way of renting has no price).
    """

    accelerator: str  # an id in accelerators.yaml
    on_demand: float | None  # USD per GPU-hour, no commitment
    reserved_1y: float | None  # USD per GPU-hour with a 1-year commitment
    reserved_3y: float | None  # USD per GPU-hour with a 3-year commitment
    spot: float | None  # USD per GPU-hour, preemptible
    spot_preemptions_per_hour: float  # per spot INSTANCE (node); N instances see N times as many
    sources: dict[str, Sourced]
    instance: InstanceType | None = None  # None: priced per GPU-hour by the user, no instance named

    def instance_rate(self, field: str) -> float | None:
        """The price of one whole instance per hour in a column (None: no price, or no instance)."""
        rate = self.rate(field)
        return None if rate is None or self.instance is None else rate * self.instance.gpus

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

    cloud: dict[str, CloudPrice]  # the record each accelerator is priced at
    onprem: dict[str, NodeCapex]
    defaults: OnPremDefaults
    basis: dict[str, PriceBasis]
    default_preemptions: Sourced
    spot_replacement: Sourced  # how long a preempted spot node stays gone
    user_notes: tuple[str, ...] = ()  # what the user's prices changed, for the plan to show
    offers: dict[str, tuple[CloudPrice, ...]] = dc_field(default_factory=dict)  # every provider's record
    providers: tuple[str, ...] | None = None  # the providers allowed (None: all in the catalog)


def _check_not_above(
    lower: Sourced, upper: Sourced, lower_name: str, upper_name: str, file: str, key: str
) -> None:
    if lower.value > upper.value:
        raise CatalogDataError(
            file,
            f"{key}.{lower_name}",
            f"{lower.value!r} exceeds {upper_name} {upper.value!r}; it must not cost more per hour",
        )


def _instance(raw: Mapping[str, Any], file: str, key: str) -> InstanceType:
    for field in _INSTANCE_KEYS:
        if field not in raw:
            raise CatalogDataError(file, key, f"missing '{field}' (every cloud price is an instance's)")
    lo, hi = _GPUS_PER_INSTANCE
    gpus = int(
        sourced(
            raw["gpus_per_instance"], file, f"{key}.gpus_per_instance", integer=True, minimum=lo, maximum=hi
        ).value
    )
    provider = require_str(raw, "provider", file, key)
    if provider not in CATALOG_PROVIDERS:
        raise CatalogDataError(
            file, f"{key}.provider", f"unknown provider {provider!r}; known: {', '.join(CATALOG_PROVIDERS)}"
        )
    return InstanceType(
        provider,
        require_str(raw, "instance", file, key),
        gpus,
        require_str(raw, "region", file, key),
    )


def _per_gpu(raw: Any, file: str, key: str, gpus: int, noun: str = "GPU") -> Sourced:
    """An instance-hour figure and the per-GPU-hour figure derived from it (the source says how)."""
    lo, hi = USD_PER_INSTANCE_HOUR_RANGE
    figure = sourced(raw, file, key, minimum=lo, maximum=hi)
    value = figure.value / gpus
    g_lo, g_hi = USD_PER_GPU_HOUR_RANGE
    if not g_lo <= value <= g_hi:
        raise CatalogDataError(
            file,
            key,
            f"{figure.value!r} / {gpus} GPUs = {value:.4g} per GPU-hour is outside {g_lo}-{g_hi}; check the unit",
        )
    per = f"per {noun}-hour: ${figure.value:g}/h / {gpus} {noun}s"
    derived = f"{figure.source} [{per}]" if gpus > 1 else figure.source
    return Sourced(value, derived, figure.as_of)


_MAY_BE_NULL = (SPOT, RESERVED_1Y, RESERVED_3Y)  # null: the provider sells none, or lists no price


def parse_cloud_price(raw: Any, file: str, key: str, acc_id: str, default_preemptions: Sourced) -> CloudPrice:
    """One ``cloud.<accelerator>`` instance record; prices must fall in the order 3y <= 1y <=
    on-demand, spot <= on-demand; spot may be null (no spot sold for the instance), and so
    may a commitment the provider lists no price for."""
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, _CLOUD_KEYS, file, key)
    inst = _instance(raw, file, key)
    figures: dict[str, Sourced] = {}
    noun = unit_noun(acc_id) if acc_id in accelerators() else "GPU"  # a TPU is priced per chip-hour
    for field in PRICE_FIELDS:
        column = INSTANCE_FIELDS[field]
        if column not in raw:
            raise CatalogDataError(
                file,
                key,
                f"missing '{column}'" + (" (null where none is sold)" if field in _MAY_BE_NULL else ""),
            )
        if raw[column] is None and field in _MAY_BE_NULL:
            continue
        figures[field] = _per_gpu(raw[column], file, f"{key}.{column}", inst.gpus, noun)
    if PREEMPTIONS in raw:
        p_lo, p_hi = _PREEMPTIONS_PER_HOUR
        figures[PREEMPTIONS] = sourced(
            raw[PREEMPTIONS], file, f"{key}.{PREEMPTIONS}", minimum=p_lo, maximum=p_hi
        )
    else:
        figures[PREEMPTIONS] = default_preemptions
    names = {f: INSTANCE_FIELDS[f] for f in PRICE_FIELDS}
    for low, high in (
        (RESERVED_3Y, RESERVED_1Y),
        (RESERVED_1Y, ON_DEMAND),
        (RESERVED_3Y, ON_DEMAND),
        (SPOT, ON_DEMAND),
    ):
        if low in figures and high in figures:
            _check_not_above(figures[low], figures[high], names[low], names[high], file, key)
    return CloudPrice(
        accelerator=acc_id,
        on_demand=figures[ON_DEMAND].value,
        reserved_1y=figures[RESERVED_1Y].value if RESERVED_1Y in figures else None,
        reserved_3y=figures[RESERVED_3Y].value if RESERVED_3Y in figures else None,
        spot=figures[SPOT].value if SPOT in figures else None,
        spot_preemptions_per_hour=figures[PREEMPTIONS].value,
        sources=figures,
        instance=inst,
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
    offers: dict[str, tuple[CloudPrice, ...]] = {}
    for acc_id, entry in require_mapping(raw, "cloud", file, "<document>").items():
        key = f"cloud.{acc_id}"
        if acc_id not in accelerator_ids:
            raise CatalogDataError(
                file, key, f"unknown accelerator {acc_id!r}; known: {', '.join(sorted(accelerator_ids))}"
            )
        offers[acc_id] = _parse_offers(entry, file, key, acc_id, default_preemptions, basis)
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
        cloud={acc: cheapest(recs) for acc, recs in offers.items()},
        offers=offers,
        onprem=onprem,
        defaults=parse_onprem_defaults(raw, file),
        basis=basis,
        default_preemptions=default_preemptions,
        spot_replacement=replacement,
    )


def _parse_offers(
    entry: Any,
    file: str,
    key: str,
    acc_id: str,
    default_preemptions: Sourced,
    basis: Mapping[str, PriceBasis],
) -> tuple[CloudPrice, ...]:
    """``cloud.<accelerator>``: one instance record, or a list of them (one per provider)."""
    items = entry if isinstance(entry, list) else [entry]
    if not items:
        raise CatalogDataError(file, key, "an empty list; give at least one instance record")
    out: list[CloudPrice] = []
    for i, item in enumerate(items):
        where = key if len(items) == 1 and not isinstance(entry, list) else f"{key}[{i}]"
        price = parse_cloud_price(item, file, where, acc_id, default_preemptions)
        check_basis(price, basis, file, where)
        if price.instance and any(_place(o) == _place(price) for o in out):
            raise CatalogDataError(
                file, f"{where}.region", f"a second record for {_place(price)}; one per provider and region"
            )
        out.append(price)
    return tuple(out)


def _place(price: CloudPrice) -> tuple[str, str] | None:
    return (price.instance.provider, price.instance.region) if price.instance else None


def cheapest(offers: Collection[CloudPrice]) -> CloudPrice:
    """The record with the lowest on-demand price per GPU-hour (the first listed on a tie)."""
    return min(offers, key=lambda p: p.on_demand if p.on_demand is not None else float("inf"))


def parse_basis(raw: Mapping[str, Any], file: str) -> dict[str, PriceBasis]:
    """The ``basis`` block: one basis per cloud price column (keyed here by the per-GPU field)."""
    block = require_mapping(raw, "basis", file, "<document>")
    check_keys(block, frozenset(INSTANCE_FIELDS.values()), file, "basis")
    out: dict[str, PriceBasis] = {}
    for field in PRICE_FIELDS:
        column = INSTANCE_FIELDS[field]
        key = f"basis.{column}"
        entry = require_mapping(block, column, file, "basis")
        check_keys(entry, frozenset({"basis", "sources_start_with", "as_of"}), file, key)
        prefixes = entry.get("sources_start_with")
        if not isinstance(prefixes, list) or not prefixes or not all(isinstance(p, str) for p in prefixes):
            raise CatalogDataError(file, f"{key}.sources_start_with", "must be a non-empty list of strings")
        out[field] = PriceBasis(
            column,
            require_str(entry, "basis", file, key),
            tuple(prefixes),
            require_str(entry, "as_of", file, key),
        )
    return out


def check_basis(price: CloudPrice, basis: Mapping[str, PriceBasis], file: str, key: str) -> None:
    """Each figure in a column must be on that column's basis (its source says which provider it is)."""
    for field, b in basis.items():
        if field not in price.sources:  # no spot sold: nothing to check
            continue
        src = price.sources[field].source
        if not src.startswith(b.sources_start_with):
            raise CatalogDataError(
                file,
                f"{key}.{INSTANCE_FIELDS[field]}.source",
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
    kind: str,
    name: str,
    priced: Collection[str],
    known: Collection[str],
    section: str,
    providers: Collection[str] | None = None,
) -> BadInput:
    """What, why and how to fix a missing price; `known` holds the ids the hardware catalog has."""
    choices = sorted(priced)
    if providers is not None and _key(name) in active_prices().offers:
        rents = list(
            dict.fromkeys(o.instance.provider for o in active_prices().offers[_key(name)] if o.instance)
        )
        why = (
            f"'{name}' is rented only by {', '.join(rents)} in {PRICES_FILE}, and the plan allows only "
            f"{', '.join(providers)} (targets.providers or prices: provider)."
        )
        hint = ""
    elif section == "onprem" and (operator := rented_only_by(_key(name))):
        why = (
            f"'{name}' is a {operator} cloud host: {operator} rents it and does not sell it, and its racks, "
            "power and cooling are the provider's (data/platforms.yaml), so there is no on-premises option."
        )
        hint = ""
    elif _key(name) in known:
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


def cloud_price(acc_id: str, provider: str | None = None) -> CloudPrice:
    """Cloud price of one accelerator (case-insensitive, ``_`` taken as ``-``): the record the
    plan prices it at (the cheapest on-demand among the providers allowed, or the user's), or
    with `provider` that provider's record. `BadInput` with a fix if there is none."""
    if provider is not None:
        from rightsize.catalog.providers import provider_offer  # the choice among providers

        return provider_offer(acc_id, provider)
    t = active_prices()
    price = t.cloud.get(_key(acc_id))
    if price is None:
        raise _no_price("accelerator", acc_id, t.cloud, accelerators(), "cloud", t.providers)
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


# --- how old a price is -----------------------------------------------------------------------


def _months(as_of: str) -> int:
    """'2025-05' (or '2025-05-14', or '2025') as a month count, the first month of a bare year."""
    parts = as_of.split("-")
    return int(parts[0]) * 12 + (int(parts[1]) - 1 if len(parts) > 1 else 0)


def price_age_months(as_of: str, today: date | None = None) -> int:
    """Whole months from a figure's `as_of` to `today` (the plan's date: the system's today)."""
    now = today or date.today()
    return now.year * 12 + now.month - 1 - _months(as_of)


def is_stale(as_of: str, today: date | None = None) -> bool:
    """True when the figure is dated more than `STALE_AFTER_MONTHS` before `today`."""
    return price_age_months(as_of, today) > STALE_AFTER_MONTHS


def stale_note(figure: Sourced, today: date | None = None) -> str | None:
    """What a plan prints next to a stale price; None when it is recent enough (or the user's)."""
    if figure.source == USER_SOURCE or not is_stale(figure.as_of, today):
        return None
    now = today or date.today()
    return (
        f"price dated {figure.as_of}, {price_age_months(figure.as_of, now)} months before this plan "
        f"({now.isoformat()}; stale after {STALE_AFTER_MONTHS}): re-check it or give yours with `prices:`"
    )


def stale_prices(table: PriceTable | None = None, today: date | None = None) -> list[tuple[str, Sourced]]:
    """Every price in the table older than `STALE_AFTER_MONTHS`, as (YAML key, figure): what a
    maintainer refreshing ``prices.yaml`` re-checks first (`catalog.stale`)."""
    from rightsize.catalog.stale import stale_figures, stale_shapes  # shapes.yaml too, for the shipped table

    return stale_figures(table or shipped_prices(), today) + ([] if table else stale_shapes(today))
