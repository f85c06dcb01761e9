"""Where a training job's ranks must sit: the scale-up domain that spans nodes.

A switched scale-up domain larger than one node (GB200/GB300 NVL72: 72 GPUs on one NVLink
spine, 18 trays of 4) is one rack; the plan's step time prices some collectives as running
inside it (`perf.collectives.group_link`: a group of `size` ranks at `stride` is inside when
size x stride <= the domain's GPUs). Ranks are ordered as Megatron-LM orders them, tensor
parallel fastest, then context, expert, data and pipeline (`tp-cp-ep-dp-pp`), so the groups
the plan priced inside are blocks of consecutive ranks:

- TP always (the plan has no layout with TP across domains; one that does is refused),
- x CP when TP x CP still fits the domain,
- x EP when TP x CP x EP still fits it (the MoE all-to-all at stride TP x CP).

A job keeps those blocks inside racks when (1) ranks follow the node order of the
allocation in blocks of the GPUs per node (Slurm's block distribution, a JobSet's completion
index), (2) the block's GPUs divide the domain's (72 / 16 does not: the fifth group of 16
would straddle two racks) and (3) each rack the job uses holds a whole number of blocks:
the job fills whole racks or fits in one; otherwise the schedulers are asked for slices of
one group each (Kueue) or the job checks its allocation before it starts (Slurm, whose
tree topology cannot ask for it). A layout whose groups cannot tile a domain is refused
with the reason. The job also uses the fewest racks it can,
because the plan priced data-parallel traffic with domain_gpus / TP members per domain.

Torus domains (TPU ICI slices, Trainium NeuronLink) are placed by their own exports (a GKE
TPU slice is one node pool, `export.k8s_maxtext`); nothing here applies to them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rightsize.catalog import get_accelerator
from rightsize.errors import BadInput
from rightsize.export.plan_view import HardwareView, TrainingView


@dataclass(frozen=True)
class Domain:
    """One scale-up domain that spans nodes (an NVL72 rack)."""

    name: str  # the vendor's term for the link, e.g. NVLink
    gpus: int
    nodes: int  # nodes of the plan's node type in one domain


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
    """The node type's scale-up domain when it is switched and spans several nodes."""
    acc = get_accelerator(hw.accelerator)
    gpn = hw.gpus_per_node
    if acc.scaleup_topology != "switch" or acc.scaleup_domain_gpus <= gpn or acc.scaleup_domain_gpus % gpn:
        return None
    return Domain(acc.scaleup_name, acc.scaleup_domain_gpus, acc.scaleup_domain_gpus // gpn)


def _group(v: TrainingView, domain: Domain) -> tuple[str, int]:
    """(name, GPUs) of the largest rank block the plan priced inside the domain."""
    if v.tp > domain.gpus:
        raise BadInput(
            f"The plan's tensor-parallel group (TP{v.tp}) is larger than one {domain.gpus}-GPU "
            f"{domain.name} domain of {v.hw.accelerator}.",
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
    name, size = _group(v, domain)
    if domain.gpus % size or (size > gpn and size % gpn) or (size < gpn and gpn % size):
        raise BadInput(
            f"The plan's {name} group ({size} GPUs) does not tile a {domain.gpus}-GPU {domain.name} domain "
            f"of {domain.nodes} x {v.hw.node} ({gpn} GPUs each).",
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
