"""Scale-out fabric parts (``data/fabric.yaml``): switches, NICs, transceivers and cables, each sourced.

Lookups are pure functions over a table read and checked once. The radix of a switch at a
link speed, and which switch, NIC, optic or cable serves a speed, are table lookups
here; how many of each a cluster needs is `rightsize.sizing.fabric`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    check_schema,
    read_data_file,
    require_list,
    require_str,
    sourced,
)
from rightsize.errors import BadInput, unknown_name

FABRIC_FILE = "fabric.yaml"
KINDS = ("infiniband", "roce")
CABLE_KINDS = ("dac", "fiber")
# Which optics and cables plug into a switch: its vendor's own modules (NVIDIA LinkX, which its
# InfiniBand and Spectrum switches take) or MSA-standard Ethernet modules (merchant switches).
OPTICS_FAMILIES = ("nvidia-linkx", "ethernet-msa")

_GBPS = (1.0, 10_000.0)  # a port speed in Gb/s; 400e9 written for 400 fails here
_POWER_W = {"switch": (50.0, 20_000.0), "nic": (1.0, 500.0), "transceiver": (0.1, 100.0)}
_PRICE_USD = {
    "switch": (1_000.0, 1_000_000.0),
    "nic": (50.0, 50_000.0),
    "transceiver": (10.0, 20_000.0),
    "cable": (5.0, 10_000.0),
}


@dataclass(frozen=True)
class SwitchMode:
    """One way to run a switch's ports: `ports` ports at `port_gbps` each."""

    ports: int
    port_gbps: float


@dataclass(frozen=True)
class Switch:
    """A scale-out switch; power is typical and excludes optics."""

    id: str
    name: str
    kinds: tuple[str, ...]
    modes: tuple[SwitchMode, ...]
    rack_units: int
    power_w: float
    price_usd: float
    sources: dict[str, Sourced]
    optics_family: str = ""  # OPTICS_FAMILIES: the optics and cables it takes; "" any

    @property
    def native_gbps(self) -> float:
        """The fastest port speed the switch offers."""
        return max(m.port_gbps for m in self.modes)

    def radix(self, link_gbps: float) -> int:
        """Ports available at ``link_gbps``: the largest port count of a mode at least that fast (0 if none)."""
        return max((m.ports for m in self.modes if m.port_gbps >= link_gbps), default=0)


@dataclass(frozen=True)
class Nic:
    """A compute NIC; power and price of the card, no optics."""

    id: str
    name: str
    kinds: tuple[str, ...]
    gbps: float
    power_w: float
    price_usd: float
    sources: dict[str, Sourced]


@dataclass(frozen=True)
class Transceiver:
    """One end of an optical link at `gbps`."""

    id: str
    name: str
    gbps: float
    power_w: float
    price_usd: float
    sources: dict[str, Sourced]
    families: tuple[str, ...] = OPTICS_FAMILIES  # the switches' optics families it plugs into


@dataclass(frozen=True)
class Cable:
    """A DAC (per in-rack link, at `gbps`) or a fibre (per optical link, any speed: `gbps` is None)."""

    id: str
    name: str
    kind: str
    gbps: float | None
    price_usd: float
    sources: dict[str, Sourced]
    families: tuple[str, ...] = OPTICS_FAMILIES


@dataclass(frozen=True)
class FabricCatalog:
    switches: dict[str, Switch]
    nics: dict[str, Nic]
    transceivers: dict[str, Transceiver]
    cables: dict[str, Cable]


def _entry(raw: Any, file: str, key: str, allowed: frozenset[str]) -> tuple[Mapping[str, Any], str, str]:
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, allowed, file, key)
    entry_id = require_str(raw, "id", file, key)
    if entry_id != entry_id.lower() or " " in entry_id:
        raise CatalogDataError(file, f"{key}.id", "ids are lower-case with no spaces")
    return raw, entry_id, f"{key}({entry_id})"


def _kinds(raw: Mapping[str, Any], file: str, key: str) -> tuple[str, ...]:
    kinds = raw.get("kinds")
    if not isinstance(kinds, list) or not kinds or any(k not in KINDS for k in kinds):
        raise CatalogDataError(file, f"{key}.kinds", f"must be a non-empty list of {KINDS}, got {kinds!r}")
    return tuple(kinds)


def _families(raw: Mapping[str, Any], file: str, key: str) -> tuple[str, ...]:
    fams = raw.get("families", list(OPTICS_FAMILIES))
    if not isinstance(fams, list) or not fams or any(f not in OPTICS_FAMILIES for f in fams):
        raise CatalogDataError(
            file, f"{key}.families", f"must be a non-empty list of {OPTICS_FAMILIES}, got {fams!r}"
        )
    return tuple(fams)


def _figure(
    raw: Mapping[str, Any], name: str, file: str, key: str, bounds: tuple[float, float], integer: bool = False
) -> Sourced:
    if name not in raw:
        raise CatalogDataError(file, key, f"missing '{name}'")
    lo, hi = bounds
    return sourced(raw[name], file, f"{key}.{name}", integer=integer, minimum=lo, maximum=hi)


def parse_switch(raw: Any, file: str, key: str) -> Switch:
    allowed = frozenset(
        {"id", "name", "kinds", "modes", "rack_units", "power_w", "price_usd", "optics_family"}
    )
    raw, sid, key = _entry(raw, file, key, allowed)
    modes_raw = raw.get("modes")
    if not isinstance(modes_raw, list) or not modes_raw:
        raise CatalogDataError(file, f"{key}.modes", "must be a non-empty list of {ports, port_gbps}")
    sources: dict[str, Sourced] = {}
    modes: list[SwitchMode] = []
    for i, mode in enumerate(modes_raw):
        mkey = f"{key}.modes[{i}]"
        if not isinstance(mode, Mapping):
            raise CatalogDataError(file, mkey, f"expected a mapping, got {type(mode).__name__}")
        check_keys(mode, frozenset({"ports", "port_gbps"}), file, mkey)
        ports = _figure(mode, "ports", file, mkey, (2, 4096), integer=True)
        speed = _figure(mode, "port_gbps", file, mkey, _GBPS)
        sources[f"modes[{i}].ports"] = ports
        sources[f"modes[{i}].port_gbps"] = speed
        modes.append(SwitchMode(ports=int(ports.value), port_gbps=speed.value))
    for name, bounds, integer in (
        ("rack_units", (1.0, 48.0), True),
        ("power_w", _POWER_W["switch"], False),
        ("price_usd", _PRICE_USD["switch"], False),
    ):
        sources[name] = _figure(raw, name, file, key, bounds, integer)
    optics_family = str(raw.get("optics_family", ""))
    if optics_family and optics_family not in OPTICS_FAMILIES:
        raise CatalogDataError(file, f"{key}.optics_family", f"must be one of {OPTICS_FAMILIES}")
    return Switch(
        id=sid,
        name=require_str(raw, "name", file, key),
        kinds=_kinds(raw, file, key),
        modes=tuple(modes),
        rack_units=int(sources["rack_units"].value),
        power_w=sources["power_w"].value,
        price_usd=sources["price_usd"].value,
        sources=sources,
        optics_family=optics_family,
    )


def parse_nic(raw: Any, file: str, key: str) -> Nic:
    allowed = frozenset({"id", "name", "kinds", "gbps", "power_w", "price_usd"})
    raw, nid, key = _entry(raw, file, key, allowed)
    sources = {
        "gbps": _figure(raw, "gbps", file, key, _GBPS),
        "power_w": _figure(raw, "power_w", file, key, _POWER_W["nic"]),
        "price_usd": _figure(raw, "price_usd", file, key, _PRICE_USD["nic"]),
    }
    return Nic(
        id=nid,
        name=require_str(raw, "name", file, key),
        kinds=_kinds(raw, file, key),
        gbps=sources["gbps"].value,
        power_w=sources["power_w"].value,
        price_usd=sources["price_usd"].value,
        sources=sources,
    )


def parse_transceiver(raw: Any, file: str, key: str) -> Transceiver:
    allowed = frozenset({"id", "name", "gbps", "power_w", "price_usd", "families"})
    raw, tid, key = _entry(raw, file, key, allowed)
    sources = {
        "gbps": _figure(raw, "gbps", file, key, _GBPS),
        "power_w": _figure(raw, "power_w", file, key, _POWER_W["transceiver"]),
        "price_usd": _figure(raw, "price_usd", file, key, _PRICE_USD["transceiver"]),
    }
    return Transceiver(
        id=tid,
        name=require_str(raw, "name", file, key),
        gbps=sources["gbps"].value,
        power_w=sources["power_w"].value,
        price_usd=sources["price_usd"].value,
        sources=sources,
        families=_families(raw, file, key),
    )


def parse_cable(raw: Any, file: str, key: str) -> Cable:
    allowed = frozenset({"id", "name", "kind", "gbps", "price_usd", "families"})
    raw, cid, key = _entry(raw, file, key, allowed)
    kind = require_str(raw, "kind", file, key)
    if kind not in CABLE_KINDS:
        raise CatalogDataError(file, f"{key}.kind", f"must be one of {CABLE_KINDS}, got {kind!r}")
    sources = {"price_usd": _figure(raw, "price_usd", file, key, _PRICE_USD["cable"])}
    if kind == "dac":
        sources["gbps"] = _figure(raw, "gbps", file, key, _GBPS)
    elif "gbps" in raw:
        raise CatalogDataError(file, f"{key}.gbps", "a fibre carries every speed here; leave 'gbps' out")
    return Cable(
        id=cid,
        name=require_str(raw, "name", file, key),
        kind=kind,
        gbps=sources["gbps"].value if "gbps" in sources else None,
        price_usd=sources["price_usd"].value,
        sources=sources,
        families=_families(raw, file, key),
    )


def parse_fabric(raw: Mapping[str, Any], file: str) -> FabricCatalog:
    """Parse and check a fabric document (pure: tests feed synthetic ones); ids unique per section."""
    check_schema(raw, file)
    check_keys(
        raw,
        frozenset({"schema_version", "refs", "switches", "nics", "transceivers", "cables"}),
        file,
        "<document>",
    )

    def section(name: str, parse: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, entry in enumerate(require_list(raw, name, file)):
            item = parse(entry, file, f"{name}[{i}]")
            if item.id in out:
                raise CatalogDataError(file, f"{name}[{i}].id", f"duplicate id {item.id!r}")
            out[item.id] = item
        return out

    cat = FabricCatalog(
        switches=section("switches", parse_switch),
        nics=section("nics", parse_nic),
        transceivers=section("transceivers", parse_transceiver),
        cables=section("cables", parse_cable),
    )
    for kind in KINDS:
        if not any(kind in s.kinds for s in cat.switches.values()):
            raise CatalogDataError(file, "switches", f"no switch serves kind {kind!r}")
    for cable_kind in CABLE_KINDS:
        if not any(c.kind == cable_kind for c in cat.cables.values()):
            raise CatalogDataError(file, "cables", f"needs at least one {cable_kind!r} entry")
    for fam in {s.optics_family for s in cat.switches.values() if s.optics_family}:
        if not any(c.kind == "fiber" and fam in c.families for c in cat.cables.values()):
            raise CatalogDataError(file, "cables", f"needs a 'fiber' entry for the {fam!r} switches")
        if not any(fam in t.families for t in cat.transceivers.values()):
            raise CatalogDataError(file, "transceivers", f"needs an optic for the {fam!r} switches")
    return cat


@cache
def fabric_catalog() -> FabricCatalog:
    """The shipped fabric catalog, read and checked once."""
    return parse_fabric(read_data_file(FABRIC_FILE), FABRIC_FILE)


def get_switch(switch_id: str) -> Switch:
    """A switch by id; `BadInput` with a hint if unknown."""
    switches = fabric_catalog().switches
    sw = switches.get(switch_id.strip().lower())
    if sw is None:
        raise unknown_name("switch", switch_id, switches, "rightsize catalog")
    return sw


def switch_for(kind: str, link_gbps: float) -> Switch:
    """The switch for a fabric kind and link speed.

    Among switches of the kind whose fastest port reaches ``link_gbps``, the one whose
    fastest port is slowest (a 400G NDR switch for 400G links, not an 800G XDR one),
    first in file order on a tie. `BadInput` if none reaches the speed.
    """
    fits = [s for s in fabric_catalog().switches.values() if kind in s.kinds and s.radix(link_gbps) > 0]
    if not fits:
        fastest = max(
            (s.native_gbps for s in fabric_catalog().switches.values() if kind in s.kinds), default=0.0
        )
        raise BadInput(
            f"No {kind} switch in the catalog runs {link_gbps:g} Gb/s links.",
            f"The fastest {kind} switch port in {FABRIC_FILE} is {fastest:g} Gb/s.",
            f"Set infrastructure.fabric.nic_gbps to at most {fastest:g} (per GPU), or add a switch to "
            f"rightsize/catalog/data/{FABRIC_FILE}.",
        )
    best = min(s.native_gbps for s in fits)
    return next(s for s in fits if s.native_gbps == best)


def nic_for(kind: str, link_gbps: float) -> Nic | None:
    """The slowest NIC of the kind that reaches ``link_gbps`` (file order on a tie), or None."""
    fits = [n for n in fabric_catalog().nics.values() if kind in n.kinds and n.gbps >= link_gbps]
    if not fits:
        return None
    best = min(n.gbps for n in fits)
    return next(n for n in fits if n.gbps == best)


def _of_family(parts: list[Any], family: str) -> list[Any]:
    """The parts that plug into a switch of optics `family` ("" any); all of them where none does."""
    fits = [p for p in parts if not family or family in p.families]
    return fits or parts


def transceiver_for(link_gbps: float, family: str = "") -> Transceiver:
    """The slowest optic end of the switch's optics `family` that reaches ``link_gbps`` (the
    fastest one if none does: reported, not hidden)."""
    optics = sorted(_of_family(list(fabric_catalog().transceivers.values()), family), key=lambda t: t.gbps)
    return next((t for t in optics if t.gbps >= link_gbps), optics[-1])


def dac_for(link_gbps: float, family: str = "") -> Cable:
    """The slowest passive copper cable of the optics `family` that reaches ``link_gbps`` (the
    fastest one if none does)."""
    dacs = [c for c in fabric_catalog().cables.values() if c.kind == "dac"]
    dacs = sorted(_of_family(dacs, family), key=lambda c: c.gbps or 0.0)
    return next((c for c in dacs if (c.gbps or 0.0) >= link_gbps), dacs[-1])


def fiber(family: str = "") -> Cable:
    """The fibre used for every optical link of a switch of optics `family`."""
    fibres = [c for c in fabric_catalog().cables.values() if c.kind == "fiber"]
    return _of_family(fibres, family)[0]
