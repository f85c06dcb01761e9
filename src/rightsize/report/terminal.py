"""A document as a short terminal summary: the decision, the key numbers and the brief
sections (breakdowns, alternatives, uncertainty, top findings) as rich tables, rendered to
plain text (no colour codes) so it reads the same in a pipe, a file or a terminal."""

from __future__ import annotations

import shutil
from io import StringIO

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from rightsize.report.document import Document, Section, Table

WIDTH = 110  # when the output goes to a pipe or a file (no terminal to measure)
MIN_WIDTH, MAX_WIDTH = 60, 160


def terminal_width() -> int:
    """The terminal's width in columns (COLUMNS, then the terminal itself), kept readable."""
    cols = shutil.get_terminal_size((WIDTH, 24)).columns
    return max(MIN_WIDTH, min(MAX_WIDTH, cols))


TOP_FINDINGS = 5
MAX_ROWS = 12
MAX_CELL_CHARS = 400


def _brief(t: Table) -> Table:
    if not t.brief_columns:
        return t
    keep = t.brief_columns
    al = t.aligns()
    return Table(
        [t.columns[i] for i in keep], [[r[i] for i in keep] for r in t.rows], t.title, [al[i] for i in keep]
    )


def _text(s: str, limit: int = MAX_CELL_CHARS) -> Text:
    """A cell as literal text (never rich markup: a spec's '[/]' must not break the table),
    shortened so one huge value cannot make the layout slow."""
    s = str(s)
    return Text(s if len(s) <= limit else s[: limit - 3] + "...")


def _rich(t: Table, max_rows: int = MAX_ROWS) -> RichTable:
    t = _brief(t)
    rt = RichTable(
        title=_text(t.title) if t.title else None,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
    )
    al = t.aligns()
    for i, c in enumerate(t.columns):
        rt.add_column(
            _text(c), justify="right" if (al[i] if i < len(al) else "l") == "r" else "left", overflow="fold"
        )
    for row in t.rows[:max_rows]:
        rt.add_row(*(_text(cell) for cell in row))
    if len(t.rows) > max_rows:
        rt.add_row(*([f"... {len(t.rows) - max_rows} more"] + [""] * (len(t.columns) - 1)))
    return rt


def _findings_table(s: Section) -> Table | None:
    if not s.tables:
        return None
    t = s.tables[0]
    keep = [t.columns.index(c) for c in ("severity", "finding", "fix") if c in t.columns]
    rows = [[r[i] for i in keep] for r in t.rows[:TOP_FINDINGS]]
    return Table(
        [t.columns[i] for i in keep],
        rows,
        f"top findings ({min(len(t.rows), TOP_FINDINGS)} of {len(t.rows)})",
        ["l"] * len(keep),
    )


def render_terminal(doc: Document, width: int | None = None) -> str:
    """Plain text at `width` columns (default: the terminal's width, 110 in a pipe)."""
    width = width or terminal_width()
    buf = StringIO()
    con = Console(
        file=buf, width=width, color_system=None, force_terminal=False, highlight=False, emoji=False
    )
    con.print(doc.title + (f"  ({doc.subtitle})" if doc.subtitle else ""), markup=False)
    if doc.decision:
        con.print("", markup=False)
        con.print("Chosen: " + doc.decision, markup=False)
    if doc.key_numbers:
        kn = Table(["key number", "value"], [[k, v] for k, v in doc.key_numbers], align=["l", "l"])
        con.print(_rich(kn, 40))
    for s in doc.sections:
        if not s.brief:
            continue
        con.print("", markup=False)
        if s.id == "findings":
            ft = _findings_table(s)
            con.print(s.title, markup=False)
            if ft:
                con.print(_rich(ft))
            else:
                for p in s.text:
                    con.print("  " + p, markup=False)
            continue
        con.print(s.title, markup=False)
        for t in s.tables:
            con.print(_rich(t))
        for b in s.bullets:
            con.print("  - " + b, markup=False)
    checks = [s for s in doc.sections if s.checks]
    con.print("", markup=False)
    for s in checks:
        done = sum(1 for ok, _ in s.checks if ok)
        con.print(
            f"{s.title.split(' (')[0]}: {done} answered, {len(s.checks) - done} to decide", markup=False
        )
    for s in doc.sections:
        if s.id == "search":
            for p in s.text:
                con.print(p, markup=False)
    con.print("Full report: --format html (charts) or --format markdown; data: --format json.", markup=False)
    return buf.getvalue().rstrip() + "\n"
