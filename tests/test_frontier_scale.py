"""Training plans at frontier scale: 100,000 to a million accelerators, their fabric, the
interconnect between buildings, power and reliability (issue #32)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rightsize.api import plan
from rightsize.catalog import get_node
from rightsize.catalog.facility import facility_defaults
from rightsize.errors import BadInput, Infeasible
from rightsize.perf.collectives import DciLink
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs
from rightsize.search.train import workload_from_spec
from rightsize.sizing.fabric import count_topology
from rightsize.sizing.fabric_tiers import count_tree, tree_capacity
from rightsize.spec import parse_spec
from rightsize.spec.training import DEFAULT_MAX_GPUS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "llama3.1-405b-pretrain.yaml"
STEP_PARTS = (
    "compute_s",
    "tp_comm_exposed_s",
    "cp_comm_exposed_s",
    "ep_comm_exposed_s",
    "pp_comm_exposed_s",
    "dp_comm_exposed_s",
    "bubble_s",
    "optimizer_s",
    "straggler_s",
    "dci_comm_exposed_s",
)


def _spec(**targets: Any) -> dict[str, Any]:
    """The Llama 3.1 405B pre-training example on H100 with the targets given."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["targets"].pop("deadline", None)
    raw["targets"]["accelerators"] = ["h100-sxm"]
    raw["targets"].update(targets)
    return raw


def _finite_numbers(d: Any) -> list[float]:
    if isinstance(d, dict):
        return [x for v in d.values() for x in _finite_numbers(v)]
    if isinstance(d, list | tuple):
        return [x for v in d for x in _finite_numbers(v)]
    return [float(d)] if isinstance(d, int | float) and not isinstance(d, bool) else []


def _check_plan(p: Any) -> dict[str, Any]:
    """What every frontier-scale plan must hold; returns the sizing's JSON view."""
    sizing = p.sizing.as_dict()
    fab, nodes = sizing["fabric"], sizing["nodes"]
    # the fabric reaches every NIC: >= 3 tiers or several planes, leaf ports for every NIC
    assert fab["needed"] and (fab["tiers"] >= 3 or fab["topology"] == "multi_plane")
    assert fab["nics"] == nodes["nodes"] * get_node(p.best.node).nics_per_node
    assert fab["leaves"] * fab["leaf_down_ports"] >= fab["nics"]
    assert fab["max_nodes"] >= nodes["nodes"]
    assert fab["switches"] == fab["leaves"] + fab["spines"] + fab["cores"]
    assert sum(p.sizing.fabric.switches_by_tier) == fab["switches"]
    # the step breakdown sums to the step
    step = p.best.step
    assert set(step) - {"step_time_s"} <= set(STEP_PARTS)
    assert sum(step.get(k, 0.0) for k in STEP_PARTS) == pytest.approx(step["step_time_s"], rel=1e-12)
    # reliability figures are finite and make sense
    rel = sizing["reliability"]
    assert all(math.isfinite(x) for x in _finite_numbers(rel))
    assert 0.0 < rel["goodput_fraction"] < 1.0
    assert rel["checkpoint_write_s"] < rel["checkpoint_interval_s"] < rel["cluster_mtbf_s"]
    # hot spares cover the nodes in repair (failures per hour x repair hours) with margin
    in_repair = p.best.gpus * rel["failure_rate_per_gpu_hour"] * rel["repair_hours"]
    assert rel["interruptions_per_day"] == pytest.approx(24 * p.best.gpus * rel["failure_rate_per_gpu_hour"])
    assert in_repair < rel["spare_nodes"] < 2 * in_repair + 10
    # the write to storage: behind the steps for an asynchronous save, blocking for a synchronous one
    write_s = rel["checkpoint_background_s"] or rel["checkpoint_write_s"]
    assert rel["checkpoint_write_bytes_per_s"] * write_s == pytest.approx(rel["checkpoint_bytes"])
    return sizing


def _buildings(nodes: int, node_id: str) -> int:
    site = facility_defaults().site
    assert site is not None
    per_building = int(site.building_it_power_w // get_node(node_id).max_power_w)
    return math.ceil(nodes / per_building)


@pytest.fixture(scope="module")
def plan_131k() -> Any:
    return plan(parse_spec(_spec(gpus=131072)))


def test_131072_h100_plan_has_its_fabric_interconnect_power_and_reliability(plan_131k: Any) -> None:
    p = plan_131k
    assert p.best.gpus == 131072 and p.best.accelerator == "h100-sxm"
    sizing = _check_plan(p)
    fab, nodes = sizing["fabric"], sizing["nodes"]
    # 16,384 nodes are past one 3-tier fabric of 64-port switches (8,192 nodes rail-optimised):
    # one 3-tier fat-tree per NIC rail, each reaching 2 (k/2)^3 = 65,536 nodes
    assert fab["topology"] == "multi_plane" and p.sizing.fabric.planes == 8
    assert fab["tiers"] == 3 and fab["max_nodes"] == 65536
    assert fab["switches"] == 8 * (512 + 512 + 256)
    # hundreds of megawatts, and more than one building's worth
    power = sizing["power"]
    assert 1e8 <= power["facility_power_w"] < 1e9
    dci = fab["dci"]
    assert dci is not None and dci["buildings"] == _buildings(nodes["nodes"], p.best.node) >= 2
    # a whole-job stall drops the working GPUs from their typical draw to idle (x PUE): tens of MW
    swing = p.best.gpus * (power["gpu_typical_w"] - power["gpu_idle_w"]) * power["pue"]
    assert power["load_swing_w"] == pytest.approx(swing) and power["load_swing_w"] > 1e7
    assert any("MW within seconds" in w for w in sizing["warnings"])
    assert any(f"{dci['buildings']} buildings" in w for w in sizing["warnings"])
    assert "data parallel" in dci["crosses"]
    assert dci["latency_s"] > 0 and dci["gbps_per_building"] > 0 and dci["transceivers"] > 0
    assert p.best.step["dci_comm_exposed_s"] >= 0.0
    # whole data-parallel replicas in each building
    assert p.best.parallel["dp"] * p.best.parallel["cp"] >= dci["buildings"]


def test_100000_gpus_train_on_the_largest_whole_node_count_that_splits_the_batch() -> None:
    p = plan(parse_spec(_spec(gpus=100_000)))
    gpn = get_node(p.best.node).gpus_per_node
    batch = 16 * 2**20 // 8192
    assert 0.9 * 100_000 <= p.best.gpus < 100_000 and p.best.gpus % gpn == 0
    assert batch % p.best.parallel["dp"] == 0
    said = [a for a in p.assumptions if "100,000 GPUs" in a]
    assert said and "hot spares" in said[0] and f"{p.best.gpus:,}" in said[0]
    sizing = _check_plan(p)
    buildings = _buildings(sizing["nodes"]["nodes"], p.best.node)
    assert (sizing["fabric"]["dci"] is not None) == (buildings > 1)


def test_a_count_the_batch_cannot_use_is_refused_with_the_counts_and_batches_that_work() -> None:
    # 128 sequences a step: at most tp 8 x pp 126 x cp 4 x dp 128 = 516,096 GPUs, far below
    # 1,000,000 (not within 10%), so the planner refuses and says what would work
    spec = _spec(gpus=1_000_000)
    spec["training"]["global_batch_tokens"] = "1Mi"
    with pytest.raises(BadInput) as err:
        plan(parse_spec(spec))
    assert "516,096" in str(err.value) and "global_batch" in str(err.value)


def test_a_million_gpus_plan_or_a_clear_refusal_from_the_command_line(tmp_path: Path) -> None:
    spec = tmp_path / "m.yaml"
    spec.write_text(yaml.safe_dump(_spec(gpus=1_048_576)))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run(
        [sys.executable, "-m", "rightsize.cli.main", "plan", str(spec), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert "Traceback" not in out.stderr
    assert out.returncode in (0, 1, 2), out.stderr[-2000:]
    if out.returncode == 0:
        doc = json.loads(out.stdout)
        fab = doc["sizing"]["fabric"]
        assert doc["best"]["gpus"] == 1_048_576
        # 131,072 nodes: 8 planes of 4-tier fat-trees (2 (k/2)^4 = 2,097,152 nodes each)
        assert fab["topology"] == "multi_plane" and fab["rails"] == 8 and fab["tiers"] == 4
        assert fab["leaves"] * fab["leaf_down_ports"] >= fab["nics"] == 1_048_576
        assert fab["dci"]["buildings"] >= 2
    else:
        assert out.stderr.startswith("rightsize:")


def test_max_gpus_is_a_spec_field_with_a_default_and_a_ceiling() -> None:
    assert parse_spec(_spec(objective="time")).targets.max_gpus == DEFAULT_MAX_GPUS == 32768
    with pytest.raises(BadInput):
        parse_spec(_spec(max_gpus=2_000_000))
    with pytest.raises(BadInput):
        parse_spec(_spec(max_gpus=0))
    raw = _spec(objective="time", deadline="90d")  # fastest under the deadline (not the knee)
    default = plan(parse_spec(raw))
    assert default.best.gpus <= 32768
    raw["targets"]["max_gpus"] = 131072
    raised = plan(parse_spec(raw))
    assert raised.best.gpus > 32768  # more GPUs train the 405B model faster on H100
    assert raised.best.time_to_train_s < default.best.time_to_train_s


def test_fat_tree_capacity_and_counts_follow_the_k_ary_tree_formulas() -> None:
    k = 64
    for t in (2, 3, 4):  # hosts(t) = 2 (k/2)^t with d = k/2 down ports at 1:1
        assert tree_capacity(k, k // 2, t) == 2 * (k // 2) ** t
    # a full 4-tier tree: (2t - 1)(k/2)^(t-1) switches
    full = count_tree(2 * 32**4, 32, 1, k, 1.0, 4)
    assert sum(full.switches_by_tier) == 7 * 32**3
    # leaf-spine past three tiers: one deeper tree, not planes
    topo = count_topology(16384, 8, k, 1.0, rail_optimized=False)
    assert topo.tiers == 4 and topo.planes == 1 and topo.max_nodes >= 16384
    # rail-optimised: one plane per rail
    rail = count_topology(16384, 8, k, 1.0, rail_optimized=True)
    assert rail.planes == 8 and rail.tiers == 3
    assert rail.upper_links == rail.leaf_spine_links == 8 * 16384
    # past five tiers: a clear refusal
    with pytest.raises(Infeasible, match="switch tiers"):
        count_topology(10**6, 8, 16, 1.0, rail_optimized=True)  # 5 tiers reach 65,536


def test_the_dci_term_adds_to_the_step_only_past_one_building() -> None:
    w = workload_from_spec(parse_spec(_spec(gpus=131072)))  # type: ignore[arg-type]
    from rightsize.catalog import get_accelerator
    from rightsize.search.calibrated import calibrated_hardware

    node = get_node("hgx-h100")
    hw = calibrated_hardware(get_accelerator("h100-sxm"), node, w.precision, None)
    cols = {
        "tp": [8.0, 8.0], "pp": [16.0, 16.0], "cp": [1.0, 1.0], "dp": [128.0, 1024.0],
        "ep": [1.0, 1.0], "vpp": [1.0, 1.0], "micro_batch": [1.0, 1.0], "recompute": [0.0, 0.0],
        "sequence_parallel": [1.0, 1.0], "zero_stage": [1.0, 1.0],
    }  # fmt: skip
    cfg = ParallelConfigs(**{k: np.array(v) for k, v in cols.items()})  # type: ignore[arg-type]
    link = DciLink(12.5e12, 25e-6, gpus_per_building=100_000)
    base = train_step(w, cfg, hw)
    with_dci = train_step(w, cfg, hw, dci=link)
    assert base.dci_comm is None and with_dci.dci_comm is not None
    # 16,384 GPUs fit one building: nothing added; 131,072 span two: the step grows by the term
    assert with_dci.dci_comm[0] == 0.0 and with_dci.step_time[0] == pytest.approx(base.step_time[0])
    assert with_dci.dci_comm[1] > 0.0
    assert with_dci.step_time[1] == pytest.approx(base.step_time[1] + with_dci.dci_comm[1])
