"""Margins, growth stages, the recurring-job pool and sensitivity swings, by hand."""

from __future__ import annotations

import pytest

from rightsize.perf.step import model_flops_per_token
from rightsize.perf.workload import TrainWorkload
from rightsize.search.demand import Demand
from rightsize.sizing.growth import growth_plan, yearly_factor
from rightsize.sizing.margins import policy_warnings, serving_margins, training_margins
from rightsize.sizing.pool import size_pool
from rightsize.sizing.sensitivity import ranked, swing, time_at_efficiency
from rightsize.spec import get_preset
from rightsize.spec.infrastructure import Growth, Schedule


def _demand(**kw: object) -> Demand:
    base: dict[str, object] = dict(
        workload="pretraining",
        name="t",
        accelerator="h100-sxm",
        node="hgx-h100",
        gpus=1024,
        compute_utilisation=0.4,
        duty_cycle=1.0,
        run_s=30 * 86400.0,
        runs_per_month=None,
        work_unit="token",
        work_units_per_s=1e6,
        work_units_total=1e12,
        dataset_bytes=4e12,
        data_read_bytes_per_s=4e6,
        bytes_per_work_unit=4.0,
        params=7e10,
        weights_bytes=1.4e11,
        checkpoint_bytes=9.8e11,
    )
    base.update(kw)
    return Demand(**base)  # type: ignore[arg-type]


def test_gpt3_training_flops_match_the_paper() -> None:
    """GPT-3 175B on 300B tokens: 3.14e23 FLOPs (Brown et al. 2020, table D.1); 6 N T
    with N = 174.6B non-embedding-dominated parameters gives the same to within 2%."""
    w = TrainWorkload(
        arch=get_preset("gpt3-175b"),
        seq_len=2048,
        global_batch=1536,
        precision="bf16",
        optimizer="adamw",
        flash_attention=True,
    )
    total = model_flops_per_token(w) * 300e9
    assert total == pytest.approx(3.14e23, rel=0.03)


def test_training_margin_on_the_deadline_and_slack() -> None:
    lines = training_margins(60 * 86400.0, 45 * 86400.0, 1536, 2048, 0.2)
    budget = lines[0]
    assert budget.base == pytest.approx(60.0)
    assert budget.planned == pytest.approx(50.0)
    gpus = lines[1]
    assert (gpus.base, gpus.planned) == (1536, 2048)
    assert gpus.margin_fraction == pytest.approx(2048 / 1536 - 1)


def test_serving_margins_separate_utilisation_and_headroom() -> None:
    d = _demand(workload="serving", run_s=None, replicas=6, base_rate_rps=50.0, design_rate_rps=60.0)
    bare, util, head = serving_margins(
        d, replica_capacity_rps=12.0, safety_margin=0.2, utilisation_target=0.8
    )
    assert bare.planned == pytest.approx(60.0)
    # 50 / 12 -> 5 replicas bare; 50 / (12 x 0.8) = 5.2 -> 6 at the target
    assert (util.base, util.planned) == (5, 6)
    assert head.base == 6 and head.planned == 6


def test_margins_outside_typical_ranges_are_called_out() -> None:
    assert policy_warnings(0.2, 0.8) == []
    msgs = policy_warnings(0.05, 0.95)
    assert len(msgs) == 2 and "5%" in msgs[0] and "95%" in msgs[1]


def test_growth_stages_follow_the_compounded_need() -> None:
    """Model x2 and data x1.5 a year: need x3 a year. The plan's 64 nodes today; the next model
    needs 192 nodes at year 1 and 576 at year 2, bought in SUs of 32 at the start of each year.
    A service's traffic grows all year, so its purchases are a cycle ahead of the need."""
    d = _demand()
    g = Growth(horizon_years=2, model_growth_per_year=1.0, data_growth_per_year=0.5)
    assert yearly_factor(d, g) == pytest.approx(3.0)
    plan = growth_plan(d, g, 64, 8, 400_000.0, 1e6, fabric_max_nodes=256, power_cap_w=None)
    assert [s.nodes for s in plan.stages] == [64, 192, 576]
    assert [s.needed_at_years for s in plan.stages] == [0.0, 1.0, 2.0]
    assert plan.stages[1].added_capex_usd == pytest.approx(128 * 400_000.0)
    svc = _demand(workload="serving", run_s=None)  # no run time: a continuous service
    g_svc = Growth(horizon_years=2, traffic_growth_per_year=2.0)  # x3 a year
    served = growth_plan(svc, g_svc, 64, 8, 400_000.0, 1e6, fabric_max_nodes=10_000, power_cap_w=None)
    assert [s.nodes for s in served.stages] == [64, 192, 576]
    assert [s.needed_at_years for s in served.stages] == [0.0, 0.0, 1.0]
    assert "first budget cycle" in served.stages[1].what
    first_over = next(s for s in plan.stages if not s.fabric_ok)
    assert first_over.nodes == 576
    assert any("256-node limit" in c for c in plan.checks)


def test_scalable_units_are_merged_into_one_purchase_a_budget_cycle() -> None:
    """Issue 13: 52 stages of one SU each became 52 purchases; a person buys once a cycle."""
    d = _demand()
    g = Growth(horizon_years=3, model_growth_per_year=0.5, data_growth_per_year=0.3)
    plan = growth_plan(d, g, 256, 8, 400_000.0, 1e6, fabric_max_nodes=100_000, power_cap_w=None)
    assert len(plan.stages) == 1 + 3  # today, then one purchase a year
    half = growth_plan(
        d, g.model_copy(update={"purchase_interval_years": 0.5}), 256, 8, 4e5, 1e6, 100_000, None
    )
    assert len(half.stages) == 1 + 6
    assert half.stages[-1].nodes == plan.stages[-1].nodes  # the same capacity at the horizon


def test_no_growth_is_a_single_stage() -> None:
    plan = growth_plan(_demand(), Growth(), 10, 8, None, 1e5, fabric_max_nodes=1000, power_cap_w=2e5)
    assert [s.nodes for s in plan.stages] == [10]
    assert plan.stages[0].power_ok


def test_weekly_pool_is_elastic_when_mostly_idle() -> None:
    """One 10-hour job a week on 8 GPUs: 10/168 = 6% busy -> rent per job."""
    pool = size_pool(Schedule(jobs_per_week=1, turnaround="24h"), 10 * 3600.0, 8, 0.8)
    assert pool.concurrent_jobs_mean == pytest.approx(10 / 168)
    assert pool.pool_job_slots == 1
    assert pool.busy_gpu_hours_per_week == pytest.approx(80.0)
    assert pool.meets_turnaround
    assert pool.recommendation.startswith("Elastic")


def test_busy_pool_gets_enough_slots_for_the_target() -> None:
    """100 jobs a week of 4 h: 400/168 = 2.38 concurrent; at 80% -> 3 slots (79% busy)."""
    pool = size_pool(Schedule(jobs_per_week=100), 4 * 3600.0, 8, 0.8)
    assert pool.pool_job_slots == 3
    assert pool.pool_gpus == 24
    assert pool.pool_utilisation_fraction == pytest.approx(400 / 168 / 3)
    assert pool.recommendation.startswith("Dedicated")


def test_efficiency_swing_scales_only_the_compute_share() -> None:
    assert time_at_efficiency(100.0, 0.8, 0.5) == pytest.approx(100 * (0.8 / 0.5 + 0.2))
    assert time_at_efficiency(100.0, 0.0, 0.5) == pytest.approx(100.0)
    a = swing("a", ("lo", "hi"), (10.0, 100.0), (11.0, 110.0), (9.0, 90.0))
    b = swing("b", ("lo", "hi"), (10.0, 100.0), (10.0, 70.0), (10.0, 130.0))
    assert a.time_change_fraction_low == pytest.approx(0.1)
    assert [s.assumption for s in ranked([a, b])] == ["b", "a"]


def test_stage_one_is_the_plans_own_cluster_and_later_stages_are_dated_increments() -> None:
    """Issue 26: the 70B growth plan bought 4,096 GPUs 'due now' against a 2,048-GPU plan. Stage 1
    is the plan's 256 nodes, due now, at their capital cost; nothing else is due now; each later
    purchase adds to what is installed, at the start of its year, with its own capital cost."""
    d = _demand(gpus=2048)
    g = Growth(horizon_years=3, model_growth_per_year=0.5, data_growth_per_year=0.3)  # x1.95 a year
    plan = growth_plan(d, g, 256, 8, 400_000.0, 1e6, fabric_max_nodes=100_000, power_cap_w=None)
    first, *later = plan.stages
    assert (first.stage, first.nodes, first.gpus, first.added_nodes) == (1, 256, 2048, 256)
    assert first.added_capex_usd == pytest.approx(256 * 400_000.0) and first.due.startswith("due now")
    assert "own cluster" in first.what
    assert [s.needed_at_years for s in later] == [1.0, 2.0, 3.0]
    assert not any(s.due.startswith("due now") for s in later)
    installed = first.nodes
    for s in later:
        assert s.nodes == installed + s.added_nodes and s.gpus == s.nodes * 8
        assert s.added_capex_usd == pytest.approx(s.added_nodes * 400_000.0)
        assert s.added_nodes % plan.scalable_unit_nodes == 0 and "increment" in s.what
        installed = s.nodes
    for s in later:  # each purchase reaches that year's need, 256 x 1.95^year, in SUs of 32
        need = 256 * 1.95**s.needed_at_years
        assert need <= s.nodes < need + 32


def test_the_70b_example_growth_starts_from_the_plan_and_its_capital_matches_the_cost() -> None:
    from pathlib import Path

    from rightsize.advise.view import sizing_dict
    from rightsize.api import plan
    from rightsize.report.bom import bom_section

    spec = Path(__file__).resolve().parent.parent / "examples" / "llama3-70b-pretrain.yaml"
    p = plan(spec)
    stages = p.sizing.growth.stages
    assert stages[0].gpus == p.best.gpus and stages[0].due.startswith("due now")
    assert [s for s in stages[1:] if s.due.startswith("due now")] == []
    if p.sizing.cost.onprem is not None:
        assert stages[0].added_capex_usd == pytest.approx(p.sizing.cost.onprem.capex_usd, rel=1e-6)
    sec = bom_section(sizing_dict(p))
    assert sec is not None
    text = repr(sec)
    assert "after the plan's own cluster" in text and "due in year 1" in text
