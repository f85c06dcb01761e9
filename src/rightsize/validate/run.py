"""Predicting each published case and summarising the errors.

error = (predicted - published) / published. A case the model cannot handle is
kept with predicted = None and the reason, never dropped.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rightsize.errors import RightsizeError
from rightsize.perf.kernels.table import KernelTable
from rightsize.search.uncertainty import training_uncertainty
from rightsize.sizing.pipeline import run_pipeline
from rightsize.spec.load import parse_spec
from rightsize.spec.training import TrainingSpec
from rightsize.validate.cases import INFERENCE_METRICS, SEPARATE_FILES, Case, read_cases, training_spec_data
from rightsize.validate.families import family_breakdown
from rightsize.validate.inference_cases import predict_inference
from rightsize.validate.kinds import kind_rows
from rightsize.validate.whole_run_cases import (
    PLANNER_SCALE,
    scale_basis,
    steady_only,
    summarise_by_scale,
    whole_run_parts,
    whole_run_spec_data,
)
from rightsize.validate.whole_run_scale import implied_scale

# A whole run off by more than this is checked for the count it implies: the tolerance issue
# 27 sets for whole-run GPU-hours ("within 15% for published full runs").
SCALE_CHECK_ERROR = 0.15


def _predict(
    case: Case, tables: Sequence[KernelTable] = ()
) -> tuple[float | None, str | None, dict[str, Any]]:
    if case.metric in INFERENCE_METRICS:
        try:
            value, chosen = predict_inference(case, tables)
        except (KeyError, ValueError) as exc:
            return None, f"the case's columns cannot be read: {exc}", {}
        except RightsizeError as exc:
            return None, exc.message().replace("\n", " "), {}
        return value, None, dict(chosen)
    if not case.is_training:
        return None, f"metric '{case.metric}' is not one rightsize predicts", {}
    try:
        data = whole_run_spec_data(case) if case.metric == "gpu_hours" else training_spec_data(case)
    except (KeyError, ValueError) as exc:
        return None, f"the case's columns cannot be read: {exc}", {}
    try:
        spec = parse_spec(data, Path("."))
        assert isinstance(spec, TrainingSpec)  # training_spec_data builds training specs only
        # The whole run as a plan sizes it (failures and restarts through the reliability
        # model, checkpoints at the storage's rate, thermal throttling): search, size, settle.
        plan = run_pipeline(spec)
    except RightsizeError as exc:
        return None, exc.message().replace("\n", " "), {}
    best = plan.best
    training_value: float | None = {
        "step_time_s": best.step_time_s,
        "tokens_per_s_per_gpu": best.tokens_per_s_per_gpu,
        "gpu_hours": best.gpu_hours,
    }[case.metric]
    detail: dict[str, Any] = {"gpus": best.gpus, "parallel": best.parallel, "mfu": round(best.mfu, 4)}
    # The range comes from the same uncertainty model plans use, with this run left out of
    # the validated ground (it must not vouch for itself).
    unc = training_uncertainty(plan, spec, exclude_ground=(case.id,))
    m = unc["metrics"].get(case.metric)
    if m is not None:
        detail["range"] = {q: m[q] for q in ("p10", "p50", "p90")}
    steady = steady_only(case, plan, unc) if case.metric == "gpu_hours" else None
    if steady is not None:  # the source counts the steady-state steps only: compare those
        training_value, detail["range"] = steady
        detail["counts"] = "steady-state steps and phases only, as the source counts"
    if case.metric == "gpu_hours":
        detail["whole_run_parts"] = whole_run_parts(plan)
        if _scale_unexplained(case, best.gpu_hours, steady, detail.get("range")):
            detail["scale_check"] = implied_scale(data, best.gpus, best.gpu_hours, case.published)
    detail["ground"] = {k: unc["ground"][k] for k in ("distance", "sigma", "nearest", "thin_mechanisms")}
    return training_value, None, detail


def _scale_unexplained(case: Case, predicted: float, steady: object, rng: dict[str, float] | None) -> bool:
    """Whether a whole run planned on the search's count (its own was not published) misses
    its published figure by more than `SCALE_CHECK_ERROR` or falls outside its P10-P90: then
    `whole_run_scale` says which count the published figure implies."""
    if steady is not None or rng is None or scale_basis(case) != PLANNER_SCALE:
        return False
    outside = not rng["p10"] <= case.published <= rng["p90"]
    return outside or abs(predicted - case.published) > SCALE_CHECK_ERROR * case.published


def validate_paths(
    paths: list[Path],
    progress: Callable[[str], None] | None = None,
    kernel_tables: Sequence[KernelTable] = (),
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for path in paths:
        kind = kind_rows(path, progress)  # vision and recommendation files (validate.kinds)
        if kind is not None:
            rows.extend(kind)
            continue
        for case in read_cases(path):
            if progress:
                progress(case.id)
            predicted, reason, detail = _predict(case, kernel_tables)
            row: dict[str, Any] = {
                "id": case.id,
                "metric": case.metric,
                "published": case.published,
                "predicted": predicted,
                "error": (predicted - case.published) / case.published if predicted is not None else None,
                "file": path.name,
                "accelerator": case.row.get("accelerator", "").strip(),
            }
            if reason:
                row["reason"] = reason
            if case.metric == "gpu_hours":
                row["scale"] = scale_basis(case)
            rng = detail.pop("range", None)
            ground = detail.pop("ground", None)
            if rng is not None:
                row.update(rng)
                row["within_p10_p90"] = rng["p10"] <= case.published <= rng["p90"]
            if ground is not None:
                row["ground"] = ground
            if "scale_check" in detail:
                row["scale_check"] = detail.pop("scale_check")
            _sources(row, detail, case.published)
            if detail:
                row["chosen"] = detail
            rows.append(row)
    return {
        "rows": rows,
        "summary": summarise(rows),
        "by_source": summarise_sources(rows),
        "whole_runs_by_scale": summarise_by_scale(rows),
        "by_family": family_breakdown(rows),
        "by_file": {f: summarise([r for r in rows if r["file"] == f]) for f in _separate_files(rows)},
    }


def _separate_files(rows: list[dict[str, Any]]) -> list[str]:
    """The files reported as their own set (`cases.SEPARATE_FILES`) among those validated."""
    return [f for f in dict.fromkeys(str(r["file"]) for r in rows) if f in SEPARATE_FILES]


def _sources(row: dict[str, Any], detail: dict[str, Any], published: float) -> None:
    """Move a serving row's per-source predictions out of its detail: which source the
    prediction used, and the error of the analytic and of the measured-kernel prediction."""
    if "analytic_predicted" not in detail:
        return
    row["source"] = detail.pop("source")
    for name in ("analytic", "kernels"):
        value = detail.pop(f"{name}_predicted", None)
        if value is not None:
            row[f"{name}_predicted"] = value
            row[f"{name}_error"] = (value - published) / published
    for key in ("kernel_table", "measured_ops", "fallbacks"):
        if key in detail:
            row[key] = detail.pop(key)


def summarise_sources(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Median and max |error| of serving rows per prediction source: analytic for every row,
    measured kernels where a table covered the row, and the analytic error on those same rows."""
    out: dict[str, dict[str, Any]] = {}
    covered = [r for r in rows if "kernels_error" in r]
    groups = {
        "analytic (all serving rows)": [r["analytic_error"] for r in rows if "analytic_error" in r],
        "measured kernels (covered rows)": [r["kernels_error"] for r in covered],
        "analytic (same covered rows)": [r["analytic_error"] for r in covered],
    }
    for name, errs in groups.items():
        if errs:
            a = [abs(e) for e in errs]
            out[name] = {"n": len(a), "median_abs_error": statistics.median(a), "max_abs_error": max(a)}
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for metric in dict.fromkeys(r["metric"] for r in rows):
        errs = [abs(r["error"]) for r in rows if r["metric"] == metric and r["error"] is not None]
        skipped = sum(1 for r in rows if r["metric"] == metric and r["error"] is None)
        ranged = [r["within_p10_p90"] for r in rows if r["metric"] == metric and "within_p10_p90" in r]
        out[metric] = {
            "n": len(errs),
            "median_abs_error": statistics.median(errs) if errs else None,
            "max_abs_error": max(errs) if errs else None,
            "not_predicted": skipped,
            "coverage_p10_p90": sum(ranged) / len(ranged) if ranged else None,
            "ranged": len(ranged),
        }
    ranged_all = [r["within_p10_p90"] for r in rows if "within_p10_p90" in r]
    if ranged_all:
        out["all"] = {
            "n": len(ranged_all),
            "coverage_p10_p90": sum(ranged_all) / len(ranged_all),
            "ranged": len(ranged_all),
        }
    return out
