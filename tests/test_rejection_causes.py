"""Issue 13: every rejection names its real cause and the fix (not "fits in no memory")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.cli.main import main
from rightsize.errors import BadInput

SMALL: dict[str, Any] = {
    "model": "llama3-8b",
    "training": {"seq_len": 4096, "global_batch": 1024, "train_tokens": "1B"},
    "targets": {"accelerators": ["h100-sxm"]},
}


def _spec(**changes: Any) -> dict[str, Any]:
    spec = {k: dict(v) if isinstance(v, dict) else v for k, v in SMALL.items()}
    for key, value in changes.items():
        spec[key] = {**spec.get(key, {}), **value}
    return spec


def test_batch_not_divisible_by_dp_names_the_batch_not_memory() -> None:
    spec = _spec(training={"global_batch": 100}, targets={"gpus": 64}, parallel={"tp": 1, "pp": 1, "cp": 1})
    with pytest.raises(BadInput) as info:
        plan(spec)
    msg = info.value.message()
    assert "memory" not in msg
    assert "global batch of 100" in msg and "data-parallel size of 64" in msg
    assert "training.global_batch to a multiple of 64" in msg and "targets.gpus to 50 or 100" in msg


def test_a_gpu_count_that_cannot_split_names_the_limit_and_nearby_counts() -> None:
    with pytest.raises(BadInput) as info:
        plan(_spec(targets={"gpus": 100_000}))
    msg = info.value.message()
    assert "memory" not in msg
    assert "none divides the global batch of 1,024" in msg
    assert "65,536 or 131,072" in msg  # the nearest counts that split


def test_more_gpus_than_any_layout_can_use_says_the_most(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # batch 8, tp <= 8, pp <= 32, cp <= 2: at most 8 x 8 x 32 x 2 = 4,096 GPUs
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "model: llama3-8b\ntraining: {seq_len: 4096, global_batch: 8, train_tokens: 1B}\n"
        "targets: {accelerators: [h100-sxm], gpus: 100000}\n"
    )
    assert main(["plan", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "The most GPUs this model and batch can use is 4,096" in err
    assert "Traceback" not in err
