"""What a plan should flag about its owner-built fabric's parts (`rightsize.sizing.fabric`):
optics or NICs the catalog lacks at the link speed, NICs that replace the node's own, a NIC
below the recommended speed, oversubscription under training."""

from __future__ import annotations

import math
from typing import Any

from rightsize.catalog.fabric import FABRIC_FILE
from rightsize.catalog.nodes import NodeType
from rightsize.constants import GIGA
from rightsize.search.demand import Demand
from rightsize.spec.infrastructure import Fabric

NIC_FIELD = "infrastructure.fabric.nic_gbps"


def fabric_warnings(
    demand: Demand,
    node: NodeType,
    fabric: Fabric,
    speeds: tuple[float, float],
    parts: tuple[Any, Any, bool, int],
    nic_advice: tuple[Any, float | None],
) -> list[str]:
    """What the plan should flag about its parts: optics or NICs the catalog lacks at the
    link speed (`speeds`: link and per-GPU Gb/s), NICs that replace the node's own, a NIC
    below the recommended speed, oversubscription under training."""
    link_gbps, per_gpu = speeds
    optic, nic, nic_in_node, nics = parts
    sensitivity, recommended = nic_advice
    warnings: list[str] = []
    if optic.gbps < link_gbps:
        warnings.append(f"No optic in {FABRIC_FILE} reaches {link_gbps:g} Gb/s; priced with {optic.id}.")
    if nic is None:
        warnings.append(
            f"No {fabric.kind} NIC in {FABRIC_FILE} reaches {link_gbps:g} Gb/s; NICs are not priced."
        )
    if not nic_in_node:
        warnings.append(
            f"The plan runs {link_gbps:g} Gb/s NICs, not the node's own {node.nic_bits_per_s / GIGA:g} Gb/s: "
            f"{nics} replacement NICs are priced into the fabric."
        )
    if recommended is not None and per_gpu < recommended:
        row = next((r for r in sensitivity if math.isclose(r.nic_gbps, per_gpu)), None)
        how_much = f" (the step is {row.slowdown_vs_fastest_fraction:.0%} slower)" if row else ""
        warnings.append(
            f"{per_gpu:g} Gb/s per GPU is below the recommended {recommended:g}{how_much}; "
            f"set {NIC_FIELD}: {recommended:g} if switches and NICs that fast are available."
        )
    if fabric.oversubscription > 1 and demand.workload in ("pretraining", "fine_tuning"):
        warnings.append(
            f"Oversubscription {fabric.oversubscription:g}:1 slows cross-leaf collectives by up to that factor; "
            "training fabrics are usually non-blocking."
        )
    return warnings
