"""Short-term reserved capacity (capacity blocks) in the fleet planner: a short job whose gang passes
the on-demand cap goes on blocks for the days it runs, not on a 1- or 3-year commitment; the
bundled fleet's cost is within reach of arithmetic done here from the catalog's prices; the solver
states a gap it has proved (against the whole integer program), not the linear relaxation's."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rightsize.api import plan
from rightsize.catalog.prices import cloud_price
from rightsize.fleet.blocks import block_price, block_table
from rightsize.fleet.demand import HOURS, Calendar, WorkloadDemand
from rightsize.fleet.prices import PoolPrices
from rightsize.fleet.solver import Limits, solve
from rightsize.report.render import render

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fleet-2027.yaml"
GANG = 1024
GPU_HOURS = 65_000.0  # ~2.6 days of a 1,024-GPU gang: an 8B model on 2T tokens


def _h100(kinds: list[str]) -> PoolPrices:
    cp = cloud_price("h100-sxm")
    table = {
        "on_demand": cp.on_demand,
        "reserved_1y": cp.reserved_1y,
        "reserved_3y": cp.reserved_3y,
        "capacity_block": block_price("h100-sxm").usd_per_gpu_hour,  # type: ignore[union-attr]
    }
    terms = {"reserved_1y": 12, "reserved_3y": 36}
    caps = {"on_demand": 256.0, "spot": 128.0, "capacity_block": 2048.0}
    return PoolPrices(
        "h100-sxm",
        "hgx-h100",
        8,
        {k: float(table[k]) for k in kinds},  # type: ignore[arg-type]
        {k: v for k, v in terms.items() if k in kinds},
        burst_caps_gpus=caps,
    )


def _short_job(cal: Calendar) -> WorkloadDemand:
    allowed = np.zeros((cal.months, HOURS), dtype=bool)
    allowed[3:6] = True  # 2027-04 to 2027-06
    return WorkloadDemand(
        "pretrain", "h100-sxm", "pretraining", GANG, 50, True, True, None,
        np.zeros((cal.months, HOURS)), allowed, float(GANG), False, [([3, 4, 5], GPU_HOURS)],
    )  # fmt: skip


def _solve(kinds: list[str]) -> tuple[Any, PoolPrices]:
    cal = Calendar(2027 * 12, 18)
    pool = _h100(kinds)
    return solve(cal.days, {"h100-sxm": pool}, [_short_job(cal)], Limits(utilisation_target=0.85)), pool


def test_a_short_big_job_goes_on_blocks_not_on_a_commitment() -> None:
    sol, pool = _solve(["reserved_1y", "reserved_3y", "capacity_block", "on_demand"])
    assert sol.penalty_usd == pytest.approx(0.0, abs=1.0)
    for kind in ("reserved_1y", "reserved_3y"):
        assert float(sol.values[f"n:h100-sxm:{kind}"].sum()) == 0.0, kind
    gpu_days = float(sol.block_gpu_days["h100-sxm"].sum())
    # the whole gang for the whole days its work takes: 65,000 GPU-hours on 1,024 GPUs is 2.6 days, 3 booked
    assert gpu_days == GANG * math.ceil(GPU_HOURS / (GANG * HOURS) - 1e-9) == GANG * 3
    price = pool.usd_per_gpu_hour["capacity_block"]
    assert sol.cost_usd == pytest.approx(gpu_days * HOURS * price, rel=1e-6)
    assert sol.cost_usd <= (GPU_HOURS + GANG * HOURS) * price  # at most a day more than the work


def test_without_blocks_the_gang_must_commit_and_costs_far_more() -> None:
    """What the planner did before capacity blocks: a gang over the on-demand cap can only commit."""
    blocks, _ = _solve(["reserved_1y", "reserved_3y", "capacity_block", "on_demand"])
    long, _ = _solve(["reserved_1y", "reserved_3y", "on_demand"])
    assert (
        float(long.values["n:h100-sxm:reserved_1y"].sum() + long.values["n:h100-sxm:reserved_3y"].sum()) > 0
    )
    assert long.cost_usd > 20 * blocks.cost_usd


def test_the_solver_proves_its_gap_on_the_whole_integer_program() -> None:
    sol, _ = _solve(["reserved_1y", "reserved_3y", "on_demand"])
    # the linear bound lets the gang sit in fractions within the on-demand cap (gap > 90%); the
    # integer program's own bound closes it
    assert sol.bound_from == "integer"
    assert sol.mip_gap is not None and sol.mip_gap <= 1e-3


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    return json.loads(render(plan(EXAMPLE), "json"))


def test_the_example_costs_what_the_catalog_prices_say(data: dict[str, Any]) -> None:
    """Pre-training on blocks at the block price; every workload together within reach of its
    GPU-hours at on-demand prices (the old plan committed 1,176 GPUs for 3 years: $42M)."""
    od = {acc: cloud_price(acc).on_demand for acc in ("h100-sxm", "h200-sxm")}
    pools = {w["name"]: w["pool"] for w in data["workloads"]}
    hours: dict[str, float] = {}
    for m in data["timeline"]:
        for name, w in m["by_workload"].items():
            hours[name] = hours.get(name, 0.0) + w["gpu_hours"]
    on_demand_usd = sum(h * od[pools[n]] for n, h in hours.items())  # type: ignore[operator]
    pooled = data["cost"]["pooled_usd"]
    assert 0.5 * on_demand_usd <= pooled <= 1.0 * on_demand_usd, (pooled, on_demand_usd)
    block = block_price("h100-sxm")
    assert block is not None
    pre = hours["llama3-8b-pretrain"]
    blocks = [p for p in data["purchases"] if p["kind"] == "capacity_block"]
    booked = sum(p["usd_in_horizon"] for p in blocks)
    # whole days of the 1,024-GPU gang: the work's GPU-hours, plus at most one day
    assert pre * block.usd_per_gpu_hour <= booked <= (pre + GANG * HOURS) * block.usd_per_gpu_hour
    # no commitment of a year or more carries the pre-training gang
    assert max(m["reserved_gpus"] for m in data["timeline"]) < GANG
    alone = {w["name"]: w["dedicated_usd"] for w in data["workloads"]}
    # alone, the same blocks at the same price (one value per quantity), plus its own storage
    assert booked <= alone["llama3-8b-pretrain"] <= booked * 1.03


def test_the_example_states_its_choice_and_a_proved_gap(data: dict[str, Any]) -> None:
    found = [f for f in data["findings"] if f["rule"] == "fleet_capacity_block"]
    assert found and "on demand" in found[0]["title"]
    s = data["solver"]
    assert s["mip_gap"] is not None and s["mip_gap"] <= s["mip_gap_limit"]


def test_block_data_is_sourced_and_dated() -> None:
    t = block_table()
    assert t.instances_across_blocks.value == 256
    for rec in t.prices.values():
        assert rec.usd_per_instance_hour.source and rec.usd_per_instance_hour.as_of
        assert 1.0 < rec.usd_per_gpu_hour < 15.0


def test_a_weekly_job_books_a_day_for_each_run() -> None:
    """Runs of a recurring job are not packed into one booked day: a weekly 8-GPU fine-tune of half
    an hour, with no on-demand room, books a day for each of the month's runs."""
    cal = Calendar(2027 * 12, 3)
    runs = 52.0 / 12.0
    allowed = np.ones((cal.months, HOURS), dtype=bool)
    periods = [([m], 8 * 0.5 * runs * float(cal.days[m]) * 12 / 365) for m in range(cal.months)]
    job = WorkloadDemand(
        "lora", "h100-sxm", "fine_tuning", 8, 60, True, True, None,
        np.zeros((cal.months, HOURS)), allowed, 8.0, False, periods, runs_per_month=runs,
    )  # fmt: skip
    pool = _h100(["capacity_block", "on_demand"])
    pool.burst_caps_gpus["on_demand"] = 0.0
    sol = solve(cal.days, {"h100-sxm": pool}, [job], Limits())
    assert sol.penalty_usd == pytest.approx(0.0, abs=1.0)
    booked_days = sol.block_gpu_days["h100-sxm"] / 8
    need = [math.ceil(runs * float(d) * 12 / 365 - 1e-9) for d in cal.days]
    assert list(booked_days) == need  # 5, 4, 5 days: one per run, not one for the month's 2 GPU-hours
