"""A TPU plan's bill counts the host VMs its slice shapes run on (issue 28): a multi-host slice
rides 4-chip VMs (ct5lp-hightpu-4t, ct6e-standard-4t; 4 chips per v5p and TPU7x host), a
single-host slice one VM of its own chips (up to the 8-chip ct6e-standard-8t). The sizing and the
Kubernetes export read the one rule (`TpuSlices.host_chips`), so the bill's hosts are the pods
the export schedules; and a serving plan never offers a replica smaller than any slice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.api import plan
from rightsize.catalog import get_node
from rightsize.catalog.tpu_slices import slice_host, tpu_slices
from rightsize.export import render_files
from rightsize.report.render import result_dict

EX = Path(__file__).resolve().parent.parent / "examples" / "llama3-70b-chat-serving.yaml"


@pytest.mark.parametrize(
    ("acc", "chips", "per_host"),
    [
        ("tpu-v6e", 1, 1),
        ("tpu-v6e", 4, 4),
        ("tpu-v6e", 8, 8),  # ct6e-standard-8t carries the 2x4 single-host slice
        ("tpu-v6e", 16, 4),  # a 4x4 slice over four ct6e-standard-4t VMs
        ("tpu-v6e", 512, 4),  # two 256-chip slices (Multislice)
        ("tpu-v5e", 256, 4),
        ("tpu-v5p", 4096, 4),
        ("tpu-v7", 8, 4),
    ],
)
def test_chips_per_host_follow_the_slice_shape(acc: str, chips: int, per_host: int) -> None:
    slices = tpu_slices(acc)
    assert slices is not None
    assert slices.host_chips(chips) == per_host


def test_a_multi_host_slice_host_is_the_four_chip_vm_of_the_machine_type_table() -> None:
    eight = get_node("tpu-v6e-host")
    four = slice_host(eight, 16)
    assert (eight.gpus_per_node, four.gpus_per_node) == (8, 4)
    # ct6e-standard-4t: 180 vCPUs, 720 GiB (the API's machine type), half the host's power
    assert (four.cpu_cores, four.host_memory_bytes) == (90, 720 * 2**30)
    assert four.max_power_w * 2 == eight.max_power_w
    assert "ct6e-standard-4t" in four.name and "16-chip slice" in four.sources["gpus_per_node"].source
    single = slice_host(eight, 8)  # a single-host 2x4 slice: one ct6e-standard-8t
    assert (single.gpus_per_node, single.cpu_cores, single.host_memory_bytes) == (8, 180, 1440 * 2**30)
    gpu = get_node("dgx-a100-80gb")
    assert slice_host(gpu, 16) is gpu  # not a TPU: untouched


def _serving_plan(tmp_path: Path) -> dict[str, Any]:
    d = yaml.safe_load(EX.read_text())
    d["targets"] = {"accelerators": ["tpu-v6e"], "objective": "cost", "tp": 16}
    d["serving"]["weight_precision"] = d["serving"]["kv_precision"] = "bf16"
    d.pop("infrastructure", None)
    path = tmp_path / "v6e16.yaml"
    path.write_text(yaml.safe_dump(d))
    return result_dict(plan(path))


def test_a_v6e_16_chip_serving_plan_bills_the_hosts_the_export_schedules(tmp_path: Path) -> None:
    p = _serving_plan(tmp_path)
    replicas, nodes = p["best"]["replicas"], p["sizing"]["nodes"]
    assert p["best"]["tp"] == 16
    # before: ceil(16 x replicas / 8) eight-chip hosts, half the VMs GKE runs
    assert (nodes["nodes"], nodes["gpus_per_node"]) == (4 * replicas, 4)
    assert nodes["scaleup_groups"] == replicas  # one 4x4 slice per replica
    assert p["sizing"]["power"]["nodes"] == 4 * replicas
    # the fabric and the bill name the VMs a 4x4 slice runs on, not 8-chip hosts
    assert "one 16-chip slice over 4 ct6e-standard-4t VMs" in p["sizing"]["fabric"]["reason"]
    assert p["sizing"]["cost"]["billed_instances"].startswith(f"{4 * replicas} x gcp ct6e-standard-4t")
    lws = next(
        o
        for o in yaml.safe_load_all(render_files(p, "kubernetes")["serving.yaml"])
        if o["kind"] == "LeaderWorkerSet"
    )
    assert lws["spec"]["replicas"] * lws["spec"]["leaderWorkerTemplate"]["size"] == nodes["nodes"]


def test_tpu7x_serving_plans_no_replica_below_its_smallest_slice_and_says_why(tmp_path: Path) -> None:
    d = yaml.safe_load(EX.read_text())
    d["targets"] = {"accelerators": ["tpu-v7"], "objective": "gpus"}
    d.pop("infrastructure", None)
    path = tmp_path / "v7.yaml"
    path.write_text(yaml.safe_dump(d))
    p = result_dict(plan(path))
    assert p["best"]["tp"] >= 4  # GKE has no 1- or 2-chip TPU7x host
    note = next(a for a in p["assumptions"] if "Smaller replicas not planned" in a)
    assert "1 or 2 chips" in note and "tpu-v7 has no slice of that size" in note


def test_a_v6e_training_plan_bills_four_chip_hosts_as_the_maxtext_export_runs(tmp_path: Path) -> None:
    d = yaml.safe_load((EX.parent / "llama3-70b-pretrain.yaml").read_text())
    d["targets"] = {**d["targets"], "accelerators": ["tpu-v6e"], "deadline": "400d"}
    d.pop("infrastructure", None)
    path = tmp_path / "v6e-train.yaml"
    path.write_text(yaml.safe_dump(d))
    p = result_dict(plan(path))
    nodes = p["sizing"]["nodes"]
    assert nodes["gpus"] > 8 and (nodes["nodes"], nodes["gpus_per_node"]) == (nodes["gpus"] // 4, 4)
    job = next(
        o for o in yaml.safe_load_all(render_files(p, "kubernetes")["training.yaml"]) if o["kind"] == "JobSet"
    )
    pods = sum(r["replicas"] * r["template"]["spec"]["parallelism"] for r in job["spec"]["replicatedJobs"])
    assert pods == nodes["nodes"]
