"""The sweep report: the spread of each figure over the planned scenarios (min, P10, P50, P90,
max) and every scenario's row (`sweep.run.SweepResult.to_dict()`)."""

from __future__ import annotations

from typing import Any

from rightsize.report import units
from rightsize.report.document import Document, Section, Table

MAX_ROWS = 200  # the rows table (every row is in the JSON)
BRIEF_ROWS = 20  # up to this many scenarios, the terminal summary lists each


def _fmt(name: str, v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    return units.value(name, v)


def sweep_document(d: dict[str, Any], title: str = "Sweep") -> Document:
    spread = Section(
        "spread",
        "Spread over the scenarios",
        text=[f"{d['planned']} of {d['scenarios']} scenarios planned ({d['failed']} failed) on {d['engine']} "
              f"({d['workers']} worker{'s' if d['workers'] != 1 else ''}) in {units.seconds(d['seconds'])}."],
        tables=[
            Table(
                ["figure", "min", "P10", "P50", "P90", "max"],
                [[units.label(k)] + [_fmt(k, s[q]) for q in ("min", "p10", "p50", "p90", "max")]
                 for k, s in d["summary"].items()],
            )
        ],
        brief=True,
    )  # fmt: skip
    names = list(dict.fromkeys(k for r in d["rows"] if r["status"] == "ok" for k in r["figures"]))
    rows = [
        [r["scenario"], r["status"]]
        + ([_fmt(k, r["figures"].get(k)) for k in names] if r["status"] == "ok" else [r["error"][:120]] + [""] * (len(names) - 1))
        for r in d["rows"][:MAX_ROWS]
    ]  # fmt: skip
    table = Section(
        "scenarios",
        "Scenarios",
        tables=[Table(["scenario", "status", *[units.label(k) for k in names]], rows)],
        text=[f"First {MAX_ROWS} of {len(d['rows'])} scenarios; the JSON holds them all."]
        if len(d["rows"]) > MAX_ROWS
        else [],
        brief=len(d["rows"]) <= BRIEF_ROWS,
    )
    key = [("scenarios", str(d["scenarios"])), ("planned", str(d["planned"])), ("engine", d["engine"])]
    return Document("sweep", f"{title}: {d['name']}", decision=f"Base spec {d['base']}.", key_numbers=key,
                    sections=[spread, table])  # fmt: skip
