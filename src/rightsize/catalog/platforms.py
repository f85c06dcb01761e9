"""Vendor platforms (``data/platforms.yaml``): the system each accelerator family runs in.

A platform says what a report calls one accelerator (GPU, chip), what group shares the
scale-up links (node, TPU slice, Trn2 UltraServer, NVL72 rack) and how large it gets,
how those groups talk (InfiniBand, RoCE, AWS EFA, Google's DCN) and who runs that network
and the halls around it: the buyer (switches, racks, power and cooling to size and price)
or the cloud provider (TPU and Trainium exist only as rented instances). The sizing
stages read it; the advisor and the report use its words.
"""

from __future__ import annotations

import re
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
    require_mapping,
    require_str,
    sourced,
)

PLATFORMS_FILE = "platforms.yaml"
SCALEOUT_KINDS = ("infiniband", "roce", "efa", "dcn")
OPERATORS = ("owner", "provider")
# The platform an accelerator falls back to when no entry lists it, by vendor.
_VENDOR_DEFAULT = {"nvidia": "nvidia-hgx"}

_KEYS = frozenset(
    {
        "id",
        "name",
        "vendor",
        "accelerators",
        "unit_noun",
        "scaleup_domain",
        "domain_max_units",
        "scaleout",
        "facility",
        "collectives",
        "launcher",
        "operator",
        "rack",
        "source",
        "domain_node_label",
    }
)
_SCALEOUT_KEYS = frozenset({"kind", "name", "operated_by", "nics", "switch"})
NIC_SOURCES = ("on_chip", "node", "catalog")


@dataclass(frozen=True)
class Platform:
    """One vendor family's system: its words, its scale-up group, its network and who runs it."""

    id: str
    name: str
    vendor: str
    accelerators: tuple[str, ...]
    unit_noun: str  # what one accelerator is called: "GPU", "chip"
    scaleup_domain: str  # node / slice / Trn2 instance / NVL72 rack
    domain_max_units: dict[str, int]  # accelerator id -> most accelerators in one scale-up group
    scaleout_kind: str  # one of SCALEOUT_KINDS
    scaleout_name: str
    scaleout_operated_by: str  # owner / provider
    nics: str  # on_chip (Gaudi: no NICs to buy), node (the node's own, in its price), catalog
    switch: str  # preferred fabric.yaml switch id for an owner-built network of scaleout_kind; "" none
    facility: str  # owner / provider
    collectives: str
    launcher: str
    operator: str  # who runs the provider-operated parts ("Google", "AWS"); "" for the buyer
    rack_cooling: str  # the vendor's rack cooling (facility.yaml id) where it sells the rack; ""
    rack_kw: dict[str, float]  # accelerator id -> the vendor's rack power, kW (NVL72)
    source: str
    as_of: str
    sources: dict[str, Sourced]
    # the Kubernetes node label whose value names a node's scale-up domain, where the
    # stack sets one (Trn2 on EKS: neuron.amazonaws.com/ultraserver-server-id-4); "" where none
    domain_node_label: str = ""

    @property
    def provider_network(self) -> bool:
        """The cloud provider runs the network between scale-up groups: nothing to size or buy."""
        return self.scaleout_operated_by == "provider"

    @property
    def nics_on_chip(self) -> bool:
        """The scale-out ports are the accelerator's own (Gaudi): no NICs to buy."""
        return self.nics == "on_chip"

    @property
    def provider_facility(self) -> bool:
        """Racks, power and cooling are the cloud provider's: no rack bill of materials."""
        return self.facility == "provider"

    def units(self, count: float | None = None) -> str:
        """The unit noun, plural unless ``count`` is 1 ("chip", "chips", "GPUs")."""
        return self.unit_noun if count == 1 else f"{self.unit_noun}s"


def _provenance(raw: Any, file: str, key: str) -> tuple[str, str]:
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, "expected {source, as_of}")
    check_keys(raw, frozenset({"source", "as_of"}), file, key)
    return require_str(raw, "source", file, key), require_str(raw, "as_of", file, key)


def parse_platform(raw: Any, file: str, key: str) -> Platform:
    """One platform entry."""
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, _KEYS, file, key)
    pid = require_str(raw, "id", file, key)
    key = f"{key}({pid})"
    out = require_mapping(raw, "scaleout", file, key)
    check_keys(out, _SCALEOUT_KEYS, file, f"{key}.scaleout")
    kind = require_str(out, "kind", file, f"{key}.scaleout")
    if kind not in SCALEOUT_KINDS:
        raise CatalogDataError(
            file, f"{key}.scaleout.kind", f"unknown kind {kind!r}; use one of {SCALEOUT_KINDS}"
        )
    operated = require_str(out, "operated_by", file, f"{key}.scaleout")
    facility = require_str(raw, "facility", file, key)
    for field, value in (("scaleout.operated_by", operated), ("facility", facility)):
        if value not in OPERATORS:
            raise CatalogDataError(file, f"{key}.{field}", f"use one of {OPERATORS}")
    nics = str(out.get("nics", "catalog"))
    if nics not in NIC_SOURCES:
        raise CatalogDataError(file, f"{key}.scaleout.nics", f"use one of {NIC_SOURCES}")
    domains = raw.get("domain_max_units") or {}
    if not isinstance(domains, Mapping):
        raise CatalogDataError(
            file, f"{key}.domain_max_units", "expected a mapping of accelerator id -> figure"
        )
    sources: dict[str, Sourced] = {}
    for acc_id, fig in domains.items():
        sources[f"domain_max_units.{acc_id}"] = sourced(
            fig, file, f"{key}.domain_max_units.{acc_id}", integer=True, minimum=1, maximum=100_000
        )
    rack = raw.get("rack") or {}
    if not isinstance(rack, Mapping):
        raise CatalogDataError(file, f"{key}.rack", "expected {cooling, rack_kw}")
    check_keys(rack, frozenset({"cooling", "rack_kw"}), file, f"{key}.rack")
    rack_cooling = str(rack.get("cooling", ""))
    for acc_id, fig in (rack.get("rack_kw") or {}).items():
        sources[f"rack_kw.{acc_id}"] = sourced(
            fig, file, f"{key}.rack.rack_kw.{acc_id}", minimum=1, maximum=2000
        )
    accs = raw.get("accelerators") or []
    if not isinstance(accs, list) or not all(isinstance(a, str) for a in accs):
        raise CatalogDataError(file, f"{key}.accelerators", "expected a list of accelerator ids")
    source, as_of = _provenance(raw.get("source"), file, f"{key}.source")
    label = raw.get("domain_node_label") or {}
    if label:
        check_keys(label, frozenset({"label", "source", "as_of"}), file, f"{key}.domain_node_label")
        _provenance(
            {"source": label.get("source"), "as_of": label.get("as_of")}, file, f"{key}.domain_node_label"
        )
    return Platform(
        id=pid,
        name=require_str(raw, "name", file, key),
        vendor=require_str(raw, "vendor", file, key),
        accelerators=tuple(accs),
        unit_noun=require_str(raw, "unit_noun", file, key),
        scaleup_domain=require_str(raw, "scaleup_domain", file, key),
        domain_max_units={
            k[17:]: int(v.value) for k, v in sources.items() if k.startswith("domain_max_units.")
        },
        scaleout_kind=kind,
        scaleout_name=require_str(out, "name", file, f"{key}.scaleout"),
        scaleout_operated_by=operated,
        nics=nics,
        switch=str(out.get("switch", "")),
        facility=facility,
        collectives=require_str(raw, "collectives", file, key),
        launcher=require_str(raw, "launcher", file, key),
        operator=str(raw.get("operator", "")),
        rack_cooling=rack_cooling,
        rack_kw={a[8:]: s.value for a, s in sources.items() if a.startswith("rack_kw.")},
        source=source,
        as_of=as_of,
        sources=sources,
        domain_node_label=str(label.get("label", "")) if label else "",
    )


def parse_platforms(raw: Mapping[str, Any], file: str) -> dict[str, Platform]:
    """Every platform of a document; an accelerator belongs to at most one."""
    check_schema(raw, file)
    check_keys(raw, frozenset({"schema_version", "refs", "platforms"}), file, "<document>")
    result: dict[str, Platform] = {}
    owner: dict[str, str] = {}
    for i, entry in enumerate(require_list(raw, "platforms", file)):
        p = parse_platform(entry, file, f"platforms[{i}]")
        if p.id in result:
            raise CatalogDataError(file, f"platforms[{i}].id", f"duplicate id {p.id!r}")
        for acc_id in p.accelerators:
            if acc_id in owner:
                raise CatalogDataError(
                    file, f"platforms[{i}].accelerators", f"{acc_id} is already in {owner[acc_id]}"
                )
            owner[acc_id] = p.id
        result[p.id] = p
    return result


@cache
def platforms() -> dict[str, Platform]:
    """The shipped platforms, read and checked once."""
    return parse_platforms(read_data_file(PLATFORMS_FILE), PLATFORMS_FILE)


def platform_for(acc_id: str, vendor: str | None = None) -> Platform:
    """The platform that lists ``acc_id``, else its vendor's default one; `CatalogDataError`
    when neither exists (every shipped accelerator has one: a test checks)."""
    for p in platforms().values():
        if acc_id in p.accelerators:
            return p
    if vendor is None:
        from rightsize.catalog.registry import get_accelerator

        vendor = get_accelerator(acc_id).vendor
    default = _VENDOR_DEFAULT.get(vendor)
    if default is None or default not in platforms():
        raise CatalogDataError(PLATFORMS_FILE, "platforms", f"no platform lists accelerator {acc_id!r}")
    return platforms()[default]


def unit_noun(acc_id: str) -> str:
    """What a report calls one ``acc_id``: "GPU" or "chip" (the platform's word)."""
    return platform_for(acc_id).unit_noun


def rented_only_by(node_id: str) -> str:
    """Who rents the node when its platform is only rented, never sold (Google for TPU hosts,
    AWS for Trn2 instances); '' for a node a buyer can own or an unknown id."""
    from rightsize.catalog.registry import nodes

    node = nodes().get(node_id)
    if node is None:
        return ""
    plat = platform_for(node.accelerator)
    return plat.operator if plat.provider_facility else ""


def say_units(text: str, noun: str) -> str:
    """``text`` with GPU(s) called ``noun``(s): GPU -> chip, GPUs -> chips, GPU-hours ->
    chip-hours, per-GPU -> per-chip, and the lower-case labels of JSON keys (gpus, gpu slots)."""
    if noun == "GPU":
        return text
    text = re.sub(r"\bGPUs\b", f"{noun}s", text)
    text = re.sub(r"\bGPU\b", noun, text)
    text = re.sub(r"\bgpus\b", f"{noun.lower()}s", text)
    return re.sub(r"\bgpu\b", noun.lower(), text)
