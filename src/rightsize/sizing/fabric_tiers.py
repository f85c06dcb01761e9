"""Fabrics beyond three tiers: deeper fat-trees and multi-plane (one plane per NIC rail) designs.

A k-ary fat-tree (folded Clos) of t tiers built from k-port switches, every switch above
the leaf using k/2 ports down and k/2 up (the top tier all k down), reaches

    hosts(t) = 2 (k/2)^t           (t = 3: k^3/4, Al-Fares et al., SIGCOMM 2008)

with (2t - 1)(k/2)^(t-1) switches when full (Leiserson, "Fat-trees: universal networks
for hardware-efficient supercomputing", IEEE Trans. Computers 1985; the k-ary n-tree of
Petrini and Vanneschi, IPPS 1997). A leaf at oversubscription o puts d = floor(k o/(1+o))
ports down, so with d down ports hosts(t) = d * 2 (k/2)^(t-1) (d = k/2 at o = 1).

Counted from the ports actually used (a partly filled tree): leaves = ceil(E / d) for E
endpoints; every leaf sends U = sum ceil(down used / o) links up; each middle tier
(2 .. t-1) takes U links on k/2 down ports and sends U up: ceil(U / (k/2)) switches; the
top tier takes U links on all k ports: ceil(U / k) switches. Links between every pair of
adjacent tiers above the leaf: U, so switch-to-switch links = U (t - 1).

Multi-plane: with R NICs per node, NIC r of every node joins plane r, a separate fat-tree
of N endpoints (one per node); the planes share nothing, so each plane reaches hosts(t)
nodes and the cluster R times as many NICs. Rank-aligned collectives (NCCL's rail-aligned
rings and PXN) keep each flow inside one plane. This is how the 100,000-GPU clusters are
built: Alibaba HPN (SIGCOMM 2024) dual-plane, NVIDIA Spectrum-X multi-plane designs,
8 planes of 8 rails on an 8-GPU node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_TIERS = 5  # deeper trees add latency and optics for no reach a buyer needs (k=64, t=5: 67M hosts)


@dataclass(frozen=True)
class TreeCount:
    """One fat-tree's switches by tier (leaf first) and its links above the leaf."""

    tiers: int
    switches_by_tier: tuple[int, ...]
    uplinks: int  # U: links between each pair of adjacent tiers above the leaf
    max_endpoints: int  # leaf groups x d at this depth


def tree_capacity(radix: int, down: int, tiers: int) -> int:
    """Endpoints (leaf down ports) of a t-tier fat-tree: d * 2 (k/2)^(t-1)."""
    return down * 2 * (radix // 2) ** (tiers - 1)


def tiers_needed(radix: int, down: int, endpoints: int, first: int = 2) -> int | None:
    """The fewest tiers (from `first`, at most MAX_TIERS) whose tree reaches `endpoints`; None if none."""
    for t in range(first, MAX_TIERS + 1):
        if tree_capacity(radix, down, t) >= endpoints:
            return t
    return None


def count_tree(
    endpoints: int, per_leaf: int, nics_per_endpoint: int, radix: int, oversubscription: float, tiers: int
) -> TreeCount:
    """Switches by tier of a `tiers`-tier fat-tree for `endpoints` endpoints (nodes), each with
    `nics_per_endpoint` NICs on one leaf, `per_leaf` endpoints per leaf (see the module doc)."""
    full, rest = divmod(endpoints, per_leaf)
    per_group = [per_leaf] * full + ([rest] if rest else [])
    up = sum(math.ceil(n * nics_per_endpoint / oversubscription) for n in per_group)
    middle = math.ceil(up / (radix // 2))
    top = math.ceil(up / radix)
    by_tier = (len(per_group),) + (middle,) * (tiers - 2) + (top,)
    return TreeCount(tiers, by_tier, up, tree_capacity(radix, per_leaf, tiers))
