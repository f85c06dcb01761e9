"""The Falcon-180B whole run (validate/data/whole_runs.csv): planned as the model card's parallel
attention/MLP block through the `falcon-180b` preset, whose shape is the row's own columns."""

from __future__ import annotations

from pathlib import Path

from rightsize.spec.load import parse_spec
from rightsize.spec.model import ModelArch
from rightsize.spec.presets import get_preset
from rightsize.spec.training import TrainingSpec
from rightsize.validate.cases import model_fields, read_cases
from rightsize.validate.whole_run_cases import counts_steady_only, whole_run_spec_data, whole_runs_path

ROW = "falcon-180b-gpu-hours"


def _case():  # type: ignore[no-untyped-def]
    return next(c for c in read_cases(whole_runs_path()) if c.id == ROW)


def test_the_row_is_planned_as_a_parallel_block() -> None:
    spec = parse_spec(whole_run_spec_data(_case()), Path("."))
    assert isinstance(spec, TrainingSpec)
    assert spec.model.parallel_block is True
    assert spec.model.name == "falcon-180b"


def test_the_preset_has_the_rows_published_shape() -> None:
    """The preset replaces the row's shape columns in the plan: they must say the same thing."""
    columns = ModelArch(**model_fields(_case().row))
    preset = get_preset("falcon-180b")
    skip = {"name", "parallel_block", "source", "max_seq_len"}
    assert preset.model_dump(exclude=skip) == columns.model_dump(exclude=skip)
    assert preset.head_dim == 64 and preset.kv_heads == 8  # model card: head_dim 64; 8 groups for TP 8


def test_the_row_still_counts_the_whole_run() -> None:
    """No source read here says whether TII's '~7,000,000 GPU hours' is wall time or tokens over
    measured throughput, so the row is compared with the whole run (its note says what was searched)."""
    case = _case()
    assert not counts_steady_only(case)
    assert "basis" in case.row["note"] and "not stated" in case.row["note"]
