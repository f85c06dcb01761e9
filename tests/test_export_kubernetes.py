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
    assert objs["PodDisruptionBudget"]["spec"]["minAvailable"] <= best["replicas"]
    assert dep["metadata"]["annotations"]["rightsize.dev/plan-schema-version"] == str(plan["schema_version"])


def test_replica_spanning_nodes_is_a_leaderworkerset() -> None:
    plan = plan_dict("llama3-70b-chat-serving")
    plan["best"]["tp"] = 16  # a replica larger than one 8-GPU node
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
