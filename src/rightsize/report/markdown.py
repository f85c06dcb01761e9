"""A document as Markdown (GitHub-flavoured tables, task lists for the checklists), for
pasting into a design document. Charts are left to the HTML report; every chart's numbers
are in a table of its section."""

from __future__ import annotations

from rightsize.report.document import Document, Section, Table


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def _table(t: Table) -> list[str]:
    al = t.aligns()
    out = [f"**{t.title}**", ""] if t.title else []
    out.append("| " + " | ".join(_cell(c) or " " for c in t.columns) + " |")
    out.append(
        "| "
        + " | ".join(
            "---:" if (al[i] if i < len(al) else "l") == "r" else "---" for i in range(len(t.columns))
        )
        + " |"
    )
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in t.rows]
    return [*out, ""]


def _section(s: Section) -> list[str]:
    out = [f"## {s.title}", ""]
    for p in s.text:
        out += [p, ""]
    if s.charts:
        names = ", ".join(c.name for c in s.charts)
        out += [f"_Charts ({names}) in the HTML report: `--format html`._", ""]
    for t in s.tables:
        out += _table(t)
    if s.bullets:
        out += [f"- {b}" for b in s.bullets] + [""]
    if s.checks:
        out += [f"- [{'x' if ok else ' '}] {t}" for ok, t in s.checks] + [""]
    return out


def render_markdown(doc: Document) -> str:
    out = [f"# {doc.title}", ""]
    if doc.subtitle:
        out += [f"_{doc.subtitle}_", ""]
    if doc.decision:
        out += [f"**Decision:** {doc.decision}", ""]
    if doc.key_numbers:
        out += _table(Table(["key number", "value"], [[k, v] for k, v in doc.key_numbers], align=["l", "l"]))
    for s in doc.sections:
        out += _section(s)
    return "\n".join(out).rstrip() + "\n"
