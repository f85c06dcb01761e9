"""Issue #25, topology: groups that must stay in one scale-up domain are placed there.

NVL72 trays (GB200/GB300: 72 GPUs, 18 trays of 4 per NVLink domain): the Slurm job asks
for the fewest racks (`--switches`), ranks in block order, and checks its groups' nodes at
start; the Kubernetes JobSet carries Kueue Topology-Aware Scheduling annotations whose names
and combinations Kueue's own validation accepts (pkg/controller/jobframework/
tas_validation.go at the pinned commit), the Topology and ResourceFlavor validate against the
vendored CRDs. Node types whose domain is the node get none of it; a layout whose group
cannot tile a domain is refused with the reason. (Slurm's own admission and the rank-to-rack
mapping under a real slurmctld: tests/test_slurm_admission.py.)"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.export.plan_view import training_view
from rightsize.export.topology import domain_of_rank, placement

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402
from plan_variants import on_node  # noqa: E402
from test_export_kubernetes import _validate  # noqa: E402

TAS = "kueue.x-k8s.io/"


def _plan(node: str, nodes: int, tp: int | None = None) -> dict[str, Any]:
    return on_node(plan_dict("llama3-70b-pretrain"), node, nodes, tp)


def _k8s(plan: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    files = render_files(plan, "kubernetes", "megatron")
    docs = [d for name in ("training.yaml", "kueue.yaml") for d in yaml.safe_load_all(files[name]) if d]
    for d in docs:
        _validate(d)
    jobset = next(d for d in docs if d["kind"] == "JobSet")
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"], docs


def _kueue_accepts(ann: dict[str, str]) -> None:
    """The rules of Kueue's ValidateTASPodSetRequest (pinned commit) on the annotations."""
    tas = {k.removeprefix(TAS): v for k, v in ann.items() if k.startswith(TAS)}
    assert sum(k in tas for k in ("podset-required-topology", "podset-preferred-topology",
                                  "podset-unconstrained-topology")) <= 1  # fmt: skip
    assert ("podset-slice-required-topology" in tas) == ("podset-slice-size" in tas)
    if "podset-slice-size" in tas:
        assert int(tas["podset-slice-size"]) >= 1


@pytest.mark.parametrize("node", ["gb200-nvl72-tray", "gb300-nvl72-tray"])
def test_nvl72_jobs_are_placed_in_racks(node: str) -> None:
    # in one rack: every pod in one NVLink clique; the job asks Slurm for one leaf switch
    one = _plan(node, 16, tp=8)
    tmpl, docs = _k8s(one)
    assert tmpl["metadata"]["annotations"] == {TAS + "podset-required-topology": "nvidia.com/gpu.clique"}
    kinds = {d["kind"]: d for d in docs}
    assert kinds["Topology"]["spec"]["levels"][0]["nodeLabel"] == "nvidia.com/gpu.clique"
    assert kinds["ResourceFlavor"]["spec"]["topologyName"] == kinds["Topology"]["metadata"]["name"]
    sbatch = render_files(one, "slurm", "megatron")["train.sbatch"]
    assert "#SBATCH --switches=1@" in sbatch and "--distribution=block:block" in sbatch
    assert "GROUP_NODES=2" in sbatch  # TP8 spans two 4-GPU trays: checked at start
    # two whole racks: slices of 18 consecutive pods, each in one clique
    two = _plan(node, 36, tp=8)
    ann = _k8s(two)[0]["metadata"]["annotations"]
    _kueue_accepts(ann)
    assert ann[TAS + "podset-slice-size"] == "18" and ann[TAS + "podset-preferred-topology"]
    files = render_files(two, "slurm", "megatron")
    assert "#SBATCH --switches=2@" in files["train.sbatch"]
    assert files["topology.conf.example"].count("Nodes=") == 2
    # part of a second rack: slices of one TP group (2 pods)
    part = _plan(node, 20, tp=8)
    ann = _k8s(part)[0]["metadata"]["annotations"]
    _kueue_accepts(ann)
    assert ann[TAS + "podset-slice-size"] == "2"
    # TP inside a tray: only packing, no slices and no start-up check
    inside = _plan(node, 20, tp=4)
    ann = _k8s(inside)[0]["metadata"]["annotations"]
    assert set(ann) == {TAS + "podset-preferred-topology"}
    assert "GROUP_NODES" not in render_files(inside, "slurm", "megatron")["train.sbatch"]


def test_groups_under_block_order_stay_in_a_domain() -> None:
    """Rank r on node r // 4 of racks of 18 nodes: every TP and TP x CP group in one rack."""
    v = training_view(_plan("gb200-nvl72-tray", 36, tp=8))
    p = placement(v)
    assert p is not None and (p.group_gpus, p.group_nodes, p.domains, p.slice_nodes) == (8, 2, 2, 18)
    racks = [f"rack{i // 18}" for i in range(v.nodes)]
    for first in range(0, v.gpus, p.group_gpus):
        assert len({domain_of_rank(r, 4, racks) for r in range(first, first + p.group_gpus)}) == 1


@pytest.mark.parametrize("cp", [2, 4])
def test_a_group_that_cannot_tile_a_domain_is_refused(cp: int) -> None:
    # TP8 x CP 2 or 4: a 16- or 32-GPU group that Megatron-LM accepts for Llama 3 70B (TP16 it
    # refuses first: 8 key-value heads) and that no 72-GPU rack tiles.
    plan = _plan("gb200-nvl72-tray", 36, tp=8)
    par = plan["best"]["parallel"]
    par |= {"cp": cp, "dp": par["dp"] // cp}
    for target in ("slurm", "kubernetes"):
        with pytest.raises(BadInput) as err:
            render_files(plan, target, "megatron")
        assert "does not tile a 72-GPU NVLink domain" in err.value.what and "divisor of 72" in err.value.fix


@pytest.mark.parametrize("node", ["hgx-h100", "hgx-b200", "mi300x-platform"])
def test_node_sized_domains_need_no_placement(node: str) -> None:
    plan = _plan(node, 4)
    assert placement(training_view(plan)) is None
    tmpl, docs = _k8s(plan)
    assert "annotations" not in tmpl.get("metadata", {}) and "Topology" not in {d["kind"] for d in docs}
    files = render_files(plan, "slurm", "megatron")
    assert "--switches" not in files["train.sbatch"] and "topology.conf.example" not in files
