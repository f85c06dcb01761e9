"""Issue 31: the reports in human units, with charts whose axes say what they plot.

Every bundled example rendered to HTML, Markdown and the terminal summary: no bare integer of
seven or more digits anywhere a reader looks (159,877,517,762,560 bytes is 159.88 TB); then
the defects a reader found, each held here: the Pareto front's axes, the latency panels, the
growth chart's labels, the fleet's demand line, and the run table's duplicated rows."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from rightsize.advise.view import sizing_dict
from rightsize.api import plan as run_plan
from rightsize.report import sections, units
from rightsize.report.render import document, render

ROOT = Path(__file__).resolve().parent.parent
# every bundled plan: the top-level examples and the fleet's own workloads (profile/ holds a
# model for the profiler, not a plan)
EXAMPLES = sorted(
    p
    for p in (ROOT / "examples").rglob("*.yaml")
    if p.parent.name != "profile" and "\nkind: sweep" not in p.read_text()
)

# A run of seven or more digits, bare (1653071) or grouped (1,653,071), not part of a word
# or an identifier (a model id, a hash, "megatron21-76.1b") and not the tail of a decimal.
RAW = re.compile(r"(?<![\w.,-])(?:\d{1,3}(?:,\d{3}){2,}|\d{7,})(?![\w])")


class _Text(HTMLParser):
    """The text a reader sees or hears: element text, chart titles and descriptions, and the
    attributes a screen reader reads (aria-label, title); not the CSS or the SVG geometry."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "style":
            self._skip += 1
        self.parts += [v for k, v in attrs if k in ("aria-label", "title", "alt") and v]

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def _visible(html: str) -> str:
    p = _Text()
    p.feed(html)
    return "\n".join(p.parts)


def raw_numbers(text: str) -> list[str]:
    """Seven-digit integers in `text` that a person would have to count the digits of."""
    return RAW.findall(text)


@pytest.fixture(scope="module")
def plans() -> dict[str, Any]:
    return {p.stem: run_plan(p) for p in EXAMPLES}


def test_the_detector_finds_raw_numbers_and_spares_ids_and_years() -> None:
    # the check itself must be able to fail: the storage figure and a bare count
    assert raw_numbers("storage capacity | 159,877,517,762,560 | 191,853,021,315,072") == [
        "159,877,517,762,560",
        "191,853,021,315,072",
    ]
    assert raw_numbers("value: 2199023255552.0, GPU-hours 1653070.9") == ["2199023255552", "1653070"]
    assert raw_numbers("2027-01, 2,048 GPUs, $23.56M, 1.65M GPU-hours, run sha1234567, v-1234567") == []


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_no_raw_numbers_in_any_format(plans: dict[str, Any], name: str) -> None:
    plan = plans[name]
    found = {
        "html": raw_numbers(_visible(render(plan, "html"))),
        "markdown": raw_numbers(render(plan, "markdown")),
        "table": raw_numbers(render(plan, "table")),
    }
    assert not any(found.values()), f"{name}: {found}"


@pytest.mark.parametrize(
    ("key", "value", "label", "text"),
    [
        # a unit at the end of the key (the DESIGN rule) ...
        ("total_with_margin_bytes", 1.5987751776256e14, "total with margin", "159.88 TB"),
        ("facility_power_w", 6.008e6, "facility power", "6.0 MW"),
        ("gpu_hours", 1653070.9, "gpu hours", "1.65M"),
        ("configs", 4524147, "configs", "4.52M"),
        ("configs", 452760, "configs", "452,760"),
        # ... or inside it, before a "per" that qualifies it
        ("host_memory_bytes_per_gpu", 274877906944, "host memory per gpu", "274.88 GB"),
        ("read_bytes_per_s_per_node", 5.12e10, "read per node", "51.20 GB/s"),
        ("time_change_fraction_low", 0.18, "time change low", "18.0%"),
        ("onprem_power_w_per_tb", 1.2, "onprem power per tb", "1.2 W"),
        ("nic_gbps_per_gpu", 400, "nic per gpu", "400 Gb/s"),
        ("usd_per_month_by_tier", 15385.0, "usd per month by tier", "$15,385 per month"),
    ],
)
def test_units_format_by_key(key: str, value: float, label: str, text: str) -> None:
    assert units.label(key) == label
    assert units.value(key, value) == text


def test_sources_and_margins_read_in_their_units() -> None:
    line = sections.source_line(
        {
            "item": "hgx-b200.host_memory_bytes",
            "value": 2199023255552.0,
            "source": "DGX B200 guide",
            "as_of": "2026-11",
        }
    )
    assert line == "source: hgx-b200.host_memory_bytes = 2.20 TB; DGX B200 guide; as of 2026-11"
    t = sections.margins_table(
        [
            {
                "what": "storage capacity",
                "unit": "bytes",
                "base": 159877517762560,
                "planned": 191853021315072,
                "margin_fraction": 0.2,
                "applied": "safety margin 20%",
            },
            {
                "what": "slack",
                "unit": "days",
                "base": 33.6,
                "planned": 60,
                "margin_fraction": 0.78,
                "applied": "",
            },
        ]
    )
    assert t.rows[0][1:4] == ["159.88 TB", "191.85 TB", "20.0%"]
    assert t.rows[1][1:3] == ["33.6 d", "60.0 d"]


def test_no_table_repeats_a_row(plans: dict[str, Any]) -> None:
    # The run table showed "run 33.6 d" twice: sizing.run carried run_s and run_days, one
    # quantity in two units. Fixed where the data is built, so no table repeats a row.
    for name in ("llama3-70b-pretrain", "llama3-70b-chat-serving", "gpt3-175b-megatron"):
        for sec in document(plans[name]).sections:
            for t in sec.tables:
                rows = [tuple(r) for r in t.rows]
                dup = {r for r in rows if rows.count(r) > 1}
                assert not dup, f"{name} {sec.id} {t.title!r}: {dup}"
    run = sizing_dict(plans["llama3-70b-pretrain"])["run"]
    assert "run_days" not in run and "run_s" in run
    assert "throttle_slowdown" not in sizing_dict(plans["llama3-70b-pretrain"])["power"]


def _svg(html: str, name: str) -> str:
    return html.split(f'data-chart="{name}"', 1)[1].split("</svg>", 1)[0]


def _texts(svg_text: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg_text)


def _axes(svg_text: str) -> list[dict[str, float]]:
    return [
        {"lo": float(a), "hi": float(b), "data_lo": float(c), "data_hi": float(d)}
        for a, b, c, d in re.findall(
            r'data-axis="y" data-axis-lo="([^"]+)" data-axis-hi="([^"]+)" data-data-lo="([^"]+)" data-data-hi="([^"]+)"',
            svg_text,
        )
    ]


def test_pareto_axes_say_what_they_plot(plans: dict[str, Any]) -> None:
    plan = plans["llama3-70b-pretrain"]
    doc = document(plan)
    sec = doc.section("pareto")
    assert sec is not None and sec.title == "Pareto front: time against cost"
    svg_text = _svg(render(plan, "html"), "pareto")
    labels = _texts(svg_text)
    assert "time to train (days)" in labels and "cost per run (USD, on demand)" in labels
    assert not any("GPU-hours" in t for t in labels)
    # ticks in the axes' units: days along x, dollars up y
    assert any(re.fullmatch(r"\d+(\.\d+)? d", t) for t in labels)
    assert any(re.fullmatch(r"\$[\d.]+[kMG]?", t) for t in labels)
    # the y axis spans the costs plotted (tens of millions), not GPU-hours (millions)
    y = _axes(svg_text)[0]
    costs = [c.cost_usd for c in (plan.best, *plan.pareto) if c.cost_usd]
    assert y["data_lo"] <= min(costs) * 1.001 and y["data_hi"] >= max(costs) * 0.999


def test_latency_panels_each_have_their_own_scale(plans: dict[str, Any]) -> None:
    plan = plans["llama3-70b-chat-serving"]
    svg_text = _svg(render(plan, "html"), "latency")
    assert svg_text.count("data-panel=") == 2
    ttft, tpot = _axes(svg_text)
    lat = plan.best.latency_s
    assert ttft["data_hi"] == pytest.approx(lat["ttft_p99_s"] * 1e3, rel=1e-3)
    assert tpot["data_hi"] == pytest.approx(lat["tpot_p99_s"] * 1e3, rel=1e-3)
    # each axis ends within its own data's order of magnitude: TPOT is not drawn on TTFT's
    assert tpot["hi"] < 2 * tpot["data_hi"] and ttft["hi"] < 2 * ttft["data_hi"]
    assert tpot["hi"] < ttft["hi"] / 4


def test_growth_chart_has_one_label_per_point() -> None:
    stages = [
        {"stage": 1, "needed_at_years": 0.0, "gpus": 16, "added_capex_usd": 7.8e5},
        {"stage": 2, "needed_at_years": 0.0, "gpus": 32, "added_capex_usd": 7.8e5},
        {"stage": 3, "needed_at_years": 1.0, "gpus": 48, "added_capex_usd": 7.8e5, "fabric_ok": False},
    ]
    chart = sections._growth_chart({"stages": stages})
    assert chart is not None
    labels = _texts(chart.svg)
    assert labels.count("today") == 1 and "year 0" not in labels and labels.count("year 1") == 1
    # the two purchases due now are one bar: 32 GPUs installed, their capital summed
    assert "+$1.56M" in labels and "+$780,000" in labels
    assert 'fill="#e15759"' in chart.svg  # year 1 outgrows the fabric: drawn red


def test_fleet_demand_is_drawn_on_top_and_named(plans: dict[str, Any]) -> None:
    svg_text = _svg(render(plans["fleet-2027"], "html"), "fleet-timeline")
    paths = re.findall(r'<path [^>]*data-series="([^"]+)"', svg_text)
    assert paths[-1] == "demand (peak hour)"  # the last drawn, so nothing hides it
    demand = re.search(r'<path [^>]*data-series="demand \(peak hour\)"[^>]*>', svg_text)
    assert demand and 'stroke-dasharray="8 4"' in demand.group(0) and 'stroke-width="3"' in demand.group(0)
    legend = svg_text.split('<g class="legend">', 1)[1].split("</g>", 1)[0]
    assert "demand (peak hour)" in legend and 'stroke-dasharray="8 4"' in legend
