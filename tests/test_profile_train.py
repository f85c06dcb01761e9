"""`profile train` (real steps on this CPU), the progressive load test, and the calibration
loop: calibrate on some batch sizes, predict a held-out one within 15% (issue #5)."""

from __future__ import annotations

import importlib.util
import json
import os
import textwrap
from pathlib import Path

import pytest

if importlib.util.find_spec("torch") is None:  # pragma: no cover
    if os.environ.get("RIGHTSIZE_REQUIRE_TORCH"):
        raise RuntimeError("RIGHTSIZE_REQUIRE_TORCH is set but torch is not installed")
    pytest.skip("torch is not installed (the profile extra)", allow_module_level=True)

from rightsize.cli.main import main  # noqa: E402
from rightsize.errors import BadInput  # noqa: E402
from rightsize.profile import jsonl  # noqa: E402
from rightsize.profile.calibrate import calibrate_profiles, predict_train_step  # noqa: E402
from rightsize.profile.calibration_file import load_calibration  # noqa: E402
from rightsize.profile.train import TrainProfileConfig, run_train_profile  # noqa: E402
from rightsize.spec.model import ModelArch  # noqa: E402

TINY = ModelArch(
    name="tiny-llama",
    layers=2,
    hidden=256,
    heads=8,
    kv_heads=2,
    ffn_hidden=704,
    vocab=2048,
    mlp="swiglu",
    norm="rmsnorm",
)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    out = tmp_path_factory.mktemp("train") / "profile.jsonl"
    # One thread: on a shared 2-core machine a second thread waits on a busy core.
    cfg = TrainProfileConfig(
        batches=[1, 2, 4, 8], seqs=[64], arch=TINY, device="cpu", steps=5, warmup=2, timeout_s=120, threads=1
    )
    return out, run_train_profile(cfg, out)


def test_sweep_measures_phases_flops_and_memory(sweep) -> None:  # type: ignore[no-untyped-def]
    out, res = sweep
    train = [r for r in res["results"] if r.get("kind") == "train"]
    assert [r["batch"] for r in train] == [1, 2, 4, 8] and all(r["status"] == "ok" for r in train)
    for r in train:
        t = r["time_s"]
        assert t["forward"]["median"] > 0 and t["backward"]["median"] > 0 and t["optimizer"]["median"] > 0
        assert r["flops"]["backward"] == pytest.approx(2 * r["flops"]["forward"], rel=0.05)
        m = r["memory"]
        assert m["gradients_bytes"] == m["params_bytes"] and m["optimizer_bytes"] >= 2 * m["params_bytes"]
        assert m["activations_bytes"] > 0
    # FLOPs and activations grow with the batch
    assert train[-1]["flops"]["total"] == pytest.approx(8 * train[0]["flops"]["total"], rel=0.01)
    assert train[-1]["memory"]["activations_bytes"] > 6 * train[0]["memory"]["activations_bytes"]
    recs = jsonl.read_profile(out)
    hdr = recs[0]
    assert hdr["type"] == "header" and hdr["environment"]["torch"] and hdr["environment"]["python"]
    assert any(r.get("kind") == "gemm" for r in recs) and recs[-1]["type"] == "telemetry"
    fit = res["fit"]
    assert fit["memory_bytes"]["r2"] > 0.99
    assert "nonlinear" in fit


def _held_out_error(out: Path, res: dict) -> tuple[float, dict]:  # type: ignore[type-arg]
    """Calibrate without batch 4, predict it with the analytic model, compare (min statistic:
    on a shared machine other jobs only ever add time)."""
    doc = calibrate_profiles([out], exclude_batches={4}, statistic="min")
    held = next(r for r in res["results"] if r.get("kind") == "train" and r["batch"] == 4)
    measured = sum(held["time_s"][ph]["min"] for ph in ("forward", "backward", "optimizer"))
    predicted = predict_train_step(doc, TINY, batch=4, seq_len=64)["step_time_s"]
    return predicted / measured - 1.0, doc


def test_calibration_predicts_a_held_out_batch_within_15_percent(sweep, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out, res = sweep
    err, doc = _held_out_error(out, res)
    if abs(err) >= 0.15:
        # A burst of other work on a shared 2-core host can slow a whole point; measure
        # the sweep once more before judging the model.
        out2 = tmp_path / "again.jsonl"
        cfg = TrainProfileConfig(
            batches=[1, 2, 4, 8],
            seqs=[64],
            arch=TINY,
            device="cpu",
            steps=5,
            warmup=2,
            timeout_s=120,
            threads=1,
        )
        res2 = run_train_profile(cfg, out2)
        err, doc = _held_out_error(out2, res2)
    assert abs(err) < 0.15, (err, doc["overrides"], doc["fit"]["residuals"])
    assert doc["schema_version"] == 1 and "cpu-host" in doc["overrides"] and doc["created"]
    # the file round-trips through the planner's torch-free reader
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    assert (
        load_calibration(path)["cpu-host"]["gemm_fraction"] == doc["overrides"]["cpu-host"]["gemm_fraction"]
    )


def test_oom_is_a_result_and_sets_the_boundary(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "oom.jsonl"
    cfg = TrainProfileConfig(
        batches=[1, 512, 1024],
        seqs=[128],
        arch=TINY,
        device="cpu",
        steps=1,
        warmup=0,
        timeout_s=120,
        threads=1,
        micro=False,
        memory_limit_bytes=300e6,
    )
    res = run_train_profile(cfg, out)
    status = {r["batch"]: r["status"] for r in res["results"] if r.get("kind") == "train"}
    assert status == {1: "ok", 512: "oom", 1024: "skipped"}
    assert res["fit"]["oom_boundary"]["128"] == {"max_ok_batch": 1, "first_oom_batch": 512}
    # resume: everything already recorded is kept and not measured again
    again = run_train_profile(cfg, out, resume=True)
    assert [r["status"] for r in again["results"] if r.get("kind") == "train"] == ["ok", "oom", "skipped"]
    assert len(jsonl.results(jsonl.read_profile(out), "train")) == 3


USER_MODULE = textwrap.dedent(
    """
    import time
    import torch

    class Net(torch.nn.Module):
        vocab_size = 32
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(32, 16)
            self.out = torch.nn.Linear(16, 32)
        def forward(self, tokens):
            if tokens.shape[0] == 2:
                time.sleep(30)  # a hung step: the timeout must catch it
            return self.out(self.emb(tokens))

    def slow_loader(batch, seq):
        while True:
            time.sleep(0.02)
            yield torch.randint(0, 32, (batch, seq))

    def build():
        return Net(), slow_loader

    def helper():
        raise ValueError("bad config in user code")

    def broken():
        helper()
    """
)


def test_user_module_timeout_and_input_bound(tmp_path) -> None:  # type: ignore[no-untyped-def]
    mod = tmp_path / "user_model.py"
    mod.write_text(USER_MODULE)
    cfg = TrainProfileConfig(
        batches=[1, 2, 4],
        seqs=[8],
        module=f"{mod}:build",
        device="cpu",
        steps=2,
        warmup=1,
        timeout_s=4,
        micro=False,
    )
    res = run_train_profile(cfg, tmp_path / "u.jsonl")
    by_b = {r["batch"]: r for r in res["results"] if r.get("kind") == "train"}
    assert by_b[2]["status"] == "timeout"
    assert by_b[1]["status"] == by_b[4]["status"] == "ok"  # a fresh worker carried on
    assert by_b[1]["input_bound"] and by_b[1]["data_wait_fraction"] > 0.2


def test_user_module_error_shows_the_users_traceback(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    mod = tmp_path / "user_model.py"
    mod.write_text(USER_MODULE)
    cfg = TrainProfileConfig(
        batches=[1], seqs=[8], module=f"{mod}:broken", device="cpu", micro=False, timeout_s=60
    )
    with pytest.raises(BadInput) as err:
        run_train_profile(cfg)
    text = err.value.message()
    assert "bad config in user code" in text and "user_model.py" in text and "helper()" in text
    assert "train_worker" not in text  # our frames are not the user's problem
    code = main(["profile", "train", "--module", f"{mod}:broken", "--batch", "1", "--seq", "8", "--no-micro"])
    assert code == 2 and "bad config in user code" in capsys.readouterr().err


def test_cli_profile_memory_json_and_calibrate(tmp_path, capsys, sweep) -> None:  # type: ignore[no-untyped-def]
    out, _ = sweep
    assert main(["profile", "memory", "--model", "llama3-8b", "--seq", "1024", "--format", "json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert abs(res["comparison"]["total"]["relative_error"]) < 0.05
    cal = tmp_path / "cal.json"
    assert main(["calibrate", str(out), "--calibration-out", str(cal)]) == 0
    text = capsys.readouterr().out
    assert "cpu-host" in text and "calibrated" in text
    assert "cpu-host" in load_calibration(cal)
    assert main(["profile", "train", "--model", "no-such-model"]) == 2
