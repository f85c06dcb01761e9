"""Issue #24's fixed matrices next to the generated inputs of `test_hostile_fuzz.py`, so coverage
does not depend on what hypothesis draws: one injection payload per language (shell, Python,
YAML, TOML, PromQL) through every export target and framework, run under stub cluster
commands; every hostile fleet `spec:` entry (outside the folder, links out, a credentials file,
devices, bombs); every hostile place for an output (a link out, a user's file, a folder, a FIFO,
a read-only file or folder, the command's own input) and for an input (a FIFO, a folder, a link
to a secret, a 32 MiB file); durations without a unit, `seq_len: 8k` and `-o`'s extension.
Then self-tests that prove the checks of `hostile_run` and `hostile_scripts` fail when they must.
The invariants and how to reproduce a failure are in `test_hostile_fuzz.py`'s docstring."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hostile_fixtures import FRAMEWORKS, TARGETS, base_capture, base_plans, prometheus_url, report
from hostile_gen import FLEET_SPEC_PATHS, base_spec, comms_records, render_yaml
from hostile_run import Sandbox, json_problems, problems
from hostile_scripts import check_exports

__all__ = ["base_capture", "base_plans", "prometheus_url"]  # fixtures, imported for pytest


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
    header = {"type": "header", "schema_version": 1, "kind": "comms", "config": {"backend": "nccl", "device": "cuda"}, "environment": {"gpu_name": "NVIDIA H100 80GB HBM3"}}  # fmt: skip
    return [header, *comms_records()]


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
    found = json_problems(doc)
    assert (found == []) if caught is None else any(caught in f for f in found), found
