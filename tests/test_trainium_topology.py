"""Issue #25, topology on Trainium: a Trn2 UltraServer (4 trn2u.48xlarge instances, 64
Trainium2 chips on NeuronLink-v3) is the scale-up domain that spans instances, described in
platforms.yaml (`scaleup_domain`, `domain_max_units`, `domain_node_label`) and placed by the
same code as an NVL72 rack (`export.topology`). A plan whose TP (x CP x EP) group spans
instances keeps each group inside one UltraServer: ranks in block order, Slurm leaf switches
per UltraServer with `--switches`, admitted by a real slurmctld whose nodes are trn2.48xlarge
shaped and whose topology.conf has one leaf per UltraServer; Kueue TAS on the EKS label
`neuron.amazonaws.com/ultraserver-server-id-4` (the Neuron Device Plugin's). A layout that
cannot tile 64 chips is refused. Nothing
NVIDIA (resource, clique label, NCCL, torchrun) appears in what is written for it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from rightsize.catalog import get_node
from rightsize.errors import BadInput
from rightsize.export import k8s_topology, slurm_topology
from rightsize.export.kueue import topology_object
from rightsize.export.plan_view import training_view
from rightsize.export.topology import Placement, domain_of_rank, placement

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402
from plan_variants import on_node  # noqa: E402
from slurm_cluster import NodeShape, catalog_cluster, missing, sbatch_test_only  # noqa: E402
from test_export_kubernetes import _validate  # noqa: E402

NODE = "trn2-48xlarge"
LABEL = "neuron.amazonaws.com/ultraserver-server-id-4"
TAS = "kueue.x-k8s.io/"
NVIDIA_WORDS = ("nvidia", "NCCL", "nccl", "torchrun", "gpu.clique", "gres")


def _plan(nodes: int, tp: int, cp: int = 1) -> dict[str, Any]:
    plan = on_node(plan_dict("llama3-70b-pretrain"), NODE, nodes, tp)
    par = plan["best"]["parallel"]
    par |= {"cp": cp, "dp": plan["best"]["gpus"] // (tp * cp)}
    return plan


def _place(plan: dict[str, Any]) -> Placement:
    p = placement(training_view(plan))
    assert p is not None
    return p


def _job_script(p: Placement, nodes: int) -> str:
    """A whole-node Trainium job with the placement's Slurm options and start-up check (the
    Neuron stack's launcher goes after it; no GPUs are requested)."""
    opts = [("nodes", str(nodes)), ("ntasks-per-node", "1"), ("exclusive", ""), ("mem", "0"),
            *slurm_topology.sbatch_options(p)]  # fmt: skip
    lines = ["#!/bin/bash", *(f"#SBATCH --{k}={v}" if v else f"#SBATCH --{k}" for k, v in opts)]
    lines += [f"# {h}" for h in slurm_topology.header_lines(p)]
    lines += ["set -euo pipefail", *slurm_topology.check_lines(p), "echo placed"]
    return "\n".join(lines) + "\n"


def test_ultraserver_domain_comes_from_the_platform() -> None:
    p = _place(_plan(8, tp=32))  # TP32 spans two 16-chip instances
    d = p.domain
    assert (d.gpus, d.nodes, d.name, d.kind, d.unit, d.node_label) == (
        64, 4, "NeuronLink", "Trn2 UltraServer", "chip", LABEL
    )  # fmt: skip
    assert (p.group, p.group_gpus, p.group_nodes, p.domains, p.slice_nodes) == ("TP32", 32, 2, 2, 4)
    # rank r on node r // 16 of UltraServers of 4 nodes: every TP group inside one UltraServer
    v = training_view(_plan(8, tp=32))
    servers = [f"us{i // 4}" for i in range(v.nodes)]
    for first in range(0, v.gpus, p.group_gpus):
        assert len({domain_of_rank(r, 16, servers) for r in range(first, first + p.group_gpus)}) == 1
    # TP x CP beyond an instance is one group too; 6 nodes = one and a half UltraServers: slices
    q = _place(_plan(6, tp=16, cp=4))
    assert (q.group, q.group_gpus, q.group_nodes, q.domains, q.slice_nodes) == ("TP16 x CP4", 64, 4, 2, 4)


def test_groups_inside_an_instance_need_no_placement() -> None:
    """The plan prices the instance (16 chips) as the scale-up domain: TP16 needs nothing."""
    assert placement(training_view(_plan(8, tp=16))) is None
    assert placement(training_view(_plan(1, tp=16))) is None


@pytest.mark.parametrize(
    ("tp", "cp", "why"), [(48, 1, "does not tile"), (16, 3, "does not tile"), (128, 1, "larger")]
)
def test_a_layout_that_cannot_tile_an_ultraserver_is_refused(tp: int, cp: int, why: str) -> None:
    with pytest.raises(BadInput) as err:
        placement(training_view(_plan(24, tp=tp, cp=cp)))
    assert why in err.value.what and "64-chip NeuronLink domain (Trn2 UltraServer)" in err.value.what
    assert "64" in err.value.fix


def test_kueue_places_groups_on_the_eks_ultraserver_label() -> None:
    p = _place(_plan(8, tp=32))
    ann = k8s_topology.pod_annotations(p, 8)
    assert ann == {TAS + "podset-preferred-topology": LABEL, TAS + "podset-slice-required-topology": LABEL,
                   TAS + "podset-slice-size": "4"}  # fmt: skip
    assert k8s_topology.pod_annotations(_place(_plan(4, tp=32)), 4) == {
        TAS + "podset-required-topology": LABEL
    }
    topo = topology_object(training_view(_plan(8, tp=32)).header, "trn2-topology", k8s_topology.levels(p))
    _validate(topo)  # the vendored Kueue Topology CRD schema
    assert [lv["nodeLabel"] for lv in topo["spec"]["levels"]] == [LABEL, "kubernetes.io/hostname"]
    text = str(ann) + str(topo) + k8s_topology.describe(p, 8)
    assert not [w for w in NVIDIA_WORDS if w in text]


@pytest.mark.skipif(bool(missing()), reason=f"Slurm daemons not installed: {missing()}")
def test_slurm_admits_and_places_groups_in_ultraservers() -> None:
    """slurmctld with 8 trn2.48xlarge-shaped nodes in two UltraServer leaves: the job is
    admitted on both, every TP32 group's nodes share a leaf, and the start-up check passes
    there and stops a node list that splits a group across UltraServers."""
    nd = get_node(NODE)
    p = _place(_plan(8, tp=32))
    script = _job_script(p, 8)
    conf = slurm_topology.topology_conf(p, NODE)
    assert not [w for w in NVIDIA_WORDS if w in script + conf]
    assert "ultraserver01" in conf and conf.count("Nodes=") == 2
    root = Path(tempfile.mkdtemp(prefix="rightsize-slurm-trn2-", dir="/tmp"))
    root.chmod(0o755)
    shape = NodeShape(NODE, 8, nd.cpu_cores, int(nd.host_memory_bytes // 2**20), 0, p.domain.nodes)
    try:
        with catalog_cluster(root / "cluster", [shape]) as env:
            job = root / "train.sbatch"
            job.write_text(script, encoding="utf-8")
            rc, out = sbatch_test_only(job, NODE, env)
            assert rc == 0 and "to start at" in out, out
            hosts = _expand(out.split(" on nodes ")[1].split()[0], env)
            leaf = _leaf_switches(env)
            assert len(hosts) == 8 and len({leaf[h] for h in hosts}) == 2
            for first in range(0, 8 * 16, p.group_gpus):
                assert len({leaf[hosts[r // 16]] for r in range(first, first + p.group_gpus)}) == 1
            run = subprocess.run(["bash", job.name], cwd=root, env={**env, "SLURM_JOB_NODELIST": ",".join(hosts)},
                                 capture_output=True, text=True)  # fmt: skip
            assert run.returncode == 0 and "placed" in run.stdout, run.stderr
            split = hosts[1:4] + hosts[4:] + hosts[:1]  # a group across the UltraServer boundary
            bad = subprocess.run(["bash", job.name], cwd=root, env={**env, "SLURM_JOB_NODELIST": ",".join(split)},
                                 capture_output=True, text=True)  # fmt: skip
            assert bad.returncode == 1 and "not on one leaf switch" in bad.stderr, bad.stderr
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _expand(nodelist: str, env: dict[str, str]) -> list[str]:
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], env=env, capture_output=True, text=True)
    return out.stdout.split()


def _leaf_switches(env: dict[str, str]) -> dict[str, str]:
    """node -> leaf switch, from the running slurmctld's own topology."""
    out = subprocess.run(["scontrol", "show", "topology"], env=env, capture_output=True, text=True).stdout
    leaf: dict[str, str] = {}
    for line in out.splitlines():
        f = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if f.get("Level") == "0" and "Nodes" in f:
            leaf |= dict.fromkeys(_expand(f["Nodes"], env), f["SwitchName"])
    return leaf
