"""What the fleet costs beyond its accelerator hours, pooled and dedicated alike: the shared parts
(scale-out fabric and storage, bought) and the spare nodes the committed capacity needs.

- Fabric: owned capacity needs a scale-out fabric; pooled, one fabric for the largest job that
  spans nodes (`fleet.shared`); dedicated, each such workload its own (its plan's fabric). It is
  charged where nodes are owned (in the cloud it is in the instance price).
- Storage: each workload's own plan's file system and object store, bought per usable TB (the
  price table's on-premises figure); pooled, workloads of the same spec keep one copy of its
  datasets and weights (their checkpoints stay their own); dedicated, every workload its own copy.
- Spares: committed nodes fail at the GPU failure rate of the workloads' own reliability models
  and stay down while a node is replaced (REPAIR_HOURS); the spare nodes cover that many failed
  nodes at once with SPARE_CONFIDENCE. Pooled, one spare pool for the committed pool at its most;
  dedicated, each workload its own: failures pool, so the pooled spares are never more than the
  dedicated ones together. Spares are priced as committed nodes of the pool's cheapest kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rightsize.catalog.prices import active_prices
from rightsize.fleet.demand import HOURS, Calendar
from rightsize.fleet.prices import COMMITTED, PoolPrices
from rightsize.fleet.solver import Solution, _active
from rightsize.sizing.reliability import REPAIR_HOURS, spare_nodes

if TYPE_CHECKING:  # pragma: no cover
    pass

TB = 1e12


def committed_nodes(sol: Solution, pools: dict[str, PoolPrices], months: int) -> dict[str, int]:
    """Most committed nodes of each pool in any month."""
    out = {}
    for acc, pr in pools.items():
        n = np.zeros(months)
        for kind in COMMITTED:
            v = sol.values.get(f"n:{acc}:{kind}")
            if v is not None:
                n = n + v @ _active(pr.term_months[kind], months)
        out[acc] = int(round(float(n.max()))) if months else 0
    return out


def _owns(sol: Solution, acc: str) -> bool:
    v = sol.values.get(f"n:{acc}:onprem")
    return v is not None and float(v.sum()) > 0.5


def _spare_usd(pr: PoolPrices, nodes: int, cal: Calendar) -> float:
    prices = [pr.usd_per_gpu_hour[k] for k in COMMITTED if k in pr.usd_per_gpu_hour]
    if not prices or nodes <= 0:
        return 0.0
    return nodes * pr.gpus_per_node * min(prices) * float(cal.days.sum() * HOURS)


Member = tuple[str, str, float, float, float, str]  # name, pool, failure rate, shared bytes, own bytes, spec


def parts_cost(
    sol: Solution, pools: dict[str, PoolPrices], cal: Calendar, members: list[Member], fabric_usd: float
) -> dict[str, Any]:
    """Fabric, storage and spares of one solution serving `members`."""
    nodes = committed_nodes(sol, pools, cal.months)
    per_tb = active_prices().defaults.storage_usd_per_tb
    seen: set[str] = set()
    stored = 0.0
    for _name, _pool, _rate, shared, own, key in members:
        stored += own + (0.0 if key in seen else shared)
        seen.add(key)
    spares, spares_usd = {}, 0.0
    for acc, pr in pools.items():
        rates = [r for _n, p, r, *_ in members if p == acc and r > 0]
        rate = max(rates) if rates else 0.0
        k = spare_nodes(nodes[acc] * pr.gpus_per_node * rate * REPAIR_HOURS)
        spares[acc] = k
        spares_usd += _spare_usd(pr, k, cal)
    fabric = fabric_usd if any(_owns(sol, acc) for acc in pools) else 0.0
    storage = stored / TB * per_tb
    return {
        "fabric_usd": fabric,
        "storage_usd": storage,
        "storage_bytes": stored,
        "spare_nodes": spares,
        "spares_usd": spares_usd,
        "total_usd": fabric + storage + spares_usd,
    }


class Parts:
    """The shared parts and spares of any solution, pooled or one workload alone."""

    def __init__(
        self,
        views: list[Any],
        pools: dict[str, PoolPrices],
        cal: Calendar,
        pool_fabric_usd: float,
        spec_keys: dict[str, str],
    ) -> None:
        self.views = {v.name: v for v in views}
        self.pools, self.cal, self.fabric = pools, cal, pool_fabric_usd
        self.keys = spec_keys

    def member(self, name: str, key: str | None = None) -> Member:
        v = self.views[name]
        shared = min(v.storage_bytes, v.dataset_bytes)
        rate = v.failure_rate_per_gpu_hour
        return (name, v.accelerator, rate, shared, v.storage_bytes - shared, key or self.keys[name])

    def pooled(self, sol: Solution) -> dict[str, Any]:
        return parts_cost(sol, self.pools, self.cal, [self.member(n) for n in self.views], self.fabric)

    def alone(self, name: str, sol: Solution) -> dict[str, Any]:
        v = self.views[name]
        pools = {v.accelerator: self.pools[v.accelerator]}
        return parts_cost(sol, pools, self.cal, [self.member(name, f"own:{name}")], v.fabric_capex_usd)
