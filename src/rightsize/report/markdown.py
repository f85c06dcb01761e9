"""A document as Markdown (GitHub-flavoured tables, task lists for the checklists), for
pasting into a design document. Charts are left to the HTML report; every chart's numbers
are in a table of its section."""

from __future__ import annotations

from rightsize.report.document import Document, Section, Table

# Characters that start Markdown inline syntax (emphasis, links, code, images, headings, HTML).
_INLINE = str.maketrans({c: "\\" + c for c in "\\`*_[]<>#!~|"})


def _plain(s: str) -> str:
    """Text from the data (a spec's name, an id) as literal Markdown: syntax escaped, one line."""
    return " ".join(str(s).split()).translate(_INLINE)


def _prose(s: str) -> str:
    """Our own sentences (they may use `code`): raw HTML neutralised, one paragraph."""
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cell(s: str) -> str:
    return _plain(s)


def _table(t: Table) -> list[str]:
    al = t.aligns()
    out = [f"**{_plain(t.title)}**", ""] if t.title else []
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
    out = [f"## {_plain(s.title)}", ""]
    for p in s.text:
        out += [_prose(p), ""]
    if s.charts:
        names = ", ".join(c.name for c in s.charts)
        out += [f"_Charts ({names}) in the HTML report: `--format html`._", ""]
    for t in s.tables:
        out += _table(t)
    if s.bullets:
        out += [f"- {_prose(b)}" for b in s.bullets] + [""]
    if s.checks:
        out += [f"- [{'x' if ok else ' '}] {_prose(t)}" for ok, t in s.checks] + [""]
    return out


def render_markdown(doc: Document) -> str:
    out = [f"# {_plain(doc.title)}", ""]
    if doc.subtitle:
        out += [f"_{_plain(doc.subtitle)}_", ""]
    if doc.decision:
        out += [f"**Decision:** {_prose(doc.decision)}", ""]
    if doc.key_numbers:
        out += _table(Table(["key number", "value"], [[k, v] for k, v in doc.key_numbers], align=["l", "l"]))
    for s in doc.sections:
        out += _section(s)
    return "\n".join(out).rstrip() + "\n"
