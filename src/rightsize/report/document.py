"""A report as a format-neutral document: a title, the decision, key numbers, and sections
of text, tables and charts. Builders (one per result kind) fill it from a result; the
terminal, Markdown and HTML renderers draw it. Keeping the two apart means every format
says the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rightsize.report import units


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    title: str = ""
    # "l" or "r" per column; numbers right-aligned by default
    align: list[str] = field(default_factory=list)
    # Columns the short terminal summary keeps (all when empty).
    brief_columns: list[int] = field(default_factory=list)

    def aligns(self) -> list[str]:
        return self.align or ["l"] + ["r"] * (len(self.columns) - 1)


@dataclass
class Chart:
    name: str  # the svg's data-chart attribute
    title: str
    svg: str
    caption: str = ""


@dataclass
class Section:
    id: str
    title: str
    text: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    # A checklist: (done, text) items, drawn as ticked / open boxes.
    checks: list[tuple[bool, str]] = field(default_factory=list)
    brief: bool = False  # shown in the short terminal summary too


@dataclass
class Document:
    kind: str
    title: str
    subtitle: str = ""
    decision: str = ""
    key_numbers: list[tuple[str, str]] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    def section(self, id_: str) -> Section | None:
        return next((s for s in self.sections if s.id == id_), None)

    @property
    def charts(self) -> list[Chart]:
        return [c for s in self.sections for c in s.charts]


def kv_table(d: dict[str, Any], title: str = "", unit_key: str = "") -> Table:
    """Scalars of a dict as (what, value) rows, units from the keys; a dict keyed by names (a
    price per tier) takes its unit from `unit_key`, the key that holds it."""

    def fmt(k: str, v: Any) -> str:
        own = units.label(k) != k.replace("_", " ")
        return units.value(k if own or not unit_key else unit_key, v)

    rows = [[units.label(k), fmt(k, v)] for k, v in d.items() if not isinstance(v, dict | list)]
    return Table(["what", "value"], rows, title)


def records_table(records: list[dict[str, Any]], title: str = "", first: str | None = None) -> Table:
    """A list of flat dicts as a table: the union of their scalar keys as columns."""
    cols: list[str] = []
    for r in records:
        for k, v in r.items():
            if k not in cols and not isinstance(v, dict | list):
                cols.append(k)
    if first and first in cols:
        cols.remove(first)
        cols.insert(0, first)
    rows = [[units.value(c, r.get(c)) for c in cols] for r in records]
    return Table([units.label(c) for c in cols], rows, title)


def mapping_table(d: dict[str, dict[str, Any]], title: str = "", key_name: str = "option") -> Table:
    """A dict of dicts (e.g. cloud options) as rows: one row per key, columns the inner keys."""
    recs = [
        {key_name: k, **{ik: iv for ik, iv in v.items() if not isinstance(iv, dict | list)}}
        for k, v in d.items()
    ]
    return records_table(recs, title, first=key_name)


def generic_section(id_: str, title: str, data: Any, brief: bool = False) -> Section:
    """Any JSON-like value as a section: scalars in a key/value table, nested dicts and lists
    of dicts as their own tables, lists of strings as bullets."""
    sec = Section(id_, title, brief=brief)
    if isinstance(data, dict):
        scalars = {k: v for k, v in data.items() if not isinstance(v, dict | list)}
        if scalars:
            sec.tables.append(kv_table(scalars))
        for k, v in data.items():
            if isinstance(v, dict) and v:
                if all(isinstance(x, dict) for x in v.values()):
                    sec.tables.append(mapping_table(v, units.label(k)))
                else:
                    sec.tables.append(kv_table(v, units.label(k)))
                    for ik, iv in v.items():
                        if isinstance(iv, dict) and iv:
                            sec.tables.append(kv_table(iv, f"{units.label(k)}: {units.label(ik)}", ik))
            elif isinstance(v, list) and v:
                if all(isinstance(x, dict) for x in v):
                    sec.tables.append(records_table(v, units.label(k)))
                else:
                    sec.bullets.extend(f"{units.label(k)}: {units.value(k, x)}" for x in v)
    elif isinstance(data, list):
        if data and all(isinstance(x, dict) for x in data):
            sec.tables.append(records_table(data))
        else:
            sec.bullets.extend(str(x) for x in data)
    elif data is not None:
        sec.text.append(str(data))
    return sec
