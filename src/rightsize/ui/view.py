"""A plan as the browser shows it: the plan's JSON (`report.render.result_dict`, the same
versioned dict `rightsize plan --format json` writes), its headline figures, and the report's
document (`report.render.document`: decision, key numbers, sections of tables, charts and
sources) as plain data, so the page draws what the reports draw and computes nothing."""

from __future__ import annotations

from typing import Any

from rightsize.report.document import Document, Section, Table
from rightsize.report.html import SOURCE_PREFIX
from rightsize.ui.headline import plan_headline, workload_shares


def _table(t: Table) -> dict[str, Any]:
    return {"title": t.title, "columns": t.columns, "rows": t.rows, "align": t.aligns()}


def _section(s: Section) -> dict[str, Any]:
    sources = [b.removeprefix(SOURCE_PREFIX) for b in s.bullets if b.startswith(SOURCE_PREFIX)]
    return {
        "id": s.id,
        "title": s.title,
        "text": s.text,
        "bullets": [b for b in s.bullets if not b.startswith(SOURCE_PREFIX)],
        "sources": sources,
        "tables": [_table(t) for t in s.tables],
        "charts": [{"name": c.name, "title": c.title, "svg": c.svg, "caption": c.caption} for c in s.charts],
        "checks": [{"done": done, "text": text} for done, text in s.checks],
    }


def document_dict(doc: Document) -> dict[str, Any]:
    """The report's document as JSON-ready data (the SVG charts as their text)."""
    return {
        "kind": doc.kind,
        "title": doc.title,
        "subtitle": doc.subtitle,
        "decision": doc.decision,
        "key_numbers": [list(pair) for pair in doc.key_numbers],
        "sections": [_section(s) for s in doc.sections],
    }


def plan_view(result: Any, plan_json: dict[str, Any]) -> dict[str, Any]:
    """Everything the page shows for one planned what-if."""
    from rightsize.report.render import document

    view: dict[str, Any] = {
        "plan": plan_json,
        "headline": plan_headline(plan_json),
        "document": document_dict(document(result, "Plan")),
    }
    if plan_json.get("kind") == "fleet_plan":
        view["fleet"] = {"shares": workload_shares(plan_json)}
    return view
