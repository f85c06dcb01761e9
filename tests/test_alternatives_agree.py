"""The alternatives table states one figure per quantity: each 'why not' gap is the gap between
the figures the table shows, on the same basis (it once read '+4% GPU-hours' beside an
alternative with fewer GPU-hours: the chosen row showed the sized run, the gap the search's
estimate, and the rank a risk-aware quantile it did not name)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rightsize.api import plan
from rightsize.report.render import render

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "llama3.1-405b-pretrain.yaml"


@pytest.fixture(scope="module")
def planned():  # type: ignore[no-untyped-def]
    return plan(EXAMPLE)


def test_each_gap_is_the_gap_between_the_shown_figures(planned) -> None:  # type: ignore[no-untyped-def]
    est = planned.extra.get("search_estimate") or {}
    base = est.get("gpu_hours") or planned.best.gpu_hours
    assert planned.alternatives
    for c, why in planned.alternatives:
        m = re.match(r"([+-]\d+)% GPU-hours", why)
        assert m, why
        assert int(m.group(1)) == pytest.approx(100 * (c.gpu_hours / base - 1), abs=1.0), why
        if "at P" in why:  # ranked at a quantile: the report names it and both factors
            assert "search.risk" in why and re.search(r"x\d\.\d\d against x\d\.\d\d", why)


def test_the_chosen_row_on_the_search_basis_is_shown_when_it_differs(planned) -> None:  # type: ignore[no-untyped-def]
    est = planned.extra.get("search_estimate") or {}
    text = render(planned, "markdown")
    if est and abs(planned.best.gpu_hours / est["gpu_hours"] - 1) > 0.005:
        assert "| chosen, as searched |" in text
    else:
        assert "as searched" not in text
