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
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

import rightsize.api as api
from rightsize.catalog import get_node
from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.report.render import result_dict

sys.path.insert(0, str(Path(__file__).parent))
from slurm_cluster import NodeShape, catalog_cluster, missing, sbatch_test_only  # noqa: E402

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
    spec = yaml.safe_load((ROOT / "examples/llama3-70b-pretrain.yaml").read_text())
    amd = copy.deepcopy(spec)
    amd["name"] = "llama3-70b-mi300x"
    amd["targets"]["accelerators"] = ["mi300x"]
    out["llama3-70b-mi300x"] = _plan_spec(amd, tmp_path_factory.mktemp("specs"), "amd")
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
        shapes.append(
            NodeShape(node, count, nd.cpu_cores, int(nd.host_memory_bytes // 2**20), nd.gpus_per_node)
        )
    return shapes


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
