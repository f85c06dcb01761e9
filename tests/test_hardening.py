"""Issue #15: no traceback, no hang, no nonsense, nothing lost. One regression test per failure
the issue found (each failed on the code before the fix)."""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path

import pytest

from rightsize.cli.main import main

SMALL = "model: llama3-8b\ntraining: {seq_len: 4096, global_batch: 64, train_tokens: 1B}\n"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------------------ spec edges


@pytest.mark.parametrize("model", ["mixtral-8x7b", "deepseek-v3"])
@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_lora_and_qlora_on_moe_models_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, method: str
) -> None:
    text = (
        f"model: {model}\ntraining: {{seq_len: 4096, global_batch: 64, train_tokens: 100M, method: {method}}}\n"
        "targets: {accelerators: [h100-sxm]}\n"
    )
    code, out, err = run(capsys, "plan", spec(tmp_path, text), "--format", "json")
    assert code == 0, err
    best = json.loads(out)["best"]
    assert best["tokens_per_s_per_gpu"] > 0 and best["time_to_train_s"] > 0


def test_a_model_string_longer_than_a_file_name_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "plan", spec(tmp_path, SMALL.replace("llama3-8b", "a" * 300)))
    assert code == 2 and "model:" in err and "Unknown model preset" in err
    assert "a" * 100 not in err  # the name is shortened in the message
    code, _, err = run(capsys, "plan", spec(tmp_path, SMALL.replace("llama3-8b", "b" * 5000)))
    assert code == 2 and "model" in err


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("training.moe_capacity_factor", ".nan"),
        ("training.moe_capacity_factor", ".inf"),
        ("infrastructure.growth.horizon_years", ".nan"),
        ("infrastructure.margins.safety_margin", "-.inf"),
        ("training.train_tokens", "1e308"),
        ("training.train_tokens", "1e30"),
        ("targets.deadline", "1e300"),
        ("training.seq_len", "1e30"),
    ],
)
def test_non_finite_and_absurd_numbers_are_refused_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: str
) -> None:
    section, *rest = field.split(".")
    inner = f"{rest[0]}: {value}" if len(rest) == 1 else f"{rest[0]}: {{{rest[1]}: {value}}}"
    base = "model: llama3-8b\n" + (
        "training: {seq_len: 4096, global_batch: 64, train_tokens: 1B, " + inner + "}\n"
        if section == "training" and "train_tokens" not in inner and "seq_len" not in inner
        else ""
    )
    if section == "training" and ("train_tokens" in inner or "seq_len" in inner):
        key = rest[0]
        values = {"seq_len": "4096", "global_batch": "64", "train_tokens": "1B", key: value}
        base += "training: {" + ", ".join(f"{k}: {v}" for k, v in values.items()) + "}\n"
    elif section != "training":
        base += "training: {seq_len: 4096, global_batch: 64, train_tokens: 1B}\n"
        base += f"{section}: {{{inner}}}\n"
    code, _, err = run(capsys, "plan", spec(tmp_path, base))
    assert code == 2, err
    assert field in err


def test_an_accelerator_listed_400_times_is_searched_once_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = SMALL + "targets: {accelerators: [" + ", ".join(["h100-sxm"] * 400) + "]}\n"
    code, out, err = run(capsys, "plan", spec(tmp_path, text), "--format", "json")
    assert code == 0, err
    assert "note: targets.accelerators: 399 duplicate entries removed" in err
    plan = json.loads(out)
    assert plan["best"]["accelerator"] == "h100-sxm"
    text = SMALL + "targets: {accelerators: [" + ", ".join(f"x{i}" for i in range(101)) + "]}\n"
    code, _, err = run(capsys, "plan", spec(tmp_path, text))
    assert code == 2 and "targets.accelerators" in err


SERVING = """kind: inference
model: llama3-8b
traffic: {{rate: 1, prompt_tokens: {{kind: empirical, file: '{file}'}}, output_tokens: 64}}
slo: {{ttft: 2s, tpot: 100ms}}
targets: {{accelerators: [h100-sxm]}}
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX devices and FIFOs")
def test_length_files_are_regular_capped_and_never_quoted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    secret = tmp_path / "secret.txt"
    secret.write_text("9hunter2-password\n")
    big = tmp_path / "big.txt"
    big.write_bytes(b"1\n" * (9 * 2**20))
    for file, why in [
        ("/dev/zero", "not a regular file"),
        (str(fifo), "not a regular file"),
        (str(big), "is at most"),
        (str(secret), "line 1"),
        (str(tmp_path), "folder"),
    ]:
        code, _, err = run(capsys, "plan", spec(tmp_path, SERVING.format(file=file)))
        assert code == 2, err
        assert "traffic.prompt_tokens" in err and why in err
        assert "hunter2" not in err


def test_a_global_batch_beyond_the_whole_run_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "model: llama3-8b\ntraining: {seq_len: 4096, global_batch: 65536, train_tokens: 1M}\n"
    code, _, err = run(capsys, "plan", spec(tmp_path, text + "targets: {deadline: 1d}\n"))
    assert code == 2 and "train_tokens" in err and "one optimizer step" in err


def test_deep_big_and_exploding_yaml_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = SMALL + "name: " + "[" * 600 + "]" * 600 + "\n"
    code, _, err = run(capsys, "plan", spec(tmp_path, deep))
    assert code == 2 and "nested too deeply" in err
    big = SMALL + "#" + "x" * (2**20 + 10) + "\n"
    code, _, err = run(capsys, "plan", spec(tmp_path, big))
    assert code == 2 and "at most 1.0 MiB" in err
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i, name in enumerate("bcdefg"):
        prev = "abcdefg"[i]
        bomb += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]\n"
    code, _, err = run(capsys, "plan", spec(tmp_path, bomb))
    assert code == 2 and "too many values" in err
    code, _, err = run(capsys, "plan", "/dev/zero")
    assert code == 2 and "not a regular file" in err


# ------------------------------------------------------------------------------ exit codes


def test_an_internal_error_exits_3_with_one_line_and_a_traceback_only_with_debug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rightsize.api

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(rightsize.api, "plan", broken)
    path = spec(tmp_path, SMALL)
    code = main(["plan", path])
    err = capsys.readouterr().err
    assert code == 3
    assert err.startswith("rightsize: internal error: ZeroDivisionError: float division by zero\n")
    assert "issue tracker" in err and "Traceback" not in err and len(err.splitlines()) == 2
    code = main(["plan", path, "--debug"])
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" in err and "broken" in err


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for line in ("0  success", "1  infeasible", "2  bad input", "3  internal error"):
        assert line in out
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "3 an internal error" in readme


# ------------------------------------------------------------------------------ output files


def test_output_into_a_missing_folder_is_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "a" / "b" / "models.txt"
    code, _, err = run(capsys, "models", "-o", str(out))
    assert code == 0, err
    assert "llama3-8b" in out.read_text()
    assert [p.name for p in out.parent.iterdir()] == ["models.txt"]  # no temporary file left


def test_output_onto_a_folder_a_link_or_a_file_under_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "models", "-o", str(tmp_path))
    assert code == 2 and "is a folder" in err
    target = tmp_path / "precious.txt"
    target.write_text("precious")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    code, _, err = run(capsys, "models", "-o", str(link))
    assert code == 2 and "symbolic link" in err
    assert target.read_text() == "precious" and link.is_symlink()
    code, _, err = run(capsys, "models", "-o", str(target / "under.txt"))
    assert code == 2 and ("Cannot create the folder" in err or "Not a directory" in err)


def test_a_full_disk_is_a_clear_error_and_the_old_file_survives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rightsize.atomic_write as aw

    out = tmp_path / "report.txt"
    out.write_text("the earlier report")
    real_write = os.write
    calls = {"n": 0}

    def full(fd: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data)[:100])  # a partial write, then the disk fills

    monkeypatch.setattr(aw.os, "write", full)
    code, _, err = run(capsys, "models", "-o", str(out))
    assert code == 2 and "the disk is full" in err and "keeps its previous contents" in err
    assert out.read_text() == "the earlier report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.txt"]


def test_an_interrupted_write_leaves_the_old_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rightsize.atomic_write as aw

    out = tmp_path / "report.txt"
    out.write_text("the earlier report")

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(aw.os, "fsync", interrupted)
    assert main(["models", "-o", str(out)]) == 130
    assert out.read_text() == "the earlier report"


def test_output_keeps_the_mode_of_the_file_it_replaces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.txt"
    out.write_text("old")
    out.chmod(0o640)
    code, _, _ = run(capsys, "models", "-o", str(out))
    assert code == 0 and (out.stat().st_mode & 0o777) == 0o640


# ------------------------------------------------------------------------------ renderers

HOSTILE = "[/] [bold]x <script>alert(1)</script> *em* [l](http://e) | # `c`"


def test_markdown_escapes_the_spec_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = f'name: "{HOSTILE}"\n' + SMALL + "targets: {accelerators: [h100-sxm]}\n"
    code, out, err = run(capsys, "plan", spec(tmp_path, text), "--format", "markdown")
    assert code == 0, err
    title = out.splitlines()[0]
    assert "<script>" not in out and "\\[l\\](http" in title and "\\*em\\*" in title
    assert title.startswith("# Plan: \\[/\\] \\[bold\\]x \\<script\\>")


def test_terminal_tables_take_cells_literally_and_stay_fast() -> None:
    import time

    from rightsize.report.document import Document, Section, Table
    from rightsize.report.terminal import render_terminal

    table = Table(["a", "[/]"], [["[/] [red]", "x" * 100_000]] * 50, "[bold]t[/bold")
    doc = Document(kind="plan", title="t", sections=[Section("s", "s", tables=[table], brief=True)])
    started = time.perf_counter()
    text = render_terminal(doc)
    assert time.perf_counter() - started < 5
    assert "[/] [red]" in text and "..." in text


@pytest.mark.parametrize(
    ("example", "key", "value", "field"),
    [
        (
            "dlrm-criteo-serving.yaml",
            ("embeddings", "rows_multiplier"),
            2**31 - 1,
            "embeddings.rows_multiplier",
        ),
        ("dlrm-criteo-serving.yaml", ("inference", "qps"), "15T", "inference.qps"),
        ("llama2-7b-batch1.yaml", ("serving", "batch"), "1e17", "serving.batch"),
        ("llama3-70b-pretrain.yaml", ("training", "train_tokens"), "1e17", "training.train_tokens"),
    ],
)
def test_valid_but_absurd_numbers_are_refused_with_the_reason(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    example: str,
    key: tuple[str, str],
    value: object,
    field: str,
) -> None:
    """Found by the fuzz run: these planned with exit 0 and figures such as 1e58 s of latency."""
    import yaml

    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "examples" / example).read_text())
    data[key[0]][key[1]] = value
    code, _, err = run(capsys, "plan", spec(tmp_path, yaml.safe_dump(data)))
    assert code == 2, err
    assert field in err and "more than" in err


def test_a_recommendation_batch_beyond_the_whole_run_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "examples" / "dlrm-criteo-train.yaml").read_text())
    data["train"]["samples"] = 1000
    code, _, err = run(capsys, "plan", spec(tmp_path, yaml.safe_dump(data)))
    assert code == 2 and "train.global_batch" in err and "not finish a step" in err


def test_output_onto_the_input_spec_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, SMALL)
    code, _, err = run(capsys, "plan", path, "-o", path)
    assert code == 2 and "would destroy the input" in err
    assert Path(path).read_text() == SMALL
