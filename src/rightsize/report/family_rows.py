"""The headline row that says how well the plan's accelerator family is validated (issue 28:
no family is offered without saying so): rows, median and worst error, P10-P90 coverage,
from the generated `catalog/data/family_validation.json`."""

from __future__ import annotations

from typing import Any

from rightsize.catalog.families import families, validation_of
from rightsize.report.document import Document


def family_row(plan: Any) -> tuple[str, str] | None:
    """('validated (family)', status) for the plan's chosen accelerator, or None."""
    acc = getattr(getattr(plan, "best", None), "accelerator", None)
    if not isinstance(acc, str) or not acc:
        return None
    unc = getattr(plan, "uncertainty", None) or {}
    kind = str((unc.get("family") or {}).get("kind") or "all")
    v = validation_of(acc, kind)
    fam = families().get(v.family)
    name = fam.name if fam else v.family
    on = f" ({kind})" if kind != "all" else ""
    return ("validated (family)", f"{name}{on}: {v.headline()}")


def place(doc: Document, plan: Any) -> None:
    row = family_row(plan)
    if row is not None:
        doc.key_numbers.append(row)
