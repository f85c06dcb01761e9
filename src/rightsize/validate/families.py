"""Accuracy per accelerator family: the validation rows grouped by the family of their
accelerator (`rightsize.catalog.families`), and the generated table plans read.

`family_breakdown(rows)` summarises any validation result by family: rows predicted, rows
rejected, median and worst |error|, and how often the P10-P90 range held the published
value. `compute_table()` runs the public and family rows (never the holdout) and `python -m rightsize.validate.families --write` stores the breakdown as
``catalog/data/family_validation.json``, which plans and the uncertainty model read
(a test checks the stored table against a fresh computation).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from rightsize.atomic_write import write_text_atomic
from rightsize.catalog.families import VALIDATION_FILE, families, family_of
from rightsize.validate.cases import bundled_paths

FAMILY_FILES = ("family_training.csv", "family_inference.csv")
TABLE_SCHEMA_VERSION = 1


def family_paths() -> list[Path]:
    """The bundled per-family published rows (TPU, Gaudi, Trainium, ROCm, Blackwell)."""
    base = resources.files("rightsize.validate") / "data"
    return [Path(str(base / n)) for n in FAMILY_FILES]


def table_paths() -> list[Path]:
    """The rows the stored table summarises: the public set and the family files. The held-out
    rows stay out: the table widens plan ranges, and nothing may be tuned on the holdout
    (validate/data/HOLDOUT.md); `rightsize validate --holdout --families` still reports them
    per family. Vision and recommendation files stay out too: the table's spreads widen the
    ranges of LLM training and serving plans, which those models' errors say nothing about."""
    from rightsize.validate.kinds import kind_cases

    return [p for p in (*bundled_paths(), *family_paths()) if kind_cases(p) is None]


def _stats(group: Sequence[dict[str, Any]]) -> dict[str, Any]:
    errs = [abs(r["error"]) for r in group if r.get("error") is not None]
    ranged = [bool(r["within_p10_p90"]) for r in group if "within_p10_p90" in r]
    return {
        "rows": len(errs),
        "not_predicted": sum(1 for r in group if r.get("error") is None),
        "median_abs_error": statistics.median(errs) if errs else None,
        "max_abs_error": max(errs) if errs else None,
        "coverage_p10_p90": sum(ranged) / len(ranged) if ranged else None,
        "ranged": len(ranged),
        "metrics": sorted({str(r["metric"]) for r in group}),
    }


def family_breakdown(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per family (and within it per kind: training or serving) the error summary of `rows`.
    Each row needs its `accelerator` (added by `validate.run`)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if not r.get("accelerator"):  # a mechanism row (speculative acceptance) names no hardware
            continue
        groups.setdefault(family_of(str(r.get("accelerator", ""))), []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for fid in sorted(groups):
        g = groups[fid]
        entry = _stats(g)
        kinds = {
            kind: [r for r in g if (r["metric"] == "output_tokens_per_s") == (kind == "serving")]
            for kind in ("training", "serving")
        }
        entry["by_kind"] = {k: _stats(v) for k, v in kinds.items() if v}
        out[fid] = entry
    return out


_TABLE_KEYS = ("rows", "not_predicted", "median_abs_error", "max_abs_error", "coverage_p10_p90", "ranged")
_EMPTY: dict[str, Any] = {
    "rows": 0,
    "not_predicted": 0,
    "median_abs_error": None,
    "max_abs_error": None,
    "coverage_p10_p90": None,
    "ranged": 0,
}


def table_from_breakdown(breakdown: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The stored table: every catalog family, all its rows and per kind (training, serving);
    families without rows listed with zero."""
    fams: dict[str, Any] = {}
    for fid in sorted(families()):
        s = breakdown.get(fid)
        entry = {k: s[k] for k in _TABLE_KEYS} if s else dict(_EMPTY)
        kinds = (s or {}).get("by_kind") or {}
        for kind in ("training", "serving"):
            entry[kind] = {k: kinds[kind][k] for k in _TABLE_KEYS} if kind in kinds else dict(_EMPTY)
        fams[fid] = entry
    return {
        "schema_version": TABLE_SCHEMA_VERSION,
        "generated_by": "python -m rightsize.validate.families --write",
        "inputs": [p.name for p in table_paths()],
        "families": fams,
    }


def compute_table() -> dict[str, Any]:
    """Validate the public and family rows and summarise them per family."""
    from rightsize.validate.inference_cases import analytic_only
    from rightsize.validate.run import validate_paths  # run imports this module's breakdown

    with analytic_only():  # the same table whether or not the AIConfigurator extra is installed
        result = validate_paths(table_paths())
    return table_from_breakdown(result["by_family"])


def table_path() -> Path:
    return Path(str(resources.files("rightsize.catalog") / "data" / VALIDATION_FILE))


def serialise(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help=f"write catalog/data/{VALIDATION_FILE}")
    args = ap.parse_args(argv)
    text = serialise(compute_table())
    if args.write:
        # The ranges the table's coverage is measured with widen by each family's error spread,
        # which the table itself stores: write until it reproduces itself (errors do not depend
        # on the table, so the second pass settles it).
        from rightsize.catalog.families import family_validation

        for _ in range(4):
            write_text_atomic(table_path(), text)
            family_validation.cache_clear()
            again = serialise(compute_table())
            if again == text:
                break
            text = again
        else:
            sys.stderr.write("the family table did not settle after 4 passes\n")
            return 1
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
