"""Storage for a chosen configuration: capacity, bandwidth and the tiers that hold them.

Capacity (decimal bytes):

    raw          = storage.dataset_bytes, or demand.dataset_bytes when the spec leaves it null
    preprocessed = raw x storage.preprocessed_multiple
    scratch      = raw x storage.scratch_multiple
    checkpoints  = demand.checkpoint_bytes x storage.checkpoints_retained

The safety margin multiplies every capacity and bandwidth need by (1 + margin); the base
need and the need with margin are both reported, so the margin is visible.

Tiers. The parallel file system (hot tier) holds the preprocessed copy, scratch and the
retained checkpoints; the object store (durable tier) holds the raw copy and a copy of the
retained checkpoints. Node-local NVMe is a cache: the plan says whether the preprocessed
dataset, or each node's shard of it, fits there. A serving plan has no dataset: the file
system holds one copy of the weights, the object store the retained model versions
(checkpoints_retained x weights) and the request logs (appended, rarely read).

Bandwidth. Reads: demand.data_read_bytes_per_s, sustained. A serving (or batch inference)
plan adds the burst of loading the weights of every replica within `weights_load_s`:
replicas x weights_bytes / weights_load_s.

Checkpoint writes, in closed form. A synchronous checkpoint of C bytes at write bandwidth W
blocks training for delta = C / W. Young's first-order optimal interval is
tau = sqrt(2 delta M), M the cluster's mean time between interruptions (Young 1974; Daly
2006, eq. 1). Asking a checkpoint to block at most a fraction f of its interval,
delta <= f tau = f sqrt(2 delta M), squares to delta <= 2 f^2 M, so

    W >= C / (2 f^2 M).

At that W, tau = 2 f M and delta / tau = f exactly (`tests/test_sizing_storage.py` checks it
against the iterative Young computation).

Asynchronous saves (`perf.checkpoint`: the stacks the export writes for NVIDIA, AMD and TPU
plans) block only for the staging copy and a fixed sync, b seconds; the write runs behind the
steps and must finish before the next save starts. The interval is Daly's optimum for b, and
the storage is sized to finish one checkpoint within it, not within a stall budget:

    W >= C / tau(b, M)

(a slower write would block for the excess every interval). The block fraction does not apply.

Proportion. A job on ONE node shares nothing with another node: its hot tier is the node's
own NVMe (the DGX User Guide's /raid data cache: DGX systems ship 8x 3.84 TB NVMe in RAID-0
"for caching datasets"; NVIDIA's multi-node DGX BasePOD and SuperPOD reference
architectures are where shared parallel storage comes in), with the durable copy and the
checkpoints in the object store. It gets no parallel file system (on premises) or managed
file system (cloud) when its hot tier, with the margin, fits the node's NVMe and the
drives meet its read and checkpoint-write needs; otherwise, and for every multi-node job,
the shared tier below is sized.

On premises the parallel file system is bought in whole building blocks, enough for every
need at once: blocks = max(ceil(capacity / usable), ceil(read / read_bw), ceil(write / write_bw)).
In the cloud a managed file system sells throughput per TiB provisioned: for each tier the
provisioned TiB is the largest of capacity, read / (throughput per TiB),
write / (throughput per TiB) and the tier's smallest instance, and the cheapest tier wins; past
the tier's largest instance the capacity is split over more instances. Cloud object storage is
billed on the bytes stored (no margin); on premises the object store is bought with the margin.

Rented halls. Where the platform's halls are a cloud operator's (Trainium on AWS, TPUs on
Google Cloud) and the catalog prices that operator's services (storage.yaml ``clouds``), the hot
tier IS its managed file system and the durable tier its object store: no appliance is bought,
racked or powered, and the checkpoint is written at the throughput the provisioned TiB buy
(`rents_file_system`). A plan in the buyer's halls is compared against the catalog's
``comparison_cloud``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rightsize.catalog.loader import Sourced
from rightsize.catalog.nodes import NodeType
from rightsize.catalog.reliability import reliability
from rightsize.catalog.storage import StorageCatalog, storage_catalog
from rightsize.constants import HOUR_S, TB
from rightsize.errors import BadInput
from rightsize.perf.checkpoint import async_interval_s
from rightsize.search.demand import Demand
from rightsize.sizing.storage_cloud import (
    ceil_units,
    cloud_file_system,
    object_store_plan,
    rented_tier,
    rents_file_system,
    with_margin,
)
from rightsize.spec.infrastructure import Storage


def _src(name: str, s: Sourced) -> dict[str, Any]:
    return {"figure": name, "value": s.value, "source": s.source, "as_of": s.as_of}


# --- closed-form checkpoint bandwidth -----------------------------------------------------


def checkpoint_write_bytes_per_s(checkpoint_bytes: float, mtbf_s: float, block_fraction: float) -> float:
    """Write bandwidth at which a synchronous checkpoint blocks at most `block_fraction` of
    Young's interval: W = C / (2 f^2 M) (derivation in the module docstring)."""
    if checkpoint_bytes <= 0:
        return 0.0
    return checkpoint_bytes / (2.0 * block_fraction**2 * mtbf_s)


def young_interval_s(write_s: float, mtbf_s: float) -> float:
    """Young's first-order optimal checkpoint interval, sqrt(2 delta M)."""
    return math.sqrt(2.0 * write_s * mtbf_s)


def cluster_mtbf_s(gpus: int) -> tuple[float, Sourced]:
    """Mean time between interruptions of `gpus` GPUs from the reliability catalog: 1 / (n lambda)."""
    rel = reliability()
    return HOUR_S / (gpus * rel.failure_rate_per_gpu_hour), rel.sources["failure_rate_per_gpu_hour"]


# --- the plan -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoragePlan:
    """Capacity, bandwidth, tiers, and what they cost; every quantity carries its unit."""

    workload: str
    safety_margin_fraction: float
    capacity: dict[str, float]  # base needs by item, bytes
    file_system_bytes: float  # hot tier, base
    object_store_bytes: float  # durable tier, base
    read_bytes_per_s_needed: float  # base
    write_bytes_per_s_needed: float  # base
    bandwidth: dict[str, Any]  # how the needs were derived
    node_nvme: dict[str, Any]
    parallel_file_system: dict[str, Any]
    object_store: dict[str, Any]
    cloud_file_system: dict[str, Any]
    capex_usd: float  # on premises: parallel file system blocks + object store
    power_w: float  # on premises
    cloud_usd_per_month: float  # cloud file system + object store
    notes: tuple[str, ...] = ()
    sources: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def total_bytes(self) -> float:
        return self.file_system_bytes + self.object_store_bytes

    def as_dict(self) -> dict[str, Any]:
        m = self.safety_margin_fraction
        return {
            "workload": self.workload,
            "safety_margin_fraction": m,
            "capacity": {
                **self.capacity,
                "file_system_bytes": self.file_system_bytes,
                "file_system_with_margin_bytes": with_margin(self.file_system_bytes, m),
                "object_store_bytes": self.object_store_bytes,
                "object_store_with_margin_bytes": with_margin(self.object_store_bytes, m),
                "total_bytes": self.total_bytes,
                "total_with_margin_bytes": with_margin(self.total_bytes, m),
            },
            "bandwidth": {
                **self.bandwidth,
                "read_bytes_per_s": self.read_bytes_per_s_needed,
                "read_with_margin_bytes_per_s": with_margin(self.read_bytes_per_s_needed, m),
                "write_bytes_per_s": self.write_bytes_per_s_needed,
                "write_with_margin_bytes_per_s": with_margin(self.write_bytes_per_s_needed, m),
            },
            "node_nvme": dict(self.node_nvme),
            "parallel_file_system": dict(self.parallel_file_system),
            "object_store": dict(self.object_store),
            "cloud_file_system": dict(self.cloud_file_system),
            "capex_usd": self.capex_usd,
            "power_w": self.power_w,
            "cloud_usd_per_month": self.cloud_usd_per_month,
            "notes": list(self.notes),
            "sources": [dict(s) for s in self.sources],
        }


@dataclass(frozen=True)
class _Needs:
    capacity: dict[str, float]
    file_system_bytes: float
    object_store_bytes: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    bandwidth: dict[str, Any]
    notes: list[str]
    sources: list[dict[str, Any]]


def _training_needs(
    demand: Demand,
    storage: Storage,
    mtbf_s: float | None,
    weights_load_s: float,
    async_blocking_s: float | None,
) -> _Needs:
    notes: list[str] = []
    sources: list[dict[str, Any]] = []
    raw = storage.dataset_bytes if storage.dataset_bytes is not None else demand.dataset_bytes
    if storage.dataset_bytes is None:
        notes.append("dataset size derived from the workload (storage.dataset_bytes is null)")
    pre = raw * storage.preprocessed_multiple
    scratch = raw * storage.scratch_multiple
    ckpt = demand.checkpoint_bytes
    ckpts = ckpt * storage.checkpoints_retained
    # A batch-inference job also loads weights; its replicas are its data-parallel copies.
    weights_read = 0.0
    if demand.workload == "batch_inference" and demand.weights_bytes > 0:
        weights_read = (demand.replicas or 1) * demand.weights_bytes / weights_load_s
    write = 0.0
    interval_s: float | None = None
    write_s: float | None = None
    if ckpt > 0:
        if mtbf_s is None:
            mtbf_s, s = cluster_mtbf_s(demand.gpus)
            sources.append(_src("reliability.failure_rate_per_gpu_hour", s))
            notes.append("cluster MTBF not given: taken from the reliability catalog, 1 / (GPUs x rate)")
        if async_blocking_s is not None:  # the write behind the steps, within the interval
            interval_s = async_interval_s(async_blocking_s, mtbf_s, reliability().restart_s)
            write = ckpt / interval_s
            write_s = interval_s
        else:
            write = checkpoint_write_bytes_per_s(ckpt, mtbf_s, storage.checkpoint_block_fraction)
            write_s = ckpt / write
            interval_s = young_interval_s(write_s, mtbf_s)
    return _Needs(
        capacity={
            "raw_dataset_bytes": raw,
            "preprocessed_bytes": pre,
            "scratch_bytes": scratch,
            "checkpoint_bytes": ckpt,
            "checkpoints_retained": float(storage.checkpoints_retained),
            "checkpoints_bytes": ckpts,
        },
        file_system_bytes=pre + scratch + ckpts,
        object_store_bytes=raw + ckpts,
        read_bytes_per_s=demand.data_read_bytes_per_s + weights_read,
        write_bytes_per_s=write,
        bandwidth={
            "data_read_bytes_per_s": demand.data_read_bytes_per_s,
            "weights_load_bytes_per_s": weights_read,
            "checkpoint_mode": "async" if async_blocking_s is not None else "sync",
            "checkpoint_blocking_s": async_blocking_s if async_blocking_s is not None else write_s,
            "checkpoint_block_fraction": storage.checkpoint_block_fraction
            if async_blocking_s is None
            else None,
            "mtbf_s": mtbf_s if ckpt > 0 else None,
            "checkpoint_write_target_s": write_s,
            "checkpoint_interval_target_s": interval_s,
        },
        notes=notes,
        sources=sources,
    )


def _serving_needs(demand: Demand, storage: Storage, cat: StorageCatalog, weights_load_s: float) -> _Needs:
    notes: list[str] = []
    replicas = demand.replicas or 1
    weights = demand.weights_bytes
    read = replicas * weights / weights_load_s
    rate = (demand.design_rate_rps or 0.0) * demand.duty_cycle
    if demand.design_rate_rps is None:
        notes.append("no request rate in the demand: request logs not sized")
    log_rate = rate * cat.serving.log_bytes_per_request
    logs = log_rate * cat.serving.log_retention_s
    versions = weights * storage.checkpoints_retained
    return _Needs(
        capacity={
            "weights_bytes": weights,
            "model_versions_retained": float(storage.checkpoints_retained),
            "model_versions_bytes": versions,
            "logs_bytes": logs,
        },
        # request logs are appended and rarely read: the object store's job, not a hot tier's
        file_system_bytes=weights,
        object_store_bytes=versions + logs,
        read_bytes_per_s=read,
        write_bytes_per_s=log_rate,
        bandwidth={
            "replicas": float(replicas),
            "weights_load_s": weights_load_s,
            "weights_load_bytes_per_s": read,
            "log_write_bytes_per_s": log_rate,
            "average_request_rate_rps": rate,
        },
        notes=notes,
        sources=[
            _src(f"storage.serving_defaults.{k}", v)
            for k, v in cat.serving.sources.items()
            if k != "weights_load_s"
        ],
    )


def _node_nvme(
    demand: Demand, needs: _Needs, node: NodeType, nodes: int, cat: StorageCatalog
) -> dict[str, Any]:
    nv = cat.node_nvme
    # the node's own drive count where its spec gives one, else as many reference drives as hold it
    drives = node.local_nvme_drives or max(1, ceil_units(node.local_nvme_bytes, nv.drive_bytes))
    out: dict[str, Any] = {
        "local_nvme_bytes_per_node": node.local_nvme_bytes,
        "drives_per_node": drives,
        "read_bytes_per_s_per_node": drives * nv.read_bytes_per_s_per_drive,
        "write_bytes_per_s_per_node": drives * nv.write_bytes_per_s_per_drive,
        "read_bytes_per_s_cluster": nodes * drives * nv.read_bytes_per_s_per_drive,
        "write_bytes_per_s_cluster": nodes * drives * nv.write_bytes_per_s_per_drive,
    }
    if demand.continuous:
        out["weights_fit_per_node"] = needs.capacity["weights_bytes"] <= node.local_nvme_bytes
        out["cache"] = "weights" if out["weights_fit_per_node"] else "none"
        return out
    pre = needs.capacity["preprocessed_bytes"]
    shard = pre / max(nodes, 1)
    out["dataset_shard_bytes_per_node"] = shard
    out["full_copy_fits_per_node"] = pre <= node.local_nvme_bytes
    out["shard_fits_per_node"] = shard <= node.local_nvme_bytes
    out["cache"] = (
        "full copy" if out["full_copy_fits_per_node"] else "shard" if out["shard_fits_per_node"] else "none"
    )
    ckpt = needs.capacity["checkpoint_bytes"]
    # Two-level checkpointing: each node's share written to its own drives first.
    out["checkpoint_shard_local_write_s"] = (
        ckpt / max(nodes, 1) / out["write_bytes_per_s_per_node"] if ckpt > 0 else None
    )
    return out


def _nvme_sources(node: NodeType, cat: StorageCatalog) -> list[dict[str, Any]]:
    """Where the node-local tier's figures came from: the node's own drive count where its spec
    gives one (then the reference drive's size is not this node's), else the reference drive."""
    out = [
        _src(f"storage.node_nvme.{k}", v)
        for k, v in cat.node_nvme.sources.items()
        if not (k == "drive_bytes" and node.local_nvme_drives)
    ]
    keys = ("local_nvme_bytes", "local_nvme_drives")
    return out + [_src(f"nodes.{node.id}.{k}", node.sources[k]) for k in keys if k in node.sources]


def _parallel_file_system(needs: _Needs, margin: float, cat: StorageCatalog) -> dict[str, Any]:
    pfs = cat.parallel_file_system
    cap = with_margin(needs.file_system_bytes, margin)
    read = with_margin(needs.read_bytes_per_s, margin)
    write = with_margin(needs.write_bytes_per_s, margin)
    by = {
        "capacity": ceil_units(cap, pfs.usable_bytes),
        "read": ceil_units(read, pfs.read_bytes_per_s),
        "write": ceil_units(write, pfs.write_bytes_per_s),
    }
    blocks = max(1, *by.values())
    return {
        "building_block": pfs.name,
        "blocks": blocks,
        "blocks_for_capacity": by["capacity"],
        "blocks_for_read": by["read"],
        "blocks_for_write": by["write"],
        "limited_by": max(by, key=lambda k: by[k]),
        "capacity_needed_bytes": cap,
        "read_needed_bytes_per_s": read,
        "write_needed_bytes_per_s": write,
        "usable_bytes": blocks * pfs.usable_bytes,
        "read_bytes_per_s": blocks * pfs.read_bytes_per_s,
        "write_bytes_per_s": blocks * pfs.write_bytes_per_s,
        "rack_units": blocks * pfs.rack_units,
        "capex_usd": blocks * pfs.price_usd,
        "power_w": blocks * pfs.power_w,
    }


def _node_local_tier(needs: _Needs, margin: float, nvme: dict[str, Any], nodes: int) -> dict[str, Any] | None:
    """The node's own NVMe as the hot tier, for a one-node job it fits (module docstring,
    Proportion); None when a shared tier is needed. Shaped like the parallel file system's
    entry so the checkpoint rate and the reports read one place."""
    cap = with_margin(needs.file_system_bytes, margin)
    read = with_margin(needs.read_bytes_per_s, margin)
    write = with_margin(needs.write_bytes_per_s, margin)
    usable = float(nvme["local_nvme_bytes_per_node"])
    read_bw = float(nvme["read_bytes_per_s_per_node"])
    write_bw = float(nvme["write_bytes_per_s_per_node"])
    if nodes != 1 or cap > usable or read > read_bw or write > write_bw:
        return None
    return {
        "tier": "node_local",
        "building_block": "none: the node's own NVMe (one-node job)",
        "blocks": 0,
        "reason": (
            f"a one-node job: its hot tier ({cap / TB:,.2f} TB with margin) fits the node's "
            f"{usable / TB:,.2f} TB of NVMe, which reads {read_bw / 1e9:,.1f} GB/s and writes "
            f"{write_bw / 1e9:,.1f} GB/s; the durable copy and checkpoints go to the object store"
        ),
        "capacity_needed_bytes": cap,
        "read_needed_bytes_per_s": read,
        "write_needed_bytes_per_s": write,
        "usable_bytes": usable,
        "read_bytes_per_s": read_bw,
        "write_bytes_per_s": write_bw,
        "rack_units": 0,
        "capex_usd": None,  # nothing bought: the drives are in the node's price
        "power_w": None,  # and in its power
    }


def _storage_sources(
    needs: Any,
    node: NodeType,
    cat: StorageCatalog,
    cloud: Any,
    tier: Any,
    owned_pfs: bool,
    local: bool,
    rented_halls: bool,
    default_load: bool,
) -> list[dict[str, Any]]:
    """The sources of every storage figure a plan used: its needs, the node's drives, the
    appliance where one is bought, the cloud tier and object store, the owned object store
    where the buyer's halls hold it, and the weights-load target where the catalog set it."""
    sources = list(needs.sources)
    sources += _nvme_sources(node, cat)
    if owned_pfs:
        sources += [
            _src(f"storage.parallel_file_system.{k}", v) for k, v in cat.parallel_file_system.sources.items()
        ]
    at = f"storage.clouds.{cloud.operator}"
    if not local:
        sources += [_src(f"{at}.file_system[{tier.name}].{k}", v) for k, v in tier.sources.items()]
    sources += [_src(f"{at}.object_store.{k}", v) for k, v in cloud.object_store.sources.items()]
    if not rented_halls:  # rented halls own no object store
        sources += [_src(f"storage.object_store.{k}", v) for k, v in cat.object_store.sources.items()]
    if needs.bandwidth.get("weights_load_bytes_per_s") and default_load:
        sources.append(_src("storage.serving_defaults.weights_load_s", cat.serving.sources["weights_load_s"]))
    return sources


def size_storage(
    demand: Demand,
    storage: Storage,
    node: NodeType,
    nodes: int,
    mtbf_s: float | None,
    safety_margin: float,
    *,
    weights_load_s: float | None = None,
    catalog: StorageCatalog | None = None,
    async_blocking_s: float | None = None,
) -> StoragePlan:
    """Size dataset, checkpoint and model storage for `demand` on `nodes` nodes of `node`.

    `mtbf_s` is the cluster's mean time between interruptions (None: from the reliability
    catalog when a checkpoint must be written). `weights_load_s` overrides the catalog's
    target time for every replica to load its weights. `async_blocking_s`: the blocking part of
    an asynchronous save (perf.checkpoint); None for a synchronous one.
    """
    if nodes < 1:
        raise BadInput(f"Cannot size storage for {nodes} nodes.", "A plan needs at least one node.")
    if mtbf_s is not None and mtbf_s <= 0:
        raise BadInput(f"Cluster MTBF must be positive, got {mtbf_s!r} s.")
    cat = catalog or storage_catalog()
    load_s = weights_load_s if weights_load_s is not None else cat.serving.weights_load_s
    if demand.continuous:
        needs = _serving_needs(demand, storage, cat, load_s)
    else:
        needs = _training_needs(demand, storage, mtbf_s, load_s, async_blocking_s)

    nvme = _node_nvme(demand, needs, node, nodes, cat)
    local = _node_local_tier(needs, safety_margin, nvme, nodes)
    operator = rents_file_system(node, cat)
    cloud = cat.cloud(operator)
    cfs, tier = cloud_file_system(needs, safety_margin, cloud)
    rented = rented_tier(cfs, needs, safety_margin, operator) if operator and local is None else None
    pfs = local or rented or _parallel_file_system(needs, safety_margin, cat)
    if local is not None:
        cfs = {
            "service": "none: the instance's own NVMe (node-local) holds the hot tier",
            "tier": None,
            "provisioned_bytes": 0.0,
            "throughput_bytes_per_s": local["read_bytes_per_s"],
            "usd_per_month": None,  # nothing rented
            "reason": local["reason"],
        }
    obj = cat.object_store
    obj_plan = object_store_plan(needs.object_store_bytes, safety_margin, obj, cloud)

    owned_pfs, default_load = local is None and rented is None, weights_load_s is None
    sources = _storage_sources(
        needs, node, cat, cloud, tier, owned_pfs, local is not None, bool(operator), default_load
    )
    return StoragePlan(
        workload=demand.workload,
        safety_margin_fraction=safety_margin,
        capacity=needs.capacity,
        file_system_bytes=needs.file_system_bytes,
        object_store_bytes=needs.object_store_bytes,
        read_bytes_per_s_needed=needs.read_bytes_per_s,
        write_bytes_per_s_needed=needs.write_bytes_per_s,
        bandwidth=needs.bandwidth,
        node_nvme=nvme,
        parallel_file_system=pfs,
        object_store=obj_plan,
        cloud_file_system=cfs,
        # rented halls: the object store is rented too (cloud_usd_per_month); nothing owned
        capex_usd=0.0 if operator else (pfs["capex_usd"] or 0.0) + obj_plan["onprem_capex_usd"],
        power_w=0.0 if operator else (pfs["power_w"] or 0.0) + obj_plan["onprem_power_w"],
        cloud_usd_per_month=(cfs["usd_per_month"] or 0.0) + obj_plan["cloud_usd_per_month"],
        notes=tuple(needs.notes),
        sources=tuple(sources),
    )
