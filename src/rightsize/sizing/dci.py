"""The data-centre interconnect (DCI) between buildings, when one building cannot power the cluster.

A building powers ``floor(building IT power / node max power)`` compute nodes
(`catalog/data/facility.yaml`, ``site``); a training cluster of more nodes spans
``B = ceil(nodes / nodes per building)`` buildings. Whole data-parallel replicas sit in
each building, so only data parallelism crosses the DCI: the gradient all-reduce is
hierarchical (reduce-scatter in each building, all-reduce between buildings of each
building's 1/B share, all-gather in each building), and every building sends
2 (B-1)/B x one model's gradients per step over its DCI (`perf.collectives.dci_all_reduce_s`;
the step model adds what the backward pass cannot hide as ``dci_comm_exposed_s``).
Tensor, context, expert and pipeline parallelism stay inside a building.

Parts: every building has the catalog's DCI capacity (``dci_tbps_per_building``) in
coherent DWDM wavelengths of ``dci_wavelength_gbps`` (800ZR). Two buildings share one
link; more form a ring (each building links to two neighbours, B links). A link of W
wavelengths has 2 W coherent transceivers (one per end) on ceil(W / wavelengths per
fibre pair) fibre pairs. Line systems (mux, amplifiers) and the fibre route are not
priced: they are civil works bought per site.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rightsize.catalog.facility import FACILITY_FILE, Site, facility_defaults
from rightsize.catalog.nodes import NodeType
from rightsize.perf.collectives import DciLink, dci_all_reduce_s
from rightsize.search.demand import Demand
from rightsize.sizing.nodes_racks import source_entry

# Gradients are reduced in fp32 (Megatron's main gradients for bf16 and fp8 training).
GRAD_BYTES_PER_PARAM = 4.0
CROSSING = (
    "data parallel: whole replicas in each building; gradients all-reduced hierarchically "
    "(reduce-scatter in the building, all-reduce across buildings, all-gather in the building). "
    "Tensor, context, expert and pipeline parallelism stay inside a building."
)


@dataclass(frozen=True)
class DciPlan:
    """Buildings, the DCI between them, what crosses it per step, and its parts."""

    buildings: int
    nodes_per_building: int
    gpus_per_building: int
    building_it_power_w: float
    crosses: str
    topology: str  # point_to_point (2 buildings) / ring
    links: int
    gbps_per_building: float  # DCI capacity each building sends and receives
    latency_s: float  # one way, fibre
    distance_km: float  # route length (the house rule names units: in `route`, not in as_dict)
    route: str
    gradient_bytes_per_step_per_building: float
    transfer_s_per_step: float  # the cross-building stage of the all-reduce, before overlap
    wavelengths_per_link: int
    transceivers: int
    fibre_pairs: int
    capex_usd: float
    power_w: float
    sources: tuple[dict[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["sources"] = list(self.sources)
        del d["distance_km"]
        return d


def site() -> Site | None:
    return facility_defaults().site


def size_dci(demand: Demand, node: NodeType, nodes: int) -> DciPlan | None:
    """The DCI of a training cluster that spans buildings; None within one building or for
    workloads whose replicas exchange nothing (serving)."""
    s = site()
    if s is None or demand.workload not in ("pretraining", "fine_tuning"):
        return None
    buildings = s.buildings(nodes, node.max_power_w)
    if buildings <= 1:
        return None
    per_building = s.nodes_per_building(node.max_power_w)
    link = DciLink(s.dci_bytes_per_s_per_building, s.dci_latency_s, per_building * node.gpus_per_node)
    model_bytes = demand.params * GRAD_BYTES_PER_PARAM
    transfer = float(dci_all_reduce_s(np.array([model_bytes]), np.array([float(buildings)]), link)[0])
    gbps = s.dci_bytes_per_s_per_building * 8.0 / 1e9
    waves = math.ceil(gbps / s.dci_wavelength_gbps)
    links = 1 if buildings == 2 else buildings
    transceivers = 2 * links * waves
    facility = facility_defaults().sources
    return DciPlan(
        buildings=buildings,
        nodes_per_building=per_building,
        gpus_per_building=per_building * node.gpus_per_node,
        building_it_power_w=s.building_it_power_w,
        crosses=CROSSING,
        topology="point_to_point" if buildings == 2 else "ring",
        links=links,
        gbps_per_building=gbps,
        latency_s=s.dci_latency_s,
        distance_km=s.dci_distance_km,
        route=f"{s.dci_distance_km:g} km of fibre between buildings",
        gradient_bytes_per_step_per_building=2.0 * (buildings - 1) / buildings * model_bytes,
        transfer_s_per_step=transfer,
        wavelengths_per_link=waves,
        transceivers=transceivers,
        fibre_pairs=links * math.ceil(waves / s.dci_wavelengths_per_fibre_pair),
        capex_usd=transceivers * s.dci_optic_price_usd,
        power_w=transceivers * s.dci_optic_power_w,
        sources=tuple(
            source_entry(f"{FACILITY_FILE}:{k}", v) for k, v in facility.items() if k.startswith("site.")
        ),
    )
