"""Nodes and racks: how many servers, how they pack into racks, and the cooling that takes their heat.

    nodes = ceil(gpus / gpus_per_node)

A rack holds as many nodes as BOTH its power budget and its rack units allow:

    by_power = floor((rack_budget_w - rack_overhead_w) / node.max_power_w)
    by_units = floor((rack_units - reserved_rack_units) / node.rack_units)
    nodes_per_rack = min(by_power, by_units, nodes)

Nodes are packed at their maximum (nameplate) power, as facilities provision circuits.
Every compute rack keeps `reserved_rack_units` (4U by default: out-of-band management
switch, front-end switch, patch panel; data/facility.yaml) and `overhead_w` for those
switches; the scale-out leaves and spines live in network racks (a rail-optimised leaf
serves nodes in many racks), counted by `rightsize.sizing.fabric`.

When an accelerator's scale-up (NVLink) domain spans several nodes (GB200 NVL72: 72
GPUs = 18 four-GPU trays) those nodes must share a rack, so nodes_per_rack is a whole
multiple of the domain's node count.

This module decides the cooling, because packing and cooling are one decision: with
``cooling: auto`` and no ``rack_power_kw`` it takes, from the least capable cooling
type up, the first whose default rack budget holds at least one node (one NVLink
domain), and packs at that budget. With a ``rack_power_kw`` it packs at that budget and
`choose_cooling` takes the least type whose ceiling handles the rack. A given cooling
type is kept; `rightsize.sizing.power` checks it against the sustained heat and derates
the step when it is marginal.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from rightsize.catalog.facility import CoolingType, cooling_types, facility_defaults
from rightsize.catalog.loader import Sourced
from rightsize.catalog.nodes import NodeType
from rightsize.catalog.platforms import platform_for
from rightsize.catalog.registry import get_accelerator
from rightsize.catalog.tpu_slices import book_slices, plan_slices, tpu_slices
from rightsize.constants import KILO, GiB
from rightsize.errors import BadInput
from rightsize.search.demand import Demand
from rightsize.spec.infrastructure import Facility

RACK_POWER_FIELD = "infrastructure.facility.rack_power_kw"
RACK_UNITS_FIELD = "infrastructure.facility.rack_units"
COOLING_FIELD = "infrastructure.facility.cooling"


# NodesRacks fields about racks the buyer fills and cools; a provider-operated platform's JSON
# view (TPU, Trainium) has none of them.
_RACK_FIELDS = (
    "nodes_per_rack",
    "racks",
    "limited_by",
    "rack_budget_kw",
    "rack_budget_from",
    "rack_units",
    "reserved_rack_units",
    "rack_units_used",
    "rack_overhead_w",
    "kw_per_rack",
    "cooling",
    "cooling_max_rack_kw",
    "cooling_reason",
)


@dataclass(frozen=True)
class NodesRacks:
    """Nodes, their packing into compute racks, host resources per GPU, and the rack's cooling."""

    node: str
    gpus: int  # GPUs the workload asked for
    gpus_per_node: int
    nodes: int
    idle_gpu_slots: int  # GPUs bought but unused because nodes come whole
    nodes_per_rack: int
    racks: int
    limited_by: str  # "rack_power", "rack_units" or "nodes" (every node fits one rack)
    rack_budget_kw: float  # power budget per rack the packing used
    rack_budget_from: str  # the spec field, or the cooling default it came from
    rack_units: int
    reserved_rack_units: int
    rack_units_used: int  # in the fullest rack, reserved units included
    node_max_power_w: float
    rack_overhead_w: float
    kw_per_rack: float  # provisioned IT power of the fullest rack (nodes at max + overhead)
    scaleup_domain_nodes: int  # nodes that must share a rack (1 unless NVLink spans nodes)
    cooling: str
    cooling_max_rack_kw: float
    cooling_reason: str
    host_memory_bytes_per_gpu: float
    host_memory_need_bytes_per_gpu: float
    cpu_cores_per_gpu: float
    cpu_cores_need_per_gpu: float
    warnings: tuple[str, ...]
    sources: tuple[dict[str, Any], ...]
    # The vendor's platform (data/platforms.yaml): its word for one accelerator, who runs the
    # halls (owner, or the cloud provider for TPU and Trainium: racks, power and cooling are
    # then the provider's and the rack figures above only estimate them), and the scale-up
    # groups the accelerators form (TPU slices, Trn2 UltraServers, NVL72 racks, nodes).
    platform: str = ""
    unit_noun: str = "GPU"
    facility_operated_by: str = "owner"
    scaleup_group: str = "node"
    scaleup_group_max_units: int = 0
    scaleup_groups: int = 0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["warnings"] = list(self.warnings)
        d["sources"] = list(self.sources)
        if self.facility_operated_by == "provider":  # the provider's racks: none of ours to list
            for k in _RACK_FIELDS:
                d.pop(k, None)
        return d


def source_entry(item: str, s: Sourced) -> dict[str, Any]:
    """One traceable figure for a plan's `sources` list."""
    return {"item": item, "value": s.value, "source": s.source, "as_of": s.as_of}


def choose_cooling(kw_per_rack: float, facility: Facility, cooling: str | None = None) -> CoolingType:
    """The cooling for a rack of ``kw_per_rack`` kW.

    A given cooling (``cooling``, else ``facility.cooling`` unless "auto") is returned as
    is: whether it copes is `rightsize.sizing.power`'s check. With "auto", the least
    capable type whose ``max_rack_kw`` is at least ``kw_per_rack``; `BadInput` if none is.
    """
    types = cooling_types()
    wanted = cooling or facility.cooling
    if wanted != "auto":
        return types[wanted]
    for ct in types.values():
        if kw_per_rack <= ct.max_rack_kw:
            return ct
    top = list(types.values())[-1]
    raise BadInput(
        f"No cooling type handles {kw_per_rack:.1f} kW per rack.",
        f"The most capable, {top.id}, removes at most {top.max_rack_kw:g} kW per rack (data/facility.yaml).",
        f"Lower {RACK_POWER_FIELD} to at most {top.max_rack_kw:g} so fewer nodes share a rack.",
    )


def _fit(budget_kw: float, node: NodeType, usable_units: int, overhead_w: float) -> tuple[int, int]:
    """(nodes by power, nodes by rack units) for one rack."""
    by_power = math.floor((budget_kw * KILO - overhead_w) / node.max_power_w)
    return max(by_power, 0), usable_units // node.rack_units


def _too_small(node: NodeType, budget_kw: float, source: str, need_nodes: int, overhead_w: float) -> BadInput:
    need_kw = (need_nodes * node.max_power_w + overhead_w) / KILO
    link = get_accelerator(node.accelerator).scaleup_name
    what = f"one {node.name}" if need_nodes == 1 else f"{need_nodes} {node.name} nodes (one {link} domain)"
    types = cooling_types()
    fits = next((ct for ct in types.values() if ct.max_rack_kw >= need_kw), None)
    cooling_hint = (
        f" and a cooling that removes it ({COOLING_FIELD}: {fits.id} handles up to {fits.max_rack_kw:g} kW)"
        if fits
        else ""
    )
    return BadInput(
        f"A rack budget of {budget_kw:g} kW ({source}) cannot hold {what}.",
        f"Each node draws up to {node.max_power_w / KILO:g} kW (nodes.yaml max_power_w) and every rack keeps "
        f"{overhead_w / KILO:g} kW for its management switches: {need_kw:.1f} kW in all.",
        f"Set {RACK_POWER_FIELD} to at least {math.ceil(need_kw * 10) / 10:g}{cooling_hint}.",
    )


def _domain_nodes(demand: Demand, node: NodeType, nodes: int, warnings: list[str]) -> int:
    """Nodes that must share a rack: a switched scale-up domain that spans nodes (NVL72's
    copper NVLink spine) sits in one rack; a torus (TPU ICI, Trainium NeuronLink) is cabled
    across racks with optics, so it need not."""
    acc = get_accelerator(node.accelerator)
    if acc.scaleup_domain_gpus <= node.gpus_per_node or acc.scaleup_topology != "switch":
        return 1
    domain_nodes = min(math.ceil(acc.scaleup_domain_gpus / node.gpus_per_node), nodes)
    if domain_nodes * node.gpus_per_node < acc.scaleup_domain_gpus:
        warnings.append(
            f"{demand.gpus} GPUs fill only part of one {acc.scaleup_domain_gpus}-GPU {acc.scaleup_name} domain "
            f"({acc.name}); such racks are usually bought whole."
        )
    return domain_nodes


def _rack_budget(
    facility: Facility, wanted: str, node: NodeType, usable_u: int, domain_nodes: int
) -> tuple[CoolingType | None, float, str]:
    """(cooling chosen by the budget, if any; rack budget kW; where the budget came from): the
    spec's rack power, else the given cooling's default, else (auto) the least capable cooling
    whose default budget holds one scale-up domain."""
    types = cooling_types()
    if facility.rack_power_kw is not None:
        return None, facility.rack_power_kw, RACK_POWER_FIELD
    plat = platform_for(node.accelerator)
    vendor_kw = plat.rack_kw.get(node.accelerator)
    if vendor_kw and plat.rack_cooling in types and wanted in ("auto", plat.rack_cooling):
        # the vendor sells the rack (NVL72): its power and cooling, not a generic density
        return types[plat.rack_cooling], vendor_kw, f"{plat.name}: the vendor's rack"
    if wanted != "auto":
        return types[wanted], types[wanted].default_rack_kw, f"default for {wanted} cooling"
    overhead_w = facility_defaults().rack_overhead_w
    chosen = None
    for ct in types.values():
        by_power, by_units = _fit(ct.default_rack_kw, node, usable_u, overhead_w)
        if min(by_power, by_units) >= domain_nodes:
            chosen = ct
            break
    if chosen is None:  # not even the most capable default holds one node: report against it
        chosen = list(types.values())[-1]
    return chosen, chosen.default_rack_kw, f"default for {chosen.id} cooling"


def _host_shortfalls(demand: Demand, node: NodeType, mem_per_gpu: float, cores_per_gpu: float) -> list[str]:
    """Warnings where the node's host memory or CPU cores per GPU fall short of the workload's."""
    out = []
    if demand.host_memory_bytes_per_gpu > mem_per_gpu:
        out.append(
            f"Host memory is short: the workload needs {demand.host_memory_bytes_per_gpu / GiB:.0f} GiB per GPU, "
            f"{node.name} has {mem_per_gpu / GiB:.0f} GiB per GPU. Choose a node with more memory, or fewer "
            "data-loader workers / less CPU offload."
        )
    if demand.cpu_cores_per_gpu > cores_per_gpu:
        out.append(
            f"CPU cores are short: the workload needs {demand.cpu_cores_per_gpu:g} cores per GPU, "
            f"{node.name} has {cores_per_gpu:g}. Expect a data-loading bottleneck; preprocess offline "
            "or choose a node with more cores."
        )
    return out


def _cooling_reason(chosen: CoolingType, wanted: str, kw_per_rack: float, warnings: list[str]) -> str:
    """Why this cooling (auto or given), warning when the racks' nameplate exceeds it."""
    if kw_per_rack > chosen.max_rack_kw:
        warnings.append(
            f"{kw_per_rack:.1f} kW per rack at nameplate exceeds what {chosen.id} cooling removes "
            f"({chosen.max_rack_kw:g} kW); see the power plan for whether the sustained heat fits."
        )
    if wanted == "auto":
        return (
            f"auto: the least capable cooling whose ceiling ({chosen.max_rack_kw:g} kW) handles "
            f"{kw_per_rack:.1f} kW per rack"
        )
    return f"given ({COOLING_FIELD}); its ceiling is {chosen.max_rack_kw:g} kW per rack"


def size_nodes_racks(
    demand: Demand, node: NodeType, facility: Facility, cooling: str | None = None
) -> NodesRacks:
    """Nodes for ``demand.gpus``, their packing into racks, host resources per GPU and the cooling.

    ``cooling`` overrides ``facility.cooling`` (the same values). Raises `BadInput` naming
    ``infrastructure.facility.rack_power_kw`` or ``rack_units`` when a rack cannot hold one
    node (one NVLink domain where it spans nodes).
    """
    if demand.gpus < 1:
        raise BadInput(f"The plan asks for {demand.gpus} GPUs.", "A cluster needs at least one GPU.")
    defaults = facility_defaults()
    types = cooling_types()
    wanted = cooling or facility.cooling
    if wanted != "auto" and wanted not in types:
        raise BadInput(f"Unknown cooling '{wanted}'.", f"Known: auto, {', '.join(types)}.")
    nodes = math.ceil(demand.gpus / node.gpus_per_node)
    overhead_w = defaults.rack_overhead_w
    reserved_u = defaults.rack_reserved_units
    usable_u = facility.rack_units - reserved_u
    warnings: list[str] = []

    if usable_u < node.rack_units:
        raise BadInput(
            f"A {facility.rack_units}U rack cannot hold one {node.name} ({node.rack_units}U).",
            f"Every rack keeps {reserved_u}U for management and front-end switches and cabling "
            f"(data/facility.yaml), "
            + (f"leaving {usable_u}U." if usable_u > 0 else "which leaves no room for a node."),
            f"Set {RACK_UNITS_FIELD} to at least {node.rack_units + reserved_u}.",
        )

    acc = get_accelerator(node.accelerator)
    domain_nodes = _domain_nodes(demand, node, nodes, warnings)
    chosen, budget_kw, budget_from = _rack_budget(facility, wanted, node, usable_u, domain_nodes)

    by_power, by_units = _fit(budget_kw, node, usable_u, overhead_w)
    if by_power < domain_nodes:
        raise _too_small(node, budget_kw, budget_from, domain_nodes, overhead_w)
    if by_units < domain_nodes:
        raise BadInput(
            f"A {facility.rack_units}U rack cannot hold {domain_nodes} {node.name} nodes "
            f"(one {acc.scaleup_name} domain).",
            f"They need {domain_nodes * node.rack_units}U plus {reserved_u}U reserved for switches and cabling.",
            f"Set {RACK_UNITS_FIELD} to at least {domain_nodes * node.rack_units + reserved_u}.",
        )
    fit = min(by_power, by_units)
    limited_by = "rack_power" if by_power <= by_units else "rack_units"
    if nodes <= fit:
        fit, limited_by = nodes, "nodes"
    nodes_per_rack = (fit // domain_nodes) * domain_nodes
    racks = math.ceil(nodes / nodes_per_rack)
    kw_per_rack = (nodes_per_rack * node.max_power_w + overhead_w) / KILO

    if chosen is None:
        chosen = choose_cooling(kw_per_rack, facility, cooling)
    reason = _cooling_reason(chosen, wanted, kw_per_rack, warnings)

    mem_per_gpu = node.host_memory_bytes / node.gpus_per_node
    cores_per_gpu = node.cpu_cores / node.gpus_per_node
    warnings += _host_shortfalls(demand, node, mem_per_gpu, cores_per_gpu)
    warnings += _tpu_shape_warning(node, demand)

    sources = [source_entry(f"{node.id}.{k}", s) for k, s in node.sources.items()]
    if platform_for(node.accelerator).facility != "provider":  # the provider's racks: not ours to cite
        sources += [source_entry(f"cooling.{chosen.id}.{k}", s) for k, s in chosen.sources.items()]
        sources += [
            source_entry(key, defaults.sources[key])
            for key in ("rack.reserved_rack_units", "rack.overhead_w")
        ]
    if domain_nodes > 1:
        sources.append(source_entry(f"{acc.id}.scaleup_domain_gpus", acc.sources["scaleup_domain_gpus"]))
    return _nodes_racks_record(
        demand,
        node,
        facility,
        (nodes, nodes_per_rack, racks, limited_by, domain_nodes),
        (budget_kw, budget_from, kw_per_rack, chosen, reason),
        warnings,
        sources,
    )


def _tpu_shape_warning(node: NodeType, demand: Demand) -> list[str]:
    """A TPU plan whose chips form no slice shape (the search may count 96 v6e chips): what GKE
    would grant instead (`catalog.tpu_slices.book_slices`, the rule the fleet books by)."""
    booking = book_slices(node.accelerator, demand.gpus_per_replica or demand.gpus)
    if booking is None or booking.note is None:
        return []
    return [
        f"{booking.note}; GKE creates node pools of slice shapes only, and the cloud bill counts those whole slices."
    ]


def _nodes_racks_record(
    demand: Demand,
    node: NodeType,
    facility: Facility,
    packing: tuple[int, int, int, str, int],
    rack: tuple[float, str, float, CoolingType, str],
    warnings: list[str],
    sources: list[dict[str, Any]],
) -> NodesRacks:
    """The NodesRacks record: `packing` is (nodes, nodes per rack, racks, what limited the
    packing, nodes per scale-up domain); `rack` is (budget kW, its origin, kW per rack at
    nameplate, the cooling, why that cooling)."""
    nodes, nodes_per_rack, racks, limited_by, domain_nodes = packing
    budget_kw, budget_from, kw_per_rack, chosen, reason = rack
    defaults = facility_defaults()
    reserved_u = defaults.rack_reserved_units
    mem_per_gpu = node.host_memory_bytes / node.gpus_per_node
    cores_per_gpu = node.cpu_cores / node.gpus_per_node
    plat = platform_for(node.accelerator)
    group_max = plat.domain_max_units.get(node.accelerator, node.gpus_per_node)
    if (shapes := tpu_slices(node.accelerator)) is not None:  # the largest slice GKE creates
        group_max = max(shapes.chip_counts)
    # each TPU serving replica is its own slice; a job's chips form equal slices (Multislice)
    slices = plan_slices(node.accelerator, demand.gpus, demand.gpus_per_replica)
    return NodesRacks(
        platform=plat.id,
        unit_noun=plat.unit_noun,
        facility_operated_by=plat.facility,
        scaleup_group=plat.scaleup_domain,
        scaleup_group_max_units=group_max,
        scaleup_groups=slices[0] if slices else math.ceil(demand.gpus / group_max),
        node=node.id,
        gpus=demand.gpus,
        gpus_per_node=node.gpus_per_node,
        nodes=nodes,
        idle_gpu_slots=nodes * node.gpus_per_node - demand.gpus,
        nodes_per_rack=nodes_per_rack,
        racks=racks,
        limited_by=limited_by,
        rack_budget_kw=budget_kw,
        rack_budget_from=budget_from,
        rack_units=facility.rack_units,
        reserved_rack_units=reserved_u,
        rack_units_used=nodes_per_rack * node.rack_units + reserved_u,
        node_max_power_w=node.max_power_w,
        rack_overhead_w=defaults.rack_overhead_w,
        kw_per_rack=kw_per_rack,
        scaleup_domain_nodes=domain_nodes,
        cooling=chosen.id,
        cooling_max_rack_kw=chosen.max_rack_kw,
        cooling_reason=reason,
        host_memory_bytes_per_gpu=mem_per_gpu,
        host_memory_need_bytes_per_gpu=demand.host_memory_bytes_per_gpu,
        cpu_cores_per_gpu=cores_per_gpu,
        cpu_cores_need_per_gpu=demand.cpu_cores_per_gpu,
        warnings=tuple(warnings),
        sources=tuple(sources),
    )
