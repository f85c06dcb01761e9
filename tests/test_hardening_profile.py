"""Issue #15, profiler: a worker killed by a signal is a crash (not an out-of-memory) and the sweep
goes on; `--out` never destroys earlier records; `--resume` refuses another configuration's file."""

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
from rightsize.profile.train import TrainProfileConfig, run_train_profile  # noqa: E402

DYING_MODULE = textwrap.dedent(
    """
    import os
    import signal
    import torch

    class Net(torch.nn.Module):
        vocab_size = 32
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(32, 8)
            self.out = torch.nn.Linear(8, 32)
        def forward(self, tokens):
            if tokens.shape[0] == 2:
                os.kill(os.getpid(), signal.SIGSEGV)  # a crash in native code
            if tokens.shape[0] == 3:
                os.kill(os.getpid(), signal.SIGKILL)  # killed, but not by the OOM killer
            return self.out(self.emb(tokens))

    def build():
        return Net()
    """
)


def _config(module: Path, batches: list[int]) -> TrainProfileConfig:
    return TrainProfileConfig(
        batches=batches,
        seqs=[4],
        module=f"{module}:build",
        device="cpu",
        steps=1,
        warmup=0,
        timeout_s=60,
        threads=1,
        micro=False,
    )


def test_a_signal_is_a_crash_not_an_oom_and_the_sweep_goes_on(tmp_path: Path) -> None:
    mod = tmp_path / "dying.py"
    mod.write_text(DYING_MODULE)
    res = run_train_profile(_config(mod, [1, 2, 3, 4]), tmp_path / "p.jsonl")
    by_b = {r["batch"]: r for r in res["results"] if r.get("kind") == "train"}
    assert by_b[2]["status"] == "crash" and by_b[2]["signal"] == "SIGSEGV"
    assert by_b[3]["status"] == "crash" and by_b[3]["signal"] == "SIGKILL"
    # nothing is skipped as "beyond the out-of-memory boundary": the later point is measured
    assert by_b[1]["status"] == by_b[4]["status"] == "ok"
    assert all(v["first_oom_batch"] is None for v in (res["fit"].get("oom_boundary") or {}).values())


def test_out_never_destroys_earlier_records_and_resume_checks_the_config(tmp_path: Path) -> None:
    mod = tmp_path / "dying.py"
    mod.write_text(DYING_MODULE)
    out = tmp_path / "p.jsonl"
    run_train_profile(_config(mod, [1]), out)
    before = out.read_text()
    # a second run on the same file without --resume or --force: refused, file untouched
    with pytest.raises(BadInput, match="already holds"):
        run_train_profile(_config(mod, [1]), out)
    assert out.read_text() == before
    # --resume with another configuration (steps differ): refused, naming the key
    other = _config(mod, [1])
    other.steps = 3
    with pytest.raises(BadInput, match="steps"):
        run_train_profile(other, out, resume=True)
    assert out.read_text() == before
    # --resume with the same configuration and a longer sweep: measures only the new point
    again = run_train_profile(_config(mod, [1, 4]), out, resume=True)
    assert [r["batch"] for r in again["results"] if r.get("kind") == "train"] == [1, 4]
    assert out.read_text().startswith(before)
    # --force appends a new run after the earlier records
    run_train_profile(other, out, force=True)
    records = jsonl.read_profile(out)
    assert out.read_text().startswith(before)
    assert sum(r.get("type") == "header" for r in records) == 2


def test_cli_out_refusal_is_exit_2_and_force_appends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.jsonl"
    argv = [
        "profile",
        "memory",
        "--model",
        "llama3-8b",
        "--seq",
        "128",
        "--out",
        str(out),
        "--format",
        "json",
    ]
    assert main(argv) == 0
    first = out.read_text()
    assert main(argv) == 2
    assert "--force" in capsys.readouterr().err
    assert out.read_text() == first
    assert main([*argv, "--force"]) == 0
    assert out.read_text().startswith(first) and len(out.read_text()) > len(first)
    # a symbolic link as --out is never followed
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert main([*argv[:-4], "--out", str(link), "--format", "json"]) == 2
    assert target.read_text() == "keep"
    json.loads(first.splitlines()[0])
