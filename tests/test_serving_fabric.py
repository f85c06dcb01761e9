"""The fabric stage for serving replicas: none when every replica fits a node or one
scale-up domain (an NVL72 rack of 4-GPU trays); a scale-out fabric, with a serving reason,
when a replica spans nodes beyond its scale-up domain (its pipeline, tensor or expert
traffic crosses the RDMA NICs)."""

from __future__ import annotations

from typing import Any

from rightsize.catalog import get_node
from rightsize.search.demand import Demand
from rightsize.sizing.fabric import size_fabric
from rightsize.spec.infrastructure import Fabric


def _serving(accelerator: str, node: str, gpus: int, per_replica: int) -> Demand:
    fields: dict[str, Any] = dict(
        workload="serving",
        name="serve",
        accelerator=accelerator,
        node=node,
        gpus=gpus,
        compute_utilisation=0.7,
        duty_cycle=0.5,
        run_s=None,
        runs_per_month=None,
        work_unit="output_token",
        work_units_per_s=1e4,
        work_units_total=None,
        dataset_bytes=0.0,
        data_read_bytes_per_s=0.0,
        bytes_per_work_unit=4.0,
        params=4e11,
        weights_bytes=8e11,
        checkpoint_bytes=0.0,
        replicas=gpus // per_replica,
        gpus_per_replica=per_replica,
    )
    return Demand(**fields)


def test_replicas_spanning_h100_nodes_get_a_scale_out_fabric() -> None:
    node = get_node("hgx-h100")  # 8 GPUs per node, NVLink domain of 8
    plan = size_fabric(_serving("h100-sxm", "hgx-h100", 32, 16), node, 4, Fabric())
    assert plan.needed and plan.switches >= 1
    assert "each serving replica spans 2 of them" in plan.reason


def test_replicas_inside_one_node_need_no_fabric() -> None:
    node = get_node("hgx-h100")
    plan = size_fabric(_serving("h100-sxm", "hgx-h100", 32, 8), node, 4, Fabric())
    assert not plan.needed and "fits in one node" in plan.reason


def test_replicas_spanning_trays_of_one_nvl72_domain_need_no_fabric() -> None:
    node = get_node("gb200-nvl72-tray")  # 4 GPUs per tray, one NVLink domain of 72
    plan = size_fabric(_serving("gb200", "gb200-nvl72-tray", 32, 16), node, 8, Fabric())
    assert not plan.needed
    assert "stays inside one" in plan.reason and "scale-up domain of 72 GPUs" in plan.reason
