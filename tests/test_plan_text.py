"""Issue 13: text a buyer reads without stumbling: durations in a unit that reads, a
break-even above 100% said in words, counts that agree with their nouns, the terminal's
own width, bare numbers noted, every preset listed."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.report import units
from rightsize.report.bom import bom_section, breakeven_text
from rightsize.report.render import render
from rightsize.report.terminal import terminal_width

SHORT_JOB: dict[str, Any] = {
    "model": "llama3-8b",
    "training": {"seq_len": 4096, "global_batch": 64, "train_tokens": "100M", "method": "lora"},
    "targets": {"accelerators": ["h100-sxm"], "gpus": 8},
}


def test_a_short_run_never_reads_zero_days() -> None:
    text = render(plan(SHORT_JOB), "table")
    assert "0.0 d" not in text
    assert units.duration(1800.0) == "30 min" and units.duration(3 * 86400.0) == "3.0 d"


def test_break_even_above_full_utilisation_is_said_in_words() -> None:
    assert "%" in breakeven_text(0.3) and "above 30.0% utilisation" in breakeven_text(0.3)
    text = breakeven_text(1.04)
    assert "renting on demand is cheaper" in text and "104% utilisation" not in text


def test_counts_agree_with_their_nouns() -> None:
    assert units.plural(1, "rack") == "1 rack" and units.plural(3, "rack") == "3 racks"
    assert units.plural(2048, "GPU") == "2,048 GPUs"
    sizing = {
        "nodes": {
            "nodes": 1,
            "node": "hgx-h100",
            "gpus": 8,
            "racks": 1,
            "nodes_per_rack": 1,
            "kw_per_rack": 10.2,
        },
        "fabric": {"needed": False, "reason": "one node"},
        "cost": {"gpus_billed": 8, "gpus_used": 1},
    }
    sec = bom_section(sizing)
    assert sec is not None
    line = sec.tables[0].rows[0][1]
    assert "1 rack of" in line and "1 racks" not in line
    assert "8 GPUs billed, 1 used" in line


def test_terminal_width_follows_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert terminal_width() == 80
    text = render(plan(SHORT_JOB), "table")
    assert max(len(line) for line in text.splitlines()) <= 80
    monkeypatch.setenv("COLUMNS", "20")  # too narrow to read: held at the minimum
    assert terminal_width() == 60
    os.environ.pop("COLUMNS", None)


def test_a_bare_duration_is_refused_with_the_unit_to_write() -> None:
    spec = {**SHORT_JOB, "targets": {**SHORT_JOB["targets"], "deadline": 7200}}
    with pytest.raises(BadInput) as err:
        plan(spec)
    assert "deadline: 7200 has no unit" in str(err.value) and "'7200h'" in str(err.value)
    with_unit = plan({**SHORT_JOB, "targets": {**SHORT_JOB["targets"], "deadline": "2h"}})
    assert with_unit.best is not None
    in_seconds = plan({**SHORT_JOB, "targets": {**SHORT_JOB["targets"], "deadline_s": 7200}})
    assert in_seconds.best is not None  # the key that names its unit takes a number of seconds


def test_models_lists_vision_and_recommendation_presets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "resnet50" in out and "vit-b16" in out and "dlrm-dcnv2-criteo" in out
    assert main(["models", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["resnet50"]["kind"] == "vision" and d["dlrm-dcnv2-criteo"]["kind"] == "recommendation"
    assert d["llama3-70b"]["kind"] == "language"
