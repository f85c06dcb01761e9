"""The planner's web API (rightsize.ui.app) through Starlette's test client: a plan and its
headline, the CLI's own errors by field, the guards on what may post, and the downloads."""

from __future__ import annotations

import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
with warnings.catch_warnings():  # newer Starlette prefers httpx2 for its test client; httpx still works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from rightsize.cli.main import build_parser, main  # noqa: E402
from rightsize.errors import BadInput  # noqa: E402
from rightsize.ui.app import MAX_BODY_BYTES, create_app  # noqa: E402
from rightsize.ui.server import bound_socket, starting_spec  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LORA = ROOT / "examples" / "llama3-8b-lora-weekly.yaml"
JSON_POST = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def client() -> Any:
    text, source, base = starting_spec(str(LORA))
    with TestClient(create_app(text, source, base), base_url="http://127.0.0.1") as c:
        yield c


def _post(client: Any, url: str, text: str, **kw: Any) -> Any:
    return client.post(
        url, content=json.dumps({"yaml": text}), headers={**JSON_POST, **kw.pop("headers", {})}, **kw
    )


def test_start_gives_the_spec_file(client: Any) -> None:
    r = client.get("/api/start")
    assert r.status_code == 200
    assert r.json() == {"yaml": LORA.read_text(encoding="utf-8"), "source": str(LORA)}
    page = client.get("/")
    assert page.status_code == 200 and '<form id="spec-form"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/static/app.js").status_code == 200


def test_schema_is_the_cli_schema(client: Any) -> None:
    from rightsize.spec.load import spec_json_schema

    assert client.get("/api/schema/inference").json() == spec_json_schema("inference")
    r = client.get("/api/schema/trainin")
    assert r.status_code == 422 and "did you mean training?" in r.json()["error"]["message"].lower()


def test_plan_matches_the_cli(client: Any, tmp_path: Path) -> None:
    r = _post(client, "/api/plan", LORA.read_text(encoding="utf-8"))
    assert r.status_code == 200, r.text
    body = r.json()
    out = tmp_path / "plan.json"
    assert main(["plan", str(LORA), "--format", "json", "-o", str(out)]) == 0
    cli = json.loads(out.read_text(encoding="utf-8"))
    assert body["plan"]["best"]["accelerator"] == cli["best"]["accelerator"]
    assert body["plan"]["best"]["gpus"] == cli["best"]["gpus"]
    figures = {f["id"]: f for f in body["headline"]}
    assert list(figures) == ["accelerator", "count", "time", "gpu_hours", "cost", "power"]
    assert figures["accelerator"]["text"] == cli["best"]["accelerator"]
    assert figures["count"]["value"] == cli["best"]["gpus"]
    assert figures["power"]["value"] == pytest.approx(cli["sizing"]["power"]["facility_power_w"])
    # a weekly job is costed per month, but its GPU-hours are one run's, and say so
    assert figures["gpu_hours"]["label"] == "GPU-hours (per run)"
    assert figures["gpu_hours"]["value"] == pytest.approx(cli["best"]["gpu_hours"])
    assert figures["cost"]["label"] == "cost (cloud on demand, per month)"
    sections = {s["id"]: s for s in body["document"]["sections"]}
    for f in figures.values():  # every headline figure drills down to a section of the report
        assert f["section"] in sections, f
    assert sections["sizing-power"]["sources"], "the power section names its sources"
    assert figures["time"]["sections"][:2] == ["sizing-run", "step"] and "step" in sections
    charts = {c["name"] for s in sections.values() for c in s["charts"]}
    assert {"step-breakdown", "memory", "pareto"} <= charts
    assert body["spec_data"]["targets"]["objective"] == "cost"


def test_bad_input_is_the_cli_message_at_its_field(client: Any, tmp_path: Path, capsys: Any) -> None:
    bad = tmp_path / "bad.yaml"
    text = LORA.read_text(encoding="utf-8").replace("turnaround: 24h", "turnaround: 24 parsecs")
    bad.write_text(text, encoding="utf-8")
    app = create_app(text, str(bad), tmp_path)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        r = _post(c, "/api/plan", text)
    assert r.status_code == 200  # an answer the page shows, not a failed request
    error = r.json()["error"]
    assert error["exit_code"] == 2
    assert main(["plan", str(bad)]) == 2
    assert error["message"] + "\n" == capsys.readouterr().err  # word for word what the CLI says
    assert [f["path"] for f in error["fields"]] == ["infrastructure.schedule.turnaround"]
    assert error["fields"][0]["message"] in error["message"]
    assert r.json()["spec_data"]["infrastructure"]["schedule"]["turnaround"] == "24 parsecs"


def test_infeasible(client: Any) -> None:
    text = (ROOT / "examples" / "llama3-70b-pretrain.yaml").read_text(encoding="utf-8")
    text = text.replace("deadline: 60d", "deadline: 2d")
    r = _post(client, "/api/plan", text)
    assert r.status_code == 200 and r.json()["error"]["exit_code"] == 1
    assert r.json()["error"]["message"].startswith("rightsize: infeasible: The deadline of 2.0 days")
    assert _post(client, "/api/download/plan/json", text).status_code == 409


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("a: [" * 40 + "]" * 40, "nested too deeply"),
        ("x: &a [1, 2]\n" + "".join(f"y{i}: &a{i} [*a, *a, *a, *a]\n" for i in range(12)), None),
        ("name: " + "x" * (2**20 + 10), "bytes"),
        ("model: [unclosed", "malformed YAML"),
    ],
)
def test_posted_text_has_the_spec_file_caps(client: Any, text: str, expect: str | None) -> None:
    r = _post(client, "/api/plan", text)
    assert r.status_code == 200 and r.json()["error"]["exit_code"] == 2
    assert _post(client, "/api/download/jobs", text).status_code == 422
    if expect:
        assert expect in r.json()["error"]["message"]


def test_guards(client: Any) -> None:
    assert (
        client.post("/api/plan", content="yaml: x", headers={"Content-Type": "text/plain"}).status_code == 415
    )
    assert _post(client, "/api/plan", "x: 1", headers={"Origin": "http://evil.example"}).status_code == 403
    assert _post(client, "/api/plan", "x: 1", headers={"Origin": "http://127.0.0.1"}).status_code != 403
    big = b'{"yaml": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}'
    assert client.post("/api/plan", content=big, headers=JSON_POST).status_code == 413
    assert client.post("/api/plan", content=b"[1]", headers=JSON_POST).status_code == 400
    rebinding = TestClient(client.app, base_url="http://attacker.example")
    assert rebinding.get("/api/start").status_code == 400  # a name that resolves here is not enough


def test_downloads(client: Any) -> None:
    text = LORA.read_text(encoding="utf-8")
    r = _post(client, "/api/download/plan/json", text)
    assert (
        r.status_code == 200 and 'filename="llama3-8b-lora-weekly.json"' in r.headers["content-disposition"]
    )
    assert json.loads(r.text)["kind"] == "training_plan"
    assert _post(client, "/api/download/plan/html", text).text.lstrip().lower().startswith("<!doctype html")
    assert "# " in _post(client, "/api/download/plan/markdown", text).text
    assert _post(client, "/api/download/plan/table", text).status_code == 200
    assert _post(client, "/api/download/plan/pdf", text).status_code == 422
    z = zipfile.ZipFile(io.BytesIO(_post(client, "/api/download/jobs", text).content))
    names = z.namelist()
    assert any(n.startswith("slurm/") and n.endswith(".sbatch") for n in names), names
    assert any(n.startswith("kubernetes/") for n in names) and any(n.startswith("prometheus/") for n in names)
    manifest = json.loads(z.read("manifest.json"))
    assert manifest["left_out"] == {} and set(manifest["targets"]) == {"slurm", "kubernetes", "prometheus"}
    sbatch = next(n for n in names if n.endswith(".sbatch"))
    assert (z.getinfo(sbatch).external_attr >> 16) & 0o111


def test_fleet_view() -> None:
    fleet = ROOT / "examples" / "fleet-2027.yaml"
    text, source, base = starting_spec(str(fleet))
    with TestClient(create_app(text, source, base), base_url="http://127.0.0.1") as c:
        r = _post(c, "/api/plan", text)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["kind"] == "fleet"
        shares = body["fleet"]["shares"]
        assert {s["workload"] for s in shares} == {w["name"] for w in body["plan"]["workloads"]}
        assert sum(s["share"] for s in shares) == pytest.approx(1.0)
        charts = {c["name"] for s in body["document"]["sections"] for c in s["charts"]}
        assert {"fleet-timeline", "fleet-day"} <= charts
        z = zipfile.ZipFile(io.BytesIO(_post(c, "/api/download/jobs", text).content))
        manifest = json.loads(z.read("manifest.json"))
        assert list(manifest["targets"]) == ["kubernetes"] and set(manifest["left_out"]) == {
            "slurm",
            "prometheus",
        }


def test_command_line() -> None:
    args = build_parser("ui").parse_args(["ui", "spec.yaml", "--port", "8123", "--no-browser"])
    assert (args.spec, args.port, args.no_browser) == ("spec.yaml", 8123, True)
    with bound_socket(None) as s:
        host, port = s.getsockname()
        assert host == "127.0.0.1" and 0 < port < 65536
        with pytest.raises(BadInput, match="Cannot listen"):
            bound_socket(port)  # taken
    with pytest.raises(BadInput, match="not a port"):
        bound_socket(70000)
    with pytest.raises(BadInput):
        starting_spec("/nonexistent/spec.yaml")


def test_the_starter_spec_plans(tmp_path: Path) -> None:
    text, source, base = starting_spec(None)
    assert (source, base) == ("(from the browser)", Path.cwd())
    with TestClient(create_app(text, source, tmp_path), base_url="http://127.0.0.1") as c:
        body = _post(c, "/api/plan", text).json()
    assert "error" not in body, body.get("error")
    assert body["plan"]["kind"] == "training_plan" and body["headline"][1]["value"] >= 1


@pytest.mark.parametrize(
    ("example", "time_label"),
    [
        ("resnet50-imagenet-train", "time to train"),
        ("dlrm-criteo-serving", "latency (p99)"),
        ("llama3-70b-chat-serving", "time to first token (p95)"),
    ],
)
def test_headline_of_every_kind(example: str, time_label: str) -> None:
    """Each headline figure is the plan's own figure at its path, for every workload kind."""
    from rightsize.api import plan
    from rightsize.report.render import result_dict
    from rightsize.ui.headline import plan_headline

    data = result_dict(plan(ROOT / "examples" / f"{example}.yaml"))
    figures = {f["id"]: f for f in plan_headline(data)}
    assert figures["time"]["label"] == time_label
    for f in figures.values():
        held: Any = data
        for part in f["path"].split("."):
            held = held[part]
        assert f["value"] == (held if f["id"] != "accelerator" else None)
        assert f["text"] not in ("", "-") and f["beside"], f
    assert figures["accelerator"]["text"] == data["best"]["accelerator"]
    assert figures["count"]["value"] == data["best"]["gpus"]
