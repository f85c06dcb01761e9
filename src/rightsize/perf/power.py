"""Power draw physics, written once: what a GPU draws at a given activity, and the
facility power a cluster of whole nodes needs at nameplate.

A GPU draws between idle and its TDP, P = P_idle + (TDP - P_idle) x f, with
P_idle = idle_fraction x TDP and f = duty_cycle x min(1, utilisation / utilisation_at_tdp):
a working GPU reaches TDP at `utilisation_at_tdp` of peak because memory traffic and clocks
draw power whether or not FLOPs retire.

The search screens clusters against a facility power cap before the fabric and storage are
sized: nodes at their maximum draw plus a few percent for switches and storage, times the
PUE. `rightsize.sizing.power` then sizes the full nameplate (racks' switches, the sized
fabric and storage) with the same per-GPU physics and checks the cap again.
"""

from __future__ import annotations

import math

from rightsize.catalog.nodes import NodeType
from rightsize.catalog.prices import onprem_defaults

# Fabric switches and storage add to the nodes' own maximum power; a few percent at scale
# (a 64-port 400G switch draws ~1.7 kW against ~80 kW for the 8 nodes on its ports).
FACILITY_OVERHEAD_FRACTION = 0.05


def gpu_activity(compute_utilisation: float, duty_cycle: float, utilisation_at_tdp: float) -> float:
    """f = duty_cycle x min(1, compute_utilisation / utilisation_at_tdp), in [0, 1]."""
    working = min(1.0, max(compute_utilisation, 0.0) / utilisation_at_tdp)
    return min(1.0, max(duty_cycle, 0.0)) * working


def gpu_draw_w(tdp_w: float, idle_fraction_of_tdp: float, activity: float) -> float:
    """Average draw of one GPU at activity f: idle + (TDP - idle) x f."""
    idle = idle_fraction_of_tdp * tdp_w
    return idle + (tdp_w - idle) * activity


def default_pue(pue: float | None) -> float:
    """The spec's PUE, else the price catalog's default."""
    return pue if pue is not None else onprem_defaults().pue


def facility_power_estimate_w(gpus: int, node: NodeType, pue: float) -> float:
    """Facility power of a cluster at the nodes' maximum draw, with fabric and storage, x PUE."""
    return math.ceil(gpus / node.gpus_per_node) * node.max_power_w * (1 + FACILITY_OVERHEAD_FRACTION) * pue
