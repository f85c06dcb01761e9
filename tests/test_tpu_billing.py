"""Issue 28: a TPU plan is billed on the VMs of the slices it runs (catalog/data/tpu_vms.yaml),
each at its chips x the rate per chip-hour (Google lists Cloud TPU per chip-hour): a 1-chip v6e
replica on one ct6e-standard-1t at $2.70/h, not on the 8-chip VM the price list quotes; and
the headline, the alternatives, the cost section, the per-1M-token figure and the BOM read
that one bill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.api import plan
from rightsize.catalog.billing import bill
from rightsize.catalog.prices import cloud_price, prices_in_effect, shipped_prices
from rightsize.catalog.tpu_slices import tpu_vm
from rightsize.catalog.user_prices import merge_user_prices
from rightsize.constants import HOURS_PER_MONTH
from rightsize.report.render import render, result_dict
from rightsize.spec.prices import UserPrices

SMALL = {
    "kind": "inference",
    "name": "v6e-small",
    "model": "llama3-8b",
    "traffic": {"rate": 2, "prompt_tokens": 512, "output_tokens": 256},
    "slo": {"ttft": "2s", "tpot": "50ms"},
    "targets": {"accelerators": ["tpu-v6e"], "objective": "cost"},
}


@pytest.mark.parametrize(
    ("acc", "per_replica", "replicas", "vm", "count"),
    [
        ("tpu-v6e", 1, 1, "ct6e-standard-1t", 1),  # a 1x1 slice: one 1-chip VM, not an 8-chip one
        ("tpu-v6e", 1, 3, "ct6e-standard-1t", 3),  # each serving replica its own slice
        ("tpu-v6e", 4, 3, "ct6e-standard-4t", 3),
        ("tpu-v6e", 8, 1, "ct6e-standard-8t", 1),  # the 2x4 single-host slice
        ("tpu-v6e", 16, 2, "ct6e-standard-4t", 8),  # a 4x4 slice rides four 4-chip VMs
        ("tpu-v6e", 1024, 1, "ct6e-standard-4t", 256),  # 4 x 256 (Multislice), 4-chip VMs
        ("tpu-v6e", 24, 1, "ct6e-standard-4t", 8),  # no 24-chip slice: the 32 granted are billed
        ("tpu-v5e", 1, 2, "ct5lp-hightpu-1t", 2),
        ("tpu-v5e", 4, 1, "ct5lp-hightpu-4t", 1),
        ("tpu-v5e", 8, 1, "ct5lp-hightpu-8t", 1),
        ("tpu-v5e", 64, 1, "ct5lp-hightpu-4t", 16),
        ("tpu-v5p", 4, 1, "ct5p-hightpu-4t", 1),
        ("tpu-v5p", 8, 1, "ct5p-hightpu-4t", 2),
    ],
)
def test_a_tpu_plan_is_billed_on_its_slices_vms_per_chip_hour(
    acc: str, per_replica: int, replicas: int, vm: str, count: int
) -> None:
    b = bill(acc, per_replica, replicas, 8)
    assert b is not None and len(b.instances) == 1
    inst = b.instances[0]
    machine = tpu_vm(acc, inst.gpus)
    assert machine is not None and machine.name == vm and inst.count == count
    assert inst.tpu_vm == vm and inst.price.instance is not None and inst.price.instance.instance == vm
    rate = cloud_price(acc).on_demand  # the price list's rate per chip-hour
    assert rate is not None
    assert b.usd_per_hour() == pytest.approx(count * machine.chips * rate)
    assert b.gpus == count * machine.chips >= per_replica * replicas
    assert b.describe().startswith(f"{count:,} x gcp {vm} (")
    # every column at the same rate per chip-hour, each source saying why
    for field, s in inst.price.sources.items():
        if field.endswith("_per_gpu_hour") and machine.chips != 8 and acc != "tpu-v5p":
            assert "per chip-hour whatever the machine type" in s.source and vm in s.source


def test_a_users_rate_per_chip_hour_is_billed_on_the_slice_vms() -> None:
    # TPU7x has no public price: the user's rate, on the 4-chip VM of its smallest slice (no 1x1)
    user = UserPrices.model_validate({"tpu-v7": {"on_demand_usd_per_gpu_hour": 5.0}})
    with prices_in_effect(merge_user_prices(shipped_prices(), user)):
        b = bill("tpu-v7", 4, 2, 4)
        assert b is not None and b.instances[0].tpu_vm == "tpu7x-standard-4t" and b.instances[0].count == 2
        assert b.usd_per_hour() == pytest.approx(2 * 4 * 5.0)
        assert "your price per chip-hour" in b.describe()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("tpubill") / "v6e-small.yaml"
    path.write_text(yaml.safe_dump(SMALL))
    return plan(path)


def test_one_chip_replica_costs_one_chip_hour_and_every_report_agrees(small: Any) -> None:
    p = result_dict(small)
    b, c = p["best"], p["sizing"]["cost"]
    assert b["gpus"] == 1 and b["replicas"] == 1
    rate = cloud_price("tpu-v6e").on_demand
    assert rate == pytest.approx(2.70)  # Google's v6e list rate per chip-hour
    od = c["cloud"]["on_demand"]
    assert c["gpus_billed"] == 1 and od["usd_per_instance_hour"] == pytest.approx(rate)
    assert c["billed_instances"] == "1 x gcp ct6e-standard-1t (1 chip each) in us-east1"
    assert c["priced_instance"] == "gcp ct6e-standard-1t (1 chip) in us-east1"
    # the headline's cost per hour is the cost section's month over its hours (storage included)
    assert b["cost_usd_per_hour"] == pytest.approx(od["usd_per_month"] / HOURS_PER_MONTH)
    assert b["cost_usd_per_hour"] == pytest.approx(rate + c["storage_usd"] / HOURS_PER_MONTH)
    assert b["cost_usd_per_m_output_tokens"] == pytest.approx(od["usd_per_million_units"])
    # the search ranked the same bill (its estimate: the instances, before storage)
    chosen = [a for a in p["pareto"] if a["gpus"] == 1]
    assert chosen and chosen[0]["cost_usd_per_hour"] == pytest.approx(rate)
    text = render(small, "table")
    assert f"${b['cost_usd_per_hour']:,.2f}/h on demand" in text
    assert "1 x gcp ct6e-standard-1t (1 chip each) in us-east1" in text  # the BOM's cloud instances
    assert "ct6e-standard-8t" not in text.split("Bill of materials")[1].split("cloud on demand")[0]
    assert "sit idle" not in text  # no chip billed beyond the one used


def test_the_cost_ranking_reads_the_tpu_bill(tmp_path: Path) -> None:
    # a weekly LoRA job on v6e: billed per chip, the search no longer takes a whole 8-chip VM
    root = Path(__file__).resolve().parents[1]
    d = yaml.safe_load((root / "examples" / "llama3-8b-lora-weekly.yaml").read_text())
    d["targets"]["accelerators"] = ["tpu-v6e"]
    path = tmp_path / "lora.yaml"
    path.write_text(yaml.safe_dump(d))
    p = result_dict(plan(path))
    chips, c = p["best"]["gpus"], p["sizing"]["cost"]
    assert c["gpus_billed"] == chips < 8
    assert c["billed_instances"].startswith(f"1 x gcp ct6e-standard-{chips}t")
