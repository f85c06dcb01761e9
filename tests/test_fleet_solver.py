"""The fleet's capacity program on fleets it has never seen (issue #16), as properties: every month's
committed plus burst GPUs cover its demand; pooling never costs more than each workload on its
own; every job period gets its GPU-hours or reports the miss; a job that cannot pause runs flat
through the day. And the committed level matches the demand duration curve's break-even."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rightsize.fleet import timeline as tl
from rightsize.fleet.demand import HOURS, Calendar, WorkloadDemand, daily_shape
from rightsize.fleet.gangs import holdings
from rightsize.fleet.plan import solve_pool
from rightsize.fleet.prices import PoolPrices
from rightsize.fleet.solver import Limits, solve
from rightsize.spec.fleet import FleetPolicy

START = 2027 * 12


def _pool(
    od: float,
    r1: float,
    r3: float,
    spot: float,
    onprem: float,
    kinds: list[str],
    gpn: int = 8,
    block: float | None = None,
) -> PoolPrices:
    table = {"on_demand": od, "reserved_1y": r1, "reserved_3y": r3, "spot": spot, "onprem": onprem}
    table["capacity_block"] = od * 0.7 if block is None else block
    terms = {"reserved_1y": 12, "reserved_3y": 36, "onprem": 60}
    return PoolPrices(
        "acc", "node", gpn, {k: table[k] for k in kinds}, {k: terms[k] for k in kinds if k in terms}, 10_000.0
    )


def _service(name: str, months: int, peak: int, per: int, ratio: float) -> WorkloadDemand:
    shape = daily_shape(None, ratio)
    growth = 1.0 + 0.05 * np.arange(months)
    fixed = per * np.maximum(1.0, np.ceil(peak * growth[:, None] * shape[None, :] - 1e-9))
    return WorkloadDemand(name, "acc", "serving", per, 100, False, False, None, fixed, fixed > 0, 0.0, False)


def _job(
    name: str,
    months: int,
    gang: int,
    first: int,
    last: int,
    share: float,
    hours: list[int],
    flat: bool,
    spot: float | None,
    cal: Calendar,
) -> WorkloadDemand:
    allowed = np.zeros((months, HOURS), dtype=bool)
    allowed[first : last + 1, hours] = True
    window = [int(m) for m in range(first, last + 1)]
    capacity = gang * len(hours) * float(cal.days[first : last + 1].sum())
    return WorkloadDemand(
        name,
        "acc",
        "pretraining",
        gang,
        10,
        True,
        spot is not None,
        spot,
        np.zeros((months, HOURS)),
        allowed,
        float(gang),
        flat,
        [(window, share * capacity)],
    )


@st.composite
def fleets(draw: st.DrawFn) -> tuple[Calendar, dict[str, PoolPrices], list[WorkloadDemand], FleetPolicy]:
    months = draw(st.integers(3, 7))
    cal = Calendar(START + draw(st.integers(0, 11)), months)
    od = draw(st.floats(2.0, 12.0))
    kinds = draw(
        st.lists(
            st.sampled_from(["onprem", "reserved_1y", "reserved_3y", "spot", "capacity_block"]), unique=True
        )
    )
    if "on_demand" not in kinds and draw(st.booleans()):
        kinds.append("on_demand")
    if not set(kinds) - {"spot", "capacity_block"}:  # services need on-demand or a commitment
        kinds.append("on_demand")
    pool = _pool(
        od,
        od * draw(st.floats(0.5, 0.7)),
        od * draw(st.floats(0.35, 0.5)),
        od * draw(st.floats(0.2, 0.4)),
        od * draw(st.floats(0.2, 0.6)),
        kinds,
        block=od * draw(st.floats(0.55, 1.1)),
    )
    work: list[WorkloadDemand] = []
    for i in range(draw(st.integers(0, 2))):
        work.append(
            _service(
                f"svc{i}",
                months,
                draw(st.integers(1, 6)),
                draw(st.sampled_from([1, 2, 4])),
                draw(st.floats(1.0, 3.0)),
            )
        )
    for i in range(draw(st.integers(1, 3))):
        first = draw(st.integers(0, months - 1))
        last = draw(st.integers(first, months - 1))
        start_h = draw(st.integers(0, 23))
        hours = [(start_h + k) % HOURS for k in range(draw(st.integers(4, 24)))]
        flat = len(hours) == HOURS and draw(st.booleans())
        spot = draw(st.one_of(st.none(), st.floats(1.0, 2.0)))
        work.append(
            _job(
                f"job{i}",
                months,
                draw(st.sampled_from([1, 8, 16])),
                first,
                last,
                draw(st.floats(0.05, 1.2)),
                hours,
                flat,
                spot,
                cal,
            )
        )
    policy = FleetPolicy(capacity=kinds, utilisation_target=draw(st.floats(0.6, 1.0)))  # type: ignore[arg-type]
    return cal, {"acc": pool}, work, policy


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleets())
def test_unseen_fleets(
    fleet: tuple[Calendar, dict[str, PoolPrices], list[WorkloadDemand], FleetPolicy],
) -> None:
    cal, pools, work, policy = fleet
    pooled, dedicated = solve_pool(cal.days, pools, work, policy)
    u = tl.usage(pooled, cal, pools, work, policy.utilisation_target)
    # every month (and every hour of it) committed + burst covers demand
    held = holdings(pooled, cal, pools, work, u.usable)
    for m in tl.timeline(u, cal, work, pools, pooled, held):
        assert m["reserved_gpus"] + m["burst_gpus"] >= m["demand_gpus"] - 1e-6, m
    demand = sum(u.total.values(), np.zeros((cal.months, HOURS)))
    od = pooled.get("od:acc", demand.shape)
    spot = sum(u.spot.values(), np.zeros_like(demand))
    usable = np.repeat(u.usable["acc"][:, None], HOURS, axis=1)
    # capacity blocks: the GPU-days booked, spread over the month's days (a booked day has all its hours)
    blocks = pooled.block_gpu_days.get("acc", np.zeros(cal.months)) / cal.days
    assert np.all(usable + od + spot + blocks[:, None] >= demand - 1e-5)
    # pooling never costs more than dedicated capacity (misses priced in), nor in dollars when nothing is missed
    total = pooled.cost_usd + pooled.penalty_usd
    assert total <= sum(s.cost_usd + s.penalty_usd for s in dedicated.values()) * (1 + 1e-9) + 1e-6
    if pooled.penalty_usd == 0 and all(s.penalty_usd == 0 for s in dedicated.values()):
        assert pooled.cost_usd <= sum(s.cost_usd for s in dedicated.values()) + 1e-6
    # deadlines: met, or the miss reported
    for d in tl.deadlines(pooled, cal, work, u):
        w = next(w for w in work if w.name == d["workload"])
        done = float(
            ((u.total[w.name] - w.fixed) / np.where(w.spot_factor or 1.0, 1.0, 1.0)).sum(axis=1) @ cal.days
        )
        assert d["met"] == (d["gpu_hours_missed"] <= 1e-6 * max(d["gpu_hours_needed"], 1.0))
        if not d["met"]:
            assert d["gpu_hours_missed"] > 0
        assert done + d["gpu_hours_missed"] >= d["gpu_hours_needed"] * (1 - 1e-6) - 1e-6
        # a period that fits its window is met whenever burst capacity exists
        fits = d["gpu_hours_needed"] <= w.max_gpus * float(w.allowed.sum(axis=1) @ cal.days) * (1 - 1e-6)
        if fits and "on_demand" in pools["acc"].usd_per_gpu_hour:
            assert d["met"], d
    # a job that may not pause runs the same GPUs every hour of a day
    for w in work:
        if w.flat_in_day:
            for kind in ("x", "xb"):
                x = pooled.get(f"{kind}:{w.name}", demand.shape)
                assert np.allclose(x, x[:, :1], atol=1e-6)


@pytest.mark.parametrize("ratio", [0.44, 0.6, 0.77, 0.9])
def test_committed_level_is_the_duration_curve_break_even(ratio: float) -> None:
    """With one commitment kind (covering the whole horizon) and on-demand, the k-th committed GPU pays
    when demand reaches k for at least `reserved / on-demand` of the hours: the duration curve's level."""
    months = 12
    cal = Calendar(START, months)
    hourly = np.array(
        [3, 3, 2, 2, 2, 3, 5, 8, 11, 13, 14, 15, 16, 16, 15, 14, 13, 12, 10, 9, 7, 6, 5, 4], float
    )
    fixed = np.repeat(hourly[None, :], months, axis=0)
    svc = WorkloadDemand("svc", "acc", "serving", 1, 0, False, False, None, fixed, fixed > 0, 0.0, False)
    od = 10.0
    pool = PoolPrices("acc", "node", 1, {"on_demand": od, "reserved_1y": od * ratio}, {"reserved_1y": 12})
    sol = solve(cal.days, {"acc": pool}, [svc], Limits())
    committed = float(sol.values["n:acc:reserved_1y"][0])
    share_at_least = [(hourly >= k).mean() for k in range(1, 17)]
    expected = sum(1 for s in share_at_least if s >= ratio + 1e-9)
    assert committed == expected
    assert float(sol.values["n:acc:reserved_1y"][1:].sum()) == 0


def test_a_capped_pool_reports_the_miss_instead_of_failing() -> None:
    """Owned capacity only, under a power limit: the job cannot be done in its month and says so."""
    months = 3
    cal = Calendar(START, months)
    pool = _pool(10.0, 6, 4.5, 3, 3.0, ["onprem"])
    job = _job("big", months, 16, 1, 1, 0.9, list(range(24)), False, None, cal)
    policy = FleetPolicy(capacity=["onprem"], power_limit_w=20_000.0)  # two nodes of 10 kW
    pooled, _ = solve_pool(cal.days, {"acc": pool}, [job], policy)
    u = tl.usage(pooled, cal, {"acc": pool}, [job], policy.utilisation_target)
    (d,) = tl.deadlines(pooled, cal, [job], u)
    assert not d["met"] and d["gpu_hours_missed"] > 0
    assert float(pooled.values["n:acc:onprem"].sum()) <= 2


def test_a_budget_caps_spending_and_the_shortfall_is_reported() -> None:
    months = 2
    cal = Calendar(START, months)
    pool = _pool(10.0, 6.0, 4.5, 3.0, 3.0, ["on_demand"])
    job = _job("job", months, 8, 0, 1, 0.5, list(range(24)), False, None, cal)
    need = job.periods[0][1]
    budget = 0.5 * need * 10.0
    policy = FleetPolicy(capacity=["on_demand"], budget_usd=budget)
    pooled, _ = solve_pool(cal.days, {"acc": pool}, [job], policy)
    assert pooled.cost_usd <= budget * (1 + 1e-9)
    u = tl.usage(pooled, cal, {"acc": pool}, [job], policy.utilisation_target)
    (d,) = tl.deadlines(pooled, cal, [job], u)
    assert not d["met"] and d["gpu_hours_missed"] == pytest.approx(need / 2, rel=1e-6)
