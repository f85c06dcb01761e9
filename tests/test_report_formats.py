"""Reports in every format: the bundled examples' Markdown and JSON carry every section,
the JSON validates against the published schema, the terminal summary is short and plain,
the HTML is self-contained with its charts inline; profiles, validation results and other
plan kinds render too."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rightsize.advise.view import sizing_dict
from rightsize.api import plan as run_plan
from rightsize.cli.main import main
from rightsize.constants import REPORT_SCHEMA_VERSION
from rightsize.errors import BadInput
from rightsize.report.render import FORMATS, document, json_schema, render, render_profile, result_dict
from rightsize.search.serving import ServingPlan
from rightsize.search.train import TrainingPlan
from rightsize.search.uncertainty import serving_uncertainty, training_uncertainty
from rightsize.spec import load_spec

ROOT = Path(__file__).resolve().parent.parent
# Single-workload examples; fleets (kind: fleet) have their own tests (test_fleet_*.py).
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml") if "\nkind: fleet" not in p.read_text())
VALIDATOR = jsonschema.Draft202012Validator(json_schema())

PROFILE: dict[str, Any] = {
    "kind": "profile",
    "name": "llama3-8b on cpu",
    "model": "llama3-8b",
    "device": "cpu",
    "memory_capacity_bytes": 64 * 2**30,
    "environment": {"torch": "2.13.0", "python": "3.11"},
    "points": [
        {"batch": b, "seq": s, "step_s": 0.01 * b * s / 512, "peak_memory_bytes": 2**30 * (1 + b * s / 1024)}
        for s in (512, 1024)
        for b in (1, 2, 4, 8)
    ],
    "telemetry": [
        {"t_s": t * 0.5, "gpu_util_fraction": 0.8, "cpu_util_fraction": 0.3 + 0.01 * t, "power_w": 300.0 + t}
        for t in range(20)
    ],
}


def _attach_uncertainty(plan: Any, path: Path) -> Any:
    if getattr(plan, "uncertainty", None) is None:
        spec = load_spec(path)
        if isinstance(plan, TrainingPlan):
            plan.uncertainty = training_uncertainty(plan, spec, samples=400)  # type: ignore[attr-defined]
        elif isinstance(plan, ServingPlan):
            plan.uncertainty = serving_uncertainty(plan, spec, samples=400)  # type: ignore[attr-defined]
    return plan


@pytest.fixture(scope="module")
def plans() -> dict[str, Any]:
    return {p.stem: _attach_uncertainty(run_plan(p), p) for p in EXAMPLES}


def _headings(md: str) -> set[str]:
    return {line[3:].strip() for line in md.splitlines() if line.startswith("## ")}


def _expected_sections(plan: Any) -> set[str]:
    common = {"Advisor: findings"}
    sizing = sizing_dict(plan)
    titles = {
        "nodes": "Nodes and racks",
        "fabric": "Network fabric",
        "storage": "Storage",
        "power": "Power and cooling",
        "cost": "Cost",
        "growth": "Growth plan",
        "sensitivity": "Sensitivity",
    }
    common |= {t for k, t in titles.items() if sizing.get(k)}
    if isinstance(plan, TrainingPlan):
        # the front says what it plots: cost where every point has a price, else GPU-hours
        shown = [plan.best, *plan.pareto, *(a for a, _ in plan.alternatives)]
        priced = all(c.cost_usd is not None for c in shown)
        # in the platform's own word: "Memory per chip" on a TPU plan (catalog.platforms)
        from rightsize.catalog.platforms import say_units, unit_noun

        noun = unit_noun(plan.best.accelerator)
        return (
            common
            | {
                "Step time breakdown",
                say_units("Memory per GPU", noun),
                "Alternatives",
                say_units(f"Pareto front: time against {'cost' if priced else 'GPU-hours'}", noun),
                "Uncertainty: P10, P50, P90",
            }
            | _checklist_titles()
        )
    if isinstance(plan, ServingPlan):
        return common | {"Latency", "Alternatives", "Uncertainty: P10, P50, P90"} | _checklist_titles()
    return common


def _checklist_titles() -> set[str]:
    return {
        "SCALE review (scale, compute, interconnect, latency and locality, economics)",
        "DEPLOY checklist (define, estimate, pick platform, load-test, observe, yield plan)",
    }


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_example_markdown_has_every_section(plans: dict[str, Any], name: str) -> None:
    plan = plans[name]
    md = render(plan, "markdown")
    assert md.startswith("# ")
    missing = _expected_sections(plan) - _headings(md)
    assert not missing, missing
    if isinstance(plan, TrainingPlan | ServingPlan):
        assert "- [x] " in md and "- [ ] " in md  # answered and still-to-decide checklist items
        assert "**Decision:**" in md and "| key number | value |" in md


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_example_json_validates_and_has_every_section(plans: dict[str, Any], name: str) -> None:
    plan = plans[name]
    d = json.loads(render(plan, "json"))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(d)]
    assert not errors, errors[:5]
    assert d["schema_version"] == REPORT_SCHEMA_VERSION and isinstance(d["findings"], list)
    if sizing_dict(plan):
        assert isinstance(d["sizing"], dict) and d["sizing"]
    if isinstance(plan, TrainingPlan | ServingPlan):
        assert {"best", "alternatives", "pareto", "uncertainty", "checklists"} <= set(d)
        assert {i["checklist"] for i in d["checklists"]["SCALE"] + d["checklists"]["DEPLOY"]} == {
            "SCALE",
            "DEPLOY",
        }


def test_terminal_summary_is_short_and_plain(plans: dict[str, Any]) -> None:
    text = render(plans["llama3-70b-pretrain"], "table")
    assert "\x1b[" not in text  # no colour codes in a pipe
    assert max(len(line) for line in text.splitlines()) <= 110
    for part in (
        "Chosen:",
        "step breakdown",
        "top findings",
        "Uncertainty",
        "SCALE review",
        "DEPLOY checklist",
    ):
        assert part in text, part
    assert len(text.splitlines()) < 160


def test_serving_terminal_summary(plans: dict[str, Any]) -> None:
    text = render(plans["llama3-70b-chat-serving"], "table")
    assert "replicas x tp" in text and "latency" in text and "Advisor" in text
    assert "replica(s)" not in text  # issue 13: plurals agree with their counts


def test_html_is_self_contained_with_inline_charts(plans: dict[str, Any]) -> None:
    html = render(plans["llama3-70b-pretrain"], "html")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "<script" not in html.lower()
    # nothing to fetch: the only URL is the SVG namespace
    urls = set(re.findall(r"https?://[^\s\"'<>]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}, urls
    names = set(re.findall(r'data-chart="([^"]+)"', html))
    assert {"step-breakdown", "memory", "pareto", "uncertainty"} <= names
    for name in names:
        body = html.split(f'data-chart="{name}"', 1)[1].split("</svg>", 1)[0]
        assert re.search(r"<(rect|circle|path)\b", body), name


def test_document_charts_match_sizing(plans: dict[str, Any]) -> None:
    plan = plans["llama3-70b-pretrain"]
    names = {c.name for c in document(plan).charts}
    s = sizing_dict(plan)
    if s.get("growth", {}).get("stages"):
        assert "growth" in names
    if s.get("sensitivity"):
        assert "sensitivity" in names


def test_profile_renders_in_every_format() -> None:
    for fmt in FORMATS:
        assert render_profile(PROFILE, fmt).strip()
    html = render_profile(PROFILE, "html")
    for chart in ("scaling", "scaling-throughput", "scaling-memory", "telemetry", "telemetry-power"):
        assert f'data-chart="{chart}"' in html, chart
    d = json.loads(render_profile(PROFILE, "json"))
    assert not list(VALIDATOR.iter_errors(d)) and d["kind"] == "profile"
    md = render_profile(PROFILE, "markdown")
    assert {"Scaling curves", "Telemetry", "Environment"} <= _headings(md)


def test_profile_from_jsonl_records() -> None:
    records = [{"kind": "profile", "name": "x", "device": "cpu"}, *PROFILE["points"], *PROFILE["telemetry"]]
    d = result_dict(records)
    assert d["kind"] == "profile" and len(d["points"]) == 8 and len(d["telemetry"]) == 20
    assert 'data-chart="telemetry"' in render_profile(records, "html")


@dataclass
class OtherPlan:
    """Stands in for a vision or recommendation plan: to_dict and render_text."""

    sizing: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "vision_plan",
            "name": "resnet",
            "images_per_s": 1234.5,
            "best": {"gpus": 8, "accelerator": "h100-sxm"},
            "alternatives": [{"gpus": 16, "accelerator": "a100-sxm-80gb"}],
        }

    def render_text(self, title: str) -> str:
        return f"{title}: resnet on 8 GPUs"


def test_other_plan_kinds_render_generically() -> None:
    p = OtherPlan()
    assert render(p, "table").startswith("Plan: resnet on 8 GPUs")
    md = render(p, "markdown")
    assert "Best" in _headings(md) and "1,234" in md
    d = json.loads(render(p, "json"))
    assert (
        d["kind"] == "vision_plan"
        and d["schema_version"] == REPORT_SCHEMA_VERSION
        and not list(VALIDATOR.iter_errors(d))
    )
    assert "<svg" not in render(p, "html") or 'data-chart="' in render(p, "html")


def test_validation_result_formats() -> None:
    result = {
        "rows": [
            {
                "id": "a",
                "metric": "step_time_s",
                "published": 1.0,
                "predicted": 1.1,
                "error": 0.1,
                "file": "x.csv",
            },
            {
                "id": "b",
                "metric": "step_time_s",
                "published": 2.0,
                "predicted": None,
                "error": None,
                "reason": "why",
                "file": "x.csv",
            },
        ],
        "summary": {
            "step_time_s": {"n": 1, "median_abs_error": 0.1, "max_abs_error": 0.1, "not_predicted": 1}
        },
    }
    assert "median |error| 10.0%" in render(result, "table")
    d = json.loads(render(result, "json"))
    assert d["kind"] == "validation" and not list(VALIDATOR.iter_errors(d))
    assert 'data-chart="validation-errors"' in render(result, "html")
    assert "Cases" in _headings(render(result, "markdown"))


def test_unknown_format_is_bad_input(plans: dict[str, Any]) -> None:
    with pytest.raises(BadInput):
        render(plans["gpt3-175b-megatron"], "pdf")


def test_cli_writes_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(ROOT / "examples" / "gpt3-175b-megatron.yaml")
    assert main(["estimate", spec, "--format", "html"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("<!DOCTYPE html>")
    target = tmp_path / "plan.md"
    assert main(["estimate", spec, "--format", "markdown", "-o", str(target)]) == 0
    out, _ = capsys.readouterr()
    assert out == "" and target.read_text().startswith("# Estimate: ")
