"""Issue #24, "safe in a hostile world": generated hostile inputs for every command and every
file `rightsize` reads or writes, run through the real CLI in a subprocess.

Covered: `plan` (table, json, markdown, html), `estimate`, `plan --prices`, `plan --calibration`,
`export --target slurm|kubernetes|prometheus` with each `--framework` (from a spec and from a
hand-edited plan JSON), fleet `plan` and `export --target kubernetes`, `monitor --from` (hostile
captures and hand-edited plans), `calibrate` (hostile profiles, `--calibration-out`, `-o`), and
output paths in a hostile folder (links out, user files, folders and FIFOs where outputs go,
read-only files, outputs that name an input). Next to the hypothesis tests, fixed matrices make
coverage independent of what the generator draws: one payload per language (shell, Python,
YAML, TOML, PromQL) through every export target and framework, every hostile fleet `spec:`
entry, every hostile place for an input or an output file, durations without a unit, `8k`,
and `-o`'s extension. Self-tests prove the checks fail when they must. Generators:
`hostile_gen.py`; harness and invariants: `hostile_run.py`; the injection test that runs
exported files under stub cluster commands: `hostile_scripts.py`.

Invariants checked on every run (see `hostile_run.problems`): no hang (each run is killed after
RIGHTSIZE_FUZZ_TIMEOUT s, default 15), exit code 0, 1 or 2 with a `rightsize:` message on failure,
no traceback, stderr under 20 kB, the secret planted in `outside/secret.txt` never printed, no
file outside the command's output created, changed or removed and no input changed, and with
exit 0: every number in JSON finite and sane (counts 0..1e7, sizes/times/costs not negative,
low <= high), no `nan`/`inf`/`$-0` in text, and every exported file valid for its language and
inert when run under stub cluster commands (nothing called `pwned` created, no key injected).

Reproducing a failure: hypothesis prints the failing example (the spec, plan or file text) and
the test's message lists every broken invariant with the command line. Runs are derandomized
(the same examples every time). Environment:

- RIGHTSIZE_FUZZ_EXAMPLES=N: N examples per test instead of the small CI counts (a long local run);
- RIGHTSIZE_FUZZ_SHRINK=1: let hypothesis shrink a failing example (slow: each step runs the CLI);
- RIGHTSIZE_FUZZ_LOG=FILE: survey mode, append every problem found to FILE (JSON Lines) and
  keep going instead of failing at the first (for triage, never in CI).
"""

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
from hostile_gen import (
    BAD_NUMBERS,
    FLEET_SPEC_PATHS,
    ROOT,
    SPEC_BASES,
    bad_numbers,
    base_spec,
    hostile_calibration,
    hostile_capture,
    hostile_fleet,
    hostile_names,
    hostile_plan,
    hostile_prices,
    hostile_profile,
    hostile_spec,
    named_spec,
    render_json,
    render_yaml,
)
from hostile_run import Run, Sandbox, problems
from hostile_scripts import check_exports
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

_N = os.environ.get("RIGHTSIZE_FUZZ_EXAMPLES")
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("RIGHTSIZE_FUZZ_SHRINK") else [])  # fmt: skip
settings.register_profile(
    "hostile",
    deadline=None,
    derandomize=True,
    database=None,
    phases=_PHASES,
    print_blob=False,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


def examples(ci: int) -> settings:
    """The test's example count: `ci` unless RIGHTSIZE_FUZZ_EXAMPLES says otherwise."""
    return settings(settings.get_profile("hostile"), max_examples=int(_N) if _N else ci)


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


# ---- spec commands ----------------------------------------------------------------------


@examples(12)
@given(
    case=hostile_spec(), fmt=st.sampled_from(FORMATS), onto_input=st.sampled_from([False, False, False, True])
)
def test_plan_hostile_spec(case: tuple[str, dict[str, Any]], fmt: str, onto_input: bool) -> None:
    _, spec = case
    with Sandbox() as box:
        text = render_yaml(spec)
        box.write("spec.yaml", text)
        out = "spec.yaml" if onto_input else f"out.{ {'table': 'txt', 'markdown': 'md'}.get(fmt, fmt) }"
        run = box.cli("plan", "spec.yaml", "--format", fmt, "-o", out)
        found = problems(run, outputs=() if onto_input else (out,), inputs=("spec.yaml",), json_out=out if fmt == "json" else None)  # fmt: skip
        if run.code == 0 and fmt != "json":
            from hostile_run import text_problems

            found += text_problems((box.work / out).read_text(errors="replace"))
        report(run, found, text)


@examples(8)
@given(case=hostile_spec(["examples/llama2-7b-batch1.yaml", "tests/data/monitor/serving.yaml", "examples/llama3-8b-lora-weekly.yaml"]), gpus=st.sampled_from([8, 8, 1, 0, -8, 1e300, BAD_NUMBERS[10]]))  # fmt: skip
def test_estimate_hostile_spec(case: tuple[str, dict[str, Any]], gpus: Any) -> None:
    _, spec = case
    if isinstance(spec.get("targets"), dict):
        spec["targets"]["gpus"] = gpus
    with Sandbox() as box:
        text = render_yaml(spec)
        box.write("spec.yaml", text)
        run = box.cli("estimate", "spec.yaml", "--format", "json")
        report(run, problems(run, inputs=("spec.yaml",), json_out="-"), text)


@examples(12)
@given(case=named_spec(), target=st.sampled_from(TARGETS), framework=st.sampled_from(FRAMEWORKS))
def test_export_spec_with_hostile_name_runs_nothing(case: tuple[str, dict[str, Any]], target: str, framework: str) -> None:  # fmt: skip
    _, spec = case
    with Sandbox() as box:
        text = render_yaml(spec)
        box.write("spec.yaml", text)
        run = box.cli("export", "spec.yaml", "--target", target, "--framework", framework, "--out", "out")
        found = problems(run, outputs=("out",), inputs=("spec.yaml",))
        if run.code == 0:
            found += check_exports(box.work / "out", box.base)
        report(run, found, text)


@examples(14)
@given(data=st.data(), target=st.sampled_from(TARGETS), framework=st.sampled_from(FRAMEWORKS))
def test_export_hand_edited_plan(base_plans: dict[str, dict[str, Any]], data: st.DataObject, target: str, framework: str) -> None:  # fmt: skip
    plan = data.draw(hostile_plan(base_plans[data.draw(st.sampled_from(["lora", "pretrain", "serving"]))]))
    with Sandbox() as box:
        text = render_json(plan)
        box.write("plan.json", text)
        run = box.cli("export", "plan.json", "--target", target, "--framework", framework, "--out", "out")
        found = problems(run, outputs=("out",), inputs=("plan.json",))
        if run.code == 0:
            found += check_exports(box.work / "out", box.base)
        report(run, found, text)


@examples(12)
@given(name=hostile_names, model=hostile_names, which=st.sampled_from(["name", "model", "both"]), plan=st.sampled_from(["lora", "pretrain", "serving"]), target=st.sampled_from(TARGETS), framework=st.sampled_from(FRAMEWORKS))  # fmt: skip
def test_export_plan_with_hostile_names_runs_nothing(base_plans: dict[str, dict[str, Any]], name: str, model: str, which: str, plan: str, target: str, framework: str) -> None:  # fmt: skip
    """A plan whose `name` and `model` were edited by hand (the model goes into
    `--served-model-name` and PromQL label matchers)."""
    doc = json.loads(json.dumps(base_plans[plan]))
    if which in ("name", "both"):
        doc["name"] = name
    if which in ("model", "both"):
        doc["model"] = model
    with Sandbox() as box:
        text = json.dumps(doc)
        box.write("plan.json", text)
        run = box.cli("export", "plan.json", "--target", target, "--framework", framework, "--out", "out")
        found = problems(run, outputs=("out",), inputs=("plan.json",))
        if run.code == 0:
            found += check_exports(box.work / "out", box.base)
        report(run, found, f"name={name!r} model={model!r}")


# One payload per language, through every target and framework: the injection test does not
# depend on which names the generator happens to draw.
PAYLOADS = ["x$(touch pwned)", "x\ntouch pwned\n", 'x"+__import__("os").system("touch pwned")+"', "x\npwned: 1", 'x"} or vector(1) # pwned', 'x"\npwned = 1\n"']  # fmt: skip
ROUTES = [("serving", t, "auto") for t in TARGETS] + [("lora", t, "auto") for t in TARGETS] + [("pretrain", "slurm", f) for f in FRAMEWORKS[1:]] + [("pretrain", "kubernetes", f) for f in FRAMEWORKS[1:]]  # fmt: skip


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize(("plan", "target", "framework"), ROUTES)
def test_exported_files_run_no_payload(base_plans: dict[str, dict[str, Any]], payload: str, plan: str, target: str, framework: str) -> None:  # fmt: skip
    doc = json.loads(json.dumps(base_plans[plan]))
    doc["name"] = doc["model"] = payload
    with Sandbox() as box:
        box.write("plan.json", json.dumps(doc))
        run = box.cli("export", "plan.json", "--target", target, "--framework", framework, "--out", "out")
        found = problems(run, outputs=("out",), inputs=("plan.json",))
        if run.code == 0:
            found += check_exports(box.work / "out", box.base)
        report(run, found, payload)


# ---- fleet ------------------------------------------------------------------------------


@examples(10)
@given(fleet=hostile_fleet())
def test_fleet_plan_and_export(fleet: dict[str, Any]) -> None:
    with Sandbox() as box:
        box.write("member.yaml", render_yaml(base_spec("examples/fleet-2027/nightly-batch.yaml")))
        text = render_yaml(fleet)
        box.write("fleet.yaml", text)
        inputs = ("fleet.yaml", "member.yaml")
        run = box.cli("plan", "fleet.yaml", "--format", "json", "-o", "fleet-plan.json")
        report(
            run, problems(run, outputs=("fleet-plan.json",), inputs=inputs, json_out="fleet-plan.json"), text
        )
        if run.code != 0:
            return
        run = box.cli("export", "fleet-plan.json", "--target", "kubernetes", "--out", "out")
        found = problems(run, outputs=("out",), inputs=(*inputs, "fleet-plan.json"))
        if run.code == 0:
            found += check_exports(box.work / "out", box.base)
        report(run, found, text)


@pytest.mark.parametrize(
    "entry", [p for p in FLEET_SPEC_PATHS if p != "member.yaml"] + ["@@BOMB@@", "@@DEEPMAP@@"]
)
def test_fleet_spec_entry(entry: str) -> None:
    """Each hostile `spec:` entry: outside the fleet's folder, links out, secrets, devices, bombs."""
    with Sandbox() as box:
        member = render_yaml(base_spec("examples/fleet-2027/nightly-batch.yaml"))
        (box.outside / "valid.yaml").write_text(member)
        (box.work / "link-valid.yaml").symlink_to(box.outside / "valid.yaml")
        fleet = {"kind": "fleet", "name": "f", "start": "2027-01", "horizon_months": 3, "workloads": [{"spec": entry, "name": "batch", "batch": {"requests": "2M", "window": "22:00-06:00"}}], "policy": {"capacity": ["reserved_1y", "on_demand"]}}  # fmt: skip
        text = render_yaml(fleet)
        box.write("fleet.yaml", text)
        run = box.cli("plan", "fleet.yaml", "--format", "json", "-o", "plan.json")
        found = problems(run, outputs=("plan.json",), inputs=("fleet.yaml",), json_out="plan.json")
        if run.code == 0 and entry != "@@DEEPMAP@@":
            found.append(f"exit 0 with `spec: {entry[:40]}` (outside the fleet's folder, or not a spec)")
        report(run, found, text[:2000])


@examples(6)
@given(data=st.data())
def test_export_hand_edited_fleet_plan(base_plans: dict[str, dict[str, Any]], data: st.DataObject) -> None:
    plan = data.draw(hostile_plan(base_plans["fleet"]))
    with Sandbox() as box:
        text = render_json(plan)
        box.write("plan.json", text)
        run = box.cli("export", "plan.json", "--target", "kubernetes", "--out", "out")
        found = problems(run, outputs=("out",), inputs=("plan.json",))
        if run.code == 0:
            found += check_exports(box.work / "out", box.base)
        report(run, found, text)


# ---- monitor ----------------------------------------------------------------------------


@examples(12)
@given(data=st.data(), fmt=st.sampled_from(["json", "json", "table"]), onto_input=st.sampled_from([False, False, False, True]))  # fmt: skip
def test_monitor_hostile_capture(base_plans: dict[str, dict[str, Any]], base_capture: dict[str, Any], data: st.DataObject, fmt: str, onto_input: bool) -> None:  # fmt: skip
    cap = data.draw(hostile_capture(base_capture))
    with Sandbox() as box:
        text = render_json(cap)
        box.write("cap.json", text)
        box.write("plan.json", json.dumps(base_plans["serving"]))
        out = "cap.json" if onto_input else "report.out"
        run = box.cli("monitor", "plan.json", "--from", "cap.json", "--format", fmt, "-o", out)
        found = problems(run, outputs=() if onto_input else (out,), inputs=("cap.json", "plan.json"), json_out=out if fmt == "json" else None)  # fmt: skip
        report(run, found, text[:4000])


@examples(8)
@given(data=st.data())
def test_monitor_hand_edited_plan(base_plans: dict[str, dict[str, Any]], base_capture: dict[str, Any], data: st.DataObject) -> None:  # fmt: skip
    plan = data.draw(hostile_plan(base_plans["serving"]))
    with Sandbox() as box:
        text = render_json(plan)
        box.write("plan.json", text)
        box.write("cap.json", json.dumps(base_capture))
        run = box.cli("monitor", "plan.json", "--from", "cap.json", "--format", "json")
        report(run, problems(run, inputs=("cap.json", "plan.json"), json_out="-"), text)


@examples(5)
@given(case=hostile_spec(["tests/data/monitor/serving.yaml", "examples/llama3-70b-chat-serving.yaml"]))
def test_monitor_hostile_spec(base_capture: dict[str, Any], case: tuple[str, dict[str, Any]]) -> None:
    _, spec = case
    with Sandbox() as box:
        text = render_yaml(spec)
        box.write("spec.yaml", text)
        box.write("cap.json", json.dumps(base_capture))
        run = box.cli("monitor", "spec.yaml", "--from", "cap.json", "--format", "json")
        report(run, problems(run, inputs=("cap.json", "spec.yaml"), json_out="-"), text)


# ---- calibration, prices ----------------------------------------------------------------


@examples(10)
@given(
    profile=hostile_profile(), out=st.sampled_from(["cal.json", "cal.json", "cal.json", "prof.jsonl", "-o"])
)
def test_calibrate_hostile_profile(profile: str, out: str) -> None:
    with Sandbox() as box:
        box.write("prof.jsonl", profile)
        args = (
            ["--calibration-out", "cal.json", "-o", "prof.jsonl"]
            if out == "-o"
            else ["--calibration-out", out]
        )
        run = box.cli("calibrate", "prof.jsonl", "--format", "json", *args)
        json_out = "-" if out == "cal.json" else None
        found = problems(run, outputs=("cal.json",), inputs=("prof.jsonl",), json_out=json_out)
        if run.code == 0 and out == "cal.json":
            from hostile_run import json_problems

            found += json_problems((box.work / "cal.json").read_text())
        report(run, found, profile[:4000])


@examples(10)
@given(calibration=hostile_calibration(), base=st.sampled_from(SPEC_BASES))
def test_plan_hostile_calibration(calibration: str, base: str) -> None:
    with Sandbox() as box:
        box.write("cal.json", calibration)
        box.write("spec.yaml", render_yaml(base_spec(base)))
        run = box.cli("plan", "spec.yaml", "--calibration", "cal.json", "--format", "json")
        report(run, problems(run, inputs=("cal.json", "spec.yaml"), json_out="-"), calibration[:4000], base)


@examples(12)
@given(
    prices=hostile_prices(), onto_input=st.sampled_from([False, False, False, True]), serving=st.booleans()
)
def test_plan_hostile_prices(prices: str, onto_input: bool, serving: bool) -> None:
    base = "examples/llama3-70b-chat-serving.yaml" if serving else "examples/llama3-8b-lora-weekly.yaml"
    with Sandbox() as box:
        box.write("prices.yaml", prices)
        box.write("spec.yaml", render_yaml(base_spec(base)))
        out = "prices.yaml" if onto_input else "plan.json"
        run = box.cli("plan", "spec.yaml", "--prices", "prices.yaml", "--format", "json", "-o", out)
        found = problems(run, outputs=() if onto_input else (out,), inputs=("prices.yaml", "spec.yaml"), json_out=None if onto_input else out)  # fmt: skip
        report(run, found, prices[:4000])


@examples(6)
@given(case=hostile_spec(["examples/llama3-8b-lora-weekly.yaml", "examples/llama3-70b-chat-serving.yaml"]), value=bad_numbers)  # fmt: skip
def test_plan_prices_in_spec(case: tuple[str, dict[str, Any]], value: Any) -> None:
    _, spec = case
    spec["prices"] = {"h100-sxm": {"on_demand_usd_per_gpu_hour": value}, "power_usd_per_kwh": value}
    with Sandbox() as box:
        text = render_yaml(spec)
        box.write("spec.yaml", text)
        run = box.cli("plan", "spec.yaml", "--format", "json")
        report(run, problems(run, inputs=("spec.yaml",), json_out="-"), text)


# ---- output paths in a hostile folder ---------------------------------------------------


def _lay_out(box: Sandbox, world: str, name: str) -> None:
    """Put something hostile where `out/NAME` (an export output) will be written."""
    out = box.work / "out"
    out.mkdir()
    target = out / name
    if world == "link-out":
        target.symlink_to(box.outside / "victim.txt")
    elif world == "user-file":
        target.write_text("# the user's own file\n")
    elif world == "folder":
        target.mkdir()
    elif world == "fifo":
        os.mkfifo(target)


EXPORT_OUTPUTS = [("lora", "slurm", "train.sbatch"), ("serving", "kubernetes", "serving.yaml"), ("serving", "prometheus", "rightsize-rules.yml"), ("fleet", "kubernetes", "kueue-fleet.yaml")]  # fmt: skip


@pytest.mark.parametrize("world", ["link-out", "user-file", "folder", "fifo"])
@pytest.mark.parametrize(("plan", "target", "name"), EXPORT_OUTPUTS)
def test_export_into_a_hostile_folder(base_plans: dict[str, dict[str, Any]], world: str, plan: str, target: str, name: str) -> None:  # fmt: skip
    with Sandbox() as box:
        box.write("plan.json", json.dumps(base_plans[plan]))
        _lay_out(box, world, name)
        run = box.cli("export", "plan.json", "--target", target, "--out", "out", timeout=15)
        found = problems(run, outputs=("out",), inputs=("plan.json",))
        if (
            world == "user-file"
            and run.code == 0
            and "user's own" not in (box.work / "out" / name).read_text()
        ):
            found.append(f"exit 0 after replacing the user's out/{name} (no --force)")
        report(run, found)


def _output_world(box: Sandbox, world: str) -> str:
    if world == "link-out":
        (box.work / "report.json").symlink_to(box.outside / "victim.txt")
    elif world == "read-only":
        (box.work / "report.json").write_text("read-only\n")
        (box.work / "report.json").chmod(0o444)
    elif world == "read-only-dir":
        (box.work / "ro").mkdir()
        (box.work / "ro").chmod(0o555)
        return "ro/report.json"
    elif world == "folder":
        (box.work / "report.json").mkdir()
    elif world == "fifo":
        os.mkfifo(box.work / "report.json")
    return "report.json"


@pytest.mark.parametrize("world", ["link-out", "read-only", "read-only-dir", "folder", "fifo"])
@pytest.mark.parametrize("command", ["plan", "calibrate"])
def test_output_file_in_a_hostile_place(world: str, command: str) -> None:
    if world.startswith("read-only") and os.geteuid() == 0:
        pytest.skip("as root every file is writable: permissions cannot be tested")
    with Sandbox() as box:
        box.write("spec.yaml", render_yaml(base_spec("examples/llama2-7b-batch1.yaml")))
        out = _output_world(box, world)
        if command == "plan":
            run = box.cli("plan", "spec.yaml", "--format", "json", "-o", out, timeout=15)
        else:
            box.write("prof.jsonl", "\n".join(json.dumps(r) for r in _profile_records()) + "\n")
            run = box.cli("calibrate", "prof.jsonl", "--calibration-out", out, timeout=15)
        allowed = (out,) if world not in ("link-out", "read-only", "read-only-dir") else ()
        found = problems(run, outputs=allowed, inputs=("spec.yaml", "prof.jsonl"))
        if world.startswith("read-only") and run.code == 0:
            found.append(f"exit 0 writing {out}, which the user cannot write")
        report(run, found)


def _profile_records() -> list[dict[str, Any]]:
    from hostile_gen import _comms_records

    header = {"type": "header", "schema_version": 1, "kind": "comms", "config": {"backend": "nccl", "device": "cuda"}, "environment": {"gpu_name": "NVIDIA H100 80GB HBM3"}}  # fmt: skip
    return [header, *_comms_records()]


@pytest.mark.parametrize("kind", ["fifo", "folder", "link-secret", "huge"])
@pytest.mark.parametrize("flag", ["spec", "--prices", "--calibration", "--from"])
def test_input_file_in_a_hostile_place(base_plans: dict[str, dict[str, Any]], kind: str, flag: str) -> None:
    with Sandbox() as box:
        spec = box.write("spec.yaml", render_yaml(base_spec("examples/llama2-7b-batch1.yaml")))
        bad = box.work / "bad.in"
        if kind == "fifo":
            os.mkfifo(bad)
        elif kind == "folder":
            bad.mkdir()
        elif kind == "link-secret":
            bad.symlink_to(box.outside / "secret.txt")
        else:  # 32 MiB of YAML that is slow to parse: a size cap must refuse it before reading
            bad.write_text("k: 1\n" * (32 * 2**20 // 5))
        if flag == "spec":
            argv = ["plan", "bad.in"]
        elif flag == "--from":
            box.write("plan.json", json.dumps(base_plans["serving"]))
            argv = ["monitor", "plan.json", "--from", "bad.in"]
        else:
            argv = ["plan", spec.name, flag, "bad.in"]
        run = box.cli(*argv, timeout=15)
        found = problems(run, inputs=("spec.yaml",))
        if run.code == 0:
            found.append(f"exit 0 reading a {kind} as {flag}")
        if kind in ("fifo", "folder") and "no such file" in run.stderr.lower():
            found.append(f"a {kind} given as {flag} is reported as 'No such file'")
        report(run, found)


@pytest.mark.parametrize("flag", ["--save", "-o"])
def test_monitor_never_writes_onto_the_plan_it_reads(base_plans: dict[str, dict[str, Any]], prometheus_url: str, flag: str) -> None:  # fmt: skip
    with Sandbox() as box:
        box.write("plan.json", json.dumps(base_plans["serving"]))
        run = box.cli("monitor", "plan.json", "--prometheus", prometheus_url, "--window", "2h", "--end", "1800000000", "--save", "cap.json", flag, "plan.json")  # fmt: skip
        report(run, problems(run, outputs=("cap.json",), inputs=("plan.json",)))


@pytest.mark.parametrize(("out", "starts"), [("plan.html", "<"), ("plan.json", "{"), ("plan.md", "#")])
def test_output_extension_chooses_the_format(out: str, starts: str) -> None:
    """`-o plan.html` without `--format` writes HTML, not the terminal table."""
    with Sandbox() as box:
        box.write("spec.yaml", render_yaml(base_spec("examples/llama2-7b-batch1.yaml")))
        run = box.cli("plan", "spec.yaml", "-o", out)
        found = problems(run, outputs=(out,), inputs=("spec.yaml",))
        written = (box.work / out).read_text(errors="replace").lstrip() if (box.work / out).is_file() else ""
        if run.code == 0 and not written.startswith(starts):
            found.append(f"-o {out} without --format wrote {written[:40]!r}")
        report(run, found)


DURATIONS = [("tests/data/monitor/serving.yaml", ("slo", "ttft")), ("tests/data/monitor/serving.yaml", ("slo", "tpot")), ("examples/llama3-8b-lora-weekly.yaml", ("infrastructure", "schedule", "turnaround")), ("examples/llama3-70b-pretrain.yaml", ("targets", "deadline"))]  # fmt: skip


@pytest.mark.parametrize(("base", "path"), DURATIONS)
def test_duration_without_a_unit_is_refused(base: str, path: tuple[str, ...]) -> None:
    """`tpot: 50` is not silently 50 seconds: refused, with the fix (`50ms`)."""
    spec = base_spec(base)
    node = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = 50
    with Sandbox() as box:
        box.write("spec.yaml", render_yaml(spec))
        run = box.cli("plan", "spec.yaml", "--format", "json")
        found = problems(run, inputs=("spec.yaml",), json_out="-")
        if run.code != 2 or path[-1] not in run.stderr:
            found.append(
                f"`{'.'.join(path)}: 50` (no unit) gave exit {run.code}, not a refusal naming the field"
            )
        report(run, found)


def test_seq_len_in_k_is_said() -> None:
    """`seq_len: 8k` is 8,192 or refused as ambiguous, and either way the user is told."""
    spec = base_spec("examples/llama3-8b-lora-weekly.yaml")
    spec["training"]["seq_len"] = "8k"
    with Sandbox() as box:
        box.write("spec.yaml", render_yaml(spec))
        run = box.cli("plan", "spec.yaml", "--format", "json")
        found = problems(run, inputs=("spec.yaml",), json_out="-")
        if run.code == 0:
            seq = json.loads(run.stdout).get("spec", {}).get("training", {}).get("seq_len")
            if seq != 8192 or "8k" not in run.stderr:
                found.append(
                    f"seq_len: 8k planned as {seq!r} with {'no' if '8k' not in run.stderr else 'a'} note"
                )
        elif run.code != 2 or "seq_len" not in run.stderr:
            found.append(f"seq_len: 8k gave exit {run.code} without naming seq_len")
        report(run, found)


# ---- the harness itself -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "caught"),
    [
        ("train.sbatch", "#!/bin/bash\n#SBATCH --job-name=x\ntouch pwned\n", "payload"),
        ("job.sh", 'srun --nodes=1 bash -c "touch pwned"\n', "payload"),
        (
            "nemo_train.py",
            "import nemo_run as run\nname = 'x' + __import__('os').system('touch pwned')\n",
            "payload",
        ),
        (
            "rules.yml",
            'groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up{model="x"} or pwned\n',
            "PromQL",
        ),
        ("job.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\n", "DNS-1123"),
        ("job.toml", 'name = "x"\npwned = 1\n', "injected"),
        (
            "train.sbatch",
            "#!/bin/bash\nset -euo pipefail\nNAME='x$(touch pwned)'\nsrun python train.py \"$NAME\"\n",
            None,
        ),
        (
            "job.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec: {containers: [{command: [bash, -c], args: ['echo \"$(echo x)\"']}]}\n",
            None,
        ),  # fmt: skip
    ],
)
def test_harness_catches_what_it_must(name: str, text: str, caught: str | None) -> None:
    """The checks can fail: a payload that runs, a broken-out PromQL matcher, an invalid
    Kubernetes name and an injected TOML key are reported; quoted names are not."""
    with Sandbox() as box:
        out = box.work / "out"
        out.mkdir()
        (out / name).write_text(text)
        found = check_exports(out, box.base)
    if caught is None:
        assert found == []
    else:
        assert any(caught in f for f in found), found


@pytest.mark.parametrize(
    ("doc", "caught"),
    [
        ('{"best": {"gpus": 116000000}}', "count"),
        ('{"x": {"time_s": NaN}}', "not finite"),
        ('{"replicas_range": [5, 3]}', "low end"),
        ('{"r": {"lower_rps": 2.0, "upper_rps": 1.0}}', "above"),
        ('{"cost": {"usd_per_million": 1.1e28}}', "absurd"),
        ('{"rate_mean_rps": [-3.0]}', "negative"),
        ('{"sensitivity": {"time_change_fraction_low": 0.2, "time_change_fraction_high": -0.1}}', None),
        ('{"capex_breakdown_usd": {"nodes": 31872000.0}, "fabric": {"max_nodes": 1000000000}}', None),
    ],
)
def test_figure_checks_catch_what_they_must(doc: str, caught: str | None) -> None:
    from hostile_run import json_problems

    found = json_problems(doc)
    assert (found == []) if caught is None else any(caught in f for f in found), found
