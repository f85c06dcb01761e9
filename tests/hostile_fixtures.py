"""Shared pieces of the hostile-input tests (issue #24): how a test reports what it found, the
base plans every hand-edited plan starts from (a LoRA fine-tune, a Megatron pre-train, a
serving deployment and a fleet, planned once per module), and a stand-in Prometheus on
loopback that records the base monitor capture."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from hostile_gen import ROOT, base_spec
from hostile_run import Run, Sandbox


def report(run: Run, found: list[str], *inputs: str) -> None:
    """Fail with every problem of `run` (or log them in survey mode)."""
    if not found:
        return
    log = os.environ.get("RIGHTSIZE_FUZZ_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            for problem in found:
                fh.write(json.dumps({"argv": run.argv, "problem": problem, "code": run.code, "input": [i[:2000] for i in inputs]}) + "\n")  # fmt: skip
        return
    lines = "\n  - ".join(found)
    raise AssertionError(f"rightsize {' '.join(run.argv)} (exit {run.code}):\n  - {lines}")


FORMATS = ["table", "json", "markdown", "html"]
FRAMEWORKS = ["auto", "megatron", "torchtitan", "nemo"]
TARGETS = ["slurm", "kubernetes", "prometheus"]


# ---- base plans and capture (planned once per module) -----------------------------------


@pytest.fixture(scope="module")
def base_plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Plan JSON of a LoRA fine-tune, a Megatron pre-train, a serving deployment and a fleet."""
    from rightsize.cli.main import main

    out: dict[str, dict[str, Any]] = {}
    folder = tmp_path_factory.mktemp("plans")
    fleet = _small_fleet(folder)
    for key, spec in [
        ("lora", ROOT / "examples/llama3-8b-lora-weekly.yaml"),
        ("pretrain", ROOT / "examples/gpt3-175b-megatron.yaml"),
        ("serving", ROOT / "tests/data/monitor/serving.yaml"),
        ("fleet", fleet),
    ]:
        one = folder / f"{key}.yaml"
        if key != "fleet":
            one.write_text(yaml.safe_dump(base_spec(str(spec.relative_to(ROOT)))))
        else:
            one = fleet
        assert main(["plan", str(one), "--format", "json", "-o", str(folder / f"{key}.json")]) == 0
        out[key] = json.loads((folder / f"{key}.json").read_text())
    return out


def _small_fleet(folder: Path) -> Path:
    member = base_spec("examples/fleet-2027/nightly-batch.yaml")
    (folder / "member.yaml").write_text(yaml.safe_dump(member))
    fleet = {
        "kind": "fleet",
        "name": "fuzz-fleet",
        "start": "2027-01",
        "horizon_months": 3,
        "workloads": [
            {"spec": "member.yaml", "name": "batch", "batch": {"requests": "2M", "window": "22:00-06:00"}},
            {"spec": base_spec("tests/data/monitor/serving.yaml"), "name": "chat", "priority": 100},
        ],
        "policy": {
            "capacity": ["reserved_1y", "on_demand"],
            "utilisation_target": 0.85,
            "safety_margin": 0.1,
        },
    }
    path = folder / "fleet.yaml"
    path.write_text(yaml.safe_dump(fleet))
    return path


class _Prometheus(BaseHTTPRequestHandler):
    """Answers every range query with one plausible series, so `--save` records a capture."""

    def do_GET(self) -> None:
        from urllib.parse import parse_qs, urlparse

        q = parse_qs(urlparse(self.path).query)
        if "query_range" in self.path:
            start, end, step = (float(q[k][0]) for k in ("start", "end", "step"))
            n = int((end - start) / step) + 1
            values = [[start + i * step, "0.5"] for i in range(n)]
            data = {
                "resultType": "matrix",
                "result": [{"metric": {"gpu": "0", "Hostname": "n1"}, "values": values}],
            }
            body = json.dumps({"status": "success", "data": data})
        else:
            body = json.dumps({"status": "error", "errorType": "bad_data", "error": "no names"})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def prometheus_url() -> Iterator[str]:
    """A stand-in Prometheus on loopback."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def base_capture(base_plans: dict[str, dict[str, Any]], prometheus_url: str) -> dict[str, Any]:
    """A monitor capture recorded from the stand-in Prometheus."""
    with Sandbox() as box:
        box.write("plan.json", json.dumps(base_plans["serving"]))
        run = box.cli("monitor", "plan.json", "--prometheus", prometheus_url, "--window", "2h", "--end", "1800000000", "--save", "cap.json", "--format", "json")  # fmt: skip
        assert run.code == 0, run.stderr
        return dict(json.loads((box.work / "cap.json").read_text()))
