"""Headline rows that say how well each accelerator family a plan offers is validated
(issue 28: no family is offered without saying so): rows, median and worst error, P10-P90
coverage, from the generated `catalog/data/family_validation.json`. The chosen part's
family gets the full status; the families of the alternatives the plan lists get a short one."""

from __future__ import annotations

from typing import Any

from rightsize.catalog.families import FamilyValidation, families, family_of, validation_of
from rightsize.report.document import Document


def _kind(plan: Any) -> str:
    unc = getattr(plan, "uncertainty", None) or {}
    return str((unc.get("family") or {}).get("kind") or "all")


def _name(v: FamilyValidation) -> str:
    fam = families().get(v.family)
    return fam.name if fam else v.family


def family_row(plan: Any) -> tuple[str, str] | None:
    """('validated (family)', status) for the plan's chosen accelerator, or None."""
    acc = getattr(getattr(plan, "best", None), "accelerator", None)
    if not isinstance(acc, str) or not acc:
        return None
    kind = _kind(plan)
    v = validation_of(acc, kind)
    on = f" ({kind})" if kind != "all" else ""
    return ("validated (family)", f"{_name(v)}{on}: {v.headline()}")


def _short(v: FamilyValidation) -> str:
    if not v.rows or v.median_abs_error is None:
        return f"{_name(v)}: not validated"
    return f"{_name(v)}: {v.rows} runs, median error {v.median_abs_error:.0%}"


def alternatives_row(plan: Any) -> tuple[str, str] | None:
    """('validated (alternatives)', ...) for the other families among the plan's alternatives."""
    best = getattr(getattr(plan, "best", None), "accelerator", None)
    chosen = family_of(best) if isinstance(best, str) else None
    kind = _kind(plan)
    seen: dict[str, str] = {}
    for alt in getattr(plan, "alternatives", None) or ():
        cand = alt[0] if isinstance(alt, tuple) else alt
        acc = getattr(cand, "accelerator", None)
        if not isinstance(acc, str) or family_of(acc) in seen or family_of(acc) == chosen:
            continue
        seen[family_of(acc)] = _short(validation_of(acc, kind))
    return ("validated (alternatives)", "; ".join(seen.values())) if seen else None


def place(doc: Document, plan: Any) -> None:
    for row in (family_row(plan), alternatives_row(plan)):
        if row is not None:
            doc.key_numbers.append(row)
