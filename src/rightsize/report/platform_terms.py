"""A plan document in its platform's words (`rightsize.catalog.platforms`): the sections are
written once, for any accelerator, with the most common unit (GPU); on a platform whose
unit is a chip (TPU, Trainium, Gaudi) every title, label, cell and sentence says chips.
Cited sources ("source: ..." bullets) keep their own words; the figure's value before them and
the catalog's own derivation notes in brackets are the plan's words."""

from __future__ import annotations

import re
from typing import Any

from rightsize.catalog.platforms import platform_for, say_units
from rightsize.report.document import Document


def in_platform_terms(doc: Document, acc_id: str) -> Document:
    """``doc`` rewritten in place for ``acc_id``'s unit noun, and returned."""
    noun = platform_for(acc_id).unit_noun
    if noun == "GPU":
        return doc

    def say(text: str) -> str:
        return say_units(text, noun)

    doc.decision = say(doc.decision)
    doc.key_numbers = [(say(k), say(v)) for k, v in doc.key_numbers]
    for sec in doc.sections:
        sec.title = say(sec.title)
        sec.text = [say(t) for t in sec.text]
        sec.bullets = [_say_source(b, noun) if b.startswith("source:") else say(b) for b in sec.bullets]
        sec.checks = [(ok, say(t)) for ok, t in sec.checks]
        for table in sec.tables:
            table.title = say(table.title)
            table.columns = [say(c) for c in table.columns]
            table.rows = [[say(c) if isinstance(c, str) else c for c in row] for row in table.rows]
        for chart in sec.charts:
            chart.title, chart.caption = say(chart.title), say(chart.caption)
            # the drawing's words (titles, labels, tooltips); its ids and classes are lower-case
            chart.svg = re.sub(r"\bGPU(s?)\b", rf"{noun}\1", chart.svg)
    return doc


# A derivation the price catalog appends to a cited source ("[per GPU-hour: $35.76/h / 16 GPUs]").
_DERIVED_NOTE = re.compile(r"\[per GPU-hour: [^\]]*\]")


def _say_source(bullet: str, noun: str) -> str:
    """A "source: FIGURE = VALUE; CITATION; as of DATE" bullet with the value ("$2.23 per gpu
    hour") and any bracketed derivation in ``noun``; the citation itself unchanged."""
    head, sep, rest = bullet.partition("; ")
    figure, eq, value = head.partition(" = ")  # the figure's catalog key stays as the data names it
    rest = _DERIVED_NOTE.sub(lambda m: say_units(m.group(0), noun), rest)
    return figure + eq + say_units(value, noun) + sep + rest


# JSON keys whose strings are not the plan's own prose: the spec as given, cited sources, and
# the priced instance (`export` reads its "(N GPUs)" as written by the price catalog).
_JSON_KEEP = frozenset({"spec", "source", "sources", "priced_instance"})


def json_in_platform_terms(d: dict[str, Any], acc_id: str | None) -> dict[str, Any]:
    """The plan's JSON view with its prose (findings, checklists, assumptions, reasons) in
    ``acc_id``'s unit noun; keys, numbers and the strings under `_JSON_KEEP` unchanged."""
    noun = platform_for(acc_id).unit_noun if acc_id else "GPU"
    if noun == "GPU":
        return d

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: (v if k in _JSON_KEEP else walk(v)) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return say_units(x, noun) if isinstance(x, str) else x

    out: dict[str, Any] = walk(d)
    return out
