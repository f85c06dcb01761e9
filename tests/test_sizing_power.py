"""Power, cooling, racks and energy: hand-derived figures and errors a person can act on."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rightsize.catalog import get_node
from rightsize.catalog.facility import facility_defaults, parse_facility
from rightsize.catalog.loader import CatalogDataError, iter_numbers, read_data_file
from rightsize.constants import DAY_S, YEAR_S, GiB
from rightsize.errors import BadInput, Infeasible
from rightsize.search.demand import Demand
from rightsize.sizing.nodes_racks import choose_cooling, size_nodes_racks
from rightsize.sizing.power import size_power
from rightsize.spec.infrastructure import Facility

H100 = get_node("hgx-h100")  # 8x 700 W H100, 10.2 kW max, 8U
GB200 = get_node("gb200-nvl72-tray")  # 4 GPUs, 5.4 kW, 1U; NVLink domain of 72 GPUs = 18 trays


def demand(gpus: int, **overrides: Any) -> Demand:
    fields: dict[str, Any] = dict(
        workload="pretraining",
        name="test",
        accelerator="h100-sxm",
        node="hgx-h100",
        gpus=gpus,
        compute_utilisation=0.4,
        duty_cycle=1.0,
        run_s=30 * DAY_S,
        runs_per_month=None,
        work_unit="token",
        work_units_per_s=1e6,
        work_units_total=None,
        dataset_bytes=0.0,
        data_read_bytes_per_s=0.0,
        bytes_per_work_unit=4.0,
        params=7e10,
        weights_bytes=1.4e11,
        checkpoint_bytes=1e12,
    )
    fields.update(overrides)
    return Demand(**fields)


def test_figures_behind_the_hand_derivations() -> None:
    # The hand-derived numbers below rest on these shipped figures; if one changes, re-derive.
    fd = facility_defaults()
    assert (fd.gpu_idle_fraction_of_tdp, fd.gpu_utilisation_at_tdp, fd.host_typical_fraction_of_max) == (
        0.10,
        0.45,
        0.6,
    )
    assert (fd.rack_overhead_w, fd.rack_reserved_units) == (400, 4)
    assert H100.max_power_w == 10200 and H100.gpus_per_node == 8


def test_dgx_h100_maximum_flows_into_it_power() -> None:
    # 128 nodes x 10.2 kW = 1,305.6 kW; 64 racks x 0.4 kW of management switches = 25.6 kW;
    # fabric 68.6 kW and storage 20 kW as given: 1,419.8 kW at nameplate.
    plan = size_power(demand(1024), H100, 128, 64, 68_600.0, 20_000.0, Facility(pue=1.2), None)
    assert plan.accelerators_max_w + plan.host_max_w == pytest.approx(128 * 10_200)
    assert plan.it_power_max_w == pytest.approx(1_305_600 + 25_600 + 68_600 + 20_000)
    assert plan.facility_power_w == pytest.approx(1.2 * plan.it_power_max_w)
    # typical: f = 0.4 / 0.45 = 0.889; GPU = 70 + 630 x 0.889 = 630 W; host = (10,200 - 5,600) x 0.6 = 2,760 W
    assert plan.gpu_typical_w == pytest.approx(630.0)
    assert plan.host_typical_w == pytest.approx(128 * 2_760)
    assert plan.it_power_typical_w == pytest.approx(128 * (8 * 630 + 2_760) + 25_600 + 68_600 + 20_000)
    # fullest rack holds 2 nodes: 2 x 10.2 + 0.4 = 20.8 kW at nameplate -> air
    assert (plan.kw_per_rack, plan.cooling, plan.throttle_slowdown) == (pytest.approx(20.8), "air", 0.0)
    items = {s["item"] for s in plan.as_dict()["sources"]}
    assert {"h100-sxm.tdp_w", "hgx-h100.max_power_w", "gpu.idle_fraction_of_tdp", "pue"} <= items


def test_idle_service_draws_idle_power() -> None:
    idle = size_power(demand(8, duty_cycle=0.0), H100, 1, 1, 0.0, 0.0, Facility(pue=1.0), None)
    assert idle.gpu_typical_w == pytest.approx(70.0)


@pytest.mark.parametrize(
    ("kw", "cooling"),
    [(20.8, "air"), (40.0, "air"), (60.0, "rear_door"), (120.0, "direct_liquid"), (180.0, "immersion")],
)
def test_auto_cooling_picks_the_least_that_handles_the_rack(kw: float, cooling: str) -> None:
    assert choose_cooling(kw, Facility()).id == cooling


def test_no_cooling_handles_a_300_kw_rack() -> None:
    with pytest.raises(BadInput, match="rack_power_kw"):
        choose_cooling(300.0, Facility())


def test_racks_pack_by_power_and_units() -> None:
    # auto, no budget: air's 30 kW default holds floor((30,000 - 400) / 10,200) = 2 DGX H100 -> 64 racks
    nr = size_nodes_racks(demand(1024), H100, Facility())
    assert (nr.nodes, nr.nodes_per_rack, nr.racks, nr.cooling, nr.limited_by) == (
        128,
        2,
        64,
        "air",
        "rack_power",
    )
    # a 120 kW budget: power allows 11, but (42 - 4) // 8 = 4 nodes fit the units -> 41.2 kW -> rear door
    nr = size_nodes_racks(demand(1024), H100, Facility(rack_power_kw=120))
    assert (nr.nodes_per_rack, nr.racks, nr.limited_by, nr.cooling) == (4, 32, "rack_units", "rear_door")
    assert nr.kw_per_rack == pytest.approx(41.2)


def test_nvl72_trays_share_a_liquid_cooled_rack() -> None:
    # 72 GPUs in one NVLink domain = 18 trays x 5.4 kW + 0.4 = 97.6 kW: too much for air (30)
    # and rear-door (50) defaults, fits the direct-liquid default (120).
    d = demand(1152, accelerator="gb200", node="gb200-nvl72-tray")
    nr = size_nodes_racks(d, GB200, Facility())
    assert (nr.nodes, nr.nodes_per_rack, nr.racks, nr.cooling) == (288, 18, 16, "direct_liquid")
    assert nr.kw_per_rack == pytest.approx(97.6)
    with pytest.raises(BadInput, match="NVLink domain"):
        size_nodes_racks(d, GB200, Facility(rack_power_kw=60))


def test_rack_below_one_node_is_bad_input_naming_the_field() -> None:
    with pytest.raises(BadInput) as err:
        size_nodes_racks(demand(16), H100, Facility(rack_power_kw=8))
    message = str(err.value)
    assert "infrastructure.facility.rack_power_kw" in message and "10.2 kW" in message and "10.6" in message
    assert err.value.exit_code == 2
    with pytest.raises(BadInput, match="infrastructure.facility.rack_units"):
        size_nodes_racks(demand(16), H100, Facility(rack_units=10))


def test_short_host_memory_and_cores_warn() -> None:
    nr = size_nodes_racks(
        demand(8, host_memory_bytes_per_gpu=512 * GiB, cpu_cores_per_gpu=20), H100, Facility()
    )
    assert nr.host_memory_bytes_per_gpu == pytest.approx(256 * GiB)  # 2 TiB / 8
    assert any("Host memory is short" in w for w in nr.warnings)
    assert any("CPU cores are short" in w for w in nr.warnings)  # 112 / 8 = 14 per GPU


def test_power_cap_exceeded_is_infeasible_with_the_smallest_change() -> None:
    # 128 nodes need 128 x 10.2 kW + 64 x 0.4 kW = 1,331.2 kW at PUE 1.0; the cap is 1 MW.
    with pytest.raises(Infeasible) as err:
        size_power(demand(1024), H100, 128, 64, 0.0, 0.0, Facility(pue=1.0, power_cap_w=1e6), None)
    message = str(err.value)
    assert err.value.exit_code == 1
    # per node 10.2 + 0.4 / 2 = 10.4 kW -> floor(1,000 / 10.4) = 96 nodes = 768 GPUs fit
    assert "power_cap_w" in message and "1.34 MW" in message and "768 GPUs (96 nodes)" in message


def test_marginal_cooling_throttles_and_far_over_is_bad_input() -> None:
    # 52U rack, 62 kW budget, air: 6 nodes (by power and by 48 usable U) = 61.6 kW nameplate,
    # 6 x (8 x 630 + 2,760) + 400 = 47.2 kW sustained: above air's 40 kW, within 25% -> throttled.
    facility = Facility(rack_units=52, rack_power_kw=62, cooling="air")
    nr = size_nodes_racks(demand(96), H100, facility)
    assert nr.nodes_per_rack == 6 and nr.cooling == "air"
    plan = size_power(demand(96), H100, nr.nodes, nr.racks, 0.0, 0.0, facility, None, cooling=nr.cooling)
    assert plan.kw_per_rack_typical == pytest.approx(47.2)
    assert plan.cooling_status == "throttled"
    assert plan.throttle_slowdown == pytest.approx(facility_defaults().throttle_slowdown_fraction)
    # 9 nodes a rack: 70.6 kW sustained on 40 kW air is not a derate
    far = Facility(rack_units=90, rack_power_kw=100, cooling="air")
    nr = size_nodes_racks(demand(72), H100, far)
    with pytest.raises(BadInput, match="infrastructure.facility.cooling"):
        size_power(demand(72), H100, nr.nodes, nr.racks, 0.0, 0.0, far, None, cooling=nr.cooling)


def test_energy_per_run_month_and_work_unit() -> None:
    # One node, one rack, PUE 1: 8 x 630 + 2,760 + 400 = 8,200 W for 30 days = 5.904 MWh.
    plan = size_power(demand(8), H100, 1, 1, 0.0, 0.0, Facility(pue=1.0), 30 * DAY_S)
    assert plan.energy_per_run_mwh == pytest.approx(8_200 * 30 * DAY_S / 3.6e9)
    assert plan.energy_per_run_mwh == pytest.approx(5.904)
    # 1e6 tokens/s: 8,200 J per 1e6 tokens = 0.002278 kWh
    assert plan.energy_per_million_units_kwh == pytest.approx(8_200 / 3.6e6)
    # a service at half load all month
    svc = demand(8, workload="serving", run_s=None, duty_cycle=0.5, work_unit="output_token")
    plan = size_power(svc, H100, 1, 1, 0.0, 0.0, Facility(pue=1.0), None)
    assert plan.energy_per_run_mwh is None
    assert plan.energy_per_month_mwh == pytest.approx(plan.facility_power_typical_w * YEAR_S / 12 / 3.6e9)
    assert plan.energy_per_million_units_kwh == pytest.approx(
        plan.facility_power_typical_w / 1e6 * 1e6 / 3.6e6  # the average rate served: no second duty cycle
    )


def test_every_facility_figure_is_sourced() -> None:
    raw = read_data_file("facility.yaml")
    assert all(holder is not None for _, _, holder in iter_numbers(raw))
    assert all(s.source and s.as_of for s in facility_defaults().sources.values())


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["cooling"].reverse(), "least to the most capable"),
        (lambda d: d["cooling"][0]["default_rack_kw"].update(value=90), "default_rack_kw"),
        (
            lambda d: d["gpu"]["idle_fraction_of_tdp"].update(value=10),
            "idle_fraction_of_tdp",
        ),  # % for fraction
        (lambda d: d["cooling"].pop(), "missing cooling types"),
    ],
)
def test_bad_facility_data_fails_loudly(mutate: Any, expected: str) -> None:
    raw = copy.deepcopy(read_data_file("facility.yaml"))
    mutate(raw)
    with pytest.raises(CatalogDataError, match=expected):
        parse_facility(raw, "facility.yaml")
