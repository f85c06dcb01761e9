"""Whether a plan needs a scale-out fabric, and what it carries: serving replicas that fit in a
node (or in one scale-up domain, an NVL72 rack of 4-GPU trays) exchange nothing; a replica
spanning nodes beyond the domain, or a job over several nodes, needs one."""

from __future__ import annotations

import math

from rightsize.catalog.nodes import NodeType
from rightsize.catalog.tpu_slices import tpu_vm
from rightsize.search.demand import Demand

UNLIMITED_NODES = 1_000_000_000  # max_nodes when no fabric is ever needed (independent single-node replicas)


def _scaleup_name(node: NodeType) -> str:
    """The node's scale-up link in its vendor's words (NVLink, Infinity Fabric, ICI, ...)."""
    from rightsize.catalog import get_accelerator

    return get_accelerator(node.accelerator).scaleup_name


def fabric_not_needed(demand: Demand, node: NodeType, nodes: int) -> tuple[str, int] | None:
    """(why, the most nodes that stays true) when no scale-out fabric is needed: serving
    replicas that each fit in a node or in one scale-up domain (an NVL72 rack of 4-GPU
    trays), or a single node; None when one is (a replica spanning nodes beyond the
    scale-up domain sends its pipeline, tensor or expert traffic over the RDMA NICs)."""
    # a disaggregated plan's prefill replicas send each request's KV cache to a decode replica
    # on another node: the replicas do exchange something, over the scale-out fabric
    serving = demand.workload in ("serving", "batch_inference") and not (
        demand.kv_transfer_bytes_per_s > 0 and nodes > 1
    )
    per_replica = demand.gpus_per_replica
    if serving and (per_replica is None or per_replica <= node.gpus_per_node):
        return (
            "No scale-out fabric needed: every serving replica fits in one node and replicas exchange "
            "nothing; requests arrive over the front-end network, sized with storage.",
            UNLIMITED_NODES,
        )
    if serving and per_replica is not None and per_replica <= _scaleup_domain_gpus(node):
        hosts = math.ceil(per_replica / node.gpus_per_node)
        vm = tpu_vm(node.accelerator, node.gpus_per_node)  # a TPU replica is one slice of VMs
        inside = (
            f"is one {per_replica}-chip slice over {hosts} {vm.name} VMs, joined by {_scaleup_name(node)}"
            if vm is not None
            else f"({per_replica} GPUs over {hosts} {node.id} nodes) stays inside one {_scaleup_name(node)} "
            f"scale-up domain of {_scaleup_domain_gpus(node)} GPUs"
        )
        return (
            f"No scale-out fabric needed: every serving replica {inside}, and replicas exchange "
            "nothing; requests arrive over the front-end network, sized with storage.",
            UNLIMITED_NODES,
        )
    if nodes <= 1:
        return (
            "No scale-out fabric needed: one node, whose GPUs talk over its scale-up links "
            f"({_scaleup_name(node)}). Front-end and storage networking are sized with storage.",
            1,
        )
    return None


def _scaleup_domain_gpus(node: NodeType) -> int:
    from rightsize.catalog import get_accelerator

    return int(get_accelerator(node.accelerator).scaleup_domain_gpus)


def traffic(demand: Demand, node: NodeType, nodes: int) -> str:
    """What the fabric carries, for its reason."""
    if demand.kv_transfer_bytes_per_s > 0:
        return (
            f"{nodes} nodes; prefill replicas send each request's KV cache to a decode replica on another node "
            f"({demand.kv_transfer_bytes_per_s / 1e9:,.1f} GB/s across the pools at the design rate)"
        )
    if demand.workload in ("serving", "batch_inference") and demand.gpus_per_replica:
        span = math.ceil(demand.gpus_per_replica / node.gpus_per_node)
        return (
            f"{nodes} nodes; each serving replica spans {span} of them and sends its pipeline, tensor or "
            "expert-parallel traffic across them"
        )
    return f"{nodes} nodes exchange gradients/activations across nodes"
