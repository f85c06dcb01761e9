"""Cost: cloud on-demand / reserved / spot, on-premises TCO, break-even, missing prices."""

from __future__ import annotations

import math
from typing import Any

import pytest

from rightsize.catalog import get_node
from rightsize.catalog.prices import cloud_price, node_capex, onprem_defaults
from rightsize.constants import DAY_S, HOUR_S
from rightsize.errors import BadInput
from rightsize.search.demand import Demand
from rightsize.sizing.cost import (
    HOURS_PER_MONTH,
    HOURS_PER_YEAR,
    breakeven_utilisation,
    daly_wall_factor,
    size_cost,
    spot_slowdown,
)
from rightsize.spec.infrastructure import Cost

H100 = get_node("hgx-h100")
H100_PRICE = cloud_price("h100-sxm")


def _job(**kw: Any) -> Demand:
    base: dict[str, Any] = dict(
        workload="pretraining",
        name="test",
        accelerator="h100-sxm",
        node="hgx-h100",
        gpus=16,
        compute_utilisation=0.4,
        duty_cycle=1.0,
        run_s=10 * DAY_S,
        runs_per_month=None,
        work_unit="token",
        work_units_per_s=1e6,
        work_units_total=1e12,
        dataset_bytes=4e12,
        data_read_bytes_per_s=4e6,
        bytes_per_work_unit=4.0,
        params=7e9,
        weights_bytes=14e9,
        checkpoint_bytes=98e9,
    )
    base.update(kw)
    return Demand(**base)


def _cost(demand: Demand, run_s: float | None, **kw: Any) -> Any:
    args: dict[str, Any] = dict(
        demand=demand,
        node=H100,
        nodes=2,
        run_s=run_s,
        network_capex_usd=0.0,
        storage_capex_usd=0.0,
        storage_cloud_usd_per_month=0.0,
        facility_power_w=26_000.0,
        it_power_w=20_000.0,
        checkpoint_interval_s=3_000.0,
        restart_s=600.0,
        cost=Cost(),
        deployment="both",
        mtbf_s=50_000.0,
    )
    args.update(kw)
    return size_cost(**args)


# --- cloud ----------------------------------------------------------------------------------------


def test_on_demand_run_by_hand() -> None:
    run_s = 240 * HOUR_S
    plan = _cost(_job(), run_s, storage_cloud_usd_per_month=730.0)  # $1 per hour of storage
    od = plan.cloud["on_demand"]
    assert od.usd_per_run == pytest.approx(16 * H100_PRICE.on_demand * 240 + 240.0)
    assert od.usd_per_million_units == pytest.approx(od.usd_per_run / 1e12 * 1e6)
    assert od.usd_per_month == pytest.approx(16 * H100_PRICE.on_demand * 730 + 730.0)  # burn rate
    assert plan.schedule == "one-off"


def test_spot_with_zero_preemptions_is_exactly_the_spot_price() -> None:
    run_s = 240 * HOUR_S
    plan = _cost(_job(), run_s, cost=Cost(spot_preemption_per_hour=0.0))
    spot = plan.cloud["spot"]
    assert spot.details["slowdown_factor"] == 1.0
    assert spot.usd_per_run == 16 * H100_PRICE.spot * 240
    assert spot.details["extra_checkpoints_per_run"] == 0.0


def test_spot_slowdown_by_hand_for_a_first_order_case() -> None:
    # 2 nodes x 0.001/h, M = 50,000 s, tau = 3,000 s, R = 600 s: small rates, so Daly's
    # complete model is close to the first-order Young/Daly factors.
    s = spot_slowdown(0.001, 2, 50_000.0, 600.0, 3_000.0, 240 * HOUR_S)
    lam_f, lam = 1 / 50_000, 1 / 50_000 + 0.002 / 3600
    tau_s = 3_000 * math.sqrt(lam_f / lam)
    delta = 3_000**2 / (2 * 50_000)  # 90 s
    first = ((1 + delta / tau_s) * (1 + lam * (tau_s / 2 + 600))) / (
        (1 + delta / 3_000) * (1 + lam_f * (1_500 + 600))
    )
    assert s.interval_s == pytest.approx(tau_s)
    assert s.preemptions_per_hour == pytest.approx(0.002)
    assert s.lost_s_per_preemption == pytest.approx(tau_s / 2 + 600)
    assert s.factor == pytest.approx(first, rel=5e-3)
    assert s.factor > 1.0
    assert s.extra_checkpoints_per_run is not None and s.extra_checkpoints_per_run > 0


def test_daly_complete_model_limits() -> None:
    assert daly_wall_factor(0.0, 3_000.0, 90.0, 600.0) == pytest.approx(1.03)
    assert daly_wall_factor(1e-12, 3_000.0, 90.0, 600.0) == pytest.approx(1.03, rel=1e-6)


def test_more_spot_nodes_never_speed_a_job_up() -> None:
    factors = [spot_slowdown(0.05, n, 50_000.0, 600.0, 3_000.0, None).factor for n in (1, 4, 16, 64, 256)]
    assert factors == sorted(factors)
    assert factors[-1] > 5  # 12.8 preemptions/h with 10-minute restarts: spot is hopeless


def test_reserved_one_off_states_the_commitment_and_costs_its_share_like_owning() -> None:
    # A one-off run on a 1-year commitment: the whole term and its monthly payment are stated,
    # with what the run uses and what is left idle; the run is charged its share at the same
    # utilisation assumed for owned hardware (not the whole term beside an amortised on-premises figure).
    run_s = 240 * HOUR_S
    plan = _cost(_job(), run_s)
    u = Cost().onprem_utilisation
    r1 = plan.cloud["reserved_1y"]
    committed = 16 * H100_PRICE.reserved_1y * 8760
    used = 16 * H100_PRICE.reserved_1y * 240
    assert r1.details["committed_usd"] == pytest.approx(committed)
    assert r1.details["monthly_payment_usd"] == pytest.approx(16 * H100_PRICE.reserved_1y * HOURS_PER_MONTH)
    assert r1.details["used_hours_usd"] == pytest.approx(used)
    assert r1.details["idle_usd"] == pytest.approx(committed - used)
    assert r1.details["utilisation_assumed_fraction"] == u
    assert r1.usd_per_run == pytest.approx(used / u)
    assert r1.details["commitment_used_fraction"] == pytest.approx(240 / 8760)
    assert f"${committed:,.0f}" in r1.pays
    # on premises on the same basis: the run's GPU-hours at the owned rate / the same utilisation
    assert plan.onprem.usd_per_run == pytest.approx(16 * 240 * plan.onprem.usd_per_gpu_hour_owned / u)
    r3 = plan.cloud["reserved_3y"]
    assert r3.usd_per_run == pytest.approx(16 * H100_PRICE.reserved_3y * 240 / u)
    assert r3.details["committed_usd"] == pytest.approx(16 * H100_PRICE.reserved_3y * 3 * 8760)


def test_reserved_recurring_runs_share_the_months_commitment() -> None:
    run_s = 100 * HOUR_S  # 4 runs a month = 400 busy hours of 730
    plan = _cost(_job(runs_per_month=4.0), run_s)
    r1 = plan.cloud["reserved_1y"]
    month = 16 * H100_PRICE.reserved_1y * HOURS_PER_MONTH
    assert r1.usd_per_month == pytest.approx(month)
    assert r1.usd_per_run == pytest.approx(month / 4)
    assert r1.details["commitment_used_fraction"] == pytest.approx(400 / 730)
    od = plan.cloud["on_demand"]
    assert od.usd_per_month == pytest.approx(16 * H100_PRICE.on_demand * 400)
    assert plan.work_units_per_month == pytest.approx(4e12)
    # busy 55% of the month: the 1-year commitment (0.6 x on-demand) loses to on-demand
    assert r1.details["beats_on_demand_above_fraction"] == pytest.approx(0.6, rel=1e-3)
    assert r1.usd_per_month > od.usd_per_month


def test_continuous_service_month_and_per_million() -> None:
    service = _job(
        workload="serving",
        run_s=None,
        work_units_total=None,
        work_units_per_s=20_000.0,
        duty_cycle=0.5,
        checkpoint_bytes=0.0,
        replicas=4,
        gpus_per_replica=4,
    )
    plan = _cost(service, None, storage_cloud_usd_per_month=100.0, checkpoint_interval_s=None)
    od = plan.cloud["on_demand"]
    assert plan.schedule == "continuous"
    assert od.usd_per_run is None
    assert od.usd_per_month == pytest.approx(16 * H100_PRICE.on_demand * 730 + 100.0)
    # a service's work_units_per_s is its average rate: the duty cycle is not applied again
    units = 20_000.0 * 730 * 3600
    assert plan.work_units_per_month == pytest.approx(units)
    assert od.usd_per_million_units == pytest.approx(od.usd_per_month / units * 1e6)
    # a service on spot loses R per preemption of one replica's single node
    p = H100_PRICE.spot_preemptions_per_hour
    assert plan.cloud["spot"].details["slowdown_factor"] == pytest.approx(1 + p / 3600 * 600)


# --- on premises and break-even ---------------------------------------------------------------------


def test_onprem_tco_and_breakeven_by_hand() -> None:
    plan = _cost(
        _job(),
        240 * HOUR_S,
        network_capex_usd=20_000.0,
        storage_capex_usd=10_000.0,
        cost=Cost(amortisation_years=4, electricity_usd_per_kwh=0.10, onprem_utilisation=0.5),
    )
    d = onprem_defaults()
    capex = 2 * node_capex("hgx-h100").capex_usd + 30_000.0
    annual = (
        capex / 4
        + 26.0 * 8760 * 0.10  # facility kW x hours x $/kWh
        + 20.0 * d.facility_usd_per_kw_per_month * 12  # IT kW x $/kW-month x 12
        + d.operations_fraction_of_capex_per_year * capex
    )
    owned = annual / (16 * HOURS_PER_YEAR)
    op = plan.onprem
    assert op.capex_usd == pytest.approx(capex)
    assert op.usd_per_year == pytest.approx(annual)
    assert op.usd_per_gpu_hour_owned == pytest.approx(owned)
    assert op.usd_per_useful_gpu_hour == pytest.approx(2 * owned)
    assert op.usd_per_run == pytest.approx(16 * 240 * 2 * owned)
    assert op.usd_per_month == pytest.approx(annual / 12)
    assert plan.breakeven_utilisation["on_demand"] == pytest.approx(owned / H100_PRICE.on_demand)
    assert plan.breakeven_utilisation["reserved_3y"] == pytest.approx(owned / H100_PRICE.reserved_3y)
    # At the break-even utilisation, owning's useful GPU-hour costs exactly the cloud price.
    u = plan.breakeven_utilisation["on_demand"]
    assert owned / u == pytest.approx(H100_PRICE.on_demand)
    assert breakeven_utilisation(2.0, 4.0) == 0.5


def test_breakeven_counts_cloud_storage_and_spot_slowdown() -> None:
    plan = _cost(_job(), 240 * HOUR_S, storage_cloud_usd_per_month=16 * 730.0)  # $1 per GPU-hour
    owned = plan.onprem.usd_per_gpu_hour_owned
    assert plan.breakeven_utilisation["on_demand"] == pytest.approx(owned / (H100_PRICE.on_demand + 1.0))
    spot = plan.cloud["spot"]
    rate = H100_PRICE.spot * spot.details["slowdown_factor"] + 1.0
    assert plan.breakeven_utilisation["spot"] == pytest.approx(owned / rate)


def test_missing_power_falls_back_to_node_power_and_pue() -> None:
    plan = _cost(_job(), 240 * HOUR_S, facility_power_w=0.0, it_power_w=0.0)
    assert plan.onprem.it_power_w == 2 * H100.max_power_w
    assert plan.onprem.facility_power_w == pytest.approx(2 * H100.max_power_w * onprem_defaults().pue)


# --- deployments and missing prices ----------------------------------------------------------------

H800 = get_node("hgx-h800")


def test_unpriced_accelerator_with_cloud_asked_is_bad_input() -> None:
    with pytest.raises(BadInput) as exc:
        _cost(_job(accelerator="h800-sxm", node="hgx-h800"), 240 * HOUR_S, node=H800, deployment="cloud")
    msg = exc.value.message()
    assert "h800-sxm" in msg and "prices.yaml" in msg and "To fix:" in msg


def test_unpriced_node_with_onprem_asked_is_bad_input() -> None:
    with pytest.raises(BadInput) as exc:
        _cost(_job(accelerator="h800-sxm", node="hgx-h800"), 240 * HOUR_S, node=H800, deployment="onprem")
    assert "hgx-h800" in exc.value.message() and "prices.yaml" in exc.value.message()


def test_unpriced_hardware_with_both_reports_why() -> None:
    plan = _cost(_job(accelerator="h800-sxm", node="hgx-h800"), 240 * HOUR_S, node=H800)
    assert plan.cloud is None and plan.onprem is None and plan.breakeven_utilisation is None
    assert "h800-sxm" in plan.cloud_unavailable and "prices.yaml" in plan.cloud_unavailable
    assert "hgx-h800" in plan.onprem_unavailable
    d = plan.as_dict()
    assert d["cloud"] is None and d["breakeven_utilisation_fraction"] is None


def test_one_sided_deployments() -> None:
    cloud_only = _cost(_job(), 240 * HOUR_S, deployment="cloud")
    assert (
        cloud_only.onprem is None
        and cloud_only.cloud is not None
        and cloud_only.breakeven_utilisation is None
    )
    onprem_only = _cost(_job(), 240 * HOUR_S, deployment="onprem")
    assert onprem_only.cloud is None and onprem_only.onprem is not None
    with pytest.raises(BadInput):
        _cost(_job(), 240 * HOUR_S, deployment="colo")


def test_whole_nodes_are_billed() -> None:
    plan = _cost(_job(gpus=12), 240 * HOUR_S)
    assert plan.gpus_billed == 16 and plan.gpus_used == 12
    assert plan.cloud["on_demand"].usd_per_run == pytest.approx(16 * H100_PRICE.on_demand * 240)


def test_as_dict_is_unit_named_and_sourced() -> None:
    d = _cost(_job(), 240 * HOUR_S).as_dict()
    for option in d["cloud"].values():
        assert {"usd_per_gpu_hour", "usd_per_run", "usd_per_month", "usd_per_million_units"} <= set(option)
    assert set(d["breakeven_utilisation_fraction"]) == {"on_demand", "reserved_1y", "reserved_3y", "spot"}
    figures = {s["figure"] for s in d["sources"]}
    assert "prices.cloud.h100-sxm.on_demand_usd_per_gpu_hour" in figures
    assert "prices.onprem.hgx-h100.capex_usd" in figures
    assert all(s["source"] and s["as_of"] for s in d["sources"])
