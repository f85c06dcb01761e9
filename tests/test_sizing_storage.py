"""Storage sizing: capacity, the closed-form checkpoint bandwidth, building blocks, tiers, catalog."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable
from typing import Any

import pytest

from rightsize.catalog import get_node
from rightsize.catalog.loader import CatalogDataError, iter_numbers, read_data_file
from rightsize.catalog.reliability import reliability
from rightsize.catalog.storage import STORAGE_FILE, StorageCatalog, parse_storage, storage_catalog
from rightsize.constants import DAY_S, GB, TB, GiB, TiB
from rightsize.errors import BadInput
from rightsize.search.demand import Demand
from rightsize.sizing.reliability import checkpoint_bytes
from rightsize.sizing.storage import (
    _Needs,
    checkpoint_write_bytes_per_s,
    cloud_file_system,
    cluster_mtbf_s,
    size_storage,
    young_interval_s,
)
from rightsize.spec.infrastructure import Storage

H100 = get_node("hgx-h100")  # 8 GPUs, 30.72 TB local NVMe (8 x 3.84 TB)


def _training(**kw: Any) -> Demand:
    """Llama-3-70B-like pre-training: 15T tokens at 4 bytes each over 50 days on 2048 GPUs."""
    run_s = 50 * DAY_S
    base: dict[str, Any] = dict(
        workload="pretraining",
        name="test",
        accelerator="h100-sxm",
        node="hgx-h100",
        gpus=2048,
        compute_utilisation=0.4,
        duty_cycle=1.0,
        run_s=run_s,
        runs_per_month=None,
        work_unit="token",
        work_units_per_s=15e12 / run_s,
        work_units_total=15e12,
        dataset_bytes=60e12,
        data_read_bytes_per_s=4 * 15e12 / run_s,
        bytes_per_work_unit=4.0,
        params=70e9,
        weights_bytes=140e9,
        checkpoint_bytes=70e9 * 14,
    )
    base.update(kw)
    return Demand(**base)


def _serving(**kw: Any) -> Demand:
    base: dict[str, Any] = dict(
        workload="serving",
        name="test",
        accelerator="h100-sxm",
        node="hgx-h100",
        gpus=32,
        compute_utilisation=0.3,
        duty_cycle=0.5,
        run_s=None,
        runs_per_month=None,
        work_unit="output_token",
        work_units_per_s=50_000.0,
        work_units_total=None,
        dataset_bytes=0.0,
        data_read_bytes_per_s=0.0,
        bytes_per_work_unit=0.0,
        params=70e9,
        weights_bytes=140e9,
        checkpoint_bytes=0.0,
        replicas=8,
        gpus_per_replica=4,
        design_rate_rps=100.0,
    )
    base.update(kw)
    return Demand(**base)


def _catalog(**pfs: Any) -> StorageCatalog:
    """The shipped catalog with a round-numbered building block, for hand-derivable counts."""
    cat = storage_catalog()
    figures: dict[str, Any] = {
        "usable_bytes": 100 * TB,
        "read_bytes_per_s": 10 * GB,
        "write_bytes_per_s": 5 * GB,
    }
    block = dataclasses.replace(cat.parallel_file_system, **{**figures, **pfs})
    return dataclasses.replace(cat, parallel_file_system=block)


# --- checkpoints ------------------------------------------------------------------------------


def test_bloom_176b_checkpoint_with_optimizer_state_is_about_2_3_tb() -> None:
    # BigScience published BLOOM-176B's checkpoint with optimizer states as 2.3 TB:
    # 176e9 params x ~13 bytes. Our 14 B/param (bf16 weights + fp32 master + Adam m, v)
    # is within 10%.
    ckpt = checkpoint_bytes(176e9, "adamw")
    assert ckpt == pytest.approx(2.3 * TB, rel=0.10)
    assert 13 <= 2.3 * TB / 176e9 <= 14
    plan = size_storage(_training(checkpoint_bytes=ckpt), Storage(), H100, 48, 3600.0 * 24, 0.0)
    assert plan.capacity["checkpoints_bytes"] == pytest.approx(5 * ckpt)


def _iterative_write_bw(ckpt: float, mtbf_s: float, f: float) -> float:
    """Bisect on W until the Young interval makes a blocking write exactly a fraction f of it."""
    lo, hi = 1.0, 1e15
    for _ in range(200):
        w = math.sqrt(lo * hi)
        delta = ckpt / w
        frac = delta / young_interval_s(delta, mtbf_s)
        lo, hi = (w, hi) if frac > f else (lo, w)
    return math.sqrt(lo * hi)


@pytest.mark.parametrize(
    ("ckpt", "mtbf_s", "f"),
    [
        (980e9, 89_229.0, 0.05),  # Llama 3 70B on 2048 H100
        (2.3e12, 3_600.0 * 24, 0.02),  # BLOOM-176B, one failure a day
        (16e12, 3_600.0, 0.10),  # 1T params on a big cluster
    ],
)
def test_closed_form_write_bandwidth_equals_iterative_young(ckpt: float, mtbf_s: float, f: float) -> None:
    closed = checkpoint_write_bytes_per_s(ckpt, mtbf_s, f)
    assert closed == pytest.approx(_iterative_write_bw(ckpt, mtbf_s, f), rel=1e-6)
    delta = ckpt / closed
    tau = young_interval_s(delta, mtbf_s)
    assert delta / tau == pytest.approx(f, rel=1e-12)
    assert tau == pytest.approx(2 * f * mtbf_s, rel=1e-12)


def test_llama3_70b_write_need_by_hand() -> None:
    # M = 3600 / (2048 x 1.97e-5) = 89,229 s; W = 980e9 / (2 x 0.05^2 x M) = 2.197 GB/s.
    mtbf = 3600 / (2048 * 1.97e-5)
    plan = size_storage(_training(), Storage(), H100, 256, mtbf, 0.2)
    assert plan.write_bytes_per_s_needed == pytest.approx(980e9 / (2 * 0.05**2 * mtbf))
    assert plan.write_bytes_per_s_needed == pytest.approx(2.197e9, rel=1e-3)
    assert plan.bandwidth["checkpoint_interval_target_s"] == pytest.approx(2 * 0.05 * mtbf)


def test_missing_mtbf_comes_from_the_reliability_catalog() -> None:
    plan = size_storage(_training(), Storage(), H100, 256, None, 0.2)
    mtbf, _ = cluster_mtbf_s(2048)
    assert mtbf == pytest.approx(3600 / (2048 * reliability().failure_rate_per_gpu_hour))
    assert plan.bandwidth["mtbf_s"] == pytest.approx(mtbf)
    assert any("reliability" in n for n in plan.notes)
    assert any(s["figure"] == "reliability.failure_rate_per_gpu_hour" for s in plan.as_dict()["sources"])


def test_smaller_block_fraction_needs_more_bandwidth() -> None:
    loose = size_storage(_training(), Storage(checkpoint_block_fraction=0.1), H100, 256, 9e4, 0.0)
    tight = size_storage(_training(), Storage(checkpoint_block_fraction=0.01), H100, 256, 9e4, 0.0)
    assert tight.write_bytes_per_s_needed == pytest.approx(100 * loose.write_bytes_per_s_needed)


# --- capacity -----------------------------------------------------------------------------------


def test_capacity_breakdown_and_margin_by_hand() -> None:
    plan = size_storage(_training(), Storage(), H100, 256, 9e4, 0.2)
    d = plan.as_dict()["capacity"]
    # raw 60 TB, preprocessed 1.0x = 60 TB, scratch 0.5x = 30 TB, 5 checkpoints x 0.98 TB = 4.9 TB
    assert d["raw_dataset_bytes"] == 60 * TB
    assert d["preprocessed_bytes"] == 60 * TB
    assert d["scratch_bytes"] == 30 * TB
    assert d["checkpoints_bytes"] == pytest.approx(4.9 * TB)
    assert d["file_system_bytes"] == pytest.approx(94.9 * TB)  # preprocessed + scratch + checkpoints
    assert d["object_store_bytes"] == pytest.approx(64.9 * TB)  # raw + checkpoints
    assert d["total_bytes"] == pytest.approx(d["file_system_bytes"] + d["object_store_bytes"])
    assert d["total_with_margin_bytes"] == pytest.approx(1.2 * d["total_bytes"])
    assert d["file_system_with_margin_bytes"] == pytest.approx(1.2 * 94.9 * TB)


def test_spec_dataset_size_overrides_the_demand() -> None:
    spec = Storage(dataset_bytes=10 * TB, preprocessed_multiple=0.5, scratch_multiple=0.0)
    plan = size_storage(_training(), spec, H100, 256, 9e4, 0.0)
    assert plan.capacity["raw_dataset_bytes"] == 10 * TB
    assert plan.capacity["preprocessed_bytes"] == 5 * TB
    assert plan.capacity["scratch_bytes"] == 0.0
    assert not any("derived" in n for n in plan.notes)


# --- parallel file system building blocks --------------------------------------------------------

BLOCK_CASES = [
    # (case, demand changes, storage spec, margin, blocks, limited_by)
    # 94.9 TB x 1.2 = 113.9 TB over 100 TB blocks -> 2; read 13.9 MB/s, write ~2.2 GB/s -> 1 each
    ("capacity", {}, Storage(), 0.2, 2, "capacity"),
    # 25 GB/s sustained read over 10 GB/s blocks -> 3 (capacity 94.9 TB -> 1)
    ("read", {"data_read_bytes_per_s": 25 * GB}, Storage(), 0.0, 3, "read"),
    # f = 0.005: W = 980e9 / (2 x 0.005^2 x 9e4) = 217.8 GB/s over 5 GB/s -> 44
    ("write", {}, Storage(checkpoint_block_fraction=0.005), 0.0, 44, "write"),
]


@pytest.mark.parametrize(
    ("case", "change", "spec", "margin", "blocks", "limited_by"), BLOCK_CASES, ids=[c[0] for c in BLOCK_CASES]
)
def test_building_blocks_meet_capacity_and_both_bandwidths(
    case: str, change: dict[str, Any], spec: Storage, margin: float, blocks: int, limited_by: str
) -> None:
    plan = size_storage(_training(**change), spec, H100, 256, 9e4, margin, catalog=_catalog())
    pfs = plan.parallel_file_system
    assert pfs["blocks"] == blocks, case
    assert pfs["limited_by"] == limited_by, case
    assert pfs["blocks"] == max(pfs["blocks_for_capacity"], pfs["blocks_for_read"], pfs["blocks_for_write"])
    assert pfs["usable_bytes"] >= pfs["capacity_needed_bytes"]
    assert pfs["read_bytes_per_s"] >= pfs["read_needed_bytes_per_s"]
    assert pfs["write_bytes_per_s"] >= pfs["write_needed_bytes_per_s"]
    block = _catalog().parallel_file_system
    assert pfs["capex_usd"] == blocks * block.price_usd
    assert plan.capex_usd == pytest.approx(pfs["capex_usd"] + plan.object_store["onprem_capex_usd"])
    assert plan.power_w == pytest.approx(pfs["power_w"] + plan.object_store["onprem_power_w"])


def test_exact_fit_is_one_block() -> None:
    spec = Storage(dataset_bytes=100 * TB, scratch_multiple=0.0)
    plan = size_storage(_training(checkpoint_bytes=0.0), spec, H100, 8, None, 0.0, catalog=_catalog())
    assert plan.parallel_file_system["blocks"] == 1


# --- node NVMe cache -------------------------------------------------------------------------------

CACHE_CASES = [
    # (case, raw dataset, nodes, cache): H100 nodes hold 30.72 TB each
    ("full copy", 20 * TB, 4, "full copy"),
    ("shard", 60 * TB, 4, "shard"),  # 15 TB per node
    ("none", 200 * TB, 4, "none"),  # 50 TB per node
]


@pytest.mark.parametrize(("case", "raw", "nodes", "cache"), CACHE_CASES, ids=[c[0] for c in CACHE_CASES])
def test_node_nvme_cache(case: str, raw: float, nodes: int, cache: str) -> None:
    plan = size_storage(_training(), Storage(dataset_bytes=raw), H100, nodes, 9e4, 0.0)
    nvme = plan.node_nvme
    assert nvme["cache"] == cache, case
    assert nvme["dataset_shard_bytes_per_node"] == pytest.approx(raw / nodes)
    assert nvme["drives_per_node"] == 8
    assert nvme["read_bytes_per_s_per_node"] == pytest.approx(8 * 6.4e9)


# --- serving -------------------------------------------------------------------------------------


def test_serving_loads_every_replica_within_the_stated_time() -> None:
    plan = size_storage(_serving(), Storage(), H100, 4, None, 0.2, weights_load_s=120.0)
    # 8 replicas x 140 GB / 120 s = 9.33 GB/s
    assert plan.read_bytes_per_s_needed == pytest.approx(8 * 140e9 / 120.0)
    assert "raw_dataset_bytes" not in plan.capacity
    assert plan.capacity["model_versions_bytes"] == pytest.approx(5 * 140e9)
    # logs: 100 rps x 0.5 duty x 2 KB x 30 days
    cat = storage_catalog().serving
    logs = 100 * 0.5 * cat.log_bytes_per_request * cat.log_retention_s
    assert plan.capacity["logs_bytes"] == pytest.approx(logs)
    assert plan.file_system_bytes == pytest.approx(140e9)  # logs go to the object store (issue 13)
    assert plan.node_nvme["cache"] == "weights"
    assert plan.bandwidth["weights_load_s"] == 120.0


def test_serving_default_load_time_is_sourced() -> None:
    plan = size_storage(_serving(), Storage(), H100, 4, None, 0.0)
    load_s = storage_catalog().serving.weights_load_s
    assert plan.read_bytes_per_s_needed == pytest.approx(8 * 140e9 / load_s)
    assert any(s["figure"] == "storage.serving_defaults.weights_load_s" for s in plan.as_dict()["sources"])


# --- cloud -----------------------------------------------------------------------------------


def test_cloud_file_system_picks_the_cheapest_tier_by_hand() -> None:
    tiers = storage_catalog().cloud().file_system.tiers
    # capacity-bound: 113.88 TB provisioned at the 125 MB/s/TiB tier
    plan = size_storage(_training(), Storage(), H100, 256, 9e4, 0.2)
    cfs = plan.cloud_file_system
    assert cfs["tier"] == tiers[0].name
    assert cfs["provisioned_bytes"] == pytest.approx(1.2 * 94.9 * TB)
    assert cfs["usd_per_month"] == pytest.approx(1.2 * 94.9 * TB / GiB * tiers[0].usd_per_gib_month)
    obj = plan.object_store["cloud_usd_per_month"]
    assert obj == pytest.approx(64.9 * TB / GiB * storage_catalog().cloud().object_store.usd_per_gib_month)
    assert plan.cloud_usd_per_month == pytest.approx(cfs["usd_per_month"] + obj)

    # write-bound: a tiny dataset and 500 GB/s of checkpoint writes; the 1000 MB/s/TiB tier
    # needs 1/8 of the TiB at 4.1x the price per GiB, so it wins.
    fast = size_storage(
        _training(dataset_bytes=1 * TB),
        Storage(checkpoint_block_fraction=0.005),
        H100,
        256,
        980e9 / (2 * 0.005**2 * 500e9),
        0.0,
    )
    assert fast.write_bytes_per_s_needed == pytest.approx(500e9)
    assert fast.cloud_file_system["tier"] == tiers[-1].name
    assert fast.cloud_file_system["limited_by"] == "write"
    assert fast.cloud_file_system["provisioned_bytes"] == pytest.approx(500e9 / 1000e6 * TiB)


def test_as_dict_keys_carry_units_and_sources() -> None:
    d = size_storage(_training(), Storage(), H100, 256, 9e4, 0.2).as_dict()
    for key in ("capex_usd", "power_w", "cloud_usd_per_month"):
        assert isinstance(d[key], float)
    assert all(k.endswith(("_bytes", "_retained")) for k in d["capacity"])
    assert d["sources"] and all({"figure", "value", "source", "as_of"} <= set(s) for s in d["sources"])


def test_no_nodes_is_bad_input() -> None:
    with pytest.raises(BadInput):
        size_storage(_training(), Storage(), H100, 0, 9e4, 0.2)


# --- catalog ---------------------------------------------------------------------------------------


def test_every_number_in_storage_yaml_is_sourced() -> None:
    numbers = list(iter_numbers(read_data_file(STORAGE_FILE)))
    assert len(numbers) > 10
    for path, _value, holder in numbers:
        assert holder is not None, f"{path} is a bare number; write {{value, source, as_of}}"
        assert holder["source"].strip() and holder["as_of"].strip(), path


def _doc() -> dict[str, Any]:
    return copy.deepcopy(read_data_file(STORAGE_FILE))


BROKEN: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    # (case, mutation, text the error must contain)
    (
        "GB/s written as 90",
        lambda d: d["parallel_file_system"]["read_bytes_per_s"].update(value=90),
        "check the unit",
    ),
    ("missing source", lambda d: d["node_nvme"]["drive_bytes"].pop("source"), "node_nvme.drive_bytes"),
    (
        "missing tier price",
        lambda d: d["clouds"]["AWS"]["file_system"]["tiers"][0].pop("usd_per_gib_month"),
        "clouds.AWS.file_system.tiers[0]",
    ),
    (
        "typo",
        lambda d: d["object_store"].update(onprem_usd_per_tib=d["object_store"]["onprem_usd_per_tb"]),
        "onprem_usd_per_tib",
    ),
    ("tiers out of order", lambda d: d["clouds"]["Google"]["file_system"]["tiers"].reverse(), "rising"),
    (
        "smallest instance above largest",
        lambda d: d["clouds"]["Google"]["file_system"]["tiers"][0]["min_capacity_gib"].update(value=2e7),
        "min_capacity_gib is above max_capacity_gib",
    ),
    ("unknown comparison cloud", lambda d: d.update(comparison_cloud="Azure"), "comparison_cloud"),
    ("cloud without an object store", lambda d: d["clouds"]["Google"].pop("object_store"), "clouds.Google"),
    ("missing block", lambda d: d.pop("object_store"), "object_store"),
    ("wrong schema", lambda d: d.update(schema_version=2), "schema_version"),
]


@pytest.mark.parametrize(("case", "mutate", "expected"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_storage_document_raises(
    case: str, mutate: Callable[[dict[str, Any]], None], expected: str
) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(CatalogDataError) as exc:
        parse_storage(doc)
    assert expected in str(exc.value), case
    assert exc.value.file == STORAGE_FILE


def test_a_managed_tier_is_never_provisioned_below_its_smallest_instance_nor_past_its_largest() -> None:
    """Google's 1000 MB/s/TiB tier starts at 9,000 GiB: a 1 TB hot tier still rents 9,000 GiB,
    and a hot tier past the largest instance is split over as many instances as it takes."""
    google = storage_catalog().clouds["Google"]
    fast = google.file_system.tiers[-1]
    assert fast.min_capacity_gib == 9000 and fast.max_capacity_gib == 10_008_000

    def needs(cap: float, write: float) -> _Needs:
        return _Needs(
            capacity={}, file_system_bytes=cap, object_store_bytes=0.0, read_bytes_per_s=0.0,
            write_bytes_per_s=write, bandwidth={}, notes=[], sources=[],
        )  # fmt: skip

    small, tier = cloud_file_system(needs(1 * TB, 1e9), 0.0, google)
    assert tier is fast and small["limited_by"] == "the tier's smallest instance"
    assert small["provisioned_bytes"] == pytest.approx(9000 * GiB) and small["instances"] == 1
    huge, tier = cloud_file_system(needs(1e15, 25e12), 0.0, google)  # 25 TB/s: only 1000 MB/s/TiB
    assert tier is fast and huge["limited_by"] == "write"
    assert huge["instances"] == math.ceil(25e12 / 1e9 * TiB / (10_008_000 * GiB))
