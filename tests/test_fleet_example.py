"""The bundled fleet (examples/fleet-2027.yaml) planned end to end (issue #16): every workload keeps
the plan it gets alone, every month is covered, pooling beats dedicated capacity, deadlines are met,
and the plan renders in all four formats (JSON valid against the report schema)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rightsize.api import plan
from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.report.render import FORMATS, json_schema, render
from rightsize.sizing.pipeline import run_pipeline
from rightsize.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fleet-2027.yaml"


@pytest.fixture(scope="module")
def fleet() -> Any:
    return plan(EXAMPLE)


@pytest.fixture(scope="module")
def data(fleet: Any) -> dict[str, Any]:
    return json.loads(render(fleet, "json"))


def test_each_workload_keeps_its_solo_plan(fleet: Any) -> None:
    for entry in fleet.entries:
        alone = run_pipeline(load_spec(entry["source"]), uncertainty=False)
        assert alone.demand is not None
        assert entry["plan"]["accelerator"] == alone.demand.accelerator, entry["name"]
        assert entry["plan"]["gpus"] == alone.demand.gpus, entry["name"]
        assert entry["note"] is None


def test_every_month_is_covered_and_pooling_pays(data: dict[str, Any]) -> None:
    assert len(data["timeline"]) == data["horizon_months"] == 18
    for m in data["timeline"]:
        assert m["reserved_gpus"] + m["burst_gpus"] >= m["demand_gpus"] - 1e-6, m["month"]
        assert sum(w["gpus"] for w in m["by_workload"].values()) >= m["demand_gpus"] - 1e-6
    c = data["cost"]
    assert c["pooled_usd"] <= c["dedicated_usd"]
    assert c["saving_usd"] == pytest.approx(c["dedicated_usd"] - c["pooled_usd"])
    assert sum(c["pooled_by_kind_usd"].values()) == pytest.approx(c["pooled_usd"], rel=1e-6)
    assert sum(m["cost_usd"] for m in data["timeline"]) == pytest.approx(c["pooled_usd"], rel=1e-6)


def test_the_pre_training_run_lands_in_its_quarter(data: dict[str, Any]) -> None:
    runs = {m["month"] for m in data["timeline"] if "llama3-8b-pretrain" in m["by_workload"]}
    assert runs and runs <= {"2027-04", "2027-05", "2027-06"}
    assert all(d["met"] for d in data["deadlines"])
    nightly = data["hourly_profile"]["hours"]
    assert len(nightly) == 24
    # the batch job runs only in its 22:00-06:00 window
    assert all("nightly-summaries" not in h["by_workload_gpus"] for h in nightly if 6 <= h["hour"] < 22)


def test_quotas_findings_and_shared_parts(data: dict[str, Any]) -> None:
    q = data["quotas"]
    reserved = max(m["reserved_gpus"] for m in data["timeline"])
    groups = {cq["name"] for cq in q["cluster_queues"]}
    assert groups == {"serving-queue", "pretraining-queue", "fine-tuning-queue", "batch-inference-queue"}
    nominal = sum(
        f["nominal_quota"]
        for cq in q["cluster_queues"]
        for f in cq["flavors"]
        if f["name"].endswith("-reserved")
    )
    assert 0 < nominal <= reserved
    rules = {f["rule"] for f in data["findings"]}
    assert {"fleet_peaks_do_not_coincide", "fleet_spot_suitability"} <= rules
    assert data["shared"]["storage"]["total_bytes"] > 0
    assert data["shared"]["fabric"]["for_workload"] == "llama3-8b-pretrain"
    assert data["solver"]["integer_variables"] > 0 and "HiGHS" in data["solver"]["method"]


def test_renders_in_every_format(fleet: Any) -> None:
    out = {fmt: render(fleet, fmt) for fmt in FORMATS}
    jsonschema.Draft202012Validator(json_schema()).validate(json.loads(out["json"]))
    for chart in ("fleet-timeline", "fleet-day", "fleet-utilisation", "fleet-cost"):
        assert f'data-chart="{chart}"' in out["html"]
    assert "## Timeline" in out["markdown"] and "## Kueue quotas" in out["markdown"]
    assert "pooled cost" in out["table"] and "Timeline" in out["table"]


def test_single_pool_replans_on_its_accelerator(tmp_path: Path) -> None:
    fleet_file = tmp_path / "fleet.yaml"
    lora = shutil.copy(ROOT / "examples" / "llama3-8b-lora-weekly.yaml", tmp_path)
    fleet_file.write_text(
        "kind: fleet\nstart: 2027-01\nhorizon_months: 3\n"
        f"workloads:\n  - spec: {lora}\n"
        "policy: {pools: single, accelerator: h200-sxm, capacity: [reserved_1y, on_demand]}\n",
        encoding="utf-8",
    )
    p = plan(fleet_file)
    (entry,) = p.entries
    assert entry["plan"]["accelerator"] == "h200-sxm" and "re-planned on h200-sxm" in entry["note"]


def test_offline_inference_needs_its_volume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    batch = shutil.copy(ROOT / "examples" / "fleet-2027" / "nightly-batch.yaml", tmp_path)
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(f"kind: fleet\nstart: 2027-01\nworkloads:\n  - spec: {batch}\n", encoding="utf-8")
    with pytest.raises(BadInput, match="volume"):
        plan(fleet_file)
    assert main(["plan", str(fleet_file)]) == 2
    assert "batch:" in capsys.readouterr().err
