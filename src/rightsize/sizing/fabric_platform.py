"""The scale-out network each vendor's platform actually has (`rightsize.catalog.platforms`).

- Google TPU: chips in a slice talk over ICI (a 2D or 3D torus Google cables); slices join
  over Google's data-centre network (DCN) with Multislice. Nothing is bought or sized:
  the plan says how many slices of which size, and the DCN bandwidth per chip.
- AWS Trainium2: 16 chips per trn2.48xlarge on a NeuronLink torus, 64 per Trn2
  UltraServer; instances talk over EFA, which AWS runs. Nothing to buy either.
- Intel Gaudi 3: RoCE over the chips' own 200 GbE ports (3 of 24 per chip leave the
  node): switches and optics are sized and priced, NICs are not (there are none).
- AMD Instinct: RoCE (Pensando Pollara NICs) unless the spec asks for InfiniBand.
- NVIDIA: InfiniBand unless the spec asks for RoCE.

The counting of switches, optics and cables stays in `rightsize.sizing.fabric`; this
module decides which kind of network and words the plan's own fabric record carries.
"""

from __future__ import annotations

import math

from rightsize.catalog.nodes import NodeType
from rightsize.catalog.platforms import Platform
from rightsize.catalog.tpu_slices import plan_slices, tpu_vm
from rightsize.constants import BITS_PER_BYTE, GIGA
from rightsize.spec.infrastructure import Fabric

# FabricPlan fields that describe a network the buyer builds; a provider-run one (Google's DCN,
# AWS's EFA) has none of them in its JSON view.
OWNER_ONLY_FIELDS = (
    "oversubscription",
    "tiers",
    "rails",
    "link_gbps",
    "switch",
    "switch_radix",
    "leaf_down_ports",
    "leaf_up_ports",
    "leaves",
    "spines",
    "cores",
    "pods",
    "switches",
    "switch_rack_units",
    "nic",
    "nics",
    "node_leaf_links",
    "leaf_spine_links",
    "spine_core_links",
    "dac_cables",
    "fiber_cables",
    "transceivers",
    "nic_capex_in_node_price",
    "switch_power_w",
    "optics_power_w",
)


def scaleout_kind(plat: Platform, fabric: Fabric) -> tuple[str, list[str]]:
    """The switch family to size (infiniband / roce) for an owner-built network, and warnings.

    The spec's `infrastructure.fabric.kind` is kept where the platform supports it; where it
    was left at its default the platform's own kind is used (RoCE for AMD and Gaudi)."""
    given = "kind" in fabric.model_fields_set
    if plat.nics_on_chip and fabric.kind != plat.scaleout_kind:
        warn = (
            [
                f"infrastructure.fabric.kind: {fabric.kind} does not apply to {plat.name}: its scale-out "
                f"ports are on the chip ({plat.scaleout_name}); sized as {plat.scaleout_kind}."
            ]
            if given
            else []
        )
        return plat.scaleout_kind, warn
    if given:
        return fabric.kind, []
    return (plat.scaleout_kind if plat.scaleout_kind in ("infiniband", "roce") else fabric.kind), []


_KIND_WORDS = {"infiniband": "InfiniBand", "roce": "RoCE"}


def kind_words(plat: Platform, kind: str) -> str:
    """The platform's words for the scale-out network of the kind chosen: the part of its name
    that says that kind ("RoCE (AMD Pensando Pollara 400 AI NICs)" of "RoCE (...) or
    InfiniBand"), else the kind's own name and that the spec asked for it."""
    word = _KIND_WORDS.get(kind, kind)
    parts = [p.strip() for p in plat.scaleout_name.split(" or ")]
    said = next((p for p in parts if p.startswith(word)), None)
    if said is not None:
        return said if kind == plat.scaleout_kind else f"{said}, as infrastructure.fabric.kind asks"
    return f"{word}, as infrastructure.fabric.kind asks"


def scaleup_groups(
    plat: Platform, node: NodeType, gpus: int, per_replica: int | None = None
) -> tuple[str, int, int]:
    """(what shares the scale-up links, how many of them the job spans, most units in one); on
    TPU the plan's slices by the bill's rule (`catalog.tpu_slices.plan_slices`)."""
    found = plan_slices(node.accelerator, gpus, per_replica)
    if found is not None:
        return plat.scaleup_domain, found[0], found[1]
    most = plat.domain_max_units.get(node.accelerator, node.gpus_per_node)
    return plat.scaleup_domain, math.ceil(gpus / most), most


def provider_network(
    plat: Platform, node: NodeType, nodes: int, gpus: int, per_replica: int | None = None
) -> tuple[bool, str]:
    """(whether the job crosses the provider's network, why) for a provider-run platform."""
    group, groups, most = scaleup_groups(plat, node, gpus, per_replica)
    upto = "" if plan_slices(node.accelerator, gpus, per_replica) else "up to "  # a TPU slice's own size
    noun = plat.units(gpus)
    per_unit_gbps = node.scaleout_bytes_per_s_per_gpu * BITS_PER_BYTE / GIGA
    per_host_gbps = per_unit_gbps * node.gpus_per_node
    vm = tpu_vm(node.accelerator, node.gpus_per_node)  # a TPU host is the VM its slices run on
    hosts = f"{nodes:,} x {vm.name if vm else node.id} hosts of {node.gpus_per_node} {plat.units(node.gpus_per_node)}"
    runs = f"{plat.operator} runs it: no switches, optics or NICs to buy or size"
    if groups <= 1 and nodes <= 1:
        return False, f"No network between hosts: {gpus:,} {noun} on one host ({node.name})."
    if groups <= 1:
        return (
            False,
            f"No network to build: {gpus:,} {noun} form one {group} of {upto}{most:,} over the "
            f"scale-up links, on {hosts}; data and checkpoints arrive over {plat.scaleout_name} "
            f"({per_host_gbps:g} Gb/s per host), which {plat.operator} runs.",
        )
    return (
        True,
        f"{groups:,} {group}s of {upto}{most:,} {plat.units(most)} ({hosts}) joined over "
        f"{plat.scaleout_name}{' (Multislice)' if plat.scaleout_kind == 'dcn' else ''}: {per_unit_gbps:g} Gb/s per {plat.unit_noun}, {per_host_gbps:g} Gb/s per host; "
        f"{runs}.",
    )
