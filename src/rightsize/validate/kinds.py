"""The validation files of the non-LLM kinds, by the metric their rows carry: vision rows
(images/s) and recommendation rows (samples/s), and single serving mechanisms' rows (`mechanism_cases`, a
`mechanism` column). `rightsize validate` hands each file here first;
a file of another kind returns None and goes to the LLM readers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize.validate import mechanism_cases, recsys_cases, vision_cases
from rightsize.validate.kind_cases import KindCase, Prediction, read_kind_cases, validate_kind_rows

KINDS: tuple[tuple[tuple[str, ...], Callable[[KindCase], Prediction]], ...] = (
    (vision_cases.METRICS, vision_cases.predict_vision),
    (recsys_cases.METRICS, recsys_cases.predict_recsys),
)
BUNDLED = ("vision.csv", "recsys.csv")


def kind_cases(path: Path) -> tuple[list[KindCase], Callable[[KindCase], Prediction]] | None:
    """The file's cases and the predictor of their kind, or None for a file of no such kind."""
    mech = mechanism_cases.mechanism_cases(path)  # single-mechanism rows (a `mechanism` column)
    if mech is not None:
        return mech, mechanism_cases.predict_mechanism
    for metrics, predict in KINDS:
        cases = read_kind_cases(path, metrics)
        if cases is not None:
            return cases, predict
    return None


def kind_rows(path: Path, progress: Callable[[str], None] | None = None) -> list[dict[str, Any]] | None:
    """`rightsize validate` rows of a vision or recommendation file, or None for another file."""
    found = kind_cases(path)
    if found is None:
        return None
    cases, predict = found
    return validate_kind_rows(cases, predict, path.name, progress)


def case_count(path: Path) -> int:
    """How many cases a validation file of any kind holds (for a progress bar)."""
    from rightsize.validate.cases import read_cases

    found = kind_cases(path)
    return len(found[0]) if found is not None else len(read_cases(path))
