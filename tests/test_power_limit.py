"""Board power limits: the sourced cap-to-rate law, its bounds, the spec field and the power plan."""

from __future__ import annotations

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.power_limit import power_limit_figures
from rightsize.errors import BadInput
from rightsize.perf.hardware import Hardware, power_capped
from rightsize.spec.infrastructure import Facility
from rightsize.validate.cases import Case, training_spec_data


def _hw(acc_id: str = "a100-sxm-80gb") -> Hardware:
    acc = get_accelerator(acc_id)
    return Hardware.from_catalog(acc, node_for(acc.id), "bf16")


def test_no_limit_or_tdp_is_unchanged() -> None:
    hw = _hw()
    assert power_capped(hw, None) is hw
    assert power_capped(hw, hw.tdp_w) is hw


def test_cap_slows_compute_more_than_memory() -> None:
    hw = _hw()
    capped = power_capped(hw, 350.0)
    compute = capped.gemm_fraction / hw.gemm_fraction
    memory = capped.hbm_bytes_per_s / hw.hbm_bytes_per_s
    assert capped.peak_flops_per_s == hw.peak_flops_per_s  # MFU stays against the datasheet peak
    f = power_limit_figures()
    assert compute == pytest.approx((350 / 400) ** f.compute_exponent)
    assert memory == pytest.approx((350 / 400) ** f.memory_exponent)
    assert compute < memory < 1.0
    assert capped.tdp_w == 350.0
    assert capped.attention_fraction / hw.attention_fraction == pytest.approx(compute)
    assert capped.sixteen_bit().gemm_fraction / hw.sixteen_bit().gemm_fraction == pytest.approx(compute)


def test_exponents_hold_the_h100_pcie_sxm_measurement() -> None:
    # the H100 PCIe board (350 W, 114 SMs) against the SXM (700 W, 132 SMs), per SM: the law
    # must return the measured sustained-clock ratio 0.728 within rounding
    f = power_limit_figures()
    assert ((350 / 114) / (700 / 132)) ** f.compute_exponent == pytest.approx(0.728, abs=0.01)


@pytest.mark.parametrize(
    ("acc_id", "limit", "words"),
    [("a100-sxm-80gb", 450.0, "above"), ("h100-sxm", 150.0, "below"), ("l40s", 300.0, "no sourced minimum")],
)
def test_bad_limits_are_refused(acc_id: str, limit: float, words: str) -> None:
    with pytest.raises(BadInput, match=words):
        power_capped(_hw(acc_id), limit)


def test_spec_field_parses_watts() -> None:
    assert Facility.model_validate({"gpu_power_limit": "500 W"}).gpu_power_limit_w == 500.0


def test_validation_column_reaches_the_spec() -> None:
    shape = {
        "layers": "2",
        "hidden": "64",
        "heads": "4",
        "kv_heads": "4",
        "ffn_hidden": "128",
        "vocab": "100",
    }
    row = {
        **shape,
        "id": "x",
        "mlp": "swiglu",
        "accelerator": "a100-sxm-80gb",
        "seq_len": "4096",
        "gpu_power_limit_w": "350",
    }
    data = training_spec_data(Case("x", "gpu_hours", 1.0, row, ""))
    assert data["infrastructure"]["facility"]["gpu_power_limit_w"] == 350.0
    del row["gpu_power_limit_w"]
    assert "infrastructure" not in training_spec_data(Case("x", "gpu_hours", 1.0, row, ""))


def test_power_plan_draws_at_most_the_limit() -> None:
    from rightsize.catalog import get_node
    from rightsize.constants import DAY_S
    from rightsize.search.demand import Demand
    from rightsize.sizing.power import size_power

    node = get_node("hgx-h100")  # 8 x 700 W, 10.2 kW
    d = Demand(
        workload="pretraining", name="t", accelerator="h100-sxm", node="hgx-h100", gpus=64,
        compute_utilisation=0.3, duty_cycle=1.0, run_s=DAY_S, runs_per_month=None, work_unit="token",
        work_units_per_s=1e6, work_units_total=None, dataset_bytes=0.0, data_read_bytes_per_s=0.0,
        bytes_per_work_unit=4.0, params=7e9, weights_bytes=1.4e10, checkpoint_bytes=1e11,
    )  # fmt: skip
    full = size_power(d, node, 8, 4, 0.0, 0.0, Facility(pue=1.0), None)
    capped = size_power(d, node, 8, 4, 0.0, 0.0, Facility(pue=1.0, gpu_power_limit_w=500), None)
    assert capped.gpu_tdp_w == 500.0 and capped.gpu_idle_w == full.gpu_idle_w
    assert capped.host_max_w == full.host_max_w  # the host keeps its share of the node
    assert capped.accelerators_max_w == pytest.approx(64 * 500.0)
    # MFU 0.3 against the datasheet peak: the capped GPU is at its limit sooner (0.45 x 0.82)
    factor = (500 / 700) ** power_limit_figures().compute_exponent
    assert capped.gpu_activity_fraction == pytest.approx(min(1.0, 0.3 / (0.45 * factor)))
    assert capped.gpu_typical_w < full.gpu_typical_w
    assert "infrastructure.facility.gpu_power_limit_w" in {s["item"] for s in capped.as_dict()["sources"]}


def test_serving_replica_decode_slows_less_than_prefill() -> None:
    from rightsize.perf.inference import Replica
    from rightsize.spec import get_preset

    acc = get_accelerator("h100-sxm")
    arch = get_preset("llama-3-8b")
    full = Replica.build(arch, acc, node_for(acc.id), 1, "bf16", "bf16")
    capped = Replica.build(arch, acc, node_for(acc.id), 1, "bf16", "bf16", power_limit_w=400.0)
    decode = float(capped.decode_step_s(1.0, 1024.0)) / float(full.decode_step_s(1.0, 1024.0))
    prefill = float(capped.prefill_s(8192.0)) / float(full.prefill_s(8192.0))
    assert 1.0 < decode < prefill  # memory-bound decode keeps most of its speed
    assert capped.hw.tdp_w == 400.0


def test_limit_per_accelerator() -> None:
    f = Facility.model_validate({"gpu_power_limit": {"h100-sxm": "500 W", "a100-sxm-80gb": 350}})
    assert (f.gpu_power_limit_for("h100-sxm"), f.gpu_power_limit_for("a100-sxm-80gb")) == (500.0, 350.0)
    assert f.gpu_power_limit_for("b200") is None
    assert Facility(gpu_power_limit_w=400).gpu_power_limit_for("b200") == 400.0


def test_published_caps_are_carried_by_their_rows() -> None:
    from rightsize.validate.cases import bundled_paths, more_paths, read_cases

    files = [p for p in bundled_paths() if p.name == "whole_runs.csv"] + more_paths()
    cases = {c.id: c for p in files for c in read_cases(p)}
    # Llama 2 paper sec. 2.2.1 / Table 2: 34B on the production cluster at 350 W
    assert cases["llama-2-34b-gpu-hours"].row["gpu_power_limit_w"] == "350"
    h100_500 = [
        c for i, c in cases.items() if i.startswith("tt2506-") and c.row["accelerator"] == "h100-meta-96gb"
    ]
    assert h100_500 and all(c.row["gpu_power_limit_w"] == "500" for c in h100_500)
    spec = training_spec_data(cases["llama-2-34b-gpu-hours"])
    assert spec["infrastructure"]["facility"]["gpu_power_limit_w"] == 350.0
