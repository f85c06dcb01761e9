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

A TPU plan is billed on the VMs of the slices it runs (`catalog.tpu_slices.slice_vms`, the
one slice rule: a single-host slice on one VM of its own chips, ct6e-standard-1t / -4t / -8t;
a multi-host slice on its 4-chip VMs; a chip count with no shape on the whole slices a
scheduler would grant), each serving replica its own slice. Google lists Cloud TPU prices per
chip-hour whatever the machine type (cloud.google.com/tpu/pricing), so a VM of n chips costs
n x the chosen record's rate per chip-hour (the record in ``prices.yaml`` quotes the 8-chip
type, or the user's rate); the machine types come from ``tpu_vms.yaml``, not a copy of it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from rightsize.catalog.loader import Sourced
from rightsize.catalog.prices import (
    ON_DEMAND,
    PRICE_FIELDS,
    CloudPrice,
    InstanceType,
    PriceTable,
    active_prices,
)
from rightsize.catalog.shapes import shapes
from rightsize.catalog.tpu_slices import TpuVm, slice_vms, tpu_slices, vm_machine_types

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
    tpu_vm: str | None = None  # the TPU VM machine type rented (ct6e-standard-1t), priced per chip-hour

    def usd_per_hour(self, field: str = ON_DEMAND) -> float | None:
        rate = self.price.rate(field)
        return None if rate is None else rate * self.gpus * self.count

    def describe(self) -> str:
        inst = self.price.instance
        if self.tpu_vm is not None:  # '256 x gcp ct6e-standard-4t (4 chips each)'
            chips = f"{self.gpus} chip{'s' if self.gpus != 1 else ''} each"
            if inst is None:
                return f"{self.count:,} x {self.tpu_vm} ({chips}, your price per chip-hour)"
            return f"{self.count:,} x {inst.provider} {self.tpu_vm} ({chips})"
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


def tpu_vm_price(rec: CloudPrice, vm: TpuVm) -> CloudPrice:
    """`rec` (a TPU's price record, per chip-hour) as the price of the TPU VM `vm`: the same rates
    per chip-hour (Google lists TPUs per chip-hour, whatever the machine type), the instance
    named `vm` with its chips, and each source saying so."""
    inst = rec.instance
    if inst is None:  # the user's rate per chip-hour, no instance named
        return rec

    def per_chip(field: str, s: Sourced) -> Sourced:
        if field not in PRICE_FIELDS or vm.chips == inst.gpus:
            return s
        rate = rec.rate(field)
        usd = "" if rate is None else f" = ${rate * vm.chips:,.2f}/h"
        return Sourced(
            s.value,
            f"{s.source}; Cloud TPU is priced per chip-hour whatever the machine type, so one "
            f"{vm.name} ({vm.chips} chip{'s' if vm.chips != 1 else ''}, catalog/data/tpu_vms.yaml) "
            f"is {vm.chips} x that rate{usd}",
            s.as_of,
        )

    return dataclasses.replace(
        rec,
        sources={k: per_chip(k, s) for k, s in rec.sources.items()},
        instance=InstanceType(inst.provider, vm.name, vm.chips, inst.region),
    )


def _tpu_bill(chosen: CloudPrice, acc_id: str, per_replica: int, replicas: int) -> Billing | None:
    """A TPU plan on the VMs of its slices at `chosen`'s rate per chip-hour; None where the slice
    rule has no VM for it (then the generic bill)."""
    found = slice_vms(acc_id, per_replica * replicas, per_replica)
    if found is None:
        return None
    count, vm = found
    listed = chosen.instance is not None and chosen.instance.gpus == vm.chips  # the type priced
    rec = tpu_vm_price(chosen, vm)
    return Billing(acc_id, (Instances(rec, vm.chips, count, tpu_vm=vm.name),), listed)


def _bill(t: PriceTable, acc_id: str, per_replica: int, replicas: int, gpn: int) -> Billing | None:
    chosen = t.cloud.get(acc_id)
    if chosen is None or chosen.on_demand is None:
        return None
    if tpu_slices(acc_id) is not None and (tpu := _tpu_bill(chosen, acc_id, per_replica, replicas)):
        return tpu
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
    """The accelerator's instance shapes smaller than its node among the providers allowed (a
    TPU: its VM machine types with fewer chips, at the chosen rate per chip-hour)."""
    t = active_prices()
    allowed = t.providers
    chosen = t.cloud.get(acc_id)
    if tpu_slices(acc_id) is not None and chosen is not None and chosen.instance is not None:
        vms = vm_machine_types(acc_id).values()
        return [tpu_vm_price(chosen, vm) for vm in vms if vm.chips < gpus_per_node]
    return [
        r
        for r in shapes().get(acc_id, ())
        if r.instance is not None
        and r.instance.gpus < gpus_per_node
        and (allowed is None or r.instance.provider in allowed)
    ]
