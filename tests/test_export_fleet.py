"""Issue 17 for fleets: a fleet plan exports its planned Kueue quotas (ResourceFlavors, a
cohort of ClusterQueues with nominal, borrowing and lending limits, a LocalQueue per
workload), valid against Kueue's published CRD schemas and equal to the plan's numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_export_kubernetes import _validate

from rightsize.api import plan
from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.report.render import render

FLEET = Path(__file__).parent.parent / "examples" / "fleet-2027.yaml"


@pytest.fixture(scope="module")
def fleet_plan() -> dict[str, Any]:
    return json.loads(render(plan(FLEET), "json"))  # type: ignore[no-any-return]


def _docs(files: dict[str, str]) -> list[dict[str, Any]]:
    (text,) = files.values()
    assert text.startswith("# Kueue quotas for the fleet")
    return [d for d in yaml.safe_load_all(text) if d]


def test_fleet_quotas_export_as_valid_kueue_objects(fleet_plan: dict[str, Any]) -> None:
    docs = _docs(render_files(fleet_plan, "kubernetes"))
    for d in docs:
        _validate(d)
        assert d["metadata"]["annotations"]["rightsize.dev/plan"] == fleet_plan["name"]
    q = fleet_plan["quotas"]
    flavors = {d["metadata"]["name"] for d in docs if d["kind"] == "ResourceFlavor"}
    assert flavors == {f["name"] for f in q["resource_flavors"]}
    queues = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "ClusterQueue"}
    assert set(queues) == {cq["name"] for cq in q["cluster_queues"]}
    for cq in q["cluster_queues"]:
        spec = queues[cq["name"]]
        assert spec["cohort"] == q["cohort"]
        group = spec["resourceGroups"][0]
        assert set(group["coveredResources"]) == set(cq["covered_resources"])  # cpu and memory too
        assert all([r["name"] for r in f["resources"]] == group["coveredResources"] for f in group["flavors"])
        gpu = cq["resource"]
        got = {f["name"]: next(r for r in f["resources"] if r["name"] == gpu) for f in group["flavors"]}
        for f in cq["flavors"]:
            r = got[f["name"]]
            assert r["nominalQuota"] == f["nominal_quota"]
            assert r.get("borrowingLimit") == f.get("borrowing_limit")
            assert r.get("lendingLimit") == f.get("lending_limit")
    local = {d["metadata"]["name"]: d["spec"]["clusterQueue"] for d in docs if d["kind"] == "LocalQueue"}
    assert set(local) == {w["name"] for w in fleet_plan["workloads"]}
    assert all(cq in queues for cq in local.values())


def test_saved_fleet_plan_exports_like_the_spec(fleet_plan: dict[str, Any], tmp_path: Path) -> None:
    from rightsize.cli.main import main

    saved = tmp_path / "fleet.json"
    saved.write_text(json.dumps(fleet_plan))
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["export", str(saved), "--target", "kubernetes", "--out", str(a)]) == 0
    assert main(["export", str(FLEET), "--target", "kubernetes", "--out", str(b)]) == 0

    def body(p: Path) -> list[Any]:  # the objects, without the dated annotations
        docs = [d for d in yaml.safe_load_all((p / "kueue-fleet.yaml").read_text()) if d]
        for d in docs:
            d["metadata"].pop("annotations")
        return docs

    assert body(a) == body(b)


def test_fleet_plan_to_slurm_is_refused_with_the_reason(fleet_plan: dict[str, Any]) -> None:
    with pytest.raises(BadInput, match="Kueue"):
        render_files(fleet_plan, "slurm")
