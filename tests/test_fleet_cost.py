"""Fleet cost (issue #26): the shared parts (fabric, storage) and spares in both the pooled and the
dedicated costs, pooled never dearer; owned nodes bought as bought (capital in full, running cost
inside the horizon, life beyond it stated), or depreciated when the policy says so; spares from the
workloads' failure rates, fewer pooled than alone."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import poisson
from test_fleet_solver import START, _service

from rightsize.api import plan
from rightsize.fleet import timeline as tl
from rightsize.fleet.demand import Calendar
from rightsize.fleet.prices import PoolPrices
from rightsize.fleet.solver import Limits, solve
from rightsize.fleet.synthetic import write_synthetic_fleet
from rightsize.report.render import render
from rightsize.sizing.reliability import SPARE_CONFIDENCE, spare_nodes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fleet-2027.yaml"


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return json.loads(render(plan(EXAMPLE), "json"))  # type: ignore[no-any-return]


def test_shared_parts_and_spares_are_in_both_costs(example: dict[str, Any]) -> None:
    c = example["cost"]
    pooled, alone = c["parts"]["pooled"], c["parts"]["dedicated"]
    assert c["pooled_usd"] == pytest.approx(c["pooled_capacity_usd"] + pooled["total_usd"])
    for w in example["workloads"]:
        assert w["dedicated_usd"] == pytest.approx(c["dedicated_by_workload_usd"][w["name"]])
        assert alone[w["name"]]["storage_usd"] > 0  # every workload stores something alone
    assert c["dedicated_usd"] == pytest.approx(sum(c["dedicated_by_workload_usd"].values()))
    assert pooled["storage_usd"] > 0
    assert pooled["storage_usd"] <= sum(a["storage_usd"] for a in alone.values()) + 1e-6
    for acc, k in pooled["spare_nodes"].items():
        assert k <= sum(a["spare_nodes"].get(acc, 0) for a in alone.values())
    assert c["pooled_usd"] <= c["dedicated_usd"] + 1e-6
    assert sum(m["cost_usd"] for m in example["timeline"]) == pytest.approx(c["pooled_usd"], rel=1e-6)


def test_one_copy_of_a_shared_spec_is_stored_pooled(tmp_path: Path) -> None:
    path = write_synthetic_fleet(tmp_path, ROOT / "examples", 8, 3)
    c = json.loads(render(plan(path), "json"))["cost"]
    alone = sum(a["storage_bytes"] for a in c["parts"]["dedicated"].values())
    assert c["parts"]["pooled"]["storage_bytes"] < alone  # two of each spec: their datasets once
    assert c["pooled_usd"] <= c["dedicated_usd"] + 1e-6


@settings(deadline=None, max_examples=50)
@given(st.floats(0.0, 50.0), st.floats(0.0, 50.0))
def test_spares_pool(a: float, b: float) -> None:
    # Pooling two repair queues needs at most one spare more than keeping them apart: Poisson
    # quantiles are not subadditive at small rates (two pools at 0.008 expected down each
    # need none apart, one together: e^-0.016 < 99%), and never by more than one (grid-checked
    # over 0-50 expected down).
    assert spare_nodes(a + b) <= spare_nodes(a) + spare_nodes(b) + 1
    assert spare_nodes(a) >= spare_nodes(0.0) == 0
    k = spare_nodes(a)
    if a > 0:  # the smallest count that covers SPARE_CONFIDENCE of the time
        assert poisson.cdf(k, a) >= SPARE_CONFIDENCE - 1e-9
        assert k == 0 or poisson.cdf(k - 1, a) < SPARE_CONFIDENCE


def _owned_pool(mode: str) -> PoolPrices:
    return PoolPrices(
        "acc",
        "node",
        8,
        {"onprem": 2.0},
        {"onprem": 60},
        10_000.0,
        200_000.0,
        onprem_opex_usd_per_gpu_hour=0.5,
        owned_capital=mode,
    )


@pytest.mark.parametrize("mode", ["full", "depreciated"])
def test_owned_nodes_are_bought(mode: str) -> None:
    months = 6
    cal = Calendar(START, months)
    svc = _service("svc", months, 2, 8, 1.0)
    pool = _owned_pool(mode)
    sol = solve(cal.days, {"acc": pool}, [svc], Limits())
    (buy,) = tl.purchases(sol, cal, {"acc": pool})
    nodes = buy["nodes"]
    assert nodes >= 2
    hours = float(cal.days.sum() * 24)
    running = nodes * 8 * 0.5 * hours
    assert buy["capex_usd"] == pytest.approx(nodes * 200_000.0)
    assert buy["life_beyond_horizon_months"] == 60 - months
    assert buy["residual_value_usd"] == pytest.approx(nodes * 200_000.0 * (60 - months) / 60)
    capital = nodes * 200_000.0 * (1.0 if mode == "full" else months / 60)
    assert buy["usd_in_horizon"] == pytest.approx(capital + running)
    assert sol.cost_usd == pytest.approx(buy["usd_in_horizon"])
    assert sum(tl.month_costs(sol, cal, {"acc": pool})) == pytest.approx(sol.cost_usd)


def test_full_capital_makes_owning_dearer_over_a_short_horizon() -> None:
    months = 6
    cal = Calendar(START, months)
    svc = _service("svc", months, 2, 8, 1.0)
    costs = {}
    for mode in ("full", "depreciated"):
        pool = dataclasses.replace(_owned_pool(mode), usd_per_gpu_hour={"onprem": 2.0, "reserved_1y": 4.0})
        pool = dataclasses.replace(pool, term_months={"onprem": 60, "reserved_1y": 12})
        costs[mode] = solve(cal.days, {"acc": pool}, [svc], Limits()).cost_usd
    assert costs["depreciated"] < costs["full"]
