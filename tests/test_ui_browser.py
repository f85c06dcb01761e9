"""The planner (`rightsize ui`) in a real headless Chromium (Playwright), served by uvicorn on
loopback: load a bundled spec, change a field and see the plan change, save and compare what-ifs,
drill into a figure, download the plan and the job files, reproduce a what-if from its share link,
see the CLI's own error at the field, a fleet's view, and the layout at 800 and 1,600 px wide with
no console errors.

Skipped only when Chromium or Playwright is missing and RIGHTSIZE_REQUIRE_BROWSER is unset;
CI sets RIGHTSIZE_REQUIRE_BROWSER=1, which turns their absence into a failure."""

from __future__ import annotations

import io
import json
import os
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from browser_helpers import browser_session

from rightsize.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
LORA = ROOT / "examples" / "llama3-8b-lora-weekly.yaml"
FLEET = ROOT / "examples" / "fleet-2027.yaml"
TIMEOUT_MS = 30_000
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with browser_session(ARGS) as b:
        yield b


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The planner on a free loopback port, started with the bundled LoRA example; stopped after."""
    import uvicorn

    from rightsize.ui.app import create_app
    from rightsize.ui.server import HOST, bound_socket, starting_spec

    text, source, base = starting_spec(str(LORA))
    sock = bound_socket(None)
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(text, source, base), log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the planner did not start"
        time.sleep(0.05)
    yield f"http://{HOST}:{port}/"
    srv.should_exit = True
    thread.join(10)
    sock.close()


@pytest.fixture()
def page(browser: Any, server: str) -> Iterator[Any]:
    """A fresh page (own storage) that fails the test on any console error or page error."""
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []
    pg.on(
        "console",
        lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    requests: list[str] = []
    pg.on("request", lambda r: requests.append(r.url))
    pg.problems = problems
    yield pg
    context.close()
    assert not problems, problems
    assert [
        u for u in requests if not u.startswith((server, "blob:", "data:"))
    ] == []  # nothing from the network


def _planned(pg: Any, seq_after: int = 0) -> None:
    """Wait until a plan newer than `seq_after` is shown (or the spec's error)."""
    pg.wait_for_function(
        f"() => document.body.dataset.planState && +(document.body.dataset.planSeq || 0) > {seq_after}"
    )


def _seq(pg: Any) -> int:
    return int(pg.evaluate("+(document.body.dataset.planSeq || 0)"))


def _figure(pg: Any, fid: str) -> str:
    return str(pg.text_content(f"[data-figure={fid}] .v"))


def test_edit_compare_drill_download_share(page: Any, server: str, tmp_path: Path) -> None:
    pg = page
    pg.goto(server)
    _planned(pg)
    assert pg.evaluate("document.body.dataset.planState") == "ok"
    before = {f: _figure(pg, f) for f in ("accelerator", "count", "cost")}
    assert before["accelerator"] == "l40s"  # one L40S on a 1-GPU g6e.xlarge is the cheapest (issue 28)
    pg.fill("#whatif-name", "baseline")
    pg.click("#whatif-save")

    pg.fill("#f_targets_accelerators", "a100-sxm-80gb")  # a what-if: only A100s
    pg.wait_for_function(
        "() => document.querySelector('[data-figure=accelerator] .v').textContent === 'a100-sxm-80gb'"
    )
    assert "changed" in (pg.get_attribute("[data-figure=accelerator]", "class") or "")
    assert "accelerators: [a100-sxm-80gb]" in pg.input_value("#yaml")
    pg.fill("#whatif-name", "A100 only")
    pg.click("#whatif-save")
    pg.click("#compare")
    table = pg.locator("#comparison table")
    assert table.locator("th").all_text_contents()[1:] == ["baseline", "A100 only"]
    row = table.locator("tr", has_text="accelerator").first
    assert row.locator("td.diff").count() == 1 and "a100-sxm-80gb" in row.inner_text()
    assert table.locator("tr", has_text="spec: targets.accelerators").count() == 1

    pg.focus("[data-figure=power]")  # drill-down, by keyboard: how the facility power was computed
    pg.keyboard.press("Enter")
    drill = pg.locator("#drill")
    assert drill.is_visible() and "sizing.power.facility_power_w" in drill.inner_text()
    assert drill.locator("details.sources li").count() > 0  # and from what
    assert drill.locator("table", has_text="it_power_max_w").count() == 1  # the figures beside it

    pareto = pg.locator("#charts figure[data-chart-name=pareto]")
    mark = pareto.locator("circle[tabindex]").first
    mark.focus()  # a chart's marks answer keyboard focus (and hover) with their figures
    assert pg.locator("#tip").is_visible() and pg.text_content("#tip") == mark.get_attribute("aria-label")
    pareto.locator("button", has_text="Data").click()  # and lead to the section with its data
    assert pg.evaluate("document.getElementById('sec-pareto').open")

    with pg.expect_download() as got:
        pg.click("button[data-format=json]")
    plan = json.loads(Path(got.value.path()).read_text(encoding="utf-8"))
    assert plan["kind"] == "training_plan" and plan["best"]["accelerator"] == "a100-sxm-80gb"
    with pg.expect_download() as got:
        pg.click("button[data-download=jobs]")
    names = zipfile.ZipFile(io.BytesIO(Path(got.value.path()).read_bytes())).namelist()
    assert any(n.startswith("slurm/") and n.endswith(".sbatch") for n in names), names
    with pg.expect_download() as got:
        pg.click("button[data-download=spec]")
    spec = yaml.safe_load(Path(got.value.path()).read_text(encoding="utf-8"))
    assert spec["targets"]["accelerators"] == ["a100-sxm-80gb"]
    assert spec["training"] == yaml.safe_load(LORA.read_text(encoding="utf-8"))["training"]

    pg.click("#share")
    pg.wait_for_function("() => document.getElementById('share-link').value.includes('#spec=')")
    link = pg.input_value("#share-link")
    other = pg.context.new_page()
    other.goto(link)
    _planned(other)
    assert other.input_value("#yaml") == pg.input_value("#yaml")
    assert other.text_content("[data-figure=accelerator] .v") == "a100-sxm-80gb"
    assert other.input_value("#f_targets_accelerators") == "a100-sxm-80gb"
    other.close()


def test_bad_input_shows_the_cli_error_at_the_field(
    page: Any, server: str, tmp_path: Path, capsys: Any
) -> None:
    pg = page
    pg.goto(server)
    _planned(pg)
    seq = _seq(pg)
    pg.fill("#f_infrastructure_schedule_turnaround", "24 parsecs")
    _planned(pg, seq)
    error = pg.locator("#f_infrastructure_schedule_turnaround_e")
    error.wait_for(state="visible")
    assert pg.get_attribute("#f_infrastructure_schedule_turnaround", "aria-invalid") == "true"
    bad = tmp_path / "bad.yaml"
    bad.write_text(pg.input_value("#yaml"), encoding="utf-8")
    assert main(["plan", str(bad)]) == 2
    cli = capsys.readouterr().err
    assert f"infrastructure.schedule.turnaround: {error.inner_text()}" in cli  # the CLI's words, at the field
    assert pg.text_content("#spec-error").startswith("rightsize: error: The spec")
    pg.fill("#f_infrastructure_schedule_turnaround", "24h")  # fixed: the error goes, the plan comes back
    pg.wait_for_function("() => document.body.dataset.planState === 'ok'")
    assert not error.is_visible()


def test_fleet_view(page: Any, server: str) -> None:
    pg = page
    pg.goto(server)
    _planned(pg)
    seq = _seq(pg)
    pg.set_input_files("#open-file", str(FLEET))
    _planned(pg, seq)
    pg.wait_for_function(
        "() => document.body.dataset.planState === 'ok' && !document.getElementById('fleet').hidden"
    )
    fleet = pg.locator("#fleet")
    assert fleet.locator("tbody tr").count() == 4  # each workload's share
    for chart in ("fleet-timeline", "fleet-day"):
        assert fleet.locator(f"svg[data-chart={chart}]").count() == 1
    assert pg.input_value("#f_horizon_months") == "18"


@pytest.mark.parametrize("width", [800, 1600])
def test_layout_at_two_widths(page: Any, server: str, tmp_path: Path, width: int) -> None:
    pg = page
    pg.set_viewport_size({"width": width, "height": 1000})
    pg.goto(server)
    _planned(pg)
    pg.click("[data-figure=cost]")  # the drill-down open too: its tables and JSON must fit
    pg.evaluate("for (const d of document.querySelectorAll('details')) d.open = true")
    overflow = pg.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert overflow[0] <= overflow[1], f"horizontal overflow at {width} px: {overflow}"
    unlabelled = pg.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea, button')].filter(c =>
            !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.textContent.trim()).map(c => c.id || c.outerHTML.slice(0, 60))"""
    )
    assert unlabelled == []
    charts = pg.evaluate(
        "[...document.querySelectorAll('#charts svg[data-chart]')].map(s => s.getBoundingClientRect().width)"
    )
    assert charts and all(100 < w <= width for w in charts)
    pg.keyboard.press("Tab")
    pg.keyboard.press("Tab")
    assert pg.evaluate("document.activeElement && document.activeElement !== document.body")
    # RIGHTSIZE_SCREENSHOT_DIR keeps the screenshots (for a reader to look at), else they go with tmp_path.
    shots = Path(os.environ.get("RIGHTSIZE_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    pg.evaluate(
        "for (const d of document.querySelectorAll('#sections details, #drill details')) d.open = false"
    )
    pg.evaluate("window.scrollTo(0, 0)")
    shot = shots / f"ui-{width}.png"
    pg.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 10_000


def _schema_paths(schema: dict[str, Any], node: dict[str, Any], prefix: str = "") -> set[str]:
    """Every field path of a spec kind's schema: a group for an object with properties, else a field."""

    def options(n: dict[str, Any]) -> list[dict[str, Any]]:
        while "$ref" in n:
            n = schema["$defs"][n["$ref"].split("/")[-1]]
        alts = n.get("anyOf") or n.get("oneOf")
        return [o for a in alts for o in options(a)] if alts else [n] if n.get("type") != "null" else []

    paths: set[str] = set()
    for key, prop in node.get("properties", {}).items():
        path = f"{prefix}{key}"
        paths.add(path)
        opts = options(prop)
        if len(opts) == 1 and "properties" in opts[0]:
            paths |= _schema_paths(schema, opts[0], path + ".")
    return paths


KINDS = ("training", "inference", "vision", "recommendation", "fleet")


def test_the_form_has_every_field_and_its_yaml_reads_back(page: Any, server: str) -> None:
    """The form (static/form.js) has a control or group for every field of each spec kind's schema;
    the YAML it writes back (static/yaml.js) reads, through PyYAML, to every bundled example's values."""
    from rightsize.spec.load import spec_json_schema

    page.goto(server)
    _planned(page)
    shown = page.evaluate(
        """async (kinds) => {
            const { SpecForm } = await import('/static/form.js');
            const out = {};
            for (const kind of kinds) {
                const schema = await (await fetch(`/api/schema/${kind}`)).json();
                const form = new SpecForm(document.createElement('form'), () => {});
                form.render(schema, {});
                out[kind] = [...form.fields.keys(), ...form.groups.keys()];
            }
            return out;
        }""",
        list(KINDS),
    )
    for kind in KINDS:
        assert set(shown[kind]) == _schema_paths(spec_json_schema(kind), spec_json_schema(kind)), kind

    examples = sorted((ROOT / "examples").rglob("*.yaml"))
    data = [
        json.loads(json.dumps(yaml.safe_load(p.read_text(encoding="utf-8")), default=str)) for p in examples
    ]
    data.append(
        {
            "odd": [
                "yes",
                "no",
                "on",
                "null",
                "1e5",
                "a: b",
                "x #y",
                " lead",
                "",
                1e21,
                2.5e-7,
                -0.0,
                True,
                None,
            ]
        }
    )
    texts = page.evaluate(
        "async (all) => { const { toYaml } = await import('/static/yaml.js'); return all.map(toYaml); }", data
    )
    for original, text in zip(data, texts, strict=True):
        assert json.loads(json.dumps(yaml.safe_load(text), default=str)) == original, text


def test_infeasible_plan_names_the_fields_to_change(page: Any, server: str) -> None:
    pg = page
    pg.goto(server)
    _planned(pg)
    seq = _seq(pg)
    pg.set_input_files("#open-file", str(ROOT / "examples" / "llama3-70b-pretrain.yaml"))
    _planned(pg, seq)
    pg.wait_for_function("() => document.body.dataset.planState === 'ok'")
    seq = _seq(pg)
    pg.fill("#f_targets_deadline", "2d")
    _planned(pg, seq)
    assert pg.evaluate("document.body.dataset.planState") == "error"
    assert pg.text_content("#plan-error").startswith("rightsize: infeasible: The deadline of 2.0 days")
    assert pg.locator("#f_targets_deadline_e").is_visible()  # the advice names targets.deadline
    assert pg.is_hidden("#spec-error")  # the spec itself is valid


def test_a_pareto_point_is_tried_as_a_what_if(page: Any, server: str) -> None:
    pg = page
    pg.goto(server)
    _planned(pg)
    current = f"{_figure(pg, 'count')} x {_figure(pg, 'accelerator')}:"
    points = pg.locator("#charts figure[data-chart-name=pareto] circle[tabindex]")
    labels = [str(points.nth(i).get_attribute("aria-label")) for i in range(points.count())]
    other = next(i for i, label in enumerate(labels) if not label.startswith(current))
    count, accelerator = labels[other].split(":")[0].split(" x ")
    seq = _seq(pg)
    points.nth(other).focus()
    pg.keyboard.press("Enter")  # by keyboard: that accelerator and count become the what-if
    _planned(pg, seq)
    pg.wait_for_function("() => document.body.dataset.planState === 'ok'")
    assert (_figure(pg, "count"), _figure(pg, "accelerator")) == (count, accelerator)
    assert pg.input_value("#f_targets_gpus") == count.replace(",", "")
    assert pg.input_value("#f_targets_accelerators") == accelerator
