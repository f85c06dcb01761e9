"""A fleet of TPU work books whole slices of shapes Google offers, on the host VMs those slices
run on (issue 28): the fleet reads the single plan's slice rule (`catalog.tpu_slices`), so a
1,024-chip v6e job holds 4 slices of 256 on 256 four-chip VMs (not 128 eight-chip hosts), a
serving replica its own slice, and a chip count with no slice shape is booked up to whole
slices with a note that says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rightsize.api import plan
from rightsize.catalog.tpu_slices import book_slices, tpu_slices, tpu_vm
from rightsize.fleet.demand import HOURS, WorkloadDemand, booked_gang
from rightsize.fleet.gangs import _unit
from rightsize.fleet.prices import PoolPrices
from rightsize.report.render import render, result_dict

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _tpu(src: Path, dst: Path, **extra: Any) -> None:
    d = yaml.safe_load(src.read_text())
    d["targets"] = {**d["targets"], "accelerators": ["tpu-v6e"]}
    d.update(extra)
    dst.write_text(yaml.safe_dump(d))


@pytest.fixture(scope="module")
def tpu_fleet(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("tpufleet")
    _tpu(EXAMPLES / "fleet-2027" / "pretrain-8b.yaml", tmp / "pre.yaml")
    chat = yaml.safe_load((EXAMPLES / "fleet-2027" / "chat-70b.yaml").read_text())
    chat["serving"].update(weight_precision="bf16", kv_precision="bf16")
    (tmp / "chat0.yaml").write_text(yaml.safe_dump(chat))
    _tpu(tmp / "chat0.yaml", tmp / "chat.yaml")
    fleet = {
        "kind": "fleet",
        "name": "tpu-fleet",
        "start": "2027-01",
        "horizon_months": 6,
        "workloads": [
            {"spec": "pre.yaml", "start": "2027-02", "end": "2027-04", "priority": 50},
            {"spec": "chat.yaml", "priority": 100},
        ],
        "policy": {"capacity": ["reserved_1y", "on_demand"], "pools": "per_accelerator"},
    }
    (tmp / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    return plan(tmp / "fleet.yaml")


def test_a_tpu_fleet_books_whole_slices_on_their_host_vms(tpu_fleet: Any) -> None:
    p = result_dict(tpu_fleet)
    slices = tpu_slices("tpu-v6e")
    assert slices is not None
    hosts = p["holdings"]["nodes_per_unit"]
    pods = {s["workload"]: s for s in p["quotas"]["pod_sets"]}
    for w in p["workloads"]:
        booking = book_slices("tpu-v6e", w["gang_gpus"])
        assert booking is not None and booking.chips == w["gang_gpus"] and booking.note is None
        assert slices.job_slices(w["gang_gpus"]) is not None  # a shape that exists
        assert hosts[w["name"]] == booking.hosts == pods[w["name"]]["pods_per_unit"]
        vm = tpu_vm("tpu-v6e", booking.chips_per_host)
        assert vm is not None
        req = pods[w["name"]]["pod_requests"]
        # each pod is one host VM: its chips, and that machine type's cores (vCPUs / 2)
        assert req["google.com/tpu"] == booking.chips_per_host
        assert req["cpu"] == pytest.approx(vm.vcpus / 2)
    job = next(w for w in p["workloads"] if w["kind"] == "pretraining")
    if job["gang_gpus"] > 8:  # a multi-host slice: four-chip VMs, twice the eight-chip hosts
        assert hosts[job["name"]] == job["gang_gpus"] // 4


def test_a_tpu_fleet_report_speaks_of_chips(tpu_fleet: Any) -> None:
    text = render(tpu_fleet, "markdown")
    assert "GPU" not in text and "chip-hours" in text


@pytest.mark.parametrize(
    ("acc", "chips", "booked", "hosts", "noted"),
    [
        ("tpu-v6e", 1024, 1024, 256, False),  # 4 x 256 over DCN, 4-chip VMs
        ("tpu-v6e", 384, 512, 128, True),  # 1.5 slices of 256: booked 2, 128 chips idle
        ("tpu-v6e", 96, 128, 32, True),  # the search may pick 96 chips: no 96-chip slice
        ("tpu-v6e", 8, 8, 1, False),  # one ct6e-standard-8t
        ("tpu-v5p", 6, 8, 2, True),  # no shape divides 6: one 2x2x2 slice, 2 idle
        ("tpu-v7", 2, 4, 1, True),  # no 1- or 2-chip TPU7x slice
    ],
)
def test_a_tpu_gang_is_whole_slices_and_a_count_without_a_shape_is_told(
    acc: str, chips: int, booked: int, hosts: int, noted: bool
) -> None:
    gang, note = booked_gang(acc, chips)
    assert gang == booked and (note is not None) == noted
    if note:
        assert (
            f"{chips} {acc} chips is neither a slice shape" in note and f"{booked - chips} chips idle" in note
        )
    w = WorkloadDemand(
        "job",
        acc,
        "pretraining",
        gang,
        50,
        True,
        True,
        None,
        np.zeros((1, HOURS)),
        np.ones((1, HOURS), bool),
        0,
        True,
    )
    pr = PoolPrices(acc, f"{acc}-host", 8, {"on_demand": 1.0}, {}, 0.0, 0.0, {})
    assert _unit(w, pr) == (booked, hosts)  # not ceil(chips / 8) eight-chip nodes
    assert booked_gang("h100-sxm", 12) == (12, None)  # off TPU: as it is


def test_the_single_plan_offers_only_chip_counts_that_have_slices(tmp_path: Path) -> None:
    # 192 sequences a step on at most 200 v6e chips: data parallel 192 would split the batch, but
    # GKE has no 192-chip v6e slice (nor 1.5 x 128); the plan takes 128, a shape, and bills it
    d = yaml.safe_load((EXAMPLES / "fleet-2027" / "pretrain-8b.yaml").read_text())
    d["training"]["global_batch_tokens"] = 192 * 8192
    d["targets"] = {"accelerators": ["tpu-v6e"], "objective": "time", "max_gpus": 200}
    path = tmp_path / "p8.yaml"
    path.write_text(yaml.safe_dump(d))
    p = result_dict(plan(path))
    slices = tpu_slices("tpu-v6e")
    assert slices is not None
    for chips in [p["best"]["gpus"], *(a["gpus"] for a in p["pareto"])]:
        assert slices.job_slices(chips) is not None, chips
    nodes = p["sizing"]["nodes"]
    assert nodes["nodes"] == slices.hosts(p["best"]["gpus"]) and not nodes["warnings"]
