"""The facility power cap limits the cluster the training search may choose."""

from __future__ import annotations

import math

import pytest

from rightsize.api import plan
from rightsize.catalog import get_node
from rightsize.errors import BadInput, Infeasible
from rightsize.perf.power import FACILITY_OVERHEAD_FRACTION
from rightsize.perf.power import facility_power_estimate_w as facility_power_w
from rightsize.spec import parse_spec


def _spec(cap: str | None, deadline: str = "120d") -> dict[str, object]:
    infra = {"facility": {"power_cap": cap, "pue": 1.2}} if cap else {}
    return {
        "model": "llama2-7b",
        "training": {"seq_len": 4096, "global_batch_tokens": "4Mi", "train_tokens": "200B"},
        "targets": {"deadline": deadline, "accelerators": ["h100-sxm"], "objective": "time"},
        "infrastructure": infra,
    }


def test_facility_power_of_a_dgx_h100_cluster_by_hand() -> None:
    node = get_node("hgx-h100")
    assert node.max_power_w == pytest.approx(10_200)  # DGX H100 datasheet maximum
    # 64 GPUs = 8 nodes x 10.2 kW x 1.05 (fabric, storage) x PUE 1.3
    assert facility_power_w(64, node, 1.3) == pytest.approx(
        8 * 10_200 * (1 + FACILITY_OVERHEAD_FRACTION) * 1.3
    )


def test_the_cap_bounds_the_chosen_cluster() -> None:
    free = plan(parse_spec(_spec(None)))
    capped = plan(parse_spec(_spec("500kW")))
    node = get_node("hgx-h100")
    assert facility_power_w(capped.best.gpus, node, 1.2) <= 500_000
    assert capped.best.gpus < free.best.gpus
    assert capped.best.time_to_train_s > free.best.time_to_train_s


def test_a_cap_below_one_node_is_infeasible_with_the_cap_needed() -> None:
    with pytest.raises(Infeasible) as err:
        plan(parse_spec(_spec("5kW")))
    need_kw = math.ceil(facility_power_w(8, get_node("hgx-h100"), 1.2) / 1e3)
    assert f"at least {need_kw} kW" in err.value.message()
    assert err.value.exit_code == 1


def test_negative_growth_rate_names_the_field() -> None:
    spec = _spec(None)
    spec["infrastructure"] = {"growth": {"model_growth_per_year": -0.5}}
    with pytest.raises(BadInput) as err:
        parse_spec(spec)
    assert "model_growth_per_year" in err.value.message()
    assert err.value.exit_code == 2
