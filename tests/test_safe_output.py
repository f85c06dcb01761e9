"""Issue 24, safe output: every file rightsize writes (`-o`, `--save`, `export --out DIR`,
calibration files, profiler records) goes through one path that is atomic, never follows a
link, never writes onto the command's own inputs, respects permissions (even for root:
a 0444 file is replaced only with --force), keeps existing export files unless --force,
records a manifest, never hangs on a FIFO, and lets `-o`'s extension pick the format."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rightsize._version import __version__
from rightsize.cli.main import main
from rightsize.errors import BadInput

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
SMALL = "model: llama3-8b\ntraining: {seq_len: 4096, global_batch: 64, train_tokens: 1B}\n"
IS_ROOT = os.geteuid() == 0


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The CLI as a subprocess, bounded in time: where a FIFO could block, a hang fails the test."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "rightsize.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(scope="module")
def serving_plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "serving-plan.json"
    path.write_text(json.dumps(plan_dict("llama3-70b-chat-serving")))
    return path


def export(plan: Path, out: Path, target: str = "slurm", *more: str) -> list[str]:
    return ["export", str(plan), "--target", target, "--out", str(out), *more]


def listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# ------------------------------------------------------------------------------ export --out DIR


def test_export_writes_every_file_and_a_manifest_last(
    serving_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "job"
    code, printed, err = run(capsys, *export(serving_plan, out))
    assert code == 0, err
    manifest_path = out / "rightsize-manifest-slurm.json"
    assert printed.splitlines()[-1] == str(manifest_path)  # written last
    manifest = json.loads(manifest_path.read_text())
    assert manifest["kind"] == "rightsize_export_manifest" and manifest["rightsize"] == __version__
    assert manifest["plan"] == "llama3-70b-chat" and manifest["plan_kind"] == "serving_plan"
    names = {f["name"] for f in manifest["files"]}
    assert names == {p.name for p in out.iterdir()} - {manifest_path.name} == {"serve.sbatch"}
    for entry in manifest["files"]:
        data = (out / entry["name"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data)
    script = out / "serve.sbatch"
    assert stat.S_IMODE(script.stat().st_mode) & 0o111 == 0o111  # set before the rename
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_export_refuses_a_link_with_an_output_name_and_writes_nothing(
    serving_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "precious.sh"
    outside.write_text("#!/bin/sh\necho mine\n")
    outside.chmod(0o600)
    out = tmp_path / "job"
    out.mkdir()
    (out / "serve.sbatch").symlink_to(outside)
    for extra in ((), ("--force",)):
        code, _, err = run(capsys, *export(serving_plan, out, "slurm", *extra))
        assert code == 2 and "symbolic link" in err
        assert outside.read_text() == "#!/bin/sh\necho mine\n"
        assert stat.S_IMODE(outside.stat().st_mode) == 0o600  # never chmod'ed through the link
        assert sorted(p.name for p in out.iterdir()) == ["serve.sbatch"]  # no manifest, nothing else


def test_export_keeps_files_it_did_not_write_unless_forced(
    serving_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rules"
    out.mkdir()
    (out / "rightsize-rules.yml").write_text("groups: [] # mine\n")
    (out / "rightsize-rules.test.yml").write_text("# mine too\n")
    before = listing(out)
    code, _, err = run(capsys, *export(serving_plan, out, "prometheus"))
    assert code == 2 and "2 files" in err and "would be overwritten" in err
    assert "rightsize-rules.yml" in err and "rightsize-rules.test.yml" in err and "--force" in err
    assert listing(out) == before  # refused before anything was written
    code, _, err = run(capsys, *export(serving_plan, out, "prometheus", "--force"))
    assert code == 0, err
    assert "# mine" not in (out / "rightsize-rules.yml").read_text()
    assert (out / "rightsize-manifest-prometheus.json").exists()


def test_export_again_updates_its_own_files_but_not_edited_ones(
    serving_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "job"
    assert run(capsys, *export(serving_plan, out))[0] == 0
    first = listing(out)
    # the same export again: identical or unchanged since the last export, so no --force needed
    code, _, err = run(capsys, *export(serving_plan, out))
    assert code == 0, err
    # (the re-export stamps its own export time: the manifest to keep is this one, not the first,
    # or the test fails whenever the two exports fall in different seconds)
    first = listing(out)
    # an edited script is the user's now: kept unless --force
    script = out / "serve.sbatch"
    script.write_text(script.read_text() + "# my change\n")
    code, _, err = run(capsys, *export(serving_plan, out))
    assert code == 2 and "serve.sbatch" in err and "rightsize-manifest" not in err.split("\n")[0]
    assert script.read_text().endswith("# my change\n")
    # a different target into the same folder keeps the first target's files and manifest
    assert run(capsys, *export(serving_plan, out, "prometheus"))[0] == 0
    assert (out / "rightsize-manifest-slurm.json").read_bytes() == first["rightsize-manifest-slurm.json"]
    assert (out / "rightsize-manifest-prometheus.json").exists()


def test_export_identical_read_only_file_is_fine_a_different_one_needs_force(
    serving_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rightsize.export.plan_view as plan_view

    monkeypatch.setattr(plan_view, "_today", lambda: "2026-11-25T00:00:00Z")  # identical exports
    out = tmp_path / "rules"
    assert run(capsys, *export(serving_plan, out, "prometheus"))[0] == 0
    rules = out / "rightsize-rules.yml"
    rules.chmod(0o444)
    assert run(capsys, *export(serving_plan, out, "prometheus"))[0] == 0  # same contents: left alone
    rules.chmod(0o644)
    rules.write_text(rules.read_text() + "# edited\n")
    rules.chmod(0o444)
    code, _, err = run(capsys, *export(serving_plan, out, "prometheus", "--force"))
    assert code == 0, err
    assert "# edited" not in rules.read_text()


def test_export_read_only_file_of_an_earlier_export_needs_force(
    serving_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "job"
    assert run(capsys, *export(serving_plan, out))[0] == 0
    script = out / "serve.sbatch"
    script.chmod(0o555)  # the earlier export's file, unchanged, but made read-only
    manifest = json.loads((out / "rightsize-manifest-slurm.json").read_text())
    manifest["files"][0]["mode"] = "0555"
    (out / "rightsize-manifest-slurm.json").write_text(json.dumps(manifest))
    # a re-export whose script differs (another day, another header) must not replace it silently
    script_bytes = script.read_bytes()
    plan = json.loads(serving_plan.read_text())
    plan["name"] = "another-name"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(plan))
    code, _, err = run(capsys, *export(other, out))
    assert code == 2 and "read-only" in err and "--force" in err
    assert script.read_bytes() == script_bytes


def test_export_refuses_a_folder_or_a_fifo_with_an_output_name_without_hanging(
    serving_plan: Path, tmp_path: Path
) -> None:
    out = tmp_path / "job"
    out.mkdir()
    (out / "serve.sbatch").mkdir()
    done = cli(*export(serving_plan, out, "slurm", "--force"))
    assert done.returncode == 2 and "is a folder" in done.stderr and "Traceback" not in done.stderr
    (out / "serve.sbatch").rmdir()
    os.mkfifo(out / "serve.sbatch")
    done = cli(*export(serving_plan, out, "slurm", "--force"), timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stderr
    assert stat.S_ISFIFO((out / "serve.sbatch").lstat().st_mode)
    os.mkfifo(out / "rightsize-manifest-prometheus.json")
    done = cli(*export(serving_plan, out, "prometheus"), timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["rightsize-manifest-prometheus.json", "serve.sbatch"]


def test_export_never_overwrites_its_input_even_with_force(
    serving_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "job"
    out.mkdir()
    plan = out / "rightsize-manifest-slurm.json"  # the plan saved under the manifest's name
    plan.write_bytes(serving_plan.read_bytes())
    code, _, err = run(capsys, *export(plan, out, "slurm", "--force"))
    assert code == 2 and "is the input file" in err
    assert plan.read_bytes() == serving_plan.read_bytes() and sorted(os.listdir(out)) == [plan.name]


def test_export_that_fails_midway_leaves_whole_files_and_no_manifest(
    serving_plan: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import rightsize.atomic_write as aw

    out = tmp_path / "rules"
    real_replace = os.replace
    calls = {"n": 0}

    def full_after_one(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(aw.os, "replace", full_after_one)
    code, _, err = run(capsys, *export(serving_plan, out, "prometheus"))
    assert code == 2 and "disk is full" in err
    files = sorted(os.listdir(out))
    assert len(files) == 1 and not files[0].startswith(".")  # one whole file, no temporary, no manifest
    assert "manifest" not in files[0]


# ------------------------------------------------------------------------------ never onto an input


def test_plan_output_onto_its_prices_calibration_or_a_hard_link_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SMALL)
    prices = tmp_path / "prices.yaml"
    prices.write_text("h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}\n")
    code, _, err = run(capsys, "plan", str(spec), "--prices", str(prices), "-o", str(prices))
    assert code == 2 and "is the input file" in err
    assert prices.read_text().startswith("h100-sxm")
    link = tmp_path / "hard.yaml"
    os.link(spec, link)
    code, _, err = run(capsys, "estimate", str(spec), "-o", str(link), "--force")
    assert code == 2 and "the same file" in err and spec.read_text() == SMALL
    dotted = tmp_path / "sub" / ".." / "spec.yaml"
    (tmp_path / "sub").mkdir()
    code, _, err = run(capsys, "plan", str(spec), "-o", str(dotted))
    assert code == 2 and "is the input file" in err and spec.read_text() == SMALL


def test_validate_and_calibrate_never_write_onto_their_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "cases.csv"
    csv.write_text("id\n")
    code, _, err = run(capsys, "validate", str(csv), "-o", str(csv))
    assert code == 2 and "is the input file" in err and csv.read_text() == "id\n"
    profile = tmp_path / "p.jsonl"
    profile.write_text('{"type": "header", "schema_version": 1}\n')
    for argv in (
        ["-o", str(profile)],
        ["--calibration-out", str(profile)],
        ["--calibration-out", str(tmp_path / "c.json"), "-o", str(tmp_path / "c.json")],
    ):
        code, _, err = run(capsys, "calibrate", str(profile), *argv)
        assert code == 2 and ("is the input file" in err or "are the same file" in err), err
    assert profile.read_text() == '{"type": "header", "schema_version": 1}\n'
    assert not (tmp_path / "c.json").exists()


def test_monitor_save_and_output_never_overwrite_inputs_or_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    capture = tmp_path / "capture.json"
    capture.write_text("{}")
    both = tmp_path / "both.txt"
    cases = [
        ["--from", str(capture), "-o", str(capture)],
        ["--from", str(capture), "-o", str(plan)],
        ["--prometheus", "http://127.0.0.1:9", "--save", str(plan)],
        ["--prometheus", "http://127.0.0.1:9", "--save", str(both), "-o", str(both)],
    ]
    for argv in cases:
        code, _, err = run(capsys, "monitor", str(plan), *argv)
        assert code == 2 and ("is the input file" in err or "are the same file" in err), (argv, err)
    assert plan.read_text() == capture.read_text() == "{}" and not both.exists()


# ------------------------------------------------------------------------------ permissions


def test_a_read_only_output_is_replaced_only_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "models.txt"
    out.write_text("keep me")
    out.chmod(0o444)
    code, _, err = run(capsys, "models", "-o", str(out))
    assert code == 2 and "read-only" in err and "--force" in err
    assert out.read_text() == "keep me"
    code, _, err = run(capsys, "models", "-o", str(out), "--force")
    assert code == 0, err
    assert "llama3-8b" in out.read_text() and stat.S_IMODE(out.stat().st_mode) == 0o444


def test_a_read_only_folder_is_refused_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        code, _, err = run(capsys, "models", "-o", str(folder / "sub" / "models.txt"))
        assert code == 2 and "read-only to you" in err and str(folder) in err
        assert list(folder.iterdir()) == []
        if IS_ROOT:  # root may write there when told to
            assert run(capsys, "models", "-o", str(folder / "models.txt"), "--force")[0] == 0
    finally:
        folder.chmod(0o755)


def test_monitor_save_refuses_a_read_only_capture_before_asking_prometheus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    save = tmp_path / "capture.json"
    save.write_text("old")
    save.chmod(0o444)
    code, _, err = run(
        capsys, "monitor", str(plan), "--prometheus", "http://127.0.0.1:9", "--save", str(save)
    )
    assert code == 2 and "read-only" in err and save.read_text() == "old"


# ------------------------------------------------------------------------------ -o picks the format


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("plan.html", lambda t: t.lstrip().lower().startswith("<!doctype html")),
        ("plan.htm", lambda t: t.lstrip().lower().startswith("<!doctype html")),
        ("plan.md", lambda t: t.startswith("# ")),
        ("plan.markdown", lambda t: t.startswith("# ")),
        ("plan.json", lambda t: json.loads(t)["kind"] == "training_plan"),
        ("plan.txt", lambda t: not t.startswith(("{", "#", "<"))),
        ("plan.out", lambda t: not t.startswith(("{", "#", "<"))),
        ("PLAN.JSON", lambda t: json.loads(t)["kind"] == "training_plan"),
    ],
)
def test_output_extension_chooses_the_format(
    name: str, check: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SMALL + "targets: {accelerators: [h100-sxm]}\n")
    out = tmp_path / name
    code, _, err = run(capsys, "plan", str(spec), "-o", str(out))
    assert code == 0, err
    assert callable(check) and check(out.read_text()), out.read_text()[:200]
    assert "note" not in err


def test_format_wins_over_the_extension_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "catalog.html"
    code, _, err = run(capsys, "catalog", "--format", "json", "-o", str(out))
    assert code == 0 and "note" in err and "--format json" in err
    json.loads(out.read_text())
    # a command without HTML keeps its default, and says so
    code, _, err = run(capsys, "models", "-o", str(out))
    assert code == 0 and "writes no html" in err and not out.read_text().lstrip().startswith("<")
    code, _, err = run(capsys, "models", "-o", str(tmp_path / "models.json"))
    assert code == 0 and json.loads((tmp_path / "models.json").read_text())


# ------------------------------------------------------------------------------ profiler records


def test_profile_out_fifo_device_folder_or_foreign_file_is_refused_before_measuring(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "records.jsonl"
    os.mkfifo(fifo)
    serve = ["profile", "serve", "--url", "http://127.0.0.1:9/v1", "--max-requests", "1"]
    for target in (str(fifo), "/dev/null", str(tmp_path)):
        done = cli(*serve, "--out", target, "--force", timeout=60)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "not a regular file" in done.stderr or "is a folder" in done.stderr, done.stderr
        assert "requests" not in done.stdout  # nothing was measured
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for extra in ((), ("--force",), ("--resume",)):
        done = cli(*serve, "--out", str(notes), *extra)
        assert done.returncode == 2 and "is not a profile" in done.stderr, done.stderr
    assert notes.read_text() == "my notes\n"


def test_profile_out_read_only_link_or_same_as_output_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve = ["profile", "serve", "--url", "http://127.0.0.1:9/v1", "--max-requests", "1"]
    records = tmp_path / "r.jsonl"
    records.write_text('{"type": "header", "schema_version": 1, "kind": "serve"}\n')
    records.chmod(0o444)
    code, _, err = run(capsys, *serve, "--out", str(records))
    assert code == 2 and "read-only" in err
    link = tmp_path / "link.jsonl"
    link.symlink_to(records)
    code, _, err = run(capsys, *serve, "--out", str(link), "--force")
    assert code == 2 and ("symbolic link" in err or "same file" in err)
    both = tmp_path / "both.jsonl"
    code, _, err = run(capsys, *serve, "--out", str(both), "-o", str(both))
    assert code == 2 and "are the same file" in err and not both.exists()


def test_profile_writer_never_blocks_on_a_fifo(tmp_path: Path) -> None:
    """The record writer itself (used directly by `profile kernels` and the distributed
    profilers) refuses a FIFO instead of waiting for a reader."""
    fifo = tmp_path / "k.jsonl"
    os.mkfifo(fifo)
    code = (
        "import sys; from pathlib import Path\n"
        "from rightsize.errors import BadInput\n"
        "from rightsize.profile.jsonl import ProfileWriter\n"
        "try:\n    ProfileWriter(Path(sys.argv[1]))\nexcept BadInput:\n    sys.exit(2)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", code, str(fifo)], timeout=60, env=env, capture_output=True)
    assert done.returncode == 2, done.stderr


def test_check_records_out_accepts_new_empty_and_earlier_profiles(tmp_path: Path) -> None:
    from rightsize.profile.jsonl import check_records_out

    check_records_out(tmp_path / "new.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    check_records_out(tmp_path / "empty.jsonl")
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text('{"type": "header", "schema_version": 1}\n{"type": "result"}\n')
    check_records_out(earlier)
    for text in ("[1]\n", '{"type": "result"}\n', "{" * 100_000, "\x00\xff"):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text, encoding="latin-1")
        with pytest.raises(BadInput, match="not a profile"):
            check_records_out(bad)
