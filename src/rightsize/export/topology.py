"""Where a training job's ranks must sit: the scale-up domain that spans nodes.

One interface for every such domain: the platform's scale-up group in platforms.yaml
(`scaleup_domain`, `domain_max_units`, `domain_node_label`) when it holds several nodes of
the plan's node type. Two kinds today:

- NVIDIA GB200/GB300 NVL72: 72 GPUs on one NVLink spine, 18 trays of 4, one rack. The plan's
  step time prices some collectives as running inside it (`perf.collectives.group_link`: a
  group of `size` ranks at `stride` is inside when size x stride <= the domain's GPUs), and
  data-parallel traffic with domain_gpus / TP members per domain, so the job also packs into
  the fewest racks.
- AWS Trn2 UltraServer: 4 trn2u.48xlarge instances of 16 Trainium2 chips (64 chips) joined by
  NeuronLink-v3 (same-coordinate chips in a ring across the four instances). The plan prices
  the instance as the scale-up domain (accelerators.yaml: 16 chips), so placement is asked for
  only when a group spans instances: that group must stay on NeuronLink, inside one UltraServer.
  (Inside it, the Neuron runtime also needs each node's place, `ultraserver-node-id-4`, and
  its UltraServer mode, which the Neuron stack's launcher sets; that is the Neuron training
  export's part, not placement's.)

Ranks are ordered as Megatron-LM orders them, tensor parallel fastest, then context,
expert, data and pipeline (`tp-cp-ep-dp-pp`), so the groups that must share a domain are
blocks of consecutive ranks:

- TP always (the plan has no layout with TP across domains; one that does is refused),
- x CP when TP x CP still fits the domain,
- x EP when TP x CP x EP still fits it (the MoE all-to-all at stride TP x CP).

A job keeps those blocks inside domains when (1) ranks follow the node order of the
allocation in blocks of the accelerators per node (Slurm's block distribution, a JobSet's
completion index), (2) the block's accelerators divide the domain's (72 / 16 does not: the
fifth group of 16 would straddle two racks; 64 / 48 does not either) and (3) each domain the
job uses holds a whole number of blocks: the job fills whole domains or fits in one;
otherwise the schedulers are asked for slices of one group each (Kueue) or the job checks its
allocation before it starts (Slurm, whose tree topology cannot ask for it). A layout whose
groups cannot tile a domain is refused with the reason.

TPU ICI slices are placed by their own export (a GKE TPU slice is one node pool,
`export.k8s_maxtext`); nothing here applies to them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rightsize.catalog import get_accelerator
from rightsize.catalog.platforms import platform_for
from rightsize.errors import BadInput
from rightsize.export.plan_view import HardwareView, TrainingView

# Platforms' scale-up groups that these exports do not place: the node itself, a TPU slice.
_NOT_PLACED_HERE = ("node", "slice")
# Where a platform documents no node label for its domain: the NVIDIA GPU Operator's NVLink
# clique label (docs.nvidia.com/topograph/v0.5.0/providers/dra), set on every node of an NVL72.
GPU_CLIQUE_LABEL = "nvidia.com/gpu.clique"


@dataclass(frozen=True)
class Domain:
    """One scale-up domain that spans nodes (an NVL72 rack, a Trn2 UltraServer)."""

    name: str  # the vendor's term for the link, e.g. NVLink, NeuronLink
    gpus: int  # accelerators in one domain
    nodes: int  # nodes of the plan's node type in one domain
    kind: str = "NVL72 rack"  # the platform's word for the group (platforms.yaml scaleup_domain)
    unit: str = "GPU"  # what one accelerator is called
    node_label: str = GPU_CLIQUE_LABEL  # the Kubernetes node label naming a node's domain
    packs: bool = True  # the plan priced traffic inside the whole domain: the job packs into few

    @property
    def size(self) -> str:
        """e.g. "72-GPU NVLink domain", "64-chip NeuronLink domain (Trn2 UltraServer)"."""
        tail = "" if "rack" in self.kind else f" ({self.kind})"
        return f"{self.gpus}-{self.unit} {self.name} domain{tail}"

    @property
    def slug(self) -> str:
        """A word for switch names in topology.conf: rack, ultraserver."""
        return "rack" if "rack" in self.kind else self.kind.split()[-1].lower()


@dataclass(frozen=True)
class Placement:
    """What the job asks of the scheduler so that its groups stay in domains."""

    domain: Domain
    group: str  # e.g. "TP8 x CP2": the consecutive ranks that must share a domain
    group_gpus: int
    group_nodes: int  # nodes one group spans (1 when it lies inside a node)
    domains: int  # the fewest domains the job can use
    slice_nodes: int  # consecutive nodes that must share one domain (the job's share of each)


def scale_up_domain(hw: HardwareView) -> Domain | None:
    """The platform's scale-up domain (platforms.yaml) when it spans several nodes of the
    plan's node type; None when it is the node, a TPU slice, or does not hold whole nodes."""
    acc = get_accelerator(hw.accelerator)
    plat = platform_for(hw.accelerator, hw.vendor)
    units = plat.domain_max_units.get(acc.id, 0)
    gpn = hw.gpus_per_node
    if plat.scaleup_domain in _NOT_PLACED_HERE or units <= gpn or units % gpn:
        return None
    return Domain(
        name=acc.scaleup_name,
        gpus=units,
        nodes=units // gpn,
        kind=plat.scaleup_domain,
        unit=plat.unit_noun,
        node_label=plat.domain_node_label or GPU_CLIQUE_LABEL,
        packs=acc.scaleup_domain_gpus >= units,
    )


def _group(v: TrainingView, domain: Domain) -> tuple[str, int]:
    """(name, GPUs) of the largest rank block the plan priced inside the domain."""
    if v.tp > domain.gpus:
        raise BadInput(
            f"The plan's tensor-parallel group (TP{v.tp}) is larger than one {domain.size} "
            f"of {v.hw.accelerator}.",
            "Tensor parallelism runs an all-reduce in every layer; across domains it would run on the "
            "scale-out fabric, not as the plan's step time assumes.",
            f"Re-plan with parallel.tp at most {domain.gpus}.",
        )
    name, size = f"TP{v.tp}", v.tp
    for label, degree in (("CP", v.cp), ("EP", v.ep)):
        if degree > 1 and size * degree <= domain.gpus:
            name, size = f"{name} x {label}{degree}", size * degree
    return name, size


def placement(v: TrainingView) -> Placement | None:
    """The placement a multi-node job on a multi-node scale-up domain needs; None when the
    job fits one node or the node type's domain is the node (or a torus)."""
    domain = scale_up_domain(v.hw)
    if domain is None or v.nodes <= 1:
        return None
    gpn = min(v.gpus, v.hw.gpus_per_node)
    if not domain.packs and v.tp * v.cp * v.ep <= gpn:
        return None  # every group the plan priced on the scale-up link lies inside one node
    name, size = _group(v, domain)
    unit = domain.unit
    if domain.gpus % size or (size > gpn and size % gpn) or (size < gpn and gpn % size):
        raise BadInput(
            f"The plan's {name} group ({size} {unit}s) does not tile a {domain.size} "
            f"of {domain.nodes} x {v.hw.node} ({gpn} {unit}s each).",
            "Ranks are placed in blocks of consecutive ranks; some group would straddle two domains and run "
            "its collectives on the scale-out fabric, slower than the plan's step time assumes.",
            f"Re-plan with parallel.tp (x cp, x ep) a divisor of {domain.gpus} and a multiple or divisor of {gpn}.",
        )
    group_nodes = max(1, size // gpn)
    if v.nodes <= domain.nodes:
        per = v.nodes
    elif v.nodes % domain.nodes == 0:
        per = domain.nodes
    else:  # a part of a rack: each group must still lie in one (checked at start, see slurm)
        per = group_nodes
    return Placement(domain, name, size, group_nodes, math.ceil(v.nodes / domain.nodes), per)


def domain_of_rank(rank: int, gpus_per_node: int, node_domains: list[str]) -> str:
    """The domain of a rank under block distribution: rank r runs on the (r // GPUs per
    node)-th node of the allocation, whose domain `node_domains` lists in node order."""
    return node_domains[rank // gpus_per_node]
