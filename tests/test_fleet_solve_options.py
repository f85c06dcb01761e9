"""Fleet solves that are bounded, quiet and deterministic (issue #32): a 200-workload fleet gives
valid JSON on stdout through the real CLI; the same fleet planned twice (and with one worker or
several) gives the same plan; a solve stopped at its time limit says so with its gap; solo plans
are shared between workloads that differ only in schedule; the solver options are spec fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rightsize.api import plan
from rightsize.errors import BadInput, Infeasible
from rightsize.fleet.demand import Calendar
from rightsize.fleet.solver import Limits, solve
from rightsize.fleet.synthetic import synthetic_fleet, write_synthetic_fleet
from rightsize.spec.fleet_load import parse_fleet

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _fleet_file(tmp_path: Path, workloads: int, months: int, policy: dict[str, Any] | None = None) -> Path:
    return write_synthetic_fleet(tmp_path, EXAMPLES, workloads, months, policy)


def test_200_workloads_give_valid_json_on_stdout(tmp_path: Path) -> None:
    path = _fleet_file(tmp_path, 200, 6)
    env = {k: v for k, v in os.environ.items() if k != "RIGHTSIZE_PROGRESS"}
    env["PYTHONPATH"] = str(ROOT / "src")
    proc = subprocess.run(  # --progress: progress lines on stderr although stderr is a pipe
        [sys.executable, "-m", "rightsize.cli.main", "plan", str(path), "--format", "json", "--progress"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)  # nothing but the plan on stdout, at any scale
    assert len(data["workloads"]) == 200
    s = data["solver"]
    assert s["dedicated"]["solves"] == 200
    assert s["time_limit_s"] == 120 and s["mip_gap_limit"] == 0.001
    if s["optimal_within_gap"]:
        assert not s["stopped_at_time_limit"] and s["mip_gap"] <= s["mip_gap_limit"] + 1e-12
    assert s["mip_gap"] is not None  # the gap is always stated
    assert data["solo_plans"]["distinct_specs_planned"] == 4  # 200 workloads, 4 specs: planned once each
    assert "rightsize fleet: dedicated solves" in proc.stderr  # progress, on stderr only


def _key_numbers(p: Any) -> tuple[Any, ...]:
    d = p.to_dict()
    return (
        d["cost"]["pooled_usd"],
        d["cost"]["dedicated_by_workload_usd"],
        d["purchases"],
        [m["by_workload"] for m in d["timeline"]],
    )


def test_same_plan_twice_and_with_any_number_of_workers(tmp_path: Path) -> None:
    one = _key_numbers(plan(_fleet_file(tmp_path, 24, 6, {"solver": {"workers": 1}})))
    again = _key_numbers(plan(_fleet_file(tmp_path, 24, 6, {"solver": {"workers": 1}})))
    parallel = _key_numbers(plan(_fleet_file(tmp_path, 24, 6, {"solver": {"workers": 2}})))
    assert one == again
    assert one == parallel


def test_a_solve_stopped_at_its_time_limit_says_so() -> None:
    fleet = parse_fleet(synthetic_fleet(EXAMPLES, 8, 6), EXAMPLES)
    from rightsize.fleet.plan import _demand, _plan_entry, _pools
    from rightsize.sizing.pipeline import run_pipeline

    policy = fleet.spec.policy
    cal = Calendar(fleet.start_month, fleet.horizon_months)
    pairs = [_plan_entry(e, policy, lambda s: run_pipeline(s, uncertainty=False)) for e in fleet.entries]
    views = [v for v, _ in pairs]
    demands = [_demand(v, e, cal) for v, e in zip(views, fleet.entries, strict=True)]
    pools = _pools(views, policy, fleet)
    try:
        sol = solve(cal.days, pools, demands, Limits(time_limit_s=1e-3))
    except Infeasible as exc:  # no solution at all in the time: the error names the limit
        assert "time_limit" in exc.fix
        return
    assert sol.stopped_at_time_limit
    assert sol.time_limit_s == pytest.approx(1e-3)
    full = solve(cal.days, pools, demands, Limits())
    assert not full.stopped_at_time_limit
    assert full.cost_usd + full.penalty_usd <= sol.cost_usd + sol.penalty_usd + 1e-6
    assert np.isfinite(full.cost_usd)


@pytest.mark.parametrize(
    "solver",
    [{"mip_gap": 0.5}, {"time_limit_s": 0}, {"random_seed": -1}, {"workers": 0}, {"threads": 4}],
)
def test_solver_options_are_checked(solver: dict[str, Any]) -> None:
    data = synthetic_fleet(EXAMPLES, 2, 3)
    data["policy"] = {"solver": solver}
    with pytest.raises(BadInput) as err:
        parse_fleet(data, EXAMPLES)
    assert "solver" in str(err.value)


_PARENT = [0]


def _dies_in_a_worker(args: Any) -> Any:
    """A solve that kills its process when it runs in a worker (and solves in the parent)."""
    from rightsize.fleet.solver import solve as real

    if os.getpid() != _PARENT[0]:
        os._exit(1)
    days, pools, d, limits = args
    return real(days, pools, [d], limits)


def test_a_broken_worker_pool_falls_back_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed mid-solve (out of memory, a signal) does not lose the plan: the solves not
    returned are done in this process, and the result equals a one-process run."""
    from test_fleet_solver import _job, _pool

    from rightsize.fleet import dedicated

    cal = Calendar(2027 * 12, 3)
    pools = {"acc": _pool(10.0, 6.0, 4.5, 3.0, 3.0, ["on_demand", "reserved_1y"])}
    work = [_job(f"j{i}", 3, 8, 0, 2, 0.1 + 0.05 * i, list(range(24)), True, None, cal) for i in range(8)]
    alone = dedicated.dedicated_solutions(cal.days, pools, work, Limits(), workers=1)
    _PARENT[0] = os.getpid()
    monkeypatch.setattr(dedicated, "_one", _dies_in_a_worker)
    survived = dedicated.dedicated_solutions(cal.days, pools, work, Limits(), workers=2)
    assert list(survived) == list(alone)
    for name in alone:
        assert survived[name].cost_usd == pytest.approx(alone[name].cost_usd)


def test_no_pooled_plan_within_the_time_limit_falls_back_to_the_dedicated_plans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pooled solve stopped before it found any plan (a 400-workload, 120-month fleet on a busy
    machine) still gives a plan: the dedicated plans combined, said so in the headline."""
    import rightsize.fleet.plan as fleet_plan
    from rightsize.fleet.report_data import solver_headline
    from rightsize.fleet.solver import SolveStopped

    real = fleet_plan.solve

    def stopped(days: Any, pools: Any, demands: Any, limits: Limits) -> Any:
        if len(demands) > 1:  # the pooled program; the dedicated ones solve as usual
            raise SolveStopped("No capacity plan serves the fleet's fixed load within the policy.")
        return real(days, pools, demands, limits)

    monkeypatch.setattr(fleet_plan, "solve", stopped)
    p = plan(_fleet_file(tmp_path, 6, 4, {"solver": {"workers": 1}}))
    d = p.to_dict()
    assert d["solver"]["stopped_at_time_limit"] and d["solver"]["status"] == fleet_plan.STOPPED_STATUS
    assert "before any pooled plan" in solver_headline(d["solver"])
    # the capacity is exactly the dedicated plans' (the shared parts are then counted once)
    assert p.solution.cost_usd == pytest.approx(sum(s.cost_usd for s in p.dedicated.values()), rel=1e-9)
