"""`rightsize export --target kubernetes`: core objects valid against the Kubernetes
OpenAPI schema (kubernetes-validate, strict), custom resources (JobSet, LeaderWorkerSet,
Kueue, KEDA) against their published CRD schemas (vendored in tests/data/crds with source
and version; unknown fields rejected as `kubectl --validate=strict` does), and consistent
with the plan: replicas, TP, GPUs, autoscaling bounds, quotas."""

from __future__ import annotations

import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from rightsize.export import render_files
from rightsize.export.plan_view import serving_view, training_view
from rightsize.export.thresholds import autoscale_waiting_target, replica_bounds

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402

CRDS = Path(__file__).parent / "data" / "crds"
K8S_VERSION = "1.33.0"
CRD_FILES = {
    ("jobset.x-k8s.io", "JobSet"): "jobset.x-k8s.io_jobsets.schema.json",
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): "leaderworkerset.x-k8s.io_leaderworkersets.schema.json",
    ("kueue.x-k8s.io", "ResourceFlavor"): "kueue.x-k8s.io_resourceflavors.schema.json",
    ("kueue.x-k8s.io", "ClusterQueue"): "kueue.x-k8s.io_clusterqueues.schema.json",
    ("kueue.x-k8s.io", "LocalQueue"): "kueue.x-k8s.io_localqueues.schema.json",
    ("kueue.x-k8s.io", "Topology"): "kueue.x-k8s.io_topologies.schema.json",
    ("keda.sh", "ScaledObject"): "keda.sh_scaledobjects.schema.json",
}


def _strict(schema: Any) -> Any:
    """Reject unknown fields where the CRD lists its properties (kubectl's strict validation)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@cache
def _crd_schema(group: str, kind: str, version: str) -> dict[str, Any]:
    doc = json.loads((CRDS / CRD_FILES[(group, kind)]).read_text())
    assert doc["kind"] == kind and doc["group"] == group
    return _strict(doc["versions"][version])


def _validate(obj: dict[str, Any]) -> None:
    group, _, version = obj["apiVersion"].rpartition("/")
    if (group, obj["kind"]) in CRD_FILES:
        jsonschema.validate(obj, _crd_schema(group, obj["kind"], version))
        return
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def _docs(text: str) -> list[dict[str, Any]]:
    assert text.startswith("# Kubernetes") or text.startswith("# Kueue")
    return [d for d in yaml.safe_load_all(text) if d]


def _by_kind(files: dict[str, str]) -> dict[str, dict[str, Any]]:
    out = {}
    for text in files.values():
        for d in _docs(text):
            _validate(d)
            out[d["kind"]] = d
    return out


@pytest.mark.parametrize("example", ["llama3-70b-chat-serving", "llama2-7b-batch1"])
def test_serving_manifests(example: str) -> None:
    plan = plan_dict(example)
    objs = _by_kind(render_files(plan, "kubernetes"))
    best, v = plan["best"], serving_view(plan)
    dep = objs["Deployment"]
    assert dep["spec"]["replicas"] == best["replicas"]
    c = dep["spec"]["template"]["spec"]["containers"][0]
    args = c["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == str(best["tp"])
    assert c["resources"]["limits"]["nvidia.com/gpu"] == best["tp"]
    so = objs["ScaledObject"]["spec"]
    assert (so["minReplicaCount"], so["maxReplicaCount"]) == replica_bounds(v)
    assert so["minReplicaCount"] <= best["replicas"] <= so["maxReplicaCount"]
    trig = so["triggers"][0]["metadata"]
    assert "vllm:num_requests_waiting" in trig["query"] and trig["threshold"] == str(
        autoscale_waiting_target(v)
    )
    pdb = objs["PodDisruptionBudget"]["spec"]
    # below the autoscaler's floor: a drain can always evict one replica
    assert pdb.get("maxUnavailable", 0) >= 1 or pdb["minAvailable"] < so["minReplicaCount"]
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["path"] == "/health"
    assert ":" in c["image"] and not c["image"].endswith(":latest")
    assert dep["metadata"]["annotations"]["rightsize.dev/plan-schema-version"] == str(plan["schema_version"])


def test_replica_spanning_nodes_is_a_leaderworkerset() -> None:
    plan = plan_dict("llama3-70b-chat-serving")
    plan["best"]["tp"] = 16  # a replica larger than one 8-GPU node
    for key in ("nodes_per_replica", "gpus_per_replica", "layout"):  # the planner's old shape
        plan["best"].pop(key, None)
    objs = _by_kind(render_files(plan, "kubernetes"))
    lws = objs["LeaderWorkerSet"]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert lws["spec"]["replicas"] == plan["best"]["replicas"]
    assert objs["ScaledObject"]["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet"
    assert "Deployment" not in objs


@pytest.mark.parametrize("framework", ["megatron", "torchtitan", "nemo"])
def test_training_manifests(framework: str) -> None:
    plan = plan_dict("llama3-70b-pretrain")
    objs = _by_kind(render_files(plan, "kubernetes", framework))
    v = training_view(plan)
    job = objs["JobSet"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert job["parallelism"] == job["completions"] == plan["sizing"]["nodes"]["nodes"]
    pod = job["template"]["spec"]["containers"][0]
    assert pod["resources"]["limits"]["nvidia.com/gpu"] * job["parallelism"] == plan["best"]["gpus"]
    assert f"--nnodes={v.nodes}" in pod["args"][0]
    cq = objs["ClusterQueue"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert {r["name"]: r["nominalQuota"] for r in cq}["nvidia.com/gpu"] == plan["best"]["gpus"]
    assert (
        objs["JobSet"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
        == objs["LocalQueue"]["metadata"]["name"]
    )
    assert objs["LocalQueue"]["spec"]["clusterQueue"] == objs["ClusterQueue"]["metadata"]["name"]


def test_crd_validation_catches_a_wrong_field() -> None:
    objs = _by_kind(render_files(plan_dict("llama3-70b-chat-serving"), "kubernetes"))
    so = objs["ScaledObject"]
    so["spec"]["minReplicas"] = 1  # HPA's spelling, not KEDA's
    with pytest.raises(jsonschema.ValidationError):
        _validate(so)
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="pip install kubernetes-validate")
    dep = objs["Deployment"]
    dep["spec"]["replica"] = dep["spec"].pop("replicas")  # a typo in a core object
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(dep)


def test_fleet_plan_without_quotas_is_refused(tmp_path: Path) -> None:
    from rightsize.errors import BadInput

    # A fleet plan's export is held by tests/test_export_fleet.py; one with no quotas says so.
    with pytest.raises(BadInput, match="carries no Kueue quotas"):
        render_files({"schema_version": 2, "kind": "fleet_plan", "name": "f"}, "kubernetes")


def _quantity(q: Any) -> float:
    """A Kubernetes quantity as a number (the suffixes these manifests use)."""
    text = str(q)
    for suffix, mult in (("Gi", 2**30), ("Mi", 2**20), ("m", 1e-3)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * mult
    return float(text)


def _pods(objs: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
    job = objs["JobSet"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    return job["template"]["spec"]["containers"], job["parallelism"], job["template"]["spec"]


@pytest.mark.parametrize("example", ["llama3-70b-pretrain", "llama3-8b-lora-weekly", "mixtral-8x7b-pretrain"])
def test_cluster_queue_covers_every_requested_resource(example: str) -> None:
    """Kueue admits a workload only when each resource its pods request is covered by the
    ClusterQueue with quota for all pods: CPU, memory, the accelerator and RDMA devices."""
    objs = _by_kind(render_files(plan_dict(example), "kubernetes"))
    containers, pods, _ = _pods(objs)
    group = objs["ClusterQueue"]["spec"]["resourceGroups"][0]
    quota = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert set(group["coveredResources"]) == set(quota)
    for c in containers:
        for res, q in c["resources"]["requests"].items():
            assert res in quota, f"{res} requested but not covered"
            assert _quantity(q) * pods <= _quantity(quota[res])
    flavor = objs["ResourceFlavor"]
    assert group["flavors"][0]["name"] == flavor["metadata"]["name"]


@pytest.mark.parametrize("framework", ["megatron", "torchtitan", "nemo"])
def test_checkpoints_and_data_on_volumes(framework: str) -> None:
    """CKPT_DIR and DATA_PATH point into mounted PersistentVolumeClaims (a restart resumes
    from the last checkpoint), sized from the plan's storage sizing."""
    plan = plan_dict("llama3-70b-pretrain")
    files = render_files(plan, "kubernetes", framework)
    docs = [d for t in files.values() for d in _docs(t)]
    for d in docs:
        _validate(d)
    claims = {d["metadata"]["name"]: d for d in docs if d["kind"] == "PersistentVolumeClaim"}
    objs = {d["kind"]: d for d in docs}
    containers, _, pod = _pods(objs)
    c = containers[0]
    env = {e["name"]: e["value"] for e in c["env"]}
    volumes = {vol["name"]: vol for vol in pod["volumes"]}
    for var in ("CKPT_DIR", "DATA_PATH"):
        mount = next(
            m for m in c["volumeMounts"] if (env[var] + "/").startswith(m["mountPath"].rstrip("/") + "/")
        )
        claim = volumes[mount["name"]]["persistentVolumeClaim"]["claimName"]
        assert claim in claims
    cap = plan["sizing"]["storage"]["capacity"]
    sizes = {n: _quantity(c["spec"]["resources"]["requests"]["storage"]) for n, c in claims.items()}
    ckpt = next(s for n, s in sizes.items() if n.endswith("-checkpoints"))
    data = next(s for n, s in sizes.items() if n.endswith("-data"))
    assert ckpt >= cap["checkpoints_bytes"] and data >= cap["preprocessed_bytes"]
    assert "$CKPT_DIR" in c["args"][0] or "CKPT_DIR" in str(objs["ConfigMap"]["data"])


def test_rdma_fabric_gets_rdma_devices_and_ipc_lock() -> None:
    """NCCL is told to use InfiniBand only when the pod has the RDMA device and IPC_LOCK; a
    one-node job disables IB."""
    objs = _by_kind(render_files(plan_dict("llama3-70b-pretrain"), "kubernetes"))
    c = _pods(objs)[0][0]
    assert "NCCL_IB_HCA" in c["args"][0]
    assert c["resources"]["limits"]["rdma/rdma_shared_device_a"] >= 1
    assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]
    plan = plan_dict("llama3-70b-pretrain")
    plan["sizing"]["fabric"]["needed"] = False
    c1 = _pods(_by_kind(render_files(plan, "kubernetes")))[0][0]
    assert "NCCL_IB_DISABLE=1" in c1["args"][0] and "NCCL_IB_HCA" not in c1["args"][0]
    assert not any(r.startswith("rdma/") for r in c1["resources"]["limits"])


@pytest.mark.parametrize(
    ("priced", "label"),
    [
        ("aws p5.48xlarge (8 GPUs) in us-east-1", "p5.48xlarge"),
        ("gcp a3-highgpu-8g (8 GPUs) in us-central1", "a3-highgpu-8g"),
        ("azure Standard_ND96isr_H100_v5 (8 GPUs) in eastus", "Standard_ND96isr_H100_v5"),
        ("estimate hgx-h100 (8 GPUs) in us-east-1", None),
    ],
)
def test_nodes_selected_by_the_priced_instance_type(priced: str, label: str | None) -> None:
    plan = plan_dict("llama3-70b-pretrain")
    plan["sizing"]["cost"]["priced_instance"] = priced
    objs = _by_kind(render_files(plan, "kubernetes"))
    want = {"node.kubernetes.io/instance-type": label} if label else {}
    assert objs["ResourceFlavor"]["spec"].get("nodeLabels", {}) == want
    assert _pods(objs)[2].get("nodeSelector", {}) == want
    text = "".join(render_files(plan, "kubernetes").values())
    assert "instance-type: hgx-" not in text


def test_chat_service_serves_the_instruct_model() -> None:
    objs = _by_kind(render_files(plan_dict("llama3-70b-chat-serving"), "kubernetes"))
    c = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["MODEL"] == "meta-llama/Meta-Llama-3-70B-Instruct"
    assert c["args"][:2] == ["--model", "$(MODEL)"]
    batch = _by_kind(render_files(plan_dict("llama2-7b-batch1"), "kubernetes"))
    c2 = batch["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert {e["name"]: e.get("value") for e in c2["env"]}["MODEL"] == "meta-llama/Llama-2-7b-hf"


TRAINING_EXAMPLES = [
    "llama3-70b-pretrain",
    "llama3-8b-lora-weekly",
    "gpt3-175b-megatron",
    "mixtral-8x7b-pretrain",
    "deepseek-v3-pretrain",
    "llama3.1-405b-pretrain",
]
SERVING_EXAMPLES = ["llama3-70b-chat-serving", "llama2-7b-batch1"]


@pytest.mark.parametrize("example", TRAINING_EXAMPLES + SERVING_EXAMPLES)
@pytest.mark.parametrize("framework", ["auto", "megatron", "torchtitan", "nemo"])
def test_every_example_on_every_route_is_valid(example: str, framework: str) -> None:
    """Every exportable example, every framework route: each object valid against its schema,
    images pinned by exact tag, the JobSet's queue is the LocalQueue, and no catalog node id
    is used as a node label. A framework that cannot express the plan refuses (BadInput)."""
    from rightsize.errors import BadInput

    if example in SERVING_EXAMPLES and framework != "auto":
        pytest.skip("serving has one engine (vLLM)")
    plan = plan_dict(example)
    try:
        files = render_files(plan, "kubernetes", framework)
    except BadInput:
        assert framework != "auto", "the auto route must export"
        return
    objs = _by_kind(files)
    text = "".join(files.values())
    assert ":latest" not in text and f"instance-type: {plan['best']['node']}" not in text
    if "JobSet" in objs:
        assert (
            objs["JobSet"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
            == objs["LocalQueue"]["metadata"]["name"]
        )
        c = _pods(objs)[0][0]
        assert c["image"].rsplit(":", 1)[1]


def test_preemption_leaves_time_for_the_plans_checkpoint() -> None:
    """SIGTERM reaches torchrun (exec: the container's process 1, not a shell that ignores
    it) and the pod's grace period holds the plan's checkpoint write and two steps."""
    from rightsize.export.slurm_segments import checkpoint_write_s

    plan = plan_dict("llama3-70b-pretrain")
    v = training_view(plan)
    _, _, pod = _pods(_by_kind(render_files(plan, "kubernetes")))
    assert pod["terminationGracePeriodSeconds"] >= checkpoint_write_s(v) + 2 * v.step_time_s
    assert "\nexec torchrun " in pod["containers"][0]["args"][0]
