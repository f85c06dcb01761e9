"""A document as one self-contained HTML file: inline CSS and SVG charts, no scripts, no
fonts, images or styles from the network, so it opens anywhere, offline.

Layout: a summary a manager reads in one screen (the decision, the key numbers with their
ranges, the top advice), then every section as a <details> a reader can collapse: the
headline sections open, the reference ones (sources, checklists, sizing detail) closed.
Within a section, charts and tables share a grid that uses the width: side by side on a
wide screen, one column on a narrow one. Charts are responsive SVG (viewBox, 100% wide).
A contents list sits beside the report on a wide screen. Printing opens every section.
"""

from __future__ import annotations

import re
from html import escape

from rightsize._version import __version__
from rightsize.report.document import Document, Section, Table

SOURCE_PREFIX = "source: "  # a section bullet naming where a figure came from
TOP_ADVICE = 3  # findings shown in the summary
WIDE_TABLE_COLUMNS = 5
LONG_CELL_CHARS = 32
ROW_PX = 26  # a table row's height, for balancing the two columns
TABLE_CHARS_PER_LINE = 60  # a cell's characters before it wraps to a second line, roughly  # longer than a number with its unit: text, left to wrap  # a table with more columns takes the section's whole width
OPEN_SECTIONS = {"findings", "sizing-warnings"}  # open besides the brief ones and those with charts

CSS = """
:root { color-scheme: light; --ink: #1d232b; --muted: #4f5865; --line: #dfe3e8; --accent: #2f5f8f; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0;
       background: #f6f7f9; color: var(--ink); line-height: 1.45; }
a { color: #1a4f8b; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; z-index: 2; }
.page { max-width: 1720px; margin: 0 auto; padding: 16px 20px 48px; }
main { min-width: 0; }
header { border-bottom: 3px solid var(--accent); margin-bottom: 12px; }
h1 { font-size: 1.55rem; margin: 0 0 2px; }
h2 { font-size: 1.15rem; margin: 0; display: inline; }
h3 { font-size: .95rem; margin: 4px 0 6px; }
.sub { color: var(--muted); margin: 0 0 10px; }
.summary { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; }
.summary > h2 { display: block; font-size: 1rem; color: var(--muted); text-transform: uppercase;
                letter-spacing: .04em; margin-bottom: 6px; }
.decision { border-left: 5px solid #c62828; padding: 6px 12px; font-weight: 600; margin: 0 0 10px;
            background: #fbfbfc; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(100%, 230px), 1fr)); gap: 8px;
         margin: 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; margin: 0; }
.card dt { color: var(--muted); font-size: .78rem; text-transform: uppercase; letter-spacing: .03em; }
.card dd { margin: 0; font-size: 1.02rem; font-weight: 600; }
.card .range { display: block; font-size: .8rem; font-weight: 400; color: var(--muted); }
.advice { margin: 10px 0 0; }
.advice ol { margin: 0; padding-left: 1.4em; }
.advice li { margin: 2px 0; }
nav.toc { font-size: .85rem; margin: 10px 0; }
nav.toc h2 { display: block; font-size: .8rem; text-transform: uppercase; color: var(--muted); margin: 0 0 4px; }
nav.toc ul { list-style: none; padding: 0; margin: 0; display: flex; flex-wrap: wrap; gap: 2px 14px; }
section.sec { background: #fff; border: 1px solid var(--line); border-radius: 6px; margin: 12px 0; }
section.sec > details > summary { cursor: pointer; padding: 10px 16px; list-style-position: inside; }
section.sec > details > summary:focus-visible { outline: 3px solid #1a4f8b; outline-offset: -3px; }
section.sec > details[open] > summary { border-bottom: 1px solid #e6e9ed; }
.body { display: flex; flex-direction: column; gap: 10px; padding: 10px 16px 14px; }
.body > p, .body > ul { margin: 0; }
.cols { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 540px), 1fr)); gap: 10px 24px;
        align-items: start; }
.col { display: flex; flex-direction: column; gap: 12px; min-width: 0; }
.col:only-child figure { max-width: 1000px; }
table { border-collapse: collapse; margin: 0; font-size: .86rem; width: 100%; }
th, td { border-bottom: 1px solid #e6e9ed; padding: 3px 8px; vertical-align: top; text-align: left; }
thead th { background: #eef1f4; }
tbody th { font-weight: 400; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td { overflow-wrap: break-word; }
td.r.text { white-space: normal; text-align: left; }
caption { text-align: left; font-weight: 600; padding: 2px 0 4px; }
figure { margin: 0; min-width: 0; }
figcaption { color: var(--muted); font-size: .85rem; }
svg.chart { display: block; width: 100%; height: auto; border: 1px solid #eceff3; border-radius: 4px; }
.table-wrap { overflow-x: auto; max-width: 100%; min-width: 0; }
details.sources { font-size: .85rem; color: #3d4652; }
details.sources summary { cursor: pointer; font-weight: 600; }
ul.checks { list-style: none; padding-left: 4px; }
ul.checks li { margin: 4px 0; }
.mark { display: inline-block; width: 1.3em; font-weight: 700; }
.done .mark { color: #2e7d32; }
.open .mark { color: #c62828; }
.sev { font-weight: 700; text-transform: uppercase; font-size: .75rem; }
.sev-high { color: #b3261e; } .sev-medium { color: #a14a00; } .sev-low, .sev-info { color: #4f5f69; }
footer { color: var(--muted); font-size: .8rem; margin-top: 24px; }
@media (min-width: 1200px) {
  main { display: grid; grid-template-columns: minmax(0, 1fr) 190px; gap: 0 24px; }
  main > * { grid-column: 1; }
  main > nav.toc { grid-column: 2; grid-row: 1 / span 60; position: sticky; top: 12px; align-self: start;
                   max-height: calc(100vh - 24px); overflow-y: auto; margin: 0; }
  nav.toc ul { display: block; }
  nav.toc li { margin: 3px 0; }
  .cards { grid-template-columns: repeat(5, minmax(0, 1fr)); }
}
@media print {
  body { background: #fff; }
  .page, main { display: block; max-width: none; padding: 0; }
  nav.toc, .skip { display: none; }
  details::details-content { content-visibility: visible; display: block; }
  section.sec, .summary { border: none; break-inside: auto; }
  figure, tr, .card { break-inside: avoid; }
  summary { list-style: none; }
  a { color: inherit; text-decoration: none; }
}
"""


def _cell(tag: str, cls: str, inner: str, scope: str = "") -> str:
    sc = f' scope="{scope}"' if scope else ""
    return f'<{tag} class="{cls}"{sc}>{inner}</{tag}>'


def _table(t: Table) -> str:
    al = t.aligns()
    wide = " wide" if len(t.columns) > WIDE_TABLE_COLUMNS else ""
    out = [f'<div class="table-wrap{wide}">', "<table>"]
    if t.title:
        out.append(f"<caption>{escape(t.title)}</caption>")
    out.append(
        "<thead><tr>"
        + "".join(
            _cell("th", al[i] if i < len(al) else "l", escape(c), "col") for i, c in enumerate(t.columns)
        )
        + "</tr></thead><tbody>"
    )
    sev_col = t.columns.index("severity") if "severity" in t.columns else -1
    # the first column names the row (a component, an option, a month) when it is text
    row_heads = bool(al) and al[0] == "l"
    for row in t.rows:
        cells = []
        for i, c in enumerate(row):
            cls = al[i] if i < len(al) else "l"
            inner = escape(c)
            if i == sev_col:
                inner = f'<span class="sev sev-{escape(c)}">{inner}</span>'
            if cls == "r" and len(c) > LONG_CELL_CHARS:  # a sentence in a number column wraps
                cls = "r text"
            if i == 0 and row_heads and c:
                cells.append(_cell("th", cls, inner, "row"))
            else:
                cells.append(_cell("td", cls, inner))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    out.append("</div>")
    return "\n".join(out)


def _is_open(s: Section) -> bool:
    return s.brief or bool(s.charts) or s.id in OPEN_SECTIONS


def _chart_height(svg_text: str) -> float:
    """A chart's height in a column, from its viewBox (drawn about 0.9 of its width there)."""
    m = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg_text)
    return 0.9 * float(m.group(2)) if m else 300.0


def _table_height(t: Table) -> float:
    """A table's height, roughly: a line a row, more for cells long enough to wrap."""
    per_row = [max([1] + [1 + len(c) // TABLE_CHARS_PER_LINE for c in r]) for r in t.rows]
    return 56 + ROW_PX * sum(per_row)


def _columns(items: list[tuple[str, float]]) -> str:
    """A run of charts and narrow tables in two columns, each item to the shorter column so
    far (order kept within a column): the width used without rows of empty space beside a
    long table. One item alone takes the width (a chart capped, by CSS, to stay readable)."""
    cols: list[list[str]] = [[], []]
    heights = [0.0, 0.0]
    for html, h in items:
        k = 0 if heights[0] <= heights[1] else 1
        cols[k].append(html)
        heights[k] += h
    inner = "".join('<div class="col">' + "\n".join(c) + "</div>" for c in cols if c)
    return f'<div class="cols">{inner}</div>'


def _section(s: Section) -> str:
    hid = f"h-{escape(s.id)}"
    out = [
        f'<section id="{escape(s.id)}" class="sec" aria-labelledby="{hid}">',
        f"<details{' open' if _is_open(s) else ''}>",
        f'<summary><h2 id="{hid}">{escape(s.title)}</h2></summary>',
        '<div class="body">',
    ]
    out += [f"<p>{escape(p)}</p>" for p in s.text]
    run: list[tuple[str, float]] = []  # charts and narrow tables, laid out in two columns
    for c in s.charts:
        cap = f"<figcaption>{escape(c.caption)}</figcaption>" if c.caption else ""
        run.append((f'<figure class="chart-figure">{c.svg}{cap}</figure>', _chart_height(c.svg)))
    for t in s.tables:
        if len(t.columns) > WIDE_TABLE_COLUMNS:  # a wide table takes the whole width
            if run:
                out.append(_columns(run))
                run = []
            out.append(_table(t))
        else:
            run.append((_table(t), _table_height(t)))
    if run:
        out.append(_columns(run))
    sources = [b[len(SOURCE_PREFIX) :] for b in s.bullets if b.startswith(SOURCE_PREFIX)]
    bullets = [b for b in s.bullets if not b.startswith(SOURCE_PREFIX)]
    if bullets:
        out.append("<ul>" + "".join(f"<li>{escape(b)}</li>" for b in bullets) + "</ul>")
    if sources:  # where each figure came from: there for the asking, not in the reader's way
        out.append(
            f'<details class="sources"><summary>Sources of these figures ({len(sources)})</summary><ul>'
            + "".join(f"<li>{escape(b)}</li>" for b in sources)
            + "</ul></details>"
        )
    if s.checks:
        out.append(
            '<ul class="checks">'
            + "".join(
                f'<li class="{"done" if ok else "open"}"><span class="mark" aria-label="{"answered" if ok else "to decide"}">'
                f"{'&#10003;' if ok else '?'}</span>{escape(t)}</li>"
                for ok, t in s.checks
            )
            + "</ul>"
        )
    out += ["</div>", "</details>", "</section>"]
    return "\n".join(out)


def _card(k: str, v: str) -> str:
    """A key number; a range or detail in parentheses goes on a second, quieter line."""
    main, sep, rest = v.partition(" (")
    extra = f'<span class="range">({escape(rest)}</span>' if sep else ""
    return f'<div class="card"><dt>{escape(k)}</dt><dd>{escape(main)}{extra}</dd></div>'


def _advice(doc: Document) -> str:
    """The advisor's top findings, for the summary: what is wrong and what to do."""
    sec = doc.section("findings")
    if sec is None or not sec.tables:
        return ""
    t = sec.tables[0]
    cols = {c: i for i, c in enumerate(t.columns)}
    if "finding" not in cols:
        return ""
    items = []
    for r in t.rows[:TOP_ADVICE]:
        sev = r[cols["severity"]] if "severity" in cols else ""
        fix = r[cols["fix"]] if "fix" in cols else ""
        head = f'<span class="sev sev-{escape(sev)}">{escape(sev)}</span> ' if sev else ""
        items.append(
            f"<li>{head}<strong>{escape(r[cols['finding']])}</strong>"
            + (f". {escape(fix)}" if fix else "")
            + "</li>"
        )
    more = len(t.rows) - len(items)
    link = f' <a href="#findings">All {len(t.rows)} findings</a>' if more > 0 else ""
    return f'<div class="advice"><h3>Top advice{link}</h3><ol>{"".join(items)}</ol></div>'


def _summary(doc: Document) -> str:
    cards = "".join(_card(k, v) for k, v in doc.key_numbers)
    parts = [
        '<section class="summary" id="headline" aria-labelledby="h-headline">',
        '<h2 id="h-headline">Summary</h2>',
        f'<p class="decision">{escape(doc.decision)}</p>' if doc.decision else "",
        f'<dl class="cards">{cards}</dl>' if cards else "",
        _advice(doc),
        "</section>",
    ]
    return "\n".join(p for p in parts if p)


def _unique_chart_ids(doc: Document) -> Document:
    """A chart's title and description ids come from its name: a name used twice in one
    document gets a number, so aria-labelledby points at its own chart."""
    seen: dict[str, int] = {}
    for sec in doc.sections:
        for c in sec.charts:
            k = seen.get(c.name, 0)
            seen[c.name] = k + 1
            if k:
                c.svg = c.svg.replace(f"chart-{c.name}-", f"chart-{c.name}-{k + 1}-")
    return doc


def render_html(doc: Document) -> str:
    doc = _unique_chart_ids(doc)
    toc = "".join(
        f'<li><a href="#{escape(s.id)}">{escape(s.title.split(":")[0].split(" (")[0])}</a></li>'
        for s in doc.sections
    )
    body = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="rightsize {escape(__version__)}">',
        '<link rel="icon" href="data:,">',
        f"<title>{escape(doc.title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        f'<body data-kind="{escape(doc.kind)}">',
        '<a class="skip" href="#content">Skip to the report</a>',
        '<div class="page">',
        '<main id="content">',
        "<header>",
        f"<h1>{escape(doc.title)}</h1>",
        f'<p class="sub">{escape(doc.subtitle)}</p>' if doc.subtitle else "",
        "</header>",
        _summary(doc) if (doc.decision or doc.key_numbers) else "",
        f'<nav class="toc" aria-label="Sections"><h2>Contents</h2><ul>{toc}</ul></nav>' if toc else "",
        *(_section(s) for s in doc.sections),
        f"<footer>Generated by rightsize {escape(__version__)}. Self-contained: no scripts, nothing loaded from the network.</footer>",
        "</main>",
        "</div>",
        "</body>",
        "</html>",
    ]
    return "\n".join(x for x in body if x)
