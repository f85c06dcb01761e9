"""Published whole runs (model cards and papers: GPU-hours of a whole pre-training run) as
specs the planner understands: the training row's columns (`cases.training_spec_data`), plus
the run's published schedule (batch and sequence ramps, context extension) as phases.

A schedule comes from the row's own `phases` column (``whole_runs.csv``) or, for runs kept in
another file whose rows are not edited in place (``holdout_training.csv``), from
``whole_run_schedules.csv`` by id. A phase is written ``name:tokens:seq_len:batch_tokens`` and
phases are joined by ``;``.

A run whose GPU count was published is planned on that count (and on whatever layout the
source gave); one whose count was not is planned on the count the search picks, which
measures the planner's choice of scale as much as the model (Llama 3 8B: the model card's
1.3M H100-hours match a plan on about 8,192 GPUs at a 4M-token batch, against the 0.46M
of the 1,024 GPUs the search picks). `scale_basis` says which, and the validation
summarises the two apart (`summarise_by_scale`).

Some published GPU-hours count the steady-state steps only: the source computed them as
tokens over its measured throughput (LLaMA's Table 15: 65B's 1.02M = 1.4T tokens at 380
tokens/s/GPU on 2,048 GPUs; DeepSeek-V3's 2.664M = 14.8T tokens x 180K H800-hours per
trillion). Such a row says so in its ``counts`` column (``steady``) and is compared with the
plan's steady-state steps and named phases, not its whole run, with the step model's spread
(`steady_only`): a like-for-like comparison, not a correction.
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Sequence
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


PUBLISHED_SCALE = "published GPU count"
PLANNER_SCALE = "planner's GPU count"


def scale_basis(case: Case) -> str:
    """Whether a whole run is planned on its published GPU count or on the search's."""
    return PLANNER_SCALE if not (case.row.get("gpus") or "").strip() else PUBLISHED_SCALE


def summarise_by_scale(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Median and max |error| and P10-P90 coverage of the whole-run rows, apart by
    `scale_basis` (rows carry it as "scale")."""
    out: dict[str, dict[str, Any]] = {}
    for basis in (PUBLISHED_SCALE, PLANNER_SCALE):
        mine = [r for r in rows if r.get("scale") == basis and r.get("error") is not None]
        if not mine:
            continue
        errs = [abs(r["error"]) for r in mine]
        ranged = [r["within_p10_p90"] for r in mine if "within_p10_p90" in r]
        out[basis] = {
            "n": len(errs),
            "median_abs_error": statistics.median(errs),
            "max_abs_error": max(errs),
            "coverage_p10_p90": sum(ranged) / len(ranged) if ranged else None,
        }
    return out


STEADY = "steady"
STEADY_PARTS = ("steady-state steps", "phase: ")


def counts_steady_only(case: Case) -> bool:
    """Whether the row's published GPU-hours count the steady-state steps only."""
    return (case.row.get("counts") or "").strip().lower() == STEADY


def steady_only(case: Case, plan: Any, uncertainty: dict[str, Any]) -> tuple[float, dict[str, float]] | None:
    """(GPU-hours of the plan's steady-state steps and named phases, their P10/P50/P90 from
    the step time's spread) for a row that counts only those; None for any other row."""
    if not counts_steady_only(case):
        return None
    whole = plan.sizing.run.whole_run
    value = sum(line.gpu_hours for line in whole.lines if line.part.startswith(STEADY_PARTS))
    step = uncertainty["metrics"]["step_time_s"]
    base = float(step["base"])
    return value, {q: value * float(step[q]) / base for q in ("p10", "p50", "p90")}


def whole_run_parts(plan: Any) -> dict[str, float]:
    """GPU-hours of each part of the plan's whole run (steady steps, phases, evaluation,
    stalls, failures, planned stops, unplanned losses, throttling), as the sizing gives them:
    what a row's prediction is made of."""
    whole = plan.sizing.run.whole_run
    return {line.part: line.gpu_hours for line in whole.lines} if whole is not None else {}
