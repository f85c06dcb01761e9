"""A document as one self-contained HTML file: inline CSS and SVG charts, no scripts, no
fonts, images or styles from the network, so it opens anywhere, offline."""

from __future__ import annotations

from html import escape

from rightsize._version import __version__
from rightsize.report.document import Document, Section, Table

CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0;
       background: #f6f7f9; color: #1d232b; line-height: 1.45; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 60px; }
header { border-bottom: 3px solid #4e79a7; margin-bottom: 18px; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.2rem; margin: 28px 0 10px; border-bottom: 1px solid #d8dce2; padding-bottom: 4px; }
h3 { font-size: 1rem; margin: 14px 0 6px; }
.sub { color: #5a6472; margin: 0 0 12px; }
.decision { background: #fff; border-left: 5px solid #d62728; padding: 10px 14px; font-weight: 600;
            margin: 12px 0 18px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr)); gap: 10px; }
.card { background: #fff; border: 1px solid #dfe3e8; border-radius: 6px; padding: 8px 12px; }
.card .k { color: #5a6472; font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; }
.card .v { font-size: 1.02rem; font-weight: 600; }
section { background: #fff; border: 1px solid #dfe3e8; border-radius: 6px; padding: 4px 18px 14px;
          margin: 16px 0; }
table { border-collapse: collapse; margin: 8px 0 12px; font-size: .88rem; width: 100%; }
th, td { border-bottom: 1px solid #e6e9ed; padding: 4px 8px; vertical-align: top; }
th { background: #f0f2f5; text-align: left; }
td.r, th.r { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
figure { margin: 10px 0 16px; overflow-x: auto; }
figcaption { color: #5a6472; font-size: .85rem; }
svg.chart { max-width: 100%; height: auto; border: 1px solid #eceff3; border-radius: 4px; }
ul.checks { list-style: none; padding-left: 4px; }
ul.checks li { margin: 4px 0; }
.mark { display: inline-block; width: 1.3em; font-weight: 700; }
.done .mark { color: #2e7d32; }
.open .mark { color: #c62828; }
.sev { font-weight: 700; text-transform: uppercase; font-size: .75rem; }
.sev-high { color: #c62828; } .sev-medium { color: #ef6c00; } .sev-low, .sev-info { color: #546e7a; }
footer { color: #7a8491; font-size: .8rem; margin-top: 28px; }
"""


def _table(t: Table) -> str:
    al = t.aligns()
    out = ["<table>"]
    if t.title:
        out.append(f"<caption>{escape(t.title)}</caption>")
    out.append(
        "<thead><tr>"
        + "".join(
            f'<th class="{al[i] if i < len(al) else "l"}">{escape(c)}</th>' for i, c in enumerate(t.columns)
        )
        + "</tr></thead><tbody>"
    )
    sev_col = t.columns.index("severity") if "severity" in t.columns else -1
    for row in t.rows:
        cells = []
        for i, c in enumerate(row):
            cls = al[i] if i < len(al) else "l"
            inner = escape(c)
            if i == sev_col:
                inner = f'<span class="sev sev-{escape(c)}">{inner}</span>'
            cells.append(f'<td class="{cls}">{inner}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _section(s: Section) -> str:
    out = [f'<section id="{escape(s.id)}">', f"<h2>{escape(s.title)}</h2>"]
    out += [f"<p>{escape(p)}</p>" for p in s.text]
    for c in s.charts:
        cap = f"<figcaption>{escape(c.caption)}</figcaption>" if c.caption else ""
        out.append(f'<figure class="chart-figure">{c.svg}{cap}</figure>')
    out += [_table(t) for t in s.tables]
    if s.bullets:
        out.append("<ul>" + "".join(f"<li>{escape(b)}</li>" for b in s.bullets) + "</ul>")
    if s.checks:
        out.append(
            '<ul class="checks">'
            + "".join(
                f'<li class="{"done" if ok else "open"}"><span class="mark">{"&#10003;" if ok else "?"}</span>{escape(t)}</li>'
                for ok, t in s.checks
            )
            + "</ul>"
        )
    out.append("</section>")
    return "\n".join(out)


def render_html(doc: Document) -> str:
    cards = "".join(
        f'<div class="card"><div class="k">{escape(k)}</div><div class="v">{escape(v)}</div></div>'
        for k, v in doc.key_numbers
    )
    toc = " · ".join(f'<a href="#{escape(s.id)}">{escape(s.title.split(":")[0])}</a>' for s in doc.sections)
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
        "<main>",
        "<header>",
        f"<h1>{escape(doc.title)}</h1>",
        f'<p class="sub">{escape(doc.subtitle)}</p>' if doc.subtitle else "",
        "</header>",
        f'<div class="decision">{escape(doc.decision)}</div>' if doc.decision else "",
        f'<div class="cards">{cards}</div>' if cards else "",
        f"<nav><p>{toc}</p></nav>" if toc else "",
        *(_section(s) for s in doc.sections),
        f"<footer>Generated by rightsize {escape(__version__)}. Self-contained: no scripts, nothing loaded from the network.</footer>",
        "</main>",
        "</body>",
        "</html>",
    ]
    return "\n".join(x for x in body if x)
