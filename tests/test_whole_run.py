"""The whole-run model (issue #27): a job's days and GPU-hours by part, each part sourced,
the parts adding up to the headline every downstream figure reads; the published schedule of
a run priced as phases; and the whole-run validation against published runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rightsize.catalog.whole_run import whole_run_factors
from rightsize.perf.whole_run import checkpoint_share, eval_fraction
from rightsize.sizing.pipeline import run_pipeline
from rightsize.spec.load import parse_spec
from rightsize.validate.cases import read_cases
from rightsize.validate.run import validate_paths
from rightsize.validate.whole_run_cases import parse_phases, published_schedules, whole_runs_path

SPEC = {
    "kind": "training",
    "name": "whole-run-test",
    "model": "llama3-8b",
    "training": {
        "seq_len": 8192,
        "global_batch_tokens": "16Mi",
        "train_tokens": "1T",
        "phases": [
            {"name": "batch ramp", "tokens": "50B", "global_batch_tokens": "4Mi"},
            {"name": "context 32k", "tokens": "20B", "seq_len": 32768},
        ],
    },
    "targets": {"accelerators": ["h100-sxm"], "gpus": 256},
}


@pytest.fixture(scope="module")
def plan():
    return run_pipeline(parse_spec(SPEC, Path(".")))


def test_breakdown_lines_add_up_to_the_headline(plan):
    whole = plan.sizing.run.whole_run
    assert whole is not None
    parts = [line.part for line in whole.lines]
    for part in (
        "steady-state steps",
        "phase: batch ramp",
        "phase: context 32k",
        "evaluation",
        "data-loader stalls",
        "checkpoint stalls",
        "failures, restarts and lost work",
        "thermal throttling",
    ):
        assert part in parts
    total = sum(line.time_s for line in whole.lines)
    assert total == pytest.approx(plan.sizing.run.run_s, rel=1e-12)
    assert plan.best.time_to_train_s == pytest.approx(total, rel=1e-12)
    gpu_hours = sum(line.gpu_hours for line in whole.lines)
    assert plan.best.gpu_hours == pytest.approx(gpu_hours, rel=1e-12)
    assert plan.sizing.run.gpu_hours == pytest.approx(gpu_hours, rel=1e-12)
    # every line says where its figure comes from
    assert all(line.basis for line in whole.lines)
    # the cost reads the same run time
    od = plan.sizing.cost.cloud.get("on_demand") if plan.sizing.cost.cloud else None
    if od is not None and od.usd_per_run is not None:
        assert plan.best.cost_usd == pytest.approx(od.usd_per_run)


def test_phases_cost_more_than_the_same_tokens_at_the_main_settings(plan):
    phases = {p["name"]: p for p in plan.extra["whole_run_phases"]}
    # a 4Mi batch on a layout built for 16Mi leaves each replica fewer micro-batches
    assert phases["batch ramp"]["run_s"] > phases["batch ramp"]["at_main_rate_s"]
    # 4x the sequence: attention's quadratic share grows, and context parallel ranks grow with it
    ctx = phases["context 32k"]
    assert ctx["run_s"] > ctx["at_main_rate_s"]
    assert ctx["parallel"]["cp"] >= 4 * plan.best.parallel["cp"] or ctx["note"]


def test_whole_run_json_has_the_breakdown(plan):
    d = plan.sizing.run.as_dict()
    lines = d["whole_run"]["lines"]
    assert sum(x["time_s"] for x in lines) == pytest.approx(d["run_s"])
    assert sum(x["share_fraction"] for x in lines) == pytest.approx(1.0)


def test_range_holds_the_whole_run_and_is_skewed_up(plan):
    m = plan.uncertainty["metrics"]["gpu_hours"]
    assert m["p10"] < m["p50"] < m["p90"]
    # published runs' unplanned losses have a long upper tail (OPT-175B's rollbacks): the
    # spread leans above the plan, but reaches below it too
    assert m["p10"] < m["base"]
    assert m["p90"] / m["base"] - 1 > 1 - m["p10"] / m["base"]


def test_unplanned_losses_line_is_the_published_runs_median(plan):
    """The plan carries what published production runs lost beyond the modelled lines (their
    median, Hazen positions as numpy computes them), on the run before it, naming the runs."""
    import numpy as np

    from rightsize.perf.whole_run import empirical_quantile, evidence_weight

    f = whole_run_factors()
    assert len(f.unplanned_losses) >= 4 and list(f.unplanned_losses) == sorted(f.unplanned_losses)
    assert all(s.source and s.as_of for _, s in f.unplanned_sources)
    for q in (0.05, 0.3, 0.5, 0.7, 0.95):
        assert empirical_quantile(f.unplanned_losses, q) == pytest.approx(
            float(np.quantile(f.unplanned_losses, q, method="hazen")), abs=1e-12
        )
    whole = plan.sizing.run.whole_run
    parts = [line.part for line in whole.lines]
    i = parts.index("unplanned losses")
    before_s = sum(line.time_s for line in whole.lines[:i])
    median = empirical_quantile(f.unplanned_losses, 0.5)
    assert 0.0 < median < 0.5
    # this 1T-token run is shorter than the shortest published run: it carries a share
    weight = evidence_weight(before_s, f.unplanned_shortest_run_days * 86400.0)
    assert 0.0 < weight < 1.0
    assert whole.lines[i].time_s == pytest.approx(median * weight * before_s, rel=1e-9)
    assert "OPT-175B" in whole.lines[i].basis and "Llama 3 405B" in whole.lines[i].basis


def test_unplanned_spread_reaches_both_sides_of_the_plan():
    """With the step model exact (k = 1), the run's samples span the published runs' losses:
    as clean as Llama 3 405B's (none beyond the modelled lines) at the low end, as rough as
    OPT-175B's at the high end, the plan's line at the median."""
    import numpy as np

    from rightsize.search.uncertainty_whole_run import whole_run_samples
    from rightsize.sizing.results import WholeRun, WholeRunLine

    f = whole_run_factors()
    lo, hi = f.unplanned_losses[0], f.unplanned_losses[-1]
    med = float(np.quantile(f.unplanned_losses, 0.5, method="hazen"))
    day = 86400.0
    run_s = 2 * f.unplanned_shortest_run_days * day  # longer than the shortest published run
    whole = WholeRun(
        (
            WholeRunLine("steady-state steps", run_s, 1.0, "x"),
            WholeRunLine("unplanned losses", run_s * med, 1.0, "x"),
        ),
        8,
        (),
    )
    s = whole_run_samples(whole, np.ones(20000), seed=3)
    assert s is not None
    assert s.min() >= run_s * (1 + lo) - 1e-6 and s.max() <= run_s * (1 + hi) + 1e-6
    assert np.quantile(s, 0.5) == pytest.approx(whole.total_s, rel=0.02)
    assert np.quantile(s, 0.1) < whole.total_s < np.quantile(s, 0.9)
    # a 15-minute job is not charged a months-long run's rollbacks: its spread shrinks with it
    short = WholeRun((WholeRunLine("steady-state steps", 900.0, 1.0, "x"),), 8, ())
    s_short = whole_run_samples(short, np.ones(2000), seed=3)
    assert s_short is not None and s_short.max() <= 900.0 * (1 + hi * 900.0 / (run_s / 2)) + 1e-9


def test_physics_of_the_parts():
    f = whole_run_factors()
    assert eval_fraction(f.eval_interval_steps, f.eval_iters, f.eval_forward_share) == pytest.approx(
        10 / 3 / 1000, rel=1e-3
    )
    # a slow checkpoint write and a rare failure: checkpoints dominate the overhead
    assert checkpoint_share(mtbf_s=1e7, write_s=100.0, interval_s=1000.0, restart_s=60.0) > 0.9
    assert all(v.source and v.as_of for v in f.sources.values())


def test_phases_must_fit_in_the_run():
    bad = {**SPEC, "training": {**SPEC["training"], "train_tokens": "10B"}}
    with pytest.raises(Exception, match="phases"):
        parse_spec(bad, Path("."))


def test_published_schedules_parse():
    sched = published_schedules()
    phases = parse_phases(sched["llama-3.1-405b-gpu-hours"], "llama-3.1-405b-gpu-hours")
    assert sum(p["tokens"] for p in phases) < 15.6e12
    assert max(p["seq_len"] for p in phases) == 131072


# Whole-run validation bars (the public whole runs of whole_runs.csv: LLaMA 7B-65B, Llama 2
# 13B/34B, OPT-175B, BLOOM-176B, Falcon-180B, MPT-7B, DeepSeek-V3, SmolLM3-3B). Measured (issue
# #27, third round: the plan carries the median of published runs' losses beyond the modelled
# lines, 18% (whole_run.yaml unplanned_losses: Llama 3 405B, BLOOM-176B, MPT-7B, OPT-175B;
# three of them are rows here: tuning data), and samples their empirical spread; LLaMA 7B-33B
# planned on the 2,048 A100 the LLaMA paper developed them on; SmolLM3-3B added): median
# |error| 15.3% (was 15.5% on the 11 runs before SmolLM3), worst 43.1% (was 51.8%, OPT-175B: the
# logbook's restarts and rollbacks doubled the run), P10-P90 coverage 92% (was 82%). Apart by
# scale: the ten runs on their published GPU count, median 12.8%; the two on the count the
# search picks (Llama 2 13B/34B: none published), 22.9%, both low: they measure the planner's
# choice of scale and settings as much as the model. After the MoE step mechanisms (token
# permutation, per-copy FP8 casts, cross-node dispatch; training_more.csv) DeepSeek-V3 moved
# from +10.5% to +13.3% and the published-count median to 14.2%: the 15% is the bar.
# Fourth round (OPT-175B read as its source counts it: steady steps of 300B tokens with full
# recompute, -43.1% -> -12.6%; LLaMA's published sequence parallelism and checkpointing policy):
# median 15.5% -> 12.6% on the 12 runs here with Llama 2 7B/70B and the held-out ones, worst
# 32.4% (Falcon-180B), published-count median 11.7%.
WHOLE_RUN_MEDIAN = 0.15
WHOLE_RUN_WORST = 0.35
WHOLE_RUN_COVERAGE = 0.85
PUBLISHED_SCALE_MEDIAN = 0.15


def test_whole_run_validation_bars():
    from rightsize.validate.whole_run_cases import PLANNER_SCALE, PUBLISHED_SCALE

    paths = [Path(str(whole_runs_path()))]
    cases = read_cases(paths[0])
    assert len(cases) >= 9 and all(c.metric == "gpu_hours" for c in cases)
    result = validate_paths(paths)
    s = result["summary"]["gpu_hours"]
    assert s["not_predicted"] == 0
    assert s["median_abs_error"] <= WHOLE_RUN_MEDIAN
    assert s["max_abs_error"] <= WHOLE_RUN_WORST
    assert s["coverage_p10_p90"] >= WHOLE_RUN_COVERAGE
    by_scale = result["whole_runs_by_scale"]
    assert by_scale[PUBLISHED_SCALE]["median_abs_error"] <= PUBLISHED_SCALE_MEDIAN
    assert by_scale[PUBLISHED_SCALE]["n"] + by_scale[PLANNER_SCALE]["n"] == len(cases)
    rows = {r["id"]: r for r in result["rows"]}
    # the published layouts are the ones planned: OPT-175B has no pipeline stages, MPT-7B
    # checkpoints its activations
    assert rows["opt-175b-gpu-hours"]["chosen"]["parallel"]["pp"] == 1
    assert rows["mpt-7b-gpu-hours"]["chosen"]["parallel"]["recompute"] == "full"
    assert rows["opt-175b-gpu-hours"]["scale"] == PUBLISHED_SCALE
    assert rows["llama-2-13b-gpu-hours"]["scale"] == PLANNER_SCALE
    assert rows["llama-1-7b-gpu-hours"]["scale"] == PUBLISHED_SCALE  # LLaMA sec. 6.1: 2,048 A100
    # a source that counts steady-state steps only is compared with those, and only those
    assert "steady" in rows["deepseek-v3-gpu-hours"]["chosen"]["counts"]
    # OPT-175B's 809,472 GPU-hours are the chronicles' "~33 days of continuous training ... assuming
    # no hardware issues" (4.30E+23 FLOPs at 147 TFLOP/s): steady steps, with full recompute
    assert "steady" in rows["opt-175b-gpu-hours"]["chosen"]["counts"]
    assert rows["opt-175b-gpu-hours"]["chosen"]["parallel"]["recompute"] == "full"
    assert "counts" not in rows["bloom-176b-gpu-hours"]["chosen"]
    # each row says what its prediction is made of: the parts add up to it (whole-run rows) or
    # the steady-state steps and phases are it (rows whose source counts only those)
    for r in rows.values():
        parts = r["chosen"]["whole_run_parts"]
        counted = {
            k: v
            for k, v in parts.items()
            if "counts" not in r["chosen"] or k.startswith(("steady", "phase: "))
        }
        assert sum(counted.values()) == pytest.approx(r["predicted"], rel=1e-9)


def test_summary_by_scale_keeps_the_two_apart():
    from rightsize.validate.whole_run_cases import PLANNER_SCALE, PUBLISHED_SCALE, summarise_by_scale

    rows = [
        {"scale": PUBLISHED_SCALE, "error": 0.1, "within_p10_p90": True},
        {"scale": PUBLISHED_SCALE, "error": -0.3, "within_p10_p90": False},
        {"scale": PLANNER_SCALE, "error": -0.5, "within_p10_p90": True},
        {"scale": PLANNER_SCALE, "error": None},
        {"error": 0.9},  # a step row: not a whole run
    ]
    out = summarise_by_scale(rows)
    assert out[PUBLISHED_SCALE] == {
        "n": 2,
        "median_abs_error": pytest.approx(0.2),
        "max_abs_error": pytest.approx(0.3),
        "coverage_p10_p90": 0.5,
    }
    assert out[PLANNER_SCALE]["n"] == 1 and out[PLANNER_SCALE]["max_abs_error"] == pytest.approx(0.5)


def test_planned_maintenance_stops_are_charged(plan):
    """Llama 3's 47 planned stops in 54 days on 16,384 GPUs, per GPU-hour of the run so far:
    each a checkpoint write and a restart, no work lost (the failure rate counts only the
    419 unexpected interruptions, so nothing is counted twice). A stop waits for its checkpoint
    to be durable: an asynchronous save's background write too (perf.checkpoint)."""
    whole = plan.sizing.run.whole_run
    parts = [line.part for line in whole.lines]
    i = parts.index("planned maintenance stops")
    assert parts[i - 1] == "failures, restarts and lost work"
    before_s = sum(line.time_s for line in whole.lines[:i])
    rel = plan.sizing.reliability
    rate = whole_run_factors().planned_interruptions_per_gpu_hour
    assert rate == pytest.approx(47 / (54 * 24 * 16384), rel=0.01)
    stops = rate * whole.gpus * before_s / 3600.0
    expected = stops * (rel.checkpoint_write_s + rel.checkpoint_background_s + rel.restart_s)
    assert whole.lines[i].time_s == pytest.approx(expected, rel=1e-9)
    assert whole.lines[i].time_s > 0 and "Llama 3" in whole.lines[i].basis


def test_a_less_validated_layout_must_win_at_its_pessimistic_end():
    """Issue #27: among a GPU count's few layouts, one with a wider model error (mechanisms or
    a scale the validation never reached) replaces the best-validated one only when it is
    faster at the P90 too, not on its P75 alone."""
    import numpy as np

    from rightsize.search.risk import _validated_first

    sigma = np.array([0.10, 0.25])
    p75 = np.array([1.00, 0.95])  # the less validated layout leads at the ranking quantile
    assert _validated_first(p75, np.array([1.20, 1.25]), sigma) == 0  # but not at its P90
    assert _validated_first(p75, np.array([1.20, 1.15]), sigma) == 1  # faster at both
    # equally validated: the plain ranking (ties to the first, as a stable sort)
    assert _validated_first(np.array([1.0, 0.9]), np.array([9.0, 9.5]), np.array([0.1, 0.1])) == 1
    assert _validated_first(np.array([1.0, 1.0]), np.array([1.2, 1.2]), np.array([0.1, 0.1])) == 0


def test_405b_search_does_not_take_the_most_optimistic_layout():
    """Issue #27: left to the search, Llama 3.1 405B on 16,384 H100 took the layout with the
    fastest base step (ZeRO-3, 50.3% MFU), a mechanism no H100 run in the validation used.
    Ranked by the P75 (the model error widens with the distance from validated runs and with
    each unvalidated mechanism), a layout with less unvalidated ground wins; the headline's
    range is wide and says why."""
    from rightsize.search.ground import ground_report, position
    from rightsize.search.risk import P75
    from rightsize.search.train import plan_training, workload_from_spec

    spec = parse_spec(
        {
            "kind": "training",
            "model": "llama3.1-405b",
            "training": {"seq_len": 8192, "global_batch_tokens": "16Mi", "train_tokens": "15.6T"},
            "targets": {"accelerators": ["h100-sxm"], "gpus": 16384, "objective": "time"},
        },
        Path("."),
    )
    plan = plan_training(spec)
    b = plan.best
    assert b.risk_quantile == P75
    w = workload_from_spec(spec)
    g = ground_report(position(w.arch, w.seq_len, w.precision, w.method, b.accelerator, b.parallel))
    assert g["thin"]
    # not the fastest base step among the layouts the search kept for this count
    runner = plan.runner_up_layout
    assert runner is not None and runner[0].step_time_s < b.step_time_s
    assert b.parallel["zero_stage"] < 3


def test_published_llama3_405b_whole_run_in_the_plans_range(tmp_path):
    """The held-out Llama 3.1 405B run (30.84M H100 GPU-hours, model card), planned with its
    published batch and context schedule: the plan's P10-P90 holds the published figure.
    (Before issue #27: 26.4M planned, P10-P90 outside the published value's reach for 8B/70B.)"""
    import csv

    from rightsize.validate.cases import bundled_paths

    src = next(p for p in bundled_paths(holdout=True) if p.name == "holdout_training.csv")
    with open(src, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["id"] == "llama-3.1-405b-gpu-hours"]
    out = tmp_path / "one.csv"
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    row = validate_paths([out])["rows"][0]
    assert row["within_p10_p90"]
    assert abs(row["error"]) <= 0.20  # measured -8.8%


def test_report_shows_the_whole_run_and_flags_thin_ground(plan):
    from rightsize.report.plan_doc import training_document

    doc = training_document(plan)
    sec = next(s for s in doc.sections if s.id == "whole_run")
    rows = sec.tables[0].rows
    assert rows[-1][0] == "whole run" and len(rows) == len(plan.sizing.run.whole_run.lines) + 1
    thin = plan.uncertainty["ground"].get("thin")
    assert ("far from validated runs" in doc.decision) == bool(thin)


def test_the_spec_sets_the_evaluation_schedule():
    spec = {**SPEC, "training": {**SPEC["training"], "eval_interval_steps": 100, "eval_batches": 50}}
    p = run_pipeline(parse_spec(spec, Path(".")), uncertainty=False)
    ev = next(line for line in p.sizing.run.whole_run.lines if line.part == "evaluation")
    steps = sum(
        line.time_s for line in p.sizing.run.whole_run.lines if line.part.startswith(("steady", "phase"))
    )
    assert ev.time_s == pytest.approx(steps * 50 / 100 * whole_run_factors().eval_forward_share)
    assert "spec" in ev.basis
    off = {**SPEC, "training": {**SPEC["training"], "eval_batches": 0}}
    q = run_pipeline(parse_spec(off, Path(".")), uncertainty=False)
    assert next(line for line in q.sizing.run.whole_run.lines if line.part == "evaluation").time_s == 0.0


@pytest.mark.parametrize(
    "raw",
    [
        None,  # the list is missing
        [],  # no published run
        [{"value": 0.1, "source": "x", "as_of": "2024-01"}],  # a figure without its run
        [{"run": "A", "value": -0.1, "source": "x", "as_of": "2024-01"}],  # a negative loss
        [{"run": "A", "value": 0.1, "as_of": "2024-01"}],  # no source
    ],
)
def test_unplanned_losses_data_errors_name_the_key(raw):
    from rightsize.catalog.loader import CatalogDataError
    from rightsize.catalog.whole_run import _unplanned_runs

    with pytest.raises(CatalogDataError, match="unplanned_losses"):
        _unplanned_runs(raw)


def test_llama_1_stack_runs_flashattention_1_on_a100():
    """LLaMA's stack (arXiv 2302.13971 sec. 2.4: xformers attention with FlashAttention's
    backward) is named `flash1`: slower than FlashAttention-2 on A100 by the FA2 paper's
    ranges (FA1 25-40% of peak, FA2 50-73%), so a LLaMA 7B step at seq 2,048 is slower with it,
    and the LLaMA whole-run rows ask for it."""
    from perf_helpers import catalog_hw, llama2_7b

    from rightsize.perf.step import train_step
    from rightsize.perf.workload import ParallelConfigs, TrainWorkload

    hw = catalog_hw("a100-sxm-80gb")
    fa1, fa2 = float(hw.attention_fraction_for("flash1")), float(hw.attention_fraction_for("flash2"))
    assert 0.25 <= fa1 <= 0.40 and 0.50 <= fa2 <= 0.73
    assert fa1 / fa2 == pytest.approx(32.5 / 61.5, rel=0.02)
    # an accelerator without a measured FA1 figure keeps its own attention fraction
    h100 = catalog_hw("h100-sxm")
    assert float(h100.attention_fraction_for("flash1")) == pytest.approx(h100.attention_fraction)
    arch = llama2_7b()  # LLaMA 7B's shape
    cfg = ParallelConfigs.single(tp=2, dp=8, micro_batch=2, sequence_parallel=True, zero_stage=1)
    steps = {
        k: float(
            train_step(
                TrainWorkload(arch=arch, seq_len=2048, global_batch=64, precision="bf16", attention_kernel=k),
                cfg,
                hw,
            ).step_time[0]
        )
        for k in ("flash1", "flash2")
    }
    assert 1.02 < steps["flash1"] / steps["flash2"] < 1.15
    llama1 = [c for c in read_cases(whole_runs_path()) if c.id.startswith("llama-1-")]
    assert len(llama1) == 4 and all(c.row["attention_kernel"] == "flash1" for c in llama1)
