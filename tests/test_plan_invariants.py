"""Issue 13: invariants every plan keeps, over every bundled example and specs it has not seen.

- every cost is finite, positive and below $1e12 (a thing not bought has no cost figure);
- cloud costs are GPU-hours billed x the price (plus the cloud storage held), and the
  headline is the bill of materials' figure (one value per quantity);
- spot is never above 3x on-demand unless marked not applicable, with the reason;
- a cost objective never picks an accelerator without a price;
- a one-GPU job's storage capital cost is below its GPUs' capital cost.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.catalog.prices import cloud_price, node_capex
from rightsize.constants import HOUR_S, HOURS_PER_MONTH
from rightsize.report.render import render

ROOT = Path(__file__).resolve().parent.parent
# Single-workload examples; a fleet's own invariants (every month covered, pooled <= dedicated)
# are held by tests/test_fleet_*.py.
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.yaml") if "\nkind: fleet" not in p.read_text())

# Specs no example covers: a one-GPU LoRA job priced both ways, a 405B run that spot cannot
# serve, a cost-ranked service offered an unpriced accelerator.
UNSEEN: dict[str, dict[str, Any]] = {
    "one-gpu-lora": {
        "model": "llama3-8b",
        "training": {
            "seq_len": 2048,
            "global_batch": 8,
            "train_tokens": "20M",
            "method": "lora",
            "lora": {"rank": 8, "alpha": 16, "targets": "attention"},
        },
        "targets": {"accelerators": ["h100-sxm"], "gpus": 1},
        "infrastructure": {"facility": {"deployment": "both"}},
    },
    "big-run-on-spot": {
        "model": "llama3.1-405b",
        "training": {"seq_len": 8192, "global_batch_tokens": "16Mi", "train_tokens": "15T"},
        "targets": {"accelerators": ["gb200"], "gpus": 16384},
    },
    "cost-ranked-service": {
        "kind": "inference",
        "model": "llama3-8b",
        "traffic": {"rate": 20, "prompt_tokens": 1024, "output_tokens": 256},
        "slo": {"ttft": "1s", "tpot": "80ms"},
        "targets": {"accelerators": ["h800-sxm", "l40s", "h100-sxm"], "objective": "cost"},
    },
}
SPECS: dict[str, Any] = {p.stem: p for p in EXAMPLES} | UNSEEN


@pytest.fixture(scope="module", params=list(SPECS))
def planned(request: pytest.FixtureRequest) -> tuple[Any, dict[str, Any]]:
    result = plan(SPECS[request.param])
    return result, json.loads(render(result, "json"))


def _costs(obj: Any, path: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(obj, dict):
        parent_is_usd = "usd" in path.rsplit(".", 1)[-1]
        for k, v in obj.items():
            p = f"{path}.{k}"
            number = isinstance(v, int | float) and not isinstance(v, bool)
            if number and ("usd" in k or parent_is_usd):  # a *_usd key, or a part under a *_usd mapping
                yield p, float(v)
            yield from _costs(v, p)
    elif isinstance(obj, list):
        for item in obj:
            yield from _costs(item, path + "[]")


def _cloud(d: dict[str, Any]) -> dict[str, Any]:
    return (d.get("sizing") or {}).get("cost", {}).get("cloud") or {}


def test_every_cost_is_finite_positive_and_below_a_trillion(planned: tuple[Any, dict[str, Any]]) -> None:
    _, d = planned
    costs = list(_costs(d))
    assert costs
    bad = [(p, v) for p, v in costs if not (math.isfinite(v) and 0.0 < v < 1e12)]
    assert not bad, bad[:5]


def test_cloud_cost_is_gpu_hours_billed_times_the_price(planned: tuple[Any, dict[str, Any]]) -> None:
    _, d = planned
    sizing = d["sizing"]
    cost, od = sizing["cost"], _cloud(d).get("on_demand")
    if od is None:
        pytest.skip("no cloud on-demand price in this deployment")
    rate = od["usd_per_gpu_hour"]
    storage_month = sizing["storage"]["cloud_usd_per_month"]
    billed = cost["gpus_billed"]
    whole_nodes = sizing["nodes"]["nodes"] * sizing["nodes"]["gpus_per_node"]
    # Billed on the cheapest whole instances that hold each replica (catalog.billing): whole
    # nodes, or fewer GPUs on smaller instance shapes (issue 28).
    assert billed == whole_nodes if cost["billed_on_whole_nodes"] else billed < whole_nodes
    assert cost["gpus_used"] <= billed
    if cost["run_s"] is None:  # a service: the month
        expected = billed * rate * HOURS_PER_MONTH + storage_month
        assert od["usd_per_month"] == pytest.approx(expected, rel=1e-9)
    else:
        run_h = cost["run_s"] / HOUR_S
        expected = (billed * rate + storage_month / HOURS_PER_MONTH) * run_h
        assert od["usd_per_run"] == pytest.approx(expected, rel=1e-9)
        assert sizing["run"]["gpu_hours"] == pytest.approx(cost["gpus_used"] * run_h, rel=1e-9)


def test_headline_is_the_bill_of_materials_figure(planned: tuple[Any, dict[str, Any]]) -> None:
    result, d = planned
    od = _cloud(d).get("on_demand")
    best = result.best
    if od is None:
        pytest.skip("no cloud on-demand price in this deployment")
    if d["sizing"]["cost"]["run_s"] is not None:
        headline = getattr(best, "cost_usd", None)
        assert headline == pytest.approx(od["usd_per_run"], rel=1e-9)
        assert best.time_to_train_s == pytest.approx(d["sizing"]["run"]["run_s"], rel=1e-9)
    else:
        headline = getattr(best, "cost_usd_per_hour", None) or getattr(best, "cost_usd", None)
        assert headline == pytest.approx(od["usd_per_month"] / HOURS_PER_MONTH, rel=1e-9)
    unc = (d.get("uncertainty") or {}).get("metrics") or {}
    for key in ("cost_usd", "cost_usd_per_hour"):
        if isinstance(unc.get(key), dict) and unc[key].get("base") is not None:
            assert unc[key]["base"] == pytest.approx(headline, rel=1e-9)


def test_spot_is_cheap_or_not_applicable_with_a_reason(planned: tuple[Any, dict[str, Any]]) -> None:
    _, d = planned
    cloud = _cloud(d)
    spot, od = cloud.get("spot"), cloud.get("on_demand")
    if spot is None or od is None:
        pytest.skip("no spot price")
    if spot["applicable"]:
        for key in ("usd_per_run", "usd_per_month"):
            if spot[key] is not None and od[key] is not None:
                assert spot[key] <= 3 * od[key]
                assert spot[key] <= od[key]  # applicable only while cheaper than on-demand
    else:
        reason = spot["not_applicable_reason"]
        assert any(why in reason for why in ("preemptions an hour", "no spot is sold", "synchronous job on"))
        assert spot["usd_per_run"] is None and spot["usd_per_month"] is None


def test_cost_objective_never_picks_an_unpriced_accelerator(planned: tuple[Any, dict[str, Any]]) -> None:
    result, d = planned
    if result.objective != "cost":
        pytest.skip("not a cost objective")
    assert cloud_price(result.best.accelerator).on_demand is not None
    for r in d.get("rejected") or []:
        if r["accelerator"] == "h800-sxm":
            assert "no price for h800-sxm in this deployment" in r["reason"]


def test_a_one_gpu_jobs_storage_costs_less_than_its_gpu(planned: tuple[Any, dict[str, Any]]) -> None:
    _, d = planned
    sizing = d["sizing"]
    if sizing["cost"]["gpus_used"] != 1 or sizing["cost"].get("onprem") is None:
        pytest.skip("not a one-GPU job priced on premises")
    per_gpu = node_capex(sizing["nodes"]["node"]).capex_usd / sizing["nodes"]["gpus_per_node"]
    assert sizing["storage"]["capex_usd"] < per_gpu


def test_the_big_spot_run_says_why_not() -> None:
    d = json.loads(render(plan(UNSEEN["big-run-on-spot"]), "json"))
    spot = _cloud(d)["spot"]
    assert spot["applicable"] is False and spot["usd_per_run"] is None
    # GB200 is sold by reservation only: no spot figure at all, and the reason says so
    assert "no spot is sold" in spot["not_applicable_reason"]
