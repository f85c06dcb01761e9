"""A disaggregated plan states one figure per quantity (issue 30): its replicas are its two
pools, and the uncertainty sizes each pool by its own phase, so the planned count sits
inside the range (it once read "12 replicas, P10-P90 14 to 18": the aggregated rule applied
to a made-up per-replica capacity); the headline names the pools; and the KV cache that
crosses nodes is traffic the bill of materials sizes a fabric for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.report.render import render

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "llama3-70b-disaggregated-serving.yaml"


@pytest.fixture(scope="module")
def planned() -> Any:
    p = plan(EXAMPLE)
    if p.best.disaggregation is None or p.best.disaggregation.chosen != "disaggregated":
        pytest.skip("the example's plan is aggregated now: nothing disaggregated to check")
    return p


def test_uncertainty_sizes_each_pool_and_holds_the_planned_count(planned: Any) -> None:
    d = planned.best.disaggregation
    m = planned.uncertainty["metrics"]
    assert "replica_capacity_rps" not in m  # no per-replica capacity that no replica has
    for pool in (d.prefill, d.decode):
        r = m[f"{pool.role}_replica_capacity_rps"]
        assert r["base"] == pytest.approx(pool.replica_capacity_rps)
        assert r["p10"] < pool.replica_capacity_rps < r["p90"]
    reps = m["replicas"]
    assert reps["base"] == planned.best.replicas == d.prefill.replicas + d.decode.replicas
    assert reps["p10"] <= planned.best.replicas <= reps["p90"]
    assert planned.uncertainty["replicas"]["probability_sufficient"] > 0.3


def test_headline_names_both_pools(planned: Any) -> None:
    text = render(planned, "markdown")
    d = planned.best.disaggregation
    assert f"{d.prefill.replicas} prefill replicas" in text and f"{d.decode.replicas} decode replica" in text
    assert "capacity per replica" not in text
    assert "Aggregated or disaggregated" in text and "KV cache" in text


def test_kv_across_nodes_is_fabric_traffic(planned: Any) -> None:
    d = planned.best.disaggregation
    fab = planned.sizing.fabric
    if d.kv_transfer.link.endswith("(scale-up)"):
        pytest.skip("the KV cache stays in the scale-up domain")
    assert planned.demand.kv_transfer_bytes_per_s == pytest.approx(
        d.kv_transfer.bytes_per_request_mean * planned.best.design_rate_rps
    )
    assert fab.needed and "KV cache" in fab.reason
