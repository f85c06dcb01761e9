"""Issue #25: every exported Slurm job is admitted by a real Slurm whose nodes are the
catalog's node types (cores x 2 threads, host memory, GPU gres; memory consumable,
partition limits enforced at submission). `sbatch --test-only` asks slurmctld whether and
where the job would start; a refusal ("Requested node configuration is not available",
a time limit over MaxTime) fails the test.

Plans: every training and serving example, plus an AMD (mi300x) variant; frameworks:
auto, megatron, torchtitan and nemo where the plan allows them (a refusal must be a clear
BadInput, and every example exports with at least one framework)."""

from __future__ import annotations

import copy
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

import rightsize.api as api
from rightsize.catalog import accelerators, get_accelerator, get_node, nodes
from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.report.render import result_dict

sys.path.insert(0, str(Path(__file__).parent))
from plan_variants import on_node  # noqa: E402
from slurm_cluster import NodeShape, catalog_cluster, missing, sbatch_test_only  # noqa: E402

from rightsize.export.plan_view import training_view  # noqa: E402
from rightsize.export.topology import scale_up_domain  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TRAINING = [
    "llama3-70b-pretrain",
    "llama3-8b-lora-weekly",
    "gpt3-175b-megatron",
    "mixtral-8x7b-pretrain",
    "deepseek-v3-pretrain",
    "llama3.1-405b-pretrain",
]
SERVING = ["llama3-70b-chat-serving", "llama2-7b-batch1"]
FRAMEWORKS = ["auto", "megatron", "torchtitan", "nemo"]
SLURM_VENDORS = ("nvidia", "amd")  # the Slurm export writes GPU jobs (CUDA, ROCm) only
# Every catalog node type whose accelerator the Slurm export supports.
NODE_TYPES = sorted(
    n for n in nodes() if get_accelerator(get_node(n).accelerator).vendor.lower() in SLURM_VENDORS
)


def _skip_reason() -> str | None:
    if os.environ.get("RIGHTSIZE_REQUIRE_SLURM"):
        return None  # CI installs Slurm: a missing piece is a failure there, not a skip
    if missing():
        return f"Slurm/munge not installed ({', '.join(missing())}); .ci/run installs slurm-wlm and munge"
    if os.geteuid() != 0:
        return "the test Slurm controller runs as root"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


def _plan_spec(spec: dict, tmp: Path, name: str) -> dict:
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return result_dict(api.plan(path))


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Each example planned once, and the 70B pretraining example on AMD mi300x."""
    out = {n: result_dict(api.plan(ROOT / f"examples/{n}.yaml")) for n in TRAINING + SERVING}
    gpus = sorted(a for a in accelerators() if get_accelerator(a).vendor.lower() in SLURM_VENDORS)
    for n in TRAINING:  # an example whose plan lands on a TPU or Trainium: the same job on GPUs
        if get_accelerator(out[n]["best"]["accelerator"]).vendor.lower() not in SLURM_VENDORS:
            with pytest.raises(BadInput, match="Slurm export writes GPU jobs only"):
                render_files(out[n], "slurm")
            spec_n = yaml.safe_load((ROOT / f"examples/{n}.yaml").read_text())
            spec_n["targets"]["accelerators"] = gpus
            out[n] = _plan_spec(spec_n, tmp_path_factory.mktemp("specs"), n)
    spec = yaml.safe_load((ROOT / "examples/llama3-70b-pretrain.yaml").read_text())
    amd = copy.deepcopy(spec)
    amd["name"] = "llama3-70b-mi300x"
    amd["targets"]["accelerators"] = ["mi300x"]
    out["llama3-70b-mi300x"] = _plan_spec(amd, tmp_path_factory.mktemp("specs"), "amd")
    for node in NODE_TYPES:
        out[f"on-{node}"] = on_node(out["llama3-70b-pretrain"], node, 2)
        if scale_up_domain(training_view(out[f"on-{node}"]).hw):
            domain = scale_up_domain(training_view(out[f"on-{node}"]).hw)
            assert domain is not None
            out[f"racks-{node}"] = on_node(out["llama3-70b-pretrain"], node, 2 * domain.nodes, tp=8)
            out[f"rack-{node}"] = on_node(out["llama3-70b-pretrain"], node, domain.nodes - 2, tp=8)
    return out


def _shapes(plans: dict[str, dict]) -> list[NodeShape]:
    need: dict[str, int] = {}
    for p in plans.values():
        node = p["best"]["node"]
        n = int((p.get("sizing") or {}).get("nodes", {}).get("nodes") or 1)
        need[node] = max(need.get(node, 2), n)
    shapes = []
    for node, count in sorted(need.items()):
        nd = get_node(node)
        domain = scale_up_domain(training_view(p).hw) if (p := _any_on(plans, node)) else None
        count = max(count, 2 * domain.nodes) if domain else count
        shapes.append(
            NodeShape(
                node,
                count,
                nd.cpu_cores,
                int(nd.host_memory_bytes // 2**20),
                nd.gpus_per_node,
                domain.nodes if domain else 0,
            )
        )
    return shapes


def _any_on(plans: dict[str, dict], node: str) -> dict | None:
    return next(
        (p for p in plans.values() if p["best"]["node"] == node and p["kind"] == "training_plan"), None
    )


@pytest.fixture(scope="module")
def cluster(plans: dict[str, dict]):
    root = Path(tempfile.mkdtemp(prefix="rightsize-slurm-catalog-", dir="/tmp"))
    root.chmod(0o755)
    try:
        with catalog_cluster(root / "cluster", _shapes(plans)) as env:
            yield env, root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _admit(files: dict[str, str], folder: Path, partition: str, env: dict[str, str]) -> list[str]:
    """The refusals: `sbatch --test-only` of every .sbatch in `files`."""
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    refused = []
    for name in sorted(n for n in files if n.endswith(".sbatch")):
        rc, out = sbatch_test_only(folder / name, partition, env)
        if rc != 0 or "to start at" not in out:
            refused.append(f"{name}: {out[-400:]}")
    return refused


def test_the_cluster_is_shaped_like_the_catalog(cluster, plans: dict[str, dict]) -> None:
    """The check can fail: what the catalog's nodes cannot hold is refused."""
    env, root = cluster
    job = root / "neg"
    job.mkdir()
    node = get_node("hgx-b200")
    cases = {
        "old export: --exclusive with 16 GiB per CPU": ["--exclusive", "--mem-per-cpu=16384M"],
        "one more GPU than the node has": [f"--gpus-per-node={node.gpus_per_node + 1}"],
        "more memory than the node has": [f"--mem={math.ceil(node.host_memory_bytes / 2**20) + 1}M"],
        "more CPUs than the node has": [f"--cpus-per-task={2 * node.cpu_cores + 1}"],
        "over the partition's MaxTime": ["--time=2-00:01:00"],
    }
    for why, opts in cases.items():
        (job / "x.sbatch").write_text("#!/bin/bash\n" + "".join(f"#SBATCH {o}\n" for o in opts) + "true\n")
        rc, out = sbatch_test_only(job / "x.sbatch", "hgx-b200", env)
        assert rc != 0, f"{why}: admitted ({out})"
    (job / "ok.sbatch").write_text(
        "#!/bin/bash\n#SBATCH --nodes=2 --gpus-per-node=8 --exclusive --mem=0\ntrue\n"
    )
    assert sbatch_test_only(job / "ok.sbatch", "hgx-b200", env)[0] == 0


@pytest.mark.parametrize("name", [*TRAINING, "llama3-70b-mi300x"])
def test_training_jobs_are_admitted(cluster, plans: dict[str, dict], name: str) -> None:
    env, root = cluster
    plan = plans[name]
    exported, refusals = 0, []
    for fw in FRAMEWORKS:
        try:
            files = render_files(plan, "slurm", fw)
        except BadInput as err:
            refusals.append(f"{fw}: {err.what}")
            continue
        exported += 1
        refused = _admit(files, root / f"{name}-{fw}", plan["best"]["node"], env)
        assert not refused, f"{name} --framework {fw}: Slurm refused\n" + "\n".join(refused)
        assert "#SBATCH --mem=0" in files["train.sbatch"] and "--mem-per-cpu" not in files["train.sbatch"]
    assert exported >= 2 or (exported == 1 and plan["spec"]["training"].get("method") == "lora"), refusals


@pytest.mark.parametrize("name", SERVING)
def test_serving_jobs_are_admitted(cluster, plans: dict[str, dict], name: str) -> None:
    env, root = cluster
    refused = _admit(render_files(plans[name], "slurm"), root / name, plans[name]["best"]["node"], env)
    assert not refused, f"{name}: Slurm refused\n" + "\n".join(refused)


def test_amd_plan_has_no_nvidia_settings(plans: dict[str, dict]) -> None:
    files = render_files(plans["llama3-70b-mi300x"], "slurm", "megatron")
    assert plans["llama3-70b-mi300x"]["best"]["accelerator"] == "mi300x"
    for name, text in files.items():
        assert "nvidia" not in text.lower() and "CUDA_" not in text, name
    assert "NCCL_IB_HCA" not in files["train.sbatch"]  # the NIC is not known to be ConnectX
    assert "#SBATCH --gpus-per-node=8" in files["train.sbatch"]  # Slurm's gres is `gpu` for AMD too


@pytest.mark.parametrize("node", NODE_TYPES)
def test_every_catalog_node_type_is_admitted(cluster, plans: dict[str, dict], node: str) -> None:
    """A training plan moved onto each catalog node type the Slurm export supports exports
    and is admitted by a Slurm whose nodes are that type's shape (and, for NVL72 trays, whose
    topology has one leaf switch per 18-tray rack: in one rack and across two)."""
    env, root = cluster
    names = [k for k in (f"on-{node}", f"rack-{node}", f"racks-{node}") if k in plans]
    for name in names:
        files = render_files(plans[name], "slurm", "megatron")
        refused = _admit(files, root / f"node-{name}", node, env)
        assert not refused, f"{name}: Slurm refused\n" + "\n".join(refused)
        multi_node_domain = scale_up_domain(training_view(plans[name]).hw) is not None
        assert ("#SBATCH --switches=" in files["train.sbatch"]) == multi_node_domain


def _expand(nodelist: str, env: dict[str, str]) -> list[str]:
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], env=env, capture_output=True, text=True)
    return out.stdout.split()


def _leaf_switches(env: dict[str, str]) -> dict[str, str]:
    """node -> leaf switch, from the running slurmctld's own topology (`scontrol show topology`)."""
    out = subprocess.run(["scontrol", "show", "topology"], env=env, capture_output=True, text=True).stdout
    leaf = {}
    for line in out.splitlines():
        f = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if f.get("Level") == "0" and "Nodes" in f:
            leaf |= dict.fromkeys(_expand(f["Nodes"], env), f["SwitchName"])
    return leaf


@pytest.mark.parametrize("node", [n for n in NODE_TYPES if n.startswith(("gb200", "gb300"))])
def test_tensor_parallel_groups_stay_in_one_rack(cluster, plans: dict[str, dict], node: str) -> None:
    """Where Slurm would start the two-rack job (`--test-only` names the nodes), rank r runs on
    node r // GPUs-per-node (block distribution): every TP group's ranks are in one rack of the
    slurmctld's own topology, and the script's start-up check passes there and stops a job whose
    node list puts one group across two racks."""
    env, root = cluster
    plan = plans[f"racks-{node}"]
    v = training_view(plan)
    files = render_files(plan, "slurm", "megatron")
    folder = root / f"ranks-{node}"
    folder.mkdir()
    (folder / "train.sbatch").write_text(files["train.sbatch"], encoding="utf-8")
    rc, out = sbatch_test_only(folder / "train.sbatch", node, env)
    assert rc == 0 and "to start at" in out, out
    hosts = _expand(out.split(" on nodes ")[1].split()[0], env)
    leaf = _leaf_switches(env)
    gpn = v.hw.gpus_per_node
    assert len(hosts) == v.nodes and len({leaf[h] for h in hosts}) == 2
    for first in range(0, v.gpus, v.tp):
        racks = {leaf[hosts[r // gpn]] for r in range(first, first + v.tp)}
        assert len(racks) == 1, f"TP group at rank {first} spans {racks}"
    text = files["train.sbatch"]
    check = text[text.index("GROUP_NODES=") : text.index("srun --kill-on-bad-exit")]
    (folder / "check.sh").write_text("set -euo pipefail\n" + check + "echo placed\n", encoding="utf-8")
    run = {**env, "SLURM_JOB_NODELIST": ",".join(hosts)}
    ok = subprocess.run(["bash", "check.sh"], cwd=folder, env=run, capture_output=True, text=True)
    assert ok.returncode == 0 and "placed" in ok.stdout, ok.stderr
    domain = v.nodes // 2
    straddle = hosts[1:domain] + hosts[domain:] + hosts[:1]  # rack boundary inside a group
    bad = subprocess.run(["bash", "check.sh"], cwd=folder, env={**run, "SLURM_JOB_NODELIST": ",".join(straddle)},
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 1 and "not on one leaf switch" in bad.stderr, (bad.stdout, bad.stderr)
