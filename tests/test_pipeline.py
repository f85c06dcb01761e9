"""One pipeline for every workload: each quantity has one value wherever a plan shows it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.report.render import render
from rightsize.search.workload import PlanResult, workload_for
from rightsize.sizing.plan import Sizing
from rightsize.sizing.results import JobReliability, RunTime, ServiceReliability
from rightsize.spec import load_spec

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture(scope="module")
def llama405() -> Any:
    return plan(EXAMPLES / "llama3.1-405b-pretrain.yaml")


def test_every_example_has_a_workload_and_a_typed_sizing() -> None:
    kinds = set()
    for path in sorted(p for p in EXAMPLES.glob("*.yaml") if "\nkind: fleet" not in p.read_text()):
        w = workload_for(load_spec(path))
        kinds.add(w.kind)
        assert w.work_unit in {"token", "output_token", "image", "sample"}
    assert kinds == {"training", "serving", "vision", "recommendation"}


def test_training_quantities_have_one_value(llama405: Any) -> None:
    p = llama405
    assert isinstance(p, PlanResult)
    s = p.sizing
    assert isinstance(s, Sizing) and isinstance(s.run, RunTime) and isinstance(s.reliability, JobReliability)
    b = p.best
    # run time, GPU-hours, goodput, checkpoint figures and cost: the sizing's, in the headline too
    assert b.time_to_train_s == s.run.run_s
    assert b.gpu_hours == s.run.gpu_hours
    assert b.reliability["goodput"] == s.reliability.goodput_fraction
    assert b.reliability["checkpoint_write_s"] == s.reliability.checkpoint_write_s
    assert b.reliability["checkpoint_interval_s"] == s.reliability.checkpoint_interval_s
    # (the chosen accelerator may have no on-demand price: then no cost anywhere)
    od = s.cost.cloud.get("on_demand") if s.cost.cloud else None
    assert b.cost_usd == (od.usd_per_run if od is not None else None)
    assert b.gpus == s.demand.gpus == s.cost.gpus_used
    # the uncertainty is sampled around the same values
    m = p.uncertainty["metrics"]
    assert m["time_to_train_s"]["base"] == s.run.run_s
    if od is not None:
        assert m["cost_usd"]["base"] == od.usd_per_run
    else:
        assert "cost_usd" not in m


def test_json_and_text_show_one_value(llama405: Any) -> None:
    d = json.loads(render(llama405, "json"))
    sz = d["sizing"]
    assert d["best"]["time_to_train_s"] == pytest.approx(sz["run"]["run_s"])
    assert d["best"]["reliability"]["goodput"] == pytest.approx(sz["reliability"]["goodput_fraction"])
    od = (sz["cost"].get("cloud") or {}).get("on_demand")
    if od is not None:
        assert d["best"]["cloud_cost_usd"] == pytest.approx(od["usd_per_run"])
    else:
        assert d["best"].get("cloud_cost_usd") is None
    # every checkpoint write time in the document is the sized one (storage shows its target apart)
    writes = set()

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "checkpoint_write_s" and v is not None:
                    writes.add(round(v, 6))
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk({k: d[k] for k in ("best", "sizing", "findings")})
    assert writes == {round(sz["reliability"]["checkpoint_write_s"], 6)}
    text = render(llama405, "table")
    days = f"{sz['run']['run_s'] / 86400:.1f} d"
    goodput = f"{sz['reliability']['goodput_fraction']:.1%}"
    assert text.count(days) >= 2 and goodput in text  # decision line, key numbers; BOM goodput


def test_serving_sizing_is_typed() -> None:
    p = plan(EXAMPLES / "llama3-70b-chat-serving.yaml")
    assert isinstance(p.sizing.reliability, ServiceReliability)
    assert p.sizing.run.run_s is None and p.sizing.run.hours_per_month == 730.0
    assert (
        p.sizing.as_dict()["reliability"]["capacity_lost_fraction"]
        == p.sizing.reliability.capacity_lost_fraction
    )


def test_quantiles_match_numpy() -> None:
    import numpy as np

    from rightsize.search.uncertainty import QUANTILE_STEPS, quantiles

    x = np.random.default_rng(3).lognormal(size=1999)
    assert np.allclose(quantiles(x, QUANTILE_STEPS), np.quantile(x, QUANTILE_STEPS), rtol=0, atol=1e-12)


def test_reading_a_serving_spec_builds_no_other_spec_models() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from rightsize.spec import load_spec; "
        f"load_spec({str(EXAMPLES / 'llama2-7b-batch1.yaml')!r}); "
        "print(sorted(m for m in ('rightsize.spec.training', 'rightsize.spec.vision', 'rightsize.spec.recsys') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_serving_plan_from_the_command_line_loads_no_other_command() -> None:
    """`rightsize plan` imports neither the exporters, the fleet planner, the monitor nor the
    profilers (their modules load only for their own commands); `--help` still lists them."""
    import subprocess
    import sys

    others = (
        "rightsize.export",
        "rightsize.fleet",
        "rightsize.spec.fleet",
        "rightsize.monitor",
        "rightsize.cli.monitor_cmd",
        "rightsize.cli.profile_cmds",
        "rightsize.cli.export_cmd",
        "rightsize.report.other_docs",
    )
    code = (
        "import io, sys, contextlib; from rightsize.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['plan', {str(EXAMPLES / 'llama2-7b-batch1.yaml')!r}])\n"
        f"print(code, sorted(m for m in {others!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0 []"
    helped = subprocess.run(
        [sys.executable, "-m", "rightsize.cli.main", "--help"], capture_output=True, text=True, check=True
    )
    for command in ("plan", "profile", "calibrate", "monitor", "export"):
        assert command in helped.stdout
    export_help = subprocess.run(
        [sys.executable, "-m", "rightsize.cli.main", "export", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--target" in export_help.stdout
