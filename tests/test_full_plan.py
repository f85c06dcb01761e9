"""Every bundled example yields a complete plan: every sizing section present, every
number in it with a unit in its name, every catalog figure it used traceable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan

# Single-workload examples; fleets (kind: fleet) have their own tests (test_fleet_*.py).
EXAMPLES = sorted(
    p
    for p in (Path(__file__).parent.parent / "examples").glob("*.yaml")
    if "\nkind: fleet" not in p.read_text()
)
SECTIONS = (
    "run",
    "nodes",
    "fabric",
    "storage",
    "reliability",
    "power",
    "cost",
    "margins",
    "growth",
    "sensitivity",
)
# A unit as a token of the name: step_time_s, usd_per_million_units, kw_per_rack_typical.
UNIT = re.compile(
    r"(^|_)(s|bytes|w|kw|usd|fraction|gbps|mwh|kwh|days|hours|years|rps|tib|units|gpu_hour|gpu_hours)(_|$)"
)
# Plain counts and ratios: no unit to carry.
DIMENSIONLESS = {
    "buildings",
    "nodes_per_building",
    "gpus_per_building",
    "links",
    "wavelengths_per_link",
    "fibre_pairs",
    "max_nodes",
    "drives_per_node",
    "gpus",
    "nodes",
    "racks",
    "replicas",
    "stage",
    "tiers",
    "pods",
    "rails",
    "leaves",
    "spines",
    "cores",
    "switches",
    "nics",
    "transceivers",
    "dac_cables",
    "fiber_cables",
    "node_leaf_links",
    "leaf_spine_links",
    "spine_core_links",
    "leaf_down_ports",
    "leaf_up_ports",
    "switch_radix",
    "gpu_slots",
    "idle_gpu_slots",
    "gpus_billed",
    "gpus_used",
    "gpus_per_job",
    "gpus_per_node",
    "nodes_per_rack",
    "nodes_in_fullest_rack",
    "scaleup_domain_nodes",
    "scaleup_groups",  # TPU slices, Trn2 UltraServers, NVL72 racks the job spans (issue 28)
    "scaleup_group_max_units",
    "rack_units",
    "reserved_rack_units",
    "rack_units_used",
    "switch_rack_units",
    "scalable_units",
    "added_nodes",
    "scalable_unit_nodes",
    "blocks",
    "instances",  # managed file system instances rented (a provider's largest instance caps each)
    "blocks_for_capacity",
    "blocks_for_read",
    "blocks_for_write",
    "checkpoints_retained",
    "model_versions_retained",
    "pool_job_slots",
    "pool_gpus",
    "concurrent_jobs_mean",
    "jobs_per_week",
    "spare_replicas_recommended",
    "pue",
    "oversubscription",
    "slowdown_factor",
    "yearly_need_factor",
    "base",
    "planned",
    "value",
    "throttle_slowdown",
    "failure_rate_per_gpu_hour",
    "runs_per_month",
    "work_units_per_run",
    "work_units_per_month",
    "interruptions_per_day",
    "preemptions_per_run",
    "extra_checkpoints_per_run",
    "term_hours",
    "replica_failures_per_month",
    "cpu_cores_per_gpu",
    "cpu_cores_need_per_gpu",
    "preemptions_per_hour",
    "spare_nodes",
}


def _unitless(obj: Any, parent: str = "") -> list[str]:
    bad: list[str] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if number and not (UNIT.search(key) or key in DIMENSIONLESS or UNIT.search(parent)):
                bad.append(f"{parent}.{key}")
            bad += _unitless(value, key)
    elif isinstance(obj, list):
        for item in obj:
            bad += _unitless(item, parent)
    return bad


@pytest.fixture(scope="module", params=[p.name for p in EXAMPLES])
def sized(request: pytest.FixtureRequest) -> dict[str, Any]:
    result = plan(Path(__file__).parent.parent / "examples" / request.param)
    assert result.sizing is not None, f"{request.param} has no sizing"
    return dict(result.sizing.as_dict())


def test_every_section_is_present(sized: dict[str, Any]) -> None:
    for section in SECTIONS:
        assert sized.get(section) not in (None, {}, []), section
    assert sized["power"]["facility_power_w"] > sized["power"]["it_power_typical_w"] > 0
    # racks are counted where a buyer owns them; a provider-operated platform (Cloud TPU, Trn2)
    # says who runs its racks instead
    assert sized["nodes"].get("racks", 0) >= 1 or sized["nodes"]["facility_operated_by"] == "provider"
    cost = sized["cost"]
    # priced, or each side says why not (h800-sxm has no public price)
    assert cost["cloud"] or cost["onprem"] or (cost["cloud_unavailable"] and cost["onprem_unavailable"])


def test_every_number_has_a_unit_in_its_name(sized: dict[str, Any]) -> None:
    assert _unitless(sized) == []


def test_catalog_figures_are_traceable(sized: dict[str, Any]) -> None:
    for section in ("nodes", "fabric", "storage", "power", "cost"):
        sources = sized[section].get("sources", [])
        if section == "fabric" and not sized["fabric"].get("needed", True):
            continue
        if section == "cost" and not (sized["cost"]["cloud"] or sized["cost"]["onprem"]):
            continue
        assert sources, section
        assert all(s.get("source") and s.get("as_of") for s in sources), section


def test_llama3_70b_plan_adds_up() -> None:
    """Cross-module consistency on the 60-day Llama 3 70B example."""
    p = plan(Path(__file__).parent.parent / "examples" / "llama3-70b-pretrain.yaml")
    s = p.sizing
    assert s is not None
    d = s.as_dict()
    gpus = p.best.gpus
    assert d["nodes"]["nodes"] * d["nodes"]["gpus_per_node"] >= gpus
    # the run, failures included, still meets the bare deadline
    assert d["run"]["run_s"] <= 60 * 86400
    assert d["run"]["gpu_hours"] == pytest.approx(gpus * d["run"]["run_s"] / 3600)
    # goodput at ~2k GPUs with the Llama 3 failure rate is high but below 1
    assert 0.9 < d["reliability"]["goodput_fraction"] < 1.0
    # energy per run = typical facility power x run time
    power = d["power"]
    assert power["energy_per_run_mwh"] == pytest.approx(
        power["facility_power_typical_w"] * d["run"]["run_s"] / 3.6e9, rel=0.02
    )
    od = d["cost"]["cloud"]["on_demand"]
    assert od["usd_per_run"] == pytest.approx(
        od["usd_per_gpu_hour"] * d["cost"]["gpus_billed"] * d["run"]["run_s"] / 3600, rel=0.02
    )
