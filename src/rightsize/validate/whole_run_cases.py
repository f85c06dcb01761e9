"""Published whole runs (model cards and papers: GPU-hours of a whole pre-training run) as
specs the planner understands: the training row's columns (`cases.training_spec_data`), plus
the run's published schedule (batch and sequence ramps, context extension) as phases.

A schedule comes from the row's own `phases` column (``whole_runs.csv``) or, for runs kept in
another file whose rows are not edited in place (``holdout_training.csv``), from
``whole_run_schedules.csv`` by id. A phase is written ``name:tokens:seq_len:batch_tokens`` and
phases are joined by ``;``.
"""

from __future__ import annotations

import csv
import io
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.validate.cases import Case, training_spec_data

WHOLE_RUNS_FILE = "whole_runs.csv"
SCHEDULES_FILE = "whole_run_schedules.csv"


def whole_runs_path() -> Path:
    return Path(str(resources.files("rightsize.validate") / "data" / WHOLE_RUNS_FILE))


@cache
def published_schedules() -> dict[str, str]:
    """Case id -> its published phases, for whole runs kept in files not edited in place."""
    text = (resources.files("rightsize.validate") / "data" / SCHEDULES_FILE).read_text(encoding="utf-8")
    return {r["id"]: r["phases"] for r in csv.DictReader(io.StringIO(text, newline="")) if r.get("phases")}


def parse_phases(text: str, case_id: str) -> list[dict[str, Any]]:
    """``name:tokens:seq_len:batch_tokens;...`` as spec phases (blank seq/batch: the main ones)."""
    out: list[dict[str, Any]] = []
    for item in (p.strip() for p in text.split(";")):
        if not item:
            continue
        parts = item.split(":")
        if len(parts) != 4:
            raise BadInput(
                f"Case '{case_id}': phase '{item}' is not name:tokens:seq_len:batch_tokens.",
                fix="Write each phase as e.g. 'batch ramp:2.5e8:4096:4194304', phases joined by ';'.",
            )
        name, tokens, seq, batch = parts
        phase: dict[str, Any] = {"name": name.strip(), "tokens": float(tokens)}
        if seq.strip():
            phase["seq_len"] = int(float(seq))
        if batch.strip():
            phase["global_batch_tokens"] = int(float(batch))
        out.append(phase)
    return out


def whole_run_spec_data(case: Case) -> dict[str, Any]:
    """The training spec of a published whole run, with its published schedule as phases."""
    data = training_spec_data(case)
    text = (case.row.get("phases") or "").strip() or published_schedules().get(case.id, "")
    if text:
        data["training"]["phases"] = parse_phases(text, case.id)
    preset = (case.row.get("preset") or "").strip()
    if preset:
        data["model"] = preset
    return data
