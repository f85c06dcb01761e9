"""The training search ranks, checks the deadline and reports every option by its whole run
(issue #27): one figure per option, computed once (`perf.whole_run.run_parts` in
`search.train._candidate`), read by the sizing for the headline and its table."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rightsize.errors import Infeasible
from rightsize.sizing.pipeline import run_pipeline
from rightsize.spec.load import parse_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# Lines the sizing appends after the search's parts: only it knows the storage and cooling.
SIZING_LINES = (
    "data-loader stalls",
    "storage-limited checkpoints",
    "thermal throttling",
)


def _spec(deadline: str) -> dict:
    raw = yaml.safe_load((EXAMPLES / "llama3-70b-pretrain.yaml").read_text())
    assert raw["targets"]["deadline"] == "60d"
    raw["targets"]["deadline"] = deadline
    return raw


@pytest.fixture(scope="module")
def plan40():
    """The issue's reproduction: the 70B example with a 40-day deadline."""
    return run_pipeline(parse_spec(_spec("40d"), EXAMPLES))


def test_whole_run_meets_the_planned_deadline(plan40):
    planned = plan40.deadline_s
    assert planned == pytest.approx(40 * 86400 / (1 + plan40.extra["safety_margin"]))
    # the search's figure for the winner and the headline both fit the planned deadline
    assert plan40.extra["search_estimate"]["time_to_train_s"] <= planned
    assert plan40.sizing.run.run_s <= planned
    assert plan40.best.time_to_train_s == pytest.approx(plan40.sizing.run.run_s, rel=1e-12)
    assert not any("past the" in w for w in plan40.sizing.warnings)


def test_headline_is_the_searched_whole_run_plus_the_sizing_lines(plan40):
    searched = plan40.extra["whole_run"]
    whole = plan40.sizing.run.whole_run
    by_part = {line.part: line.time_s for line in whole.lines}
    # the search's parts are read as they are, not recomputed
    for p in searched["parts"]:
        assert by_part[p["part"]] == p["time_s"]
    assert [line.part for line in whole.lines] == [p["part"] for p in searched["parts"]] + list(SIZING_LINES)
    added = sum(by_part[name] for name in SIZING_LINES)
    assert whole.total_s == pytest.approx(searched["total_s"] + added, rel=1e-12)
    # the table sums to the headline in time and GPU-hours
    assert sum(line.time_s for line in whole.lines) == pytest.approx(plan40.sizing.run.run_s, rel=1e-12)
    assert sum(line.gpu_hours for line in whole.lines) == pytest.approx(plan40.best.gpu_hours, rel=1e-12)
    # the steady steps are the tokens at the layout's throughput; the run is well above them
    steady = plan40.best.gpus * plan40.best.tokens_per_s_per_gpu
    assert by_part["steady-state steps"] == pytest.approx(15e12 / steady, rel=1e-9)
    assert searched["total_s"] > 1.05 * by_part["steady-state steps"]


def test_alternatives_and_pareto_carry_whole_run_times(plan40):
    options = [c for c, _ in plan40.alternatives] + list(plan40.pareto)
    assert options
    for c in options:
        wr = c.whole_run
        if c is plan40.best:  # the front's chosen point is the settled plan: the sizing's lines added
            assert c.time_to_train_s == pytest.approx(plan40.sizing.run.run_s, rel=1e-12)
            continue
        assert wr is not None and c.time_to_train_s == pytest.approx(wr["total_s"], rel=1e-12)
        assert sum(p["time_s"] for p in wr["parts"]) == pytest.approx(c.time_to_train_s, rel=1e-12)
        assert c.gpu_hours == pytest.approx(c.gpus * c.time_to_train_s / 3600, rel=1e-12)
        steady = 15e12 / (c.tokens_per_s_per_gpu * c.gpus)
        assert c.time_to_train_s > steady
        # every alternative met the planned deadline on the same figure
        assert c in plan40.pareto or c.time_to_train_s <= plan40.deadline_s


def test_infeasible_advice_quotes_the_whole_run():
    """A deadline no option meets: the message names the fastest option's whole run, and the
    deadline it asks for is enough for that whole run plus the margin."""
    spec = _spec("4d")
    spec["targets"]["accelerators"] = ["h100-sxm"]
    spec["targets"]["max_gpus"] = 4096
    with pytest.raises(Infeasible) as err:
        run_pipeline(parse_spec(spec, EXAMPLES))
    text = str(err.value) + " " + " ".join(str(a) for a in err.value.args)
    assert "The fastest plan found takes" in text
    days = float(text.split("The fastest plan found takes ")[1].split(" days")[0])
    need = int(text.split("Extend targets.deadline to at least ")[1].split("d")[0])
    # plan that many days on the fastest count: its whole run is the figure quoted
    spec2 = _spec(f"{need}d")
    spec2["targets"]["accelerators"] = ["h100-sxm"]
    spec2["targets"]["max_gpus"] = 4096
    ok = run_pipeline(parse_spec(spec2, EXAMPLES))
    fastest = min(
        [ok.best] + [c for c, _ in ok.alternatives] + list(ok.pareto), key=lambda c: c.time_to_train_s
    )
    searched = min(c.whole_run["total_s"] for c in ok.pareto)
    assert searched / 86400 == pytest.approx(days, abs=0.051)
    assert fastest.time_to_train_s <= ok.deadline_s


def test_phases_priced_per_row_as_one_row_each():
    """The vectorised pricing of phases (every option the search ranks) gives each layout what
    pricing it alone gives."""
    import numpy as np

    from rightsize.catalog import get_accelerator, node_for
    from rightsize.perf.workload import ParallelConfigs, TrainWorkload
    from rightsize.search.calibrated import calibrated_hardware
    from rightsize.search.whole_run_phases import price_phases, price_phases_rows
    from rightsize.spec.training import TrainingPhase

    spec = parse_spec(
        {
            "kind": "training",
            "name": "phases",
            "model": "llama3-8b",
            "training": {"seq_len": 8192, "global_batch_tokens": "16Mi", "train_tokens": "1T"},
            "targets": {"accelerators": ["h100-sxm"], "gpus": 256},
        },
        EXAMPLES,
    )
    w = TrainWorkload.from_spec(spec.model, spec.training)
    acc = get_accelerator("h100-sxm")
    hw = calibrated_hardware(acc, node_for(acc.id), w.precision, None)
    rows = [(1, 1, 1, 256), (2, 1, 1, 128), (8, 1, 1, 32), (4, 2, 2, 16), (3, 1, 1, 1)]
    cfg = ParallelConfigs(
        tp=np.array([r[0] for r in rows]),
        pp=np.array([r[1] for r in rows]),
        cp=np.array([r[2] for r in rows]),
        dp=np.array([r[3] for r in rows]),
        ep=np.ones(len(rows), dtype=np.int64),
        vpp=np.ones(len(rows), dtype=np.int64),
        micro_batch=np.ones(len(rows), dtype=np.int64),
        recompute=np.zeros(len(rows), dtype=np.int64),
        sequence_parallel=np.zeros(len(rows), dtype=bool),
        zero_stage=np.ones(len(rows), dtype=np.int64),
    )
    phases = (
        TrainingPhase(name="ramp", tokens=5e10, global_batch_tokens=4 * 2**20),
        TrainingPhase(name="ctx", tokens=2e10, seq_len=32768),
    )
    main = np.array([1.0, 1.1, 1.2, 1.3, 1.4])
    many = price_phases_rows(phases, w, cfg, hw, main)
    for r in range(len(rows)):
        one = price_phases(phases, w, cfg.take(r), hw, float(main[r]))
        assert [p.as_dict() for p in one] == [p.as_dict() for p in many[r]]
    # the last row (TP3 on 3 GPUs) splits no 32k phase of that batch: priced at the main rate
    assert many[4][1].note and many[4][1].run_s == pytest.approx(many[4][1].at_main_rate_s)
    assert many[0][1].run_s > many[0][1].at_main_rate_s  # attention's quadratic share grows


def test_vision_options_rank_by_the_whole_run():
    from rightsize.spec import load_spec

    p = run_pipeline(load_spec(EXAMPLES / "resnet50-imagenet-train.yaml"))
    for o in [p.best] + [a for a, _ in p.alternatives]:
        assert o.whole_run is not None
        if o is not p.best:  # the best is settled on the sizing's run (its own lines added)
            assert o.time_to_train_s == pytest.approx(o.whole_run["total_s"], rel=1e-12)
    by_part = {line.part: line.time_s for line in p.sizing.run.whole_run.lines}
    for part in p.extra["whole_run"]["parts"]:
        assert by_part[part["part"]] == part["time_s"]
    assert p.best.time_to_train_s == pytest.approx(p.sizing.run.run_s, rel=1e-12)
