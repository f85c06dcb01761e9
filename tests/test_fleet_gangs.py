"""Whole jobs on whole nodes (issue #29), on fleets the program has never seen: at every hour a job
runs it holds whole copies of its gang (whole nodes when it spans nodes), each on one kind of
capacity; services hold whole replicas; what is held covers the work placed; burst and spot stay
within the providers' caps; a run that cannot be checkpointed runs as one block; the timeline
reports whole GPUs and who holds what."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fleet_solver import START, _job, _pool, _service, fleets

from rightsize.api import plan
from rightsize.errors import Infeasible
from rightsize.fleet import timeline as tl
from rightsize.fleet.demand import HOURS, Calendar, WorkloadDemand
from rightsize.fleet.gangs import FLAVORS, Holdings, holdings
from rightsize.fleet.plan import solve_pool
from rightsize.fleet.prices import COMMITTED, PoolPrices
from rightsize.report.render import render
from rightsize.spec.fleet import FleetPolicy

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "fleet-2027.yaml"


def _check(
    cal: Calendar, pools: dict[str, PoolPrices], work: list[WorkloadDemand], policy: FleetPolicy
) -> tuple[Any, Holdings]:
    pooled, _ = solve_pool(cal.days, pools, work, policy)
    u = tl.usage(pooled, cal, pools, work, policy.utilisation_target)
    h = holdings(pooled, cal, pools, work, u.usable)
    shape = (cal.months, HOURS)
    for w in work:
        pr = pools[w.pool]
        unit = h.unit[w.name]
        assert unit >= w.gang_gpus
        if w.gang_gpus > pr.gpus_per_node:  # a gang across nodes takes whole nodes
            assert unit % pr.gpus_per_node == 0
        for k in FLAVORS:  # whole units on each flavor: no unit split across flavors
            held = h.gpus[w.name][k]
            assert np.allclose(held / unit, np.round(held / unit)), (w.name, k)
        work_gpus = w.fixed + pooled.get(f"x:{w.name}", shape)
        assert np.all(h.gpus[w.name]["reserved"] + h.gpus[w.name]["on_demand"] >= work_gpus - 1e-6)
        spot = pooled.get(f"xs:{w.name}", shape) * (w.spot_factor or 1.0)
        assert np.all(h.gpus[w.name]["spot"] >= spot - 1e-6)
    for acc, pr in pools.items():
        names = [w.name for w in work if w.pool == acc]
        reserved = sum((h.gpus[n]["reserved"] for n in names), np.zeros(shape))
        assert np.all(reserved <= np.floor(u.usable[acc][:, None] + 1e-6) + 1e-6)  # the pool is not oversold
        if not h.over_caps:
            for kind in ("on_demand", "spot"):
                cap = pr.burst_caps_gpus.get(kind, np.inf)
                assert sum((h.gpus[n][kind] for n in names), np.zeros(shape)).max() <= cap + 1e-6
    return pooled, h


@st.composite
def capped(draw: st.DrawFn) -> tuple[Calendar, dict[str, PoolPrices], list[WorkloadDemand], FleetPolicy]:
    cal, pools, work, policy = draw(fleets())
    caps = {
        "on_demand": float(draw(st.sampled_from([8, 16, 32, 1000]))),
        "spot": float(draw(st.sampled_from([0, 8, 16]))),
    }
    return cal, {k: dataclasses.replace(p, burst_caps_gpus=caps) for k, p in pools.items()}, work, policy


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(capped())
def test_unseen_fleets_hold_whole_gangs_within_the_caps(
    fleet: tuple[Calendar, dict[str, PoolPrices], list[WorkloadDemand], FleetPolicy],
) -> None:
    cal, pools, work, policy = fleet
    try:
        _check(*fleet)
    except Infeasible as exc:  # only when nothing may be committed and the caps cannot carry the load
        assert not set(COMMITTED) & set(pools["acc"].usd_per_gpu_hour)
        assert "burst_caps" in exc.fix


def test_a_run_that_cannot_checkpoint_runs_as_one_block() -> None:
    months = 6
    cal = Calendar(START, months)
    pool = _pool(10.0, 6.0, 4.5, 3.0, 3.0, ["on_demand", "reserved_1y"])
    job = _job("long", months, 16, 0, 5, 0.45, list(range(24)), True, None, cal)
    job = dataclasses.replace(job, preemptible=False)
    svc = _service("svc", months, 3, 8, 2.0)
    pooled, h = _check(cal, {"acc": pool}, [job, svc], FleetPolicy(capacity=["on_demand", "reserved_1y"]))
    runs = [m for m in range(months) if h.total("long")[m].max() > 0]
    assert runs == list(range(runs[0], runs[-1] + 1))  # consecutive months
    x = pooled.values["x:long"][:, 0]
    for m in runs[1:-1]:
        assert x[m] == pytest.approx(16.0, rel=1e-6)  # a month between two is run in full


def test_a_small_burst_cap_is_met_by_committing() -> None:
    months = 3
    cal = Calendar(START, months)
    base = _pool(10.0, 6.0, 4.5, 3.0, 3.0, ["on_demand", "reserved_1y", "spot"])
    job = _job("big", months, 64, 0, 2, 0.9, list(range(24)), True, 1.2, cal)
    pools = {"acc": dataclasses.replace(base, burst_caps_gpus={"on_demand": 16.0, "spot": 0.0})}
    pooled, h = _check(cal, pools, [job], FleetPolicy(capacity=["on_demand", "reserved_1y", "spot"]))
    assert h.gpus["big"]["spot"].max() == 0  # no spot allowed by the cap: none planned
    assert h.gpus["big"]["on_demand"].max() <= 16
    assert float(pooled.values["n:acc:reserved_1y"].sum()) * 8 >= 64 / 0.85 - 8


def test_the_example_reports_whole_gpus_and_holders() -> None:
    data = json.loads(render(plan(EXAMPLE), "json"))
    units = data["holdings"]["unit_gpus"]
    # the pre-training run's unit is its own plan's gang, in whole 8-GPU nodes
    gang = {w["name"]: w["gang_gpus"] for w in data["workloads"]}["llama3-8b-pretrain"]
    assert gang >= 8 and units["llama3-8b-pretrain"] == gang
    assert data["holdings"]["nodes_per_unit"]["llama3-8b-pretrain"] == gang // 8
    for m in data["timeline"]:
        for key in ("demand_gpus", "burst_gpus", "on_demand_gpus", "spot_gpus"):
            assert isinstance(m[key], int), key
        assert m["reserved_gpus"] + m["burst_gpus"] >= m["demand_gpus"]
        for name, e in m["by_workload"].items():
            assert e["gpus"] % units[name] == 0, (m["month"], name)
            assert all(g % units[name] == 0 for g in e["by_flavor_gpus"].values())
    for month in data["holdings"]["by_month"]:
        for name, flavors in month["holders_gpus"].items():
            for hours in flavors.values():
                assert len(hours) == 24 and all(g % units[name] == 0 for g in hours)
    for hour in data["hourly_profile"]["hours"]:
        assert all(isinstance(g, int) for g in hour["by_workload_gpus"].values())
    caps = data["holdings"]["burst_caps_gpus"]
    assert not data["holdings"]["over_caps"]
    pool = {w["name"]: w["pool"] for w in data["workloads"]}
    for month in data["holdings"]["by_month"]:
        for acc, cap in caps.items():
            for kind in ("on_demand", "spot"):
                mine = [f[kind] for n, f in month["holders_gpus"].items() if pool[n] == acc and kind in f]
                assert all(sum(hour) <= cap[kind] for hour in zip(*mine, strict=True)), (month["month"], acc)


def test_user_caps_bind_the_example(tmp_path: Path) -> None:
    """policy.burst_caps as user input: the plan keeps on-demand and spot within them at every hour."""
    import shutil

    import yaml

    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["policy"]["burst_caps"] = {"on_demand_gpus": 24, "spot_gpus": 0}
    for w in data["workloads"]:  # the specs beside the fleet file: its entries stay inside its folder
        (tmp_path / w["spec"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLE.parent / w["spec"], tmp_path / w["spec"])
    path = tmp_path / "capped.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    out = json.loads(render(plan(path), "json"))
    assert not out["holdings"]["over_caps"]
    pool = {w["name"]: w["pool"] for w in out["workloads"]}
    for month in out["holdings"]["by_month"]:
        for acc in out["pools"]:
            for kind, cap in (("on_demand", 24), ("spot", 0)):
                rows = [f[kind] for n, f in month["holders_gpus"].items() if pool[n] == acc and kind in f]
                assert all(sum(hour) <= cap for hour in zip(*rows, strict=True)), (month["month"], acc, kind)
    assert all(d["met"] for d in out["deadlines"])


@pytest.mark.parametrize("caps", [{"on_demand_gpus": -1}, {"spot_gpus": "many"}, {"other": 3}])
def test_caps_are_checked(caps: dict[str, Any]) -> None:
    from rightsize.errors import BadInput
    from rightsize.spec.fleet_load import parse_fleet

    data = {
        "kind": "fleet",
        "start": "2027-01",
        "workloads": [{"spec": "x.yaml"}],
        "policy": {"burst_caps": caps},
    }
    with pytest.raises(BadInput) as err:
        parse_fleet(data, EXAMPLE.parent)
    assert "burst_caps" in str(err.value)
