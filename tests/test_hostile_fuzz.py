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
from typing import Any

from hostile_fixtures import FORMATS, FRAMEWORKS, TARGETS, base_capture, base_plans, prometheus_url, report
from hostile_gen import (
    BAD_NUMBERS,
    OUTSIDE_SPECS,
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
from hostile_run import Sandbox, json_problems, problems, text_problems
from hostile_scripts import check_exports
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

__all__ = ["base_capture", "base_plans", "prometheus_url"]  # fixtures, imported for pytest

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


# ---- fleet ------------------------------------------------------------------------------


@examples(10)
@given(fleet=hostile_fleet())
def test_fleet_plan_and_export(fleet: dict[str, Any]) -> None:
    with Sandbox() as box:
        member = render_yaml(base_spec("examples/fleet-2027/nightly-batch.yaml"))
        box.write("member.yaml", member)
        (box.outside / "valid.yaml").write_text(member)
        (box.work / "link-valid.yaml").symlink_to(box.outside / "valid.yaml")
        text = render_yaml(fleet)
        box.write("fleet.yaml", text)
        inputs = ("fleet.yaml", "member.yaml")
        run = box.cli("plan", "fleet.yaml", "--format", "json", "-o", "fleet-plan.json")
        found = problems(run, outputs=("fleet-plan.json",), inputs=inputs, json_out="fleet-plan.json")
        outside = [w["spec"] for w in fleet["workloads"] if w.get("spec") in OUTSIDE_SPECS]
        if run.code == 0 and outside:
            found.append(f"exit 0 reading {outside[0]}, a spec outside the fleet's folder")
        report(run, found, text)
        if run.code != 0:
            return
        run = box.cli("export", "fleet-plan.json", "--target", "kubernetes", "--out", "out")
        found = problems(run, outputs=("out",), inputs=(*inputs, "fleet-plan.json"))
        if run.code == 0:
            found += check_exports(box.work / "out", box.base)
        report(run, found, text)


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
