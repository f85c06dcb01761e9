"""Demand on the fleet's grid (issue #16): daily shapes keep their peak and average, a service's
peak hour in its first month is exactly its own plan, batch work stays in its window."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rightsize.fleet.demand import Calendar, batch_gpu_hours, daily_shape, job_demand, service_demand
from rightsize.fleet.workload_view import WorkloadView
from rightsize.spec.fleet import BatchJob, FleetWorkload

CAL = Calendar(2027 * 12, 12)


@given(st.floats(1.0, 8.0))
def test_smooth_day_has_the_asked_peak_to_average(ratio: float) -> None:
    f = daily_shape(None, ratio)
    assert f.max() == pytest.approx(1.0)
    assert 1.0 / f.mean() == pytest.approx(ratio, rel=2e-3)
    assert (f >= 0).all()


def test_hourly_factors_scale_to_their_peak() -> None:
    f = daily_shape([1.0] * 12 + [4.0] * 12, None)
    assert f.tolist() == [0.25] * 12 + [1.0] * 12


@given(st.integers(1, 12), st.sampled_from([1, 2, 4, 8]), st.floats(0.0, 1.5), st.floats(1.0, 3.0))
def test_service_keeps_its_own_plan_at_its_first_peak(
    replicas: int, per: int, growth: float, ratio: float
) -> None:
    view = WorkloadView(
        "svc",
        "serving",
        "h100-sxm",
        "hgx-h100",
        8,
        replicas * per,
        replicas=replicas,
        gpus_per_replica=per,
        peak_to_average=ratio,
        growth_per_year=growth,
    )
    w = FleetWorkload(spec="x.yaml")
    need = service_demand(view, w, CAL, CAL.start_month, CAL.start_month + 11)
    assert need[0].max() == replicas * per  # the solo plan at the peak hour of its first month
    assert (need % per == 0).all() and (need >= per).all()  # whole replicas, at least one
    assert (np.diff(need.max(axis=1)) >= 0).all()  # growth never shrinks the peak
    assert need[-1].max() <= per * np.ceil(replicas * (1 + growth) ** (11 / 12) + 1e-9)


def test_batch_job_lives_in_its_window() -> None:
    view = WorkloadView(
        "batch",
        "batch_inference",
        "h100-sxm",
        "hgx-h100",
        8,
        2,
        replicas=1,
        gpus_per_replica=2,
        output_tokens_per_s=5000.0,
        mean_output_tokens=200.0,
    )
    batch = BatchJob(requests=2e6, window="22:00-06:00")
    assert batch.hours() == [22, 23, 0, 1, 2, 3, 4, 5]
    assert batch_gpu_hours(view, batch) == pytest.approx(2e6 * 200 / 5000 * 2 / 3600)
    d = job_demand(
        view,
        FleetWorkload(spec="x.yaml", batch=batch),
        CAL,
        CAL.start_month,
        CAL.start_month + 11,
        True,
        True,
    )
    assert d.allowed[:, 6:22].sum() == 0 and d.allowed[:, [22, 23, 0, 5]].all()
    per_day = batch_gpu_hours(view, batch)
    assert [p[1] for p in d.periods] == pytest.approx(list(per_day * CAL.days))
    # alone, it needs enough replicas to finish in its 8 hours
    assert d.solo_gpus == 2 * int(np.ceil(per_day / 8 / 2))


def test_a_job_that_may_not_wait_runs_from_its_start() -> None:
    view = WorkloadView("train", "pretraining", "h100-sxm", "hgx-h100", 8, 64, run_s=45 * 86400.0)
    d = job_demand(
        view, FleetWorkload(spec="x.yaml"), CAL, CAL.start_month + 2, CAL.start_month + 5, False, False
    )
    assert not d.periods
    assert d.fixed[:2].sum() == 0 and d.fixed[2].max() == pytest.approx(64)
    assert float(d.fixed.sum(axis=1) @ CAL.days) == pytest.approx(64 * 45 * 24)
