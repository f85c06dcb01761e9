"""What a plan's GPUs are billed on in the cloud: the cheapest whole instances that hold its replicas.

Instances are rented whole. A provider rents an accelerator in its node-sized instance
(``prices.yaml``) and often in smaller shapes too (``shapes.yaml``: 1, 2 or 4 GPUs). A plan
of `replicas` replicas of `gpus_per_replica` GPUs is billed, per provider allowed, on the
cheapest combination of that provider's instances (by on-demand price) such that

- each replica sits inside ONE instance (an instance of g GPUs holds floor(g / r) replicas
  of r GPUs): a replica never spans instances it would not span anyway, since its tensor-
  parallel traffic runs over the instance's scale-up links;
- a replica larger than the node spans whole nodes, as it must: ceil(r / node GPUs) of the
  provider's node-sized instance.

The cheapest provider wins (one provider for the whole plan). Exactly: a covering problem
(unbounded knapsack over replicas), solved by dynamic programming over the replica count,
the bulk of a large plan taken on the shape with the lowest price per replica.

A price the user gave (`prices:`) is per GPU-hour for the accelerator's node, so such a plan
is billed on whole nodes at that rate, as before shapes existed; so is a plan none of whose
allowed providers' instances holds a replica (a 2-GPU replica where only 1-GPU instances are
listed): its nodes at the chosen record's rate per GPU-hour.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from rightsize.catalog.prices import (
    ON_DEMAND,
    PRICE_FIELDS,
    CloudPrice,
    InstanceType,
    PriceTable,
    active_prices,
)
from rightsize.catalog.shapes import shapes

# Plans with more replicas than this many instances' worth take the excess on the shape with
# the lowest price per replica before the exact search (which is linear in the replicas).
_EXACT_REPLICAS = 512
_TIE_USD = 1e-9  # equal prices (a 2-GPU shape at twice a 1-GPU one): fewer instances win


@dataclass(frozen=True)
class Instances:
    """`count` whole instances of one record (`gpus` each)."""

    price: CloudPrice  # per GPU-hour figures, derived from the instance's price
    gpus: int
    count: int

    def usd_per_hour(self, field: str = ON_DEMAND) -> float | None:
        rate = self.price.rate(field)
        return None if rate is None else rate * self.gpus * self.count

    def describe(self) -> str:
        inst = self.price.instance
        if inst is None:
            return f"{self.count} x {self.gpus}-GPU node (your price)"
        if inst.gpus != self.gpus:  # no instance holds a replica: whole nodes at the record's rate
            return (
                f"{self.count} x {self.gpus}-GPU node at {inst.provider} {inst.instance}'s price per GPU-hour"
            )
        size = "" if "(" in inst.instance else f" ({self.gpus} GPU{'s' if self.gpus != 1 else ''})"
        return f"{self.count} x {inst.provider} {inst.instance}{size}"


@dataclass(frozen=True)
class Billing:
    """The instances a plan's GPUs are billed on, and what they cost."""

    accelerator: str
    instances: tuple[Instances, ...]
    whole_nodes: bool  # True: billed on node-sized instances only (no smaller shape was cheaper or held it)

    @property
    def gpus(self) -> int:
        """GPUs billed: every GPU of every instance rented."""
        return sum(i.gpus * i.count for i in self.instances)

    def usd_per_hour(self, field: str = ON_DEMAND) -> float | None:
        """The instances' price per hour in a column (None: one of them has no such price)."""
        rates = [i.usd_per_hour(field) for i in self.instances]
        return None if any(r is None for r in rates) else sum(r for r in rates if r is not None)

    @property
    def on_demand_usd_per_hour(self) -> float:
        return self.usd_per_hour(ON_DEMAND) or 0.0

    def describe(self) -> str:
        """'1 x gcp a2-ultragpu-1g (1 GPU) in us-central1', or several such, '+'-joined."""
        parts = []
        for i in self.instances:
            region = f" in {i.price.instance.region}" if i.price.instance else ""
            parts.append(i.describe() + region)
        return " + ".join(parts)

    @property
    def main(self) -> Instances:
        """The kind of instance holding the most GPUs of the bill."""
        return max(self.instances, key=lambda i: i.gpus * i.count)

    @property
    def price(self) -> CloudPrice:
        """One record per GPU-hour for the whole bill: the instance's own record when one kind is
        rented; else the GPU-weighted mean of each column (sources and spot preemption rate of
        the largest kind, the instance named as the combination)."""
        if len(self.instances) == 1:
            return self.instances[0].price
        gpus = self.gpus
        main = self.main.price
        per_gpu = {f: (None if (r := self.usd_per_hour(f)) is None else r / gpus) for f in PRICE_FIELDS}
        inst = main.instance
        combo = (
            InstanceType(inst.provider, " + ".join(i.describe() for i in self.instances), gpus, inst.region)
            if inst is not None
            else None
        )
        return dataclasses.replace(
            main,
            on_demand=per_gpu[PRICE_FIELDS[0]],
            reserved_1y=per_gpu[PRICE_FIELDS[1]],
            reserved_3y=per_gpu[PRICE_FIELDS[2]],
            spot=per_gpu[PRICE_FIELDS[3]],
            spot_preemptions_per_hour=max(i.price.spot_preemptions_per_hour for i in self.instances),
            instance=combo,
        )


def _provider_records(t: PriceTable, acc_id: str) -> dict[str, tuple[list[CloudPrice], list[CloudPrice]]]:
    """Per allowed provider: (its node-sized records, its smaller shapes)."""
    out: dict[str, tuple[list[CloudPrice], list[CloudPrice]]] = {}
    allowed = t.providers
    for rec in t.offers.get(acc_id, ()):
        if rec.instance is not None and (allowed is None or rec.instance.provider in allowed):
            out.setdefault(rec.instance.provider, ([], []))[0].append(rec)
    for rec in shapes().get(acc_id, ()):
        if rec.instance is not None and (allowed is None or rec.instance.provider in allowed):
            out.setdefault(rec.instance.provider, ([], []))[1].append(rec)
    return out


def _instance_usd(rec: CloudPrice) -> float:
    assert rec.instance is not None and rec.on_demand is not None
    return rec.on_demand * rec.instance.gpus


def _cover(replicas: int, items: list[tuple[int, float, CloudPrice]]) -> tuple[float, dict[int, int]] | None:
    """The cheapest counts of `items` (replicas held per instance, USD per hour, record) that
    hold `replicas` replicas: (USD per hour, item index -> instances). None when no item
    holds one replica."""
    items = [it for it in items if it[0] >= 1]
    if not items:
        return None
    counts: dict[int, int] = {}
    best = min(range(len(items)), key=lambda i: (items[i][1] / items[i][0], -items[i][0]))
    k_best = items[best][0]
    rest = replicas
    if replicas > _EXACT_REPLICAS:
        bulk = (replicas - _EXACT_REPLICAS) // k_best
        counts[best] = bulk
        rest = replicas - bulk * k_best
    # cost[j]: cheapest USD per hour holding j replicas (more is allowed: an instance may sit part empty)
    cost = [0.0] + [math.inf] * rest
    pick = [-1] * (rest + 1)
    for j in range(1, rest + 1):
        for i, (k, usd, _) in enumerate(items):
            c = cost[max(0, j - k)] + usd
            if c < cost[j] - _TIE_USD:
                cost[j], pick[j] = c, i
    j = rest
    while j > 0:
        i = pick[j]
        counts[i] = counts.get(i, 0) + 1
        j = max(0, j - items[i][0])
    total = sum(items[i][1] * n for i, n in counts.items())
    return total, counts


def _provider_bill(
    acc_id: str,
    node_recs: list[CloudPrice],
    shape_recs: list[CloudPrice],
    per_replica: int,
    replicas: int,
    gpn: int,
) -> tuple[float, Billing] | None:
    """One provider's cheapest bill, or None when it cannot hold the replicas."""
    if per_replica > gpn:  # the replica spans nodes anyway: whole node-sized instances
        if not node_recs:
            return None
        node = min(node_recs, key=_instance_usd)
        assert node.instance is not None
        count = replicas * math.ceil(per_replica / node.instance.gpus)
        billing = Billing(acc_id, (Instances(node, node.instance.gpus, count),), True)
        return billing.on_demand_usd_per_hour, billing
    records = [(r, r.instance.gpus) for r in node_recs if r.instance] + [
        (r, r.instance.gpus) for r in shape_recs if r.instance and r.instance.gpus < gpn
    ]
    records.sort(key=lambda rg: -rg[1])  # larger first: on a tie, fewer instances
    items = [(g // per_replica, _instance_usd(r), r) for r, g in records]
    found = _cover(replicas, items)
    if found is None:
        return None
    usd, counts = found
    chosen = tuple(Instances(records[i][0], records[i][1], n) for i, n in sorted(counts.items()) if n)
    whole = all(i.price in node_recs for i in chosen)
    return usd, Billing(acc_id, chosen, whole)


_CACHE: dict[tuple[int, str, int, int, int], tuple[PriceTable, Billing | None]] = {}


def bill(acc_id: str, gpus_per_replica: int, replicas: int, gpus_per_node: int) -> Billing | None:
    """The cheapest whole instances holding `replicas` replicas of `gpus_per_replica` GPUs of
    the accelerator under the prices in effect (`gpus_per_node`: the plan's node); None when
    the accelerator has no cloud price."""
    t = active_prices()
    key = (id(t), acc_id, gpus_per_replica, replicas, gpus_per_node)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is t:
        return hit[1]
    result = _bill(t, acc_id, max(1, gpus_per_replica), max(1, replicas), gpus_per_node)
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = (t, result)
    return result


def _bill(t: PriceTable, acc_id: str, per_replica: int, replicas: int, gpn: int) -> Billing | None:
    chosen = t.cloud.get(acc_id)
    if chosen is None or chosen.on_demand is None:
        return None
    if chosen not in t.offers.get(acc_id, ()):  # the user's per-GPU price: whole nodes at it
        nodes = math.ceil(per_replica * replicas / gpn)
        return Billing(acc_id, (Instances(chosen, gpn, nodes),), True)
    best: tuple[float, Billing] | None = None
    for node_recs, shape_recs in _provider_records(t, acc_id).values():
        found = _provider_bill(acc_id, node_recs, shape_recs, per_replica, replicas, gpn)
        if found is not None and (best is None or found[0] < best[0] - _TIE_USD):
            best = found
    if (
        best is None
    ):  # no allowed provider's instance holds a replica: the plan's whole nodes at the chosen rate
        return Billing(acc_id, (Instances(chosen, gpn, math.ceil(per_replica * replicas / gpn)),), True)
    return best[1]


def smaller_shapes(acc_id: str, gpus_per_node: int) -> list[CloudPrice]:
    """The accelerator's instance shapes smaller than its node among the providers allowed."""
    allowed = active_prices().providers
    return [
        r
        for r in shapes().get(acc_id, ())
        if r.instance is not None
        and r.instance.gpus < gpus_per_node
        and (allowed is None or r.instance.provider in allowed)
    ]
