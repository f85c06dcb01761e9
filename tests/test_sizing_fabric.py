"""Scale-out fabric sizing: hand-derived fat-tree counts, NIC sensitivity, costs and the fabric catalog."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rightsize.catalog import get_node
from rightsize.catalog.fabric import fabric_catalog, parse_fabric, switch_for
from rightsize.catalog.loader import CatalogDataError, iter_numbers, read_data_file
from rightsize.errors import BadInput
from rightsize.search.demand import Demand
from rightsize.sizing.fabric import UNLIMITED_NODES, count_topology, leaf_ports, size_fabric
from rightsize.spec.infrastructure import Fabric

H100 = get_node("hgx-h100")  # 8 GPUs, 8x 400 Gb/s ConnectX-7 per node


def demand(gpus: int, **overrides: Any) -> Demand:
    fields: dict[str, Any] = dict(
        workload="pretraining",
        name="test",
        accelerator="h100-sxm",
        node="hgx-h100",
        gpus=gpus,
        compute_utilisation=0.4,
        duty_cycle=1.0,
        run_s=86400.0,
        runs_per_month=None,
        work_unit="token",
        work_units_per_s=1e6,
        work_units_total=None,
        dataset_bytes=0.0,
        data_read_bytes_per_s=0.0,
        bytes_per_work_unit=4.0,
        params=7e10,
        weights_bytes=1.4e11,
        checkpoint_bytes=1e12,
        step_s=10.0,
        step_s_by_nic_gbps={100.0: 13.0, 200.0: 11.2, 400.0: 10.0, 800.0: 9.8, 1600.0: 9.75},
    )
    fields.update(overrides)
    return Demand(**fields)


# (GPUs, tiers, leaves, spines, cores, max_nodes), QM9700 at 400G: k = 64, non-blocking d = u = 32, 8 rails.
FAT_TREES = [
    # 128 nodes: leaves = 8 rails x ceil(128/32) = 32; uplinks 32 x 32 = 1024 -> 1024/64 = 16 spines.
    # 2-tier limit: floor(64/8) = 8 leaves per rail x 32 nodes = 256 nodes (k^2/2 = 2048 NICs).
    (1024, 2, 32, 16, 0, 256),
    # 256 nodes fill the 2-tier fabric exactly: 64 leaves, 2048 uplinks / 64 = 32 spines.
    (2048, 2, 64, 32, 0, 256),
    # 2048 nodes: pods of k/2 = 32 leaves (4 per rail = 128 nodes) -> 16 pods, 512 leaves;
    # each pod's 1024 uplinks land on 1024 / 32 = 32 pod spines -> 512; the spines send
    # 16384 links up -> 16384 / 64 = 256 cores. 3-tier limit: 64 pods x 128 = 8192 nodes (k^3/4 NICs).
    (16384, 3, 512, 512, 256, 8192),
]


@pytest.mark.parametrize(("gpus", "tiers", "leaves", "spines", "cores", "max_nodes"), FAT_TREES)
def test_rail_optimised_fat_tree_counts(
    gpus: int, tiers: int, leaves: int, spines: int, cores: int, max_nodes: int
) -> None:
    plan = size_fabric(demand(gpus), H100, gpus // 8, Fabric())
    assert plan.switch == "quantum2-qm9700"
    assert plan.switch_radix == 64
    assert (plan.tiers, plan.leaves, plan.spines, plan.cores) == (tiers, leaves, spines, cores)
    assert plan.max_nodes == max_nodes
    assert plan.switches == leaves + spines + cores
    assert plan.nics == gpus  # one 400G NIC per GPU
    assert plan.node_leaf_links == gpus


def test_two_tier_capacity_is_k_squared_over_two() -> None:
    # A non-blocking 2-tier fat tree of radix k serves k^2/2 endpoints; one more node needs a core tier.
    k, rails = 64, 8
    limit = k * k // 2 // rails
    assert count_topology(limit, rails, k, 1.0, rail_optimized=True).tiers == 2
    assert count_topology(limit + 1, rails, k, 1.0, rail_optimized=True).tiers == 3


def test_one_switch_when_every_nic_fits() -> None:
    # 8 nodes x 8 NICs = 64 ports = one QM9700; a ninth node needs leaves and spines.
    plan = size_fabric(demand(64), H100, 8, Fabric())
    assert (plan.tiers, plan.switches, plan.max_nodes, plan.topology) == (1, 1, 8, "single_switch")
    assert size_fabric(demand(72), H100, 9, Fabric()).tiers == 2


def test_oversubscription_splits_the_leaf() -> None:
    assert leaf_ports(64, 1.0) == (32, 32)
    assert leaf_ports(64, 3.0) == (48, 16)
    # 3:1, 128 nodes: 8 rails x ceil(128/48) = 24 leaves. Per rail the leaves hold 48, 48, 32 nodes
    # and send ceil(48/3) + ceil(48/3) + ceil(32/3) = 16 + 16 + 11 = 43 links up: 8 x 43 = 344 -> 6 spines.
    plan = size_fabric(demand(1024), H100, 128, Fabric(oversubscription=3.0))
    assert (plan.leaves, plan.leaf_spine_links, plan.spines) == (24, 344, 6)
    assert plan.max_nodes == 8 * 48
    assert any("Oversubscription" in w for w in plan.warnings)


def test_links_optics_cost_and_power_add_up() -> None:
    plan = size_fabric(demand(1024), H100, 128, Fabric())
    cat = fabric_catalog()
    sw, optic = cat.switches["quantum2-qm9700"], cat.transceivers["osfp-400g-sr4"]
    # rail leaves sit in network racks: 1024 node links + 1024 leaf-spine links, all optical
    assert plan.fiber_cables == 2048 and plan.dac_cables == 0
    assert plan.transceivers == 2 * 2048
    assert plan.switch_capex_usd == pytest.approx(48 * sw.price_usd)
    assert plan.optics_capex_usd == pytest.approx(4096 * optic.price_usd)
    # the node price already includes its ConnectX-7s: counted, not added
    assert plan.nic_capex_in_node_price
    assert plan.capex_usd == pytest.approx(
        plan.switch_capex_usd + plan.optics_capex_usd + plan.cable_capex_usd
    )
    assert plan.power_w == pytest.approx(48 * sw.power_w + 4096 * optic.power_w)
    items = {s["item"] for s in plan.as_dict()["sources"]}
    assert {"quantum2-qm9700.price_usd", "osfp-400g-sr4.power_w", "hgx-h100.nic_bits_per_s"} <= items


def test_leaf_spine_top_of_rack_uses_copper_for_node_links() -> None:
    # 4 nodes per rack and 32 down ports: one leaf per rack takes its 4 nodes' 32 NICs over DAC.
    plan = size_fabric(demand(1024), H100, 128, Fabric(topology="leaf_spine"), nodes_per_rack=4)
    assert (plan.leaves, plan.spines) == (32, 16)
    assert plan.dac_cables == 1024
    assert plan.transceivers == 2 * 1024  # only leaf-spine links are optical


def test_roce_and_800g_pick_their_switches() -> None:
    roce = size_fabric(demand(1024), H100, 128, Fabric(kind="roce"))
    # SN5600 at 400G: 128 ports by breakout, d = 64: 8 x ceil(128/64) = 16 leaves, 16 x 64 / 128 = 8 spines
    assert (roce.switch, roce.switch_radix, roce.leaves, roce.spines) == ("spectrum4-sn5600", 128, 16, 8)
    xdr = size_fabric(demand(1024), H100, 128, Fabric(nic_gbps=800))
    assert xdr.switch == "quantum-x800-q3400" and xdr.nic == "connectx-8"
    assert not xdr.nic_capex_in_node_price
    assert xdr.capex_usd == pytest.approx(
        xdr.switch_capex_usd + xdr.optics_capex_usd + xdr.cable_capex_usd + xdr.nic_capex_usd
    )
    assert switch_for("infiniband", 200.0).id == "quantum2-qm9700"


def test_nic_sensitivity_and_recommendation() -> None:
    plan = size_fabric(demand(1024), H100, 128, Fabric())
    rows = {r.nic_gbps: r for r in plan.sensitivity}
    assert rows[200.0].slowdown_vs_node_fraction == pytest.approx(0.12)  # 11.2 / 10 - 1
    assert rows[400.0].slowdown_vs_fastest_fraction == pytest.approx(10.0 / 9.75 - 1)  # 2.6% < 3%
    assert plan.recommended_nic_gbps == 400.0
    slow = size_fabric(demand(1024), H100, 128, Fabric(nic_gbps=200))
    assert any("below the recommended 400" in w for w in slow.warnings)


def test_no_fabric_for_one_node_or_single_node_replicas() -> None:
    one = size_fabric(demand(8), H100, 1, Fabric())
    assert not one.needed and one.capex_usd == 0 and one.power_w == 0 and one.max_nodes == 1
    assert "No scale-out fabric needed" in one.reason
    serving = demand(
        64, workload="serving", run_s=None, gpus_per_replica=8, replicas=8, step_s_by_nic_gbps={}
    )
    plan = size_fabric(serving, H100, 8, Fabric())
    assert not plan.needed and plan.max_nodes == UNLIMITED_NODES and "replica" in plan.reason


def test_more_nodes_never_need_fewer_switches() -> None:
    counts = [size_fabric(demand(8 * n), H100, n, Fabric()).switches for n in range(1, 600, 7)]
    assert counts == sorted(counts)


def test_unknown_speed_is_bad_input() -> None:
    with pytest.raises(BadInput, match="nic_gbps"):
        size_fabric(demand(1024), H100, 128, Fabric(nic_gbps=1600))


def test_every_fabric_figure_is_sourced() -> None:
    raw = read_data_file("fabric.yaml")
    assert all(holder is not None for _, _, holder in iter_numbers(raw))
    cat = fabric_catalog()
    parts: list[Any] = [*cat.switches.values(), *cat.nics.values(), *cat.transceivers.values()]
    parts += list(cat.cables.values())
    for part in parts:
        assert all(s.source and s.as_of for s in part.sources.values())


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["switches"][0]["power_w"].pop("source"), "power_w"),  # missing source
        (lambda d: d["switches"][0].update(price_usd=20000), "price_usd"),  # bare number
        (lambda d: d["nics"][0]["gbps"].update(value=400e9), "gbps"),  # bits/s written for Gb/s
        (lambda d: d["switches"][0].update(kinds=["ethernet"]), "kinds"),  # unknown fabric kind
        (lambda d: d["cables"].pop(), "fiber"),  # no fibre left
    ],
)
def test_bad_fabric_data_fails_loudly(mutate: Any, expected: str) -> None:
    raw = copy.deepcopy(read_data_file("fabric.yaml"))
    mutate(raw)
    with pytest.raises(CatalogDataError, match=expected):
        parse_fabric(raw, "fabric.yaml")
