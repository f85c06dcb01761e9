"""The shipped catalog: load the three data files once, cross-check them, look things up."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rightsize.catalog.accelerators import Accelerator, parse_accelerators
from rightsize.catalog.efficiency import parse_efficiencies
from rightsize.catalog.loader import CatalogDataError, read_data_file
from rightsize.catalog.nodes import NodeType, parse_nodes
from rightsize.errors import unknown_name

ACCELERATORS_FILE = "accelerators.yaml"
NODES_FILE = "nodes.yaml"
EFFICIENCY_FILE = "efficiency.yaml"
LISTING_COMMAND = "rightsize catalog"


@dataclass(frozen=True)
class Catalog:
    """Accelerators and nodes, in file order, cross-checked."""

    accelerators: dict[str, Accelerator]
    nodes: dict[str, NodeType]


def build_catalog(
    accelerators_raw: Mapping[str, Any], nodes_raw: Mapping[str, Any], efficiency_raw: Mapping[str, Any]
) -> Catalog:
    """Parse and cross-check three parsed documents (pure: tests feed synthetic ones)."""
    default_eff, per_acc = parse_efficiencies(efficiency_raw, EFFICIENCY_FILE)
    accs = parse_accelerators(accelerators_raw, ACCELERATORS_FILE, per_acc, default_eff)
    for acc_id in per_acc:
        if acc_id not in accs:
            raise CatalogDataError(
                EFFICIENCY_FILE, f"accelerators.{acc_id}", f"no accelerator {acc_id!r} in {ACCELERATORS_FILE}"
            )
    nodes = parse_nodes(nodes_raw, NODES_FILE, accs)
    for i, acc in enumerate(accs.values()):
        key = f"accelerators[{i}]({acc.id}).default_node"
        node = nodes.get(acc.default_node)
        if node is None:
            raise CatalogDataError(ACCELERATORS_FILE, key, f"no node {acc.default_node!r} in {NODES_FILE}")
        if node.accelerator != acc.id:
            raise CatalogDataError(
                ACCELERATORS_FILE, key, f"node {node.id!r} holds {node.accelerator!r}, not {acc.id!r}"
            )
    return Catalog(accelerators=accs, nodes=nodes)


@functools.cache
def _shipped() -> Catalog:
    return build_catalog(
        read_data_file(ACCELERATORS_FILE), read_data_file(NODES_FILE), read_data_file(EFFICIENCY_FILE)
    )


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def accelerators() -> dict[str, Accelerator]:
    """All accelerators, id -> Accelerator, in file order (a fresh dict over cached objects)."""
    return dict(_shipped().accelerators)


def offered_accelerators() -> dict[str, Accelerator]:
    """The accelerators one can buy or rent, id -> Accelerator, in file order: what a search
    considers when the spec names none (`targets.accelerators: all`). A part marked
    `offered: false` (a hyperscaler's own variant) is planned only when a spec names it."""
    return {k: a for k, a in _shipped().accelerators.items() if a.offered}


def not_offered_notes(acc_ids: Iterable[str]) -> list[str]:
    """One plan assumption per named accelerator that is not offered for purchase or rent,
    saying so and why (ids not in the catalog are left to the caller's own check)."""
    accs = _shipped().accelerators
    notes = []
    for acc_id in dict.fromkeys(_key(a) for a in acc_ids):
        acc = accs.get(acc_id)
        if acc is not None and not acc.offered:
            notes.append(
                f"{acc.id} ({acc.name}) is not a part one can buy or rent: it is planned because the spec "
                "names it (to check published runs on it, or for its owner), and it has no price. "
                f"Source: {acc.offered_source}"
            )
    return notes


def get_accelerator(acc_id: str) -> Accelerator:
    """The accelerator with this id (case-insensitive, ``_`` taken as ``-``); `BadInput` with a hint if unknown."""
    accs = _shipped().accelerators
    acc = accs.get(_key(acc_id))
    if acc is None:
        raise unknown_name("accelerator", acc_id, accs, LISTING_COMMAND)
    return acc


def nodes() -> dict[str, NodeType]:
    """All node types, id -> NodeType, in file order (a fresh dict over cached objects)."""
    return dict(_shipped().nodes)


def get_node(node_id: str) -> NodeType:
    """The node type with this id (case-insensitive, ``_`` taken as ``-``); `BadInput` with a hint if unknown."""
    all_nodes = _shipped().nodes
    node = all_nodes.get(_key(node_id))
    if node is None:
        raise unknown_name("node type", node_id, all_nodes, LISTING_COMMAND)
    return node


def node_for(acc_id: str) -> NodeType:
    """The default node type of an accelerator."""
    return _shipped().nodes[get_accelerator(acc_id).default_node]
