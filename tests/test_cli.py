"""The command line as a person uses it: exit codes, messages, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rightsize.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_plan_example_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", str(EX / "llama3-70b-pretrain.yaml"), "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["schema_version"] == 2 and d["kind"] == "training_plan"
    best = d["best"]
    assert best["time_to_train_days"] <= 60
    step = best["step"]
    parts = sum(v for k, v in step.items() if k != "step_time_s")
    assert parts == pytest.approx(step["step_time_s"])
    assert best["memory_per_gpu"]["total_bytes"] <= best["memory_per_gpu"]["capacity_bytes"]


def test_estimate_fixed_gpt3(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "estimate", str(EX / "gpt3-175b-megatron.yaml"))
    assert code == 0
    assert "TP8 PP8x3v DP16" in out and "step breakdown" in out


def test_estimate_needs_fixed_hardware(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "estimate", str(EX / "llama3-70b-pretrain.yaml"))
    assert code == 2 and "To fix" in err


@pytest.mark.parametrize(
    ("yaml_text", "expect"),
    [
        (
            "model: llama3-8b\ntraining: {seq_len: 4096, global_batch: 64, train_tokens: 1T}\n"
            "targets: {accelerators: [h100], deadline: 30d}\n",
            "h100-sxm",
        ),
        ("model: llama3-8b\ntraining: {seq_len: 4096, global_batch: [oops\n", "line"),
        ("model: llama3-8bb\ntraining: {seq_len: 4096, global_batch: 64}\n", "llama3-8b"),
        ("model: llama3-8b\ntraining: {seq_len: -4096, global_batch: 64}\n", "seq_len"),
        (
            "model: llama3-8b\ntraining: {seq_len: 4096, global_batch: 64, train_tokens: 1T}\n"
            "targets: {deadline: 30x}\n",
            "deadline",
        ),
        (
            "model: llama3-8b\ntraining: {seq_len: 4096, global_batch: 64}\n"
            "targets: {gpus: 64}\nparallel: {tp: 8, pp: 4, dp: 4}\n",
            "gpus",
        ),
    ],
)
def test_bad_input_exits_2_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml_text: str, expect: str
) -> None:
    p = tmp_path / "spec.yaml"
    p.write_text(yaml_text)
    code, _, err = run(capsys, "plan", str(p))
    assert code == 2
    assert expect in err and "Traceback" not in err


def test_infeasible_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "spec.yaml"
    p.write_text(
        "model: llama3.1-405b\ntraining: {seq_len: 8192, global_batch: 16, train_tokens: 1B}\n"
        "targets: {accelerators: [l4], gpus: 8}\n"
    )
    code, _, err = run(capsys, "plan", str(p))
    assert code == 1 and "infeasible" in err and "To fix" in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "no/such/spec.yaml")
    assert code == 2 and "no such file" in err.lower() and "Traceback" not in err


@pytest.mark.parametrize("cmd", ["catalog", "models"])
def test_listings(capsys: pytest.CaptureFixture[str], cmd: str) -> None:
    code, out, _ = run(capsys, cmd)
    assert code == 0 and len(out.splitlines()) > 10
    code, out, _ = run(capsys, cmd, "--format", "json")
    assert code == 0 and json.loads(out)


def test_catalog_json_carries_sources(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "catalog", "--format", "json")
    h100 = json.loads(out)["accelerators"]["h100-sxm"]
    assert h100["sources"]["hbm_bytes"]["source"]


def test_schema_has_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schema")
    schema = json.loads(out)
    assert code == 0 and "training" in schema["properties"] and schema["properties"]["training"]


def test_validate_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["summary"]["step_time_s"]["n"] == 19


def test_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "plan.json"
    code, out, _ = run(
        capsys, "plan", str(EX / "llama3-70b-pretrain.yaml"), "--format", "json", "-o", str(target)
    )
    assert code == 0 and out == "" and json.loads(target.read_text())["best"]


def test_console_script_runs() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "rightsize.cli.main", "models"], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0 and "llama3-70b" in r.stdout


def test_serving_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", str(EX / "llama3-70b-chat-serving.yaml"), "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert d["kind"] == "serving_plan" and d["best"]["replicas"] >= 1
    assert d["best"]["latency_s"]["ttft_p95_s"] <= 0.5


def test_serving_estimate_needs_one_accelerator(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "estimate", str(EX / "llama3-70b-chat-serving.yaml"))
    assert code == 2 and "exactly one accelerator" in err


def test_serving_impossible_tpot_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "serve.yaml"
    p.write_text(
        "kind: inference\nmodel: llama3-70b\ntraffic: {rate: 5, prompt_tokens: 128, output_tokens: 64}\n"
        "slo: {tpot: 0.5ms}\ntargets: {accelerators: [h100-sxm]}\n"
    )
    code, _, err = run(capsys, "plan", str(p))
    assert code == 1 and "Relax slo.tpot" in err


def test_malformed_traffic_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "serve.yaml"
    p.write_text(
        "kind: inference\nmodel: llama3-8b\n"
        "traffic: {rate: 5, prompt_tokens: {kind: lognormal, mean: 512}, output_tokens: 64}\n"
    )
    code, _, err = run(capsys, "plan", str(p))
    assert code == 2 and "traffic.prompt_tokens" in err and "Traceback" not in err


def test_plan_with_a_calibration_shows_default_against_calibrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A slower fitted GEMM efficiency on the run's accelerator slows the estimate, and the
    report shows both predictions."""

    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"schema_version": 1, "overrides": {"a100-sxm-80gb": {"gemm_fraction": 0.6}}}))
    spec = Path(__file__).parent.parent / "examples" / "gpt3-175b-megatron.yaml"
    assert main(["estimate", str(spec), "--calibration", str(cal), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    change = out["calibration"]["relative_change"]["step_time_s"]
    assert 0.1 < change < 0.5
    assert out["calibration"]["overrides_applied_to"] == ["a100-sxm-80gb"]
    assert main(["estimate", str(spec), "--calibration", str(cal)]) == 0
    assert "Default against calibrated prediction" in capsys.readouterr().out
