"""The scale-out fabric: how fast each GPU's NIC should be, and the switches, optics and cables behind it.

1. Sensitivity. ``demand.step_s_by_nic_gbps`` gives the step time at each per-GPU line
   rate. For each rate the plan reports the slowdown against the node's own NICs
   (``demand.step_s``) and against the fastest rate tabulated (the step with the network
   all but out of the way). The recommended rate is the slowest one within
   ``slowdown_threshold`` (3%) of that fastest step: buying more does not pay.

2. Topology. Switches of radix k (ports at the link speed, breakout included) and a leaf
   oversubscription o (down:up) split each leaf into

       d = floor(k o / (1 + o)) ports down,  u = k - d up     (o = 1: d = u = k/2)

   Node NICs reach leaves one of two ways (R = compute NICs per node):

   - rail-optimised: NIC r of every node goes to a leaf of rail r, so rank-aligned
     collective traffic stays on one leaf. Leaves = R ceil(N / d).
   - leaf-spine: all R NICs of a node on one leaf, floor(d / R) nodes per leaf.
     Leaves = ceil(N / floor(d / R)).

   One tier (a single switch) serves the cluster when all N R NICs fit its k ports.
   Two tiers: every leaf links to every spine, so a spine of k ports reaches at most k
   leaves; spines = ceil(uplinks / k). Non-blocking 2-tier capacity is k leaves x d =
   k^2/2 endpoints (rail-optimised: floor(k / R) leaves per rail x d nodes).
   Three tiers (pods): a pod is k/2 leaves under pod spines that use k/2 ports down and
   k/2 up (no oversubscription above the leaf); a core switch links one spine of each of
   up to k pods. Capacity: k pods x (k/2) leaves x d = k^3/4 endpoints at o = 1
   (Al-Fares et al., "A scalable, commodity data center network architecture",
   SIGCOMM 2008). Spines and cores are counted from the ports actually used:
   spines = ceil(pod uplinks / (k/2)), cores = ceil(spine uplinks / k).

   Past three tiers (`rightsize.sizing.fabric_tiers`): rail-optimised becomes multi-plane,
   one fat-tree per NIC rail of the fewest tiers that reach N (2 (k/2)^t hosts); leaf-spine
   a single fat-tree of 4-5 tiers. Buildings and their interconnect: `rightsize.sizing.dci`.

   Links: node-leaf = N R; leaf-spine = sum over leaves of ceil(down used / o);
   spine-core = leaf-spine (1:1 above the leaf). Rail-optimised leaves serve nodes in
   many racks, so their node links are optical; leaf-spine leaves sit at the top of a
   rack and use DAC when a leaf's nodes fit one rack (``nodes_per_rack``). Every
   switch-to-switch link is optical. An optical link has two transceivers (ends) and
   one fibre.

3. No fabric. A one-node job talks over the node's scale-up links (NVLink); serving
   replicas that each fit a node exchange nothing between nodes (requests arrive on the
   front-end network, sized with storage). Both get an explicit "no scale-out fabric
   needed" with the reason, zero cost and zero power.

Capex counts switches, optics and cables; NICs are counted and priced, but their cost
joins `capex_usd` only when the plan changes the node's NIC speed (the node price in
prices.yaml includes its own NICs). Power counts switches (typical, no optics) and every
transceiver; NIC power is in the node's max_power_w. InfiniBand or RoCE picks the
switch family (`rightsize.catalog.fabric.switch_for`); the switch picks the optics and
cables that plug into it (its `optics_family`: NVIDIA LinkX modules for NVIDIA's switches,
MSA Ethernet modules for a merchant Ethernet switch such as AMD's and Gaudi's RoCE fabrics).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass
from typing import Any

from rightsize.catalog.fabric import (
    FABRIC_FILE,
    Switch,
    dac_for,
    fiber,
    get_switch,
    nic_for,
    switch_for,
    transceiver_for,
)
from rightsize.catalog.nodes import NodeType
from rightsize.catalog.platforms import platform_for
from rightsize.constants import BITS_PER_BYTE, GIGA
from rightsize.errors import BadInput, Infeasible
from rightsize.search.demand import Demand
from rightsize.sizing.dci import DciPlan, size_dci
from rightsize.sizing.fabric_need import UNLIMITED_NODES, fabric_not_needed, traffic
from rightsize.sizing.fabric_platform import (
    OWNER_ONLY_FIELDS,
    kind_words,
    provider_network,
    scaleout_kind,
    scaleup_groups,
)
from rightsize.sizing.fabric_tiers import MAX_TIERS, count_tree, tiers_needed, tree_capacity
from rightsize.sizing.fabric_warnings import NIC_FIELD, fabric_warnings
from rightsize.sizing.nodes_racks import source_entry
from rightsize.spec.infrastructure import Fabric

SLOWDOWN_THRESHOLD = 0.03  # a NIC speed is "enough" when the step is within 3% of the fastest tabulated
SENSITIVITY_GBPS = (100.0, 200.0, 400.0, 800.0, 1600.0)  # the per-GPU rates planners should tabulate


@dataclass(frozen=True)
class NicSensitivity:
    """The step at one per-GPU line rate."""

    nic_gbps: float  # per GPU
    step_s: float
    slowdown_vs_node_fraction: float | None  # vs the node's own NICs (demand.step_s); None if unknown
    slowdown_vs_fastest_fraction: float  # vs the fastest rate tabulated


@dataclass(frozen=True)
class FabricPlan:
    """Scale-out fabric: NIC sensitivity, topology, bill of materials, cost, power and growth limit."""

    needed: bool
    reason: str
    kind: str  # infiniband / roce
    topology: str  # rail_optimized / leaf_spine / multi_plane (one fat-tree per rail) / single_switch / none
    tiers: int  # 0 (none), 1 (one switch), 2 (leaf-spine), 3 (with core), 4-5 (deeper fat-tree)
    oversubscription: float
    nodes: int
    nic_gbps_per_gpu: float
    link_gbps: float  # line rate of one NIC and of every fabric link
    rails: int  # compute NICs per node
    switch: str | None
    switch_radix: int  # ports at link_gbps
    leaf_down_ports: int
    leaf_up_ports: int
    leaves: int
    spines: int
    cores: int
    pods: int
    switches: int
    switch_rack_units: int
    nic: str | None
    nics: int
    node_leaf_links: int
    leaf_spine_links: int
    spine_core_links: int
    dac_cables: int
    fiber_cables: int
    transceivers: int
    switch_capex_usd: float
    optics_capex_usd: float
    cable_capex_usd: float
    nic_capex_usd: float
    nic_capex_in_node_price: bool
    capex_usd: float
    switch_power_w: float
    optics_power_w: float
    power_w: float
    max_nodes: int  # largest node count this design reaches without a new tier
    sensitivity: tuple[NicSensitivity, ...]
    recommended_nic_gbps: float | None
    slowdown_threshold_fraction: float
    warnings: tuple[str, ...]
    sources: tuple[dict[str, Any], ...]
    planes: int = 1  # separate fat-trees, one per NIC rail (multi-plane); 1 for one fabric
    switches_by_tier: tuple[int, ...] = ()  # leaf first, all planes together
    dci: DciPlan | None = None  # buildings and the interconnect between them (its capex and power included)
    # who builds it: "owner" (switches, optics and NICs sized and priced here) or "provider"
    # (Google's DCN between TPU slices, AWS's EFA network: nothing to buy; no capex figure)
    operated_by: str = "owner"
    # the job's traffic crosses the network between scale-up groups: an owner-built fabric
    # that is `needed`, or the provider's (TPU Multislice over DCN, Trainium over EFA), which
    # is never `needed` (nothing to buy) but still carries the data-parallel traffic
    crosses_network: bool = False
    scaleup_group: str = "node"  # what shares the scale-up links: node, slice, Trn2 UltraServer, NVL72 rack
    scaleup_groups: int = 0  # how many of them the job spans

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sensitivity"] = [asdict(s) for s in self.sensitivity]
        d["warnings"] = list(self.warnings)
        d["sources"] = list(self.sources)
        d["dci"] = self.dci.as_dict() if self.dci else None
        # planes and per-tier counts are in `topology` and `reason` (every number's key names a unit)
        del d["planes"], d["switches_by_tier"]
        if not self.needed or self.operated_by == "provider":  # nothing bought: no cost figure
            for k in [k for k in d if k.endswith("capex_usd")]:
                d[k] = None
        if self.operated_by == "provider":  # the provider's network: no switches, optics or NICs of ours
            for k in OWNER_ONLY_FIELDS:
                d.pop(k, None)
        return d


@dataclass(frozen=True)
class Topology:
    """Switch and link counts of one fabric (pure counting, no prices)."""

    tiers: int
    leaves: int
    spines: int
    cores: int
    pods: int
    leaf_spine_links: int
    max_nodes: int
    planes: int = 1  # separate fat-trees, one per NIC rail (multi-plane), else 1
    upper_links: int | None = None  # links above the spines (every tier), when not the 3-tier count
    switches_by_tier: tuple[int, ...] = ()  # leaf first, all planes together (beyond three tiers)


def nic_sensitivity(
    demand: Demand, threshold: float = SLOWDOWN_THRESHOLD
) -> tuple[tuple[NicSensitivity, ...], float | None]:
    """Slowdown at each tabulated per-GPU rate, and the slowest rate within ``threshold`` of the fastest."""
    table = sorted(demand.step_s_by_nic_gbps.items())
    if not table:
        return (), None
    fastest = min(step for _, step in table)
    ref = demand.step_s
    rows = tuple(
        NicSensitivity(
            nic_gbps=gbps,
            step_s=step,
            slowdown_vs_node_fraction=(step / ref - 1.0) if ref else None,
            slowdown_vs_fastest_fraction=step / fastest - 1.0,
        )
        for gbps, step in table
    )
    recommended = next(r.nic_gbps for r in rows if r.slowdown_vs_fastest_fraction <= threshold)
    return rows, recommended


def leaf_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """(down, up) ports of a leaf: d = floor(k o / (1 + o)), u = k - d."""
    down = math.floor(radix * oversubscription / (1.0 + oversubscription))
    return down, radix - down


def count_topology(
    nodes: int, rails: int, radix: int, oversubscription: float, rail_optimized: bool
) -> Topology:
    """Leaves, spines, cores and leaf-spine links for ``nodes`` nodes of ``rails`` NICs (see the module doc)."""
    k = radix
    d, _ = leaf_ports(k, oversubscription)
    if nodes * rails <= k:  # one switch takes every NIC
        return Topology(1, 1, 0, 0, 1, 0, k // rails)
    if rail_optimized:
        if d < 1 or k // 2 < rails:
            raise BadInput(
                f"A {k}-port switch cannot build a rail-optimised fabric for {rails} NICs per node.",
                "Each pod needs at least one leaf per rail (k/2 >= rails).",
                "Set infrastructure.fabric.topology: leaf_spine, or use a higher-radix switch.",
            )
        nodes_per_leaf = d
        leaves_per_group = rails  # one leaf per rail serves nodes_per_leaf nodes
        max_leaf_groups_2tier = k // rails
        leaf_groups_per_pod = (k // 2) // rails
    else:
        nodes_per_leaf = d // rails
        if nodes_per_leaf < 1:
            raise BadInput(
                f"A leaf with {d} down ports cannot take all {rails} NICs of one node.",
                "Leaf-spine puts every NIC of a node on one leaf.",
                "Set infrastructure.fabric.topology: rail_optimized, or lower infrastructure.fabric.oversubscription.",
            )
        leaves_per_group = 1
        max_leaf_groups_2tier = k
        leaf_groups_per_pod = k // 2
    groups = math.ceil(nodes / nodes_per_leaf)  # a group: the leaves that serve the same nodes
    leaves = groups * leaves_per_group
    # nodes on each group of leaves: full groups, then the remainder
    per_group = [nodes_per_leaf] * (nodes // nodes_per_leaf) + (
        [nodes % nodes_per_leaf] if nodes % nodes_per_leaf else []
    )
    uplinks_per_group = [
        leaves_per_group * math.ceil(n * (1 if rail_optimized else rails) / oversubscription)
        for n in per_group
    ]
    leaf_spine_links = sum(uplinks_per_group)
    max_2tier = max_leaf_groups_2tier * nodes_per_leaf
    if nodes <= max_2tier:
        return Topology(2, leaves, math.ceil(leaf_spine_links / k), 0, 1, leaf_spine_links, max_2tier)
    nodes_per_pod = leaf_groups_per_pod * nodes_per_leaf
    max_3tier = k * nodes_per_pod
    if nodes > max_3tier:  # multi-plane (rail-optimised) or a deeper tree (leaf-spine)
        return _beyond_three_tiers(nodes, rails, k, oversubscription, rail_optimized, nodes_per_leaf)
    pods = math.ceil(nodes / nodes_per_pod)
    spines = 0
    for p in range(pods):  # each pod's spines take its leaves' uplinks on k/2 down ports
        pod_uplinks = sum(uplinks_per_group[p * leaf_groups_per_pod : (p + 1) * leaf_groups_per_pod])
        spines += math.ceil(pod_uplinks / (k // 2))
    cores = math.ceil(leaf_spine_links / k)  # pod spines send as much up as they take in
    return Topology(3, leaves, spines, cores, pods, leaf_spine_links, max_3tier)


def _beyond_three_tiers(
    nodes: int, rails: int, k: int, oversubscription: float, rail_optimized: bool, nodes_per_leaf: int
) -> Topology:
    """More nodes than one 3-tier fabric reaches (`rightsize.sizing.fabric_tiers`): a rail-optimised
    design becomes one fat-tree plane per rail, each of the fewest tiers (from 3) that reach every
    node; a leaf-spine design a single fat-tree of 4 or more tiers. `Infeasible` past MAX_TIERS."""
    planes = rails if rail_optimized else 1
    nics_per_node_per_plane = 1 if rail_optimized else rails
    tiers = tiers_needed(k, nodes_per_leaf, nodes, first=3 if rail_optimized else 4)
    if tiers is None:
        reach = tree_capacity(k, nodes_per_leaf, MAX_TIERS)
        raise Infeasible(
            f"{nodes:,} nodes need more than {MAX_TIERS} switch tiers with {k}-port switches.",
            f"A {MAX_TIERS}-tier fat-tree{' plane' if rail_optimized else ''} of {k}-port switches reaches "
            f"{reach:,} nodes at this oversubscription.",
            "Use a higher-radix switch, set infrastructure.fabric.topology: rail_optimized (one plane per NIC), "
            "or split the cluster.",
        )
    tree = count_tree(nodes, nodes_per_leaf, nics_per_node_per_plane, k, oversubscription, tiers)
    by_tier = tuple(planes * n for n in tree.switches_by_tier)
    return Topology(
        tiers=tiers,
        leaves=by_tier[0],
        spines=sum(by_tier[1:-1]),
        cores=by_tier[-1],
        pods=planes * math.ceil(tree.switches_by_tier[0] / (k // 2)),
        leaf_spine_links=planes * tree.uplinks,
        max_nodes=tree.max_endpoints,
        planes=planes,
        upper_links=planes * tree.uplinks * (tiers - 2),
        switches_by_tier=by_tier,
    )


def _no_fabric(
    node: NodeType,
    nodes: int,
    fabric: Fabric,
    reason: str,
    max_nodes: int,
    sensitivity: tuple[NicSensitivity, ...],
    recommended: float | None,
    threshold: float,
) -> FabricPlan:
    per_gpu = node.scaleout_bytes_per_s_per_gpu * BITS_PER_BYTE / GIGA
    return FabricPlan(
        needed=False,
        reason=reason,
        kind=fabric.kind,
        topology="none",
        tiers=0,
        oversubscription=fabric.oversubscription,
        nodes=nodes,
        nic_gbps_per_gpu=fabric.nic_gbps or per_gpu,
        link_gbps=node.nic_bits_per_s / GIGA,
        rails=node.nics_per_node,
        switch=None,
        switch_radix=0,
        leaf_down_ports=0,
        leaf_up_ports=0,
        leaves=0,
        spines=0,
        cores=0,
        pods=0,
        switches=0,
        switch_rack_units=0,
        nic=None,
        nics=0,
        node_leaf_links=0,
        leaf_spine_links=0,
        spine_core_links=0,
        dac_cables=0,
        fiber_cables=0,
        transceivers=0,
        switch_capex_usd=0.0,
        optics_capex_usd=0.0,
        cable_capex_usd=0.0,
        nic_capex_usd=0.0,
        nic_capex_in_node_price=True,
        capex_usd=0.0,
        switch_power_w=0.0,
        optics_power_w=0.0,
        power_w=0.0,
        max_nodes=max_nodes,
        sensitivity=sensitivity,
        recommended_nic_gbps=recommended,
        slowdown_threshold_fraction=threshold,
        warnings=(),
        sources=(),
    )


def _switch_and_radix(fabric: Fabric, link_gbps: float, switch: str | None) -> tuple[Switch, int]:
    """The switch (forced by id, else the catalog's for the fabric kind and link speed) and
    its port count at the link speed; `BadInput` when it cannot serve the fabric."""
    sw: Switch = get_switch(switch) if switch else switch_for(fabric.kind, link_gbps)
    if fabric.kind not in sw.kinds:
        raise BadInput(
            f"Switch '{sw.id}' does not serve a {fabric.kind} fabric.",
            f"It serves {', '.join(sw.kinds)}.",
            f"Choose a {fabric.kind} switch from {FABRIC_FILE}, or change infrastructure.fabric.kind.",
        )
    k = sw.radix(link_gbps)
    if k == 0:
        raise BadInput(
            f"Switch '{sw.id}' has no {link_gbps:g} Gb/s ports.",
            f"Its fastest ports run {sw.native_gbps:g} Gb/s.",
            f"Lower {NIC_FIELD}, or choose another switch.",
        )
    return sw, k


def size_fabric(
    demand: Demand,
    node: NodeType,
    nodes: int,
    fabric: Fabric,
    *,
    switch: str | None = None,
    nodes_per_rack: int | None = None,
    slowdown_threshold: float = SLOWDOWN_THRESHOLD,
) -> FabricPlan:
    """The scale-out fabric for ``nodes`` nodes of ``node`` (see the module doc for every formula).

    ``switch`` forces a catalog switch id; ``nodes_per_rack`` (from the rack packing) lets
    top-of-rack leaf-spine leaves use DAC for node links.

    Longer than 80 lines for one reason: it fills the FabricPlan record (45 fields) in one
    place, so every field's derivation is read next to the others; the decisions live in
    `fabric_need.fabric_not_needed`, `_switch_and_radix`, `count_topology` and `fabric_warnings`.
    """
    sensitivity, recommended = nic_sensitivity(demand, slowdown_threshold)
    unneeded = fabric_not_needed(demand, node, nodes)
    plat = platform_for(node.accelerator)
    group, groups, _ = scaleup_groups(plat, node, demand.gpus, demand.gpus_per_replica)
    if plat.provider_network:  # Google's DCN, AWS's EFA: the provider's network, nothing to size
        crosses, why = provider_network(plat, node, nodes, demand.gpus, demand.gpus_per_replica)
        if unneeded is not None and unneeded[1] == UNLIMITED_NODES:
            crosses, why = False, unneeded[0]
        base = _no_fabric(
            node, nodes, fabric, why, UNLIMITED_NODES, sensitivity, recommended, slowdown_threshold
        )
        return dataclasses.replace(  # needed stays False: nothing of ours to build or buy
            base,
            crosses_network=crosses,
            kind=plat.scaleout_kind,
            topology="provider_network" if crosses else "none",
            operated_by="provider",
            scaleup_group=group,
            scaleup_groups=groups,
        )
    if unneeded is not None:
        why, max_nodes = unneeded
        return _no_fabric(node, nodes, fabric, why, max_nodes, sensitivity, recommended, slowdown_threshold)
    kind, kind_warnings = scaleout_kind(plat, fabric)
    if kind != fabric.kind:
        fabric = fabric.model_copy(update={"kind": kind})
    node_gbps_per_gpu = node.scaleout_bytes_per_s_per_gpu * BITS_PER_BYTE / GIGA
    per_gpu = fabric.nic_gbps if fabric.nic_gbps is not None else node_gbps_per_gpu
    link_gbps = per_gpu * node.gpus_per_node / node.nics_per_node
    rails = node.nics_per_node
    if switch is None and plat.switch and fabric.kind == plat.scaleout_kind:
        switch = plat.switch  # the vendor's reference design: merchant Ethernet, not NVIDIA's
    sw, k = _switch_and_radix(fabric, link_gbps, switch)
    rail_opt = fabric.topology == "rail_optimized"
    topo = count_topology(nodes, rails, k, fabric.oversubscription, rail_opt)
    down, up = leaf_ports(k, fabric.oversubscription)
    topology = "single_switch" if topo.tiers == 1 else "multi_plane" if topo.planes > 1 else fabric.topology

    # links, cables, optics
    node_leaf = nodes * rails
    leaf_in_rack = (
        not rail_opt and topo.tiers == 2 and nodes_per_rack is not None and (down // rails) <= nodes_per_rack
    )
    dac_links = node_leaf if leaf_in_rack else 0
    spine_core = topo.leaf_spine_links if topo.tiers == 3 else 0
    if topo.upper_links is not None:  # beyond three tiers or multi-plane: every link above the spines
        spine_core = topo.upper_links
    optical_links = node_leaf - dac_links + topo.leaf_spine_links + spine_core
    optic = transceiver_for(link_gbps, sw.optics_family)  # the switch's own optics family
    dac = dac_for(link_gbps, sw.optics_family)
    fibre = fiber(sw.optics_family)
    transceivers = 2 * optical_links
    node_speed = math.isclose(link_gbps * GIGA, node.nic_bits_per_s)
    own = plat.nics_on_chip or (plat.nics == "node" and node_speed)  # no catalog NIC to name or price
    nic = None if own else nic_for(fabric.kind, link_gbps)
    nics = nodes * rails
    nic_in_node = own or node_speed
    nic_capex = nics * nic.price_usd if nic else 0.0
    warnings = kind_warnings + fabric_warnings(
        demand,
        node,
        fabric,
        (link_gbps, per_gpu),
        (optic, nic, nic_in_node, nics),
        (sensitivity, recommended),
    )
    if own:  # the chip's own ports, or the node's own NICs: no catalog NIC to find or price
        warnings = [w for w in warnings if not w.startswith(f"No {fabric.kind} NIC")]

    switches = topo.leaves + topo.spines + topo.cores
    switch_capex = switches * sw.price_usd
    optics_capex = transceivers * optic.price_usd
    cable_capex = dac_links * dac.price_usd + optical_links * fibre.price_usd
    dci = size_dci(demand, node, nodes)  # buildings joined by coherent optics (sizing.dci)
    dci_capex, dci_power = (dci.capex_usd, dci.power_w) if dci else (0.0, 0.0)
    capex = switch_capex + optics_capex + cable_capex + (0.0 if nic_in_node else nic_capex) + dci_capex
    switch_power = switches * sw.power_w
    optics_power = transceivers * optic.power_w

    parts: list[Any] = [sw, optic, fibre] + ([dac] if dac_links else []) + ([nic] if nic else [])
    sources = [source_entry(f"{part.id}.{k_}", s) for part in parts for k_, s in part.sources.items()]
    sources += [
        source_entry(f"{node.id}.{k_}", node.sources[k_]) for k_ in ("nics_per_node", "nic_bits_per_s")
    ]

    reason = (
        f"{traffic(demand, node, nodes)}: "
        f"{topo.tiers}-tier {'single switch' if topo.tiers == 1 else fabric.topology} {fabric.kind} fabric"
        + (f", {topo.planes} planes (one fat-tree per NIC rail)" if topo.planes > 1 else "")
    )
    by_tier = topo.switches_by_tier or tuple(n for n in (topo.leaves, topo.spines, topo.cores) if n)
    if topo.switches_by_tier:
        reason += f" ({' / '.join(f'{n:,}' for n in by_tier)} switches per tier, leaf first)"
    if plat.vendor != "nvidia":
        reason += f" ({kind_words(plat, fabric.kind)})"
    if dci:
        reason += f"; {dci.buildings} buildings joined by a data-centre interconnect"
    return FabricPlan(
        needed=True,
        reason=reason,
        kind=fabric.kind,
        topology=topology,
        tiers=topo.tiers,
        oversubscription=fabric.oversubscription,
        nodes=nodes,
        nic_gbps_per_gpu=per_gpu,
        link_gbps=link_gbps,
        rails=rails,
        switch=sw.id,
        switch_radix=k,
        leaf_down_ports=down if topo.tiers > 1 else k,
        leaf_up_ports=up if topo.tiers > 1 else 0,
        leaves=topo.leaves,
        spines=topo.spines,
        cores=topo.cores,
        pods=topo.pods,
        switches=switches,
        switch_rack_units=switches * sw.rack_units,
        nic=nic.id if nic else None,
        nics=nics,
        node_leaf_links=node_leaf,
        leaf_spine_links=topo.leaf_spine_links,
        spine_core_links=spine_core,
        dac_cables=dac_links,
        fiber_cables=optical_links,
        transceivers=transceivers,
        switch_capex_usd=switch_capex,
        optics_capex_usd=optics_capex,
        cable_capex_usd=cable_capex,
        nic_capex_usd=nic_capex,
        nic_capex_in_node_price=nic_in_node,
        capex_usd=capex,
        switch_power_w=switch_power,
        optics_power_w=optics_power,
        power_w=switch_power + optics_power + dci_power,
        max_nodes=topo.max_nodes,
        sensitivity=sensitivity,
        recommended_nic_gbps=recommended,
        slowdown_threshold_fraction=slowdown_threshold,
        warnings=tuple(warnings),
        sources=tuple(sources),
        planes=topo.planes,
        switches_by_tier=by_tier,
        dci=dci,
        crosses_network=True,
        scaleup_group=group,
        scaleup_groups=groups,
    )
