"""Issue 28: a plan needing fewer GPUs than a node is billed on the smallest public instance
shape that holds it, at that shape's own sourced price; a plan of whole nodes still is billed
on whole nodes; the advisor's idle-GPU finding fires only when no smaller shape exists."""

from __future__ import annotations

import itertools
import math
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.advise import advise
from rightsize.api import plan
from rightsize.catalog import billing as billing_mod
from rightsize.catalog.billing import bill
from rightsize.catalog.loader import CatalogDataError
from rightsize.catalog.prices import (
    CloudPrice,
    cheapest,
    price_basis,
    prices_in_effect,
    shipped_prices,
    stale_prices,
)
from rightsize.catalog.providers import restrict_providers
from rightsize.catalog.shapes import node_gpus_by_accelerator, parse_shapes, shapes

ROOT = Path(__file__).resolve().parents[1]
A100 = "a100-sxm-80gb"


def _shape(acc: str, name: str) -> CloudPrice:
    return next(r for r in shapes()[acc] if r.instance is not None and r.instance.instance == name)


# --- the catalog of shapes ---------------------------------------------------------------


def test_every_shape_is_sourced_dated_and_smaller_than_its_node() -> None:
    node_gpus = node_gpus_by_accelerator()
    assert shapes(), "shapes.yaml lists no shape"
    for acc, records in shapes().items():
        for r in records:
            assert r.instance is not None and r.instance.gpus < node_gpus[acc]
            od = r.sources["on_demand_usd_per_gpu_hour"]
            assert od.source and od.as_of[:4].isdigit(), (acc, r.instance)


def _doc(gpus: int, source: str = "Google Cloud on-demand, test") -> dict[str, Any]:
    record = {
        "provider": "gcp",
        "instance": "a2-ultragpu-1g",
        "gpus_per_instance": {"value": gpus, "source": "test", "as_of": "2025-03"},
        "region": "us-central1",
        "on_demand_usd_per_instance_hour": {"value": 5.0 * gpus, "source": source, "as_of": "2025-03"},
        "reserved_1y_usd_per_instance_hour": None,
        "reserved_3y_usd_per_instance_hour": None,
        "spot_usd_per_instance_hour": None,
    }
    return {"schema_version": 1, "shapes": {A100: [record]}}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_doc(8), "not smaller than the 8-GPU node"),  # a node-sized instance belongs in prices.yaml
        (_doc(1, source="a blog says $5"), "not on the column's basis"),
        ({"schema_version": 1, "shapes": {"a100-typo": []}}, "unknown accelerator"),
    ],
)
def test_bad_shape_data_fails_at_load(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogDataError, match=message):
        parse_shapes(
            doc,
            "shapes.yaml",
            node_gpus_by_accelerator(),
            price_basis(),
            shipped_prices().default_preemptions,
        )


# --- billing ------------------------------------------------------------------------------


def test_one_a100_is_billed_on_a_one_gpu_shape_at_its_sourced_price() -> None:
    b = bill(A100, 1, 1, 8)
    assert b is not None and b.gpus == 1 and not b.whole_nodes
    one = _shape(A100, "a2-ultragpu-1g")
    assert b.on_demand_usd_per_hour == pytest.approx(one.on_demand)  # $5.0688/h, not an 8-GPU node
    assert "a2-ultragpu-1g" in b.describe()
    assert b.price is one  # reserved and spot columns, sources and dates: the shape's own


@pytest.mark.parametrize(("per_replica", "replicas"), [(16, 1), (8, 2), (1, 16), (4, 4)])
def test_sixteen_gpus_are_still_billed_as_two_whole_nodes(per_replica: int, replicas: int) -> None:
    b = bill(A100, per_replica, replicas, 8)
    node = cheapest(shipped_prices().offers[A100])
    assert node.instance is not None and node.on_demand is not None
    assert b is not None and b.whole_nodes and b.gpus == 16
    assert b.on_demand_usd_per_hour == pytest.approx(2 * node.on_demand * node.instance.gpus)


def test_a_replica_never_spans_instances_unless_it_spans_nodes() -> None:
    # 3 replicas of 2 GPUs: each inside one instance (4g holds two, 2g one), never a 2-GPU
    # replica split over two 1-GPU shapes
    b = bill(A100, 2, 3, 8)
    assert b is not None
    assert all(i.gpus >= 2 for i in b.instances)
    assert sum(i.count * (i.gpus // 2) for i in b.instances) >= 3


def _brute_force(per_replica: int, replicas: int, items: list[tuple[int, float]]) -> float:
    best = math.inf
    for counts in itertools.product(range(replicas + 1), repeat=len(items)):
        held = sum(n * (g // per_replica) for n, (g, _) in zip(counts, items, strict=True))
        if held >= replicas:
            best = min(best, sum(n * usd for n, (_, usd) in zip(counts, items, strict=True)))
    return best


@pytest.mark.parametrize("per_replica", [1, 2])
@pytest.mark.parametrize("replicas", [1, 2, 3, 5, 7, 9, 13])
def test_the_bill_is_the_cheapest_combination(per_replica: int, replicas: int) -> None:
    """Against brute force, one provider for the whole plan: GCP's A2 Ultra shapes (GCP lists
    no 8-GPU A100 80GB record in prices.yaml) or the cheapest provider's 8-GPU node."""
    node = cheapest(shipped_prices().offers[A100])
    assert node.instance is not None and node.on_demand is not None
    whole = [(node.instance.gpus, node.on_demand * node.instance.gpus)]
    gcp = [
        (r.instance.gpus, r.on_demand * r.instance.gpus)
        for r in shapes()[A100]
        if r.instance is not None and r.instance.provider == "gcp" and r.on_demand is not None
    ]
    b = bill(A100, per_replica, replicas, 8)
    assert b is not None
    want = min(_brute_force(per_replica, replicas, whole), _brute_force(per_replica, replicas, gcp))
    assert b.on_demand_usd_per_hour == pytest.approx(want)
    assert b.on_demand_usd_per_hour <= math.ceil(per_replica * replicas / 8) * whole[0][1] + 1e-9


def test_large_plans_take_the_bulk_on_the_cheapest_per_replica_shape() -> None:
    small, large = bill(A100, 1, 40, 8), bill(A100, 1, 4000, 8)
    assert small is not None and large is not None
    assert large.on_demand_usd_per_hour == pytest.approx(100 * small.on_demand_usd_per_hour)


def test_only_the_allowed_providers_shapes_are_used() -> None:
    aws_only = restrict_providers(shipped_prices(), ["aws"])
    with prices_in_effect(aws_only):
        b = bill(A100, 1, 1, 8)  # AWS lists no A100 80GB shape below p4de.24xlarge
        assert b is not None and b.whole_nodes and b.gpus == 8
        assert b.instances[0].price.instance is not None
        assert b.instances[0].price.instance.instance == "p4de.24xlarge"


def test_an_accelerator_without_shapes_is_billed_on_whole_nodes() -> None:
    b = bill("h200-sxm", 1, 1, 8)  # no 1-GPU H200 shape found to source
    assert b is not None and b.whole_nodes and b.gpus == 8


def test_the_cache_follows_the_prices_in_effect() -> None:
    before = bill(A100, 1, 1, 8)
    with prices_in_effect(restrict_providers(shipped_prices(), ["oracle"])):
        assert bill(A100, 1, 1, 8) != before
    assert bill(A100, 1, 1, 8) == before
    assert billing_mod._EXACT_REPLICAS >= 64  # the exact search covers every plan of a few nodes


# --- a whole plan: one value everywhere ----------------------------------------------------


@pytest.fixture(scope="module")
def llama_batch1() -> Any:
    return plan(ROOT / "examples" / "llama2-7b-batch1.yaml")


def test_the_plan_bills_one_a100_on_a_one_gpu_shape(llama_batch1: Any) -> None:
    p = llama_batch1
    cost = p.sizing.cost
    one = _shape(A100, "a2-ultragpu-1g")
    assert cost.gpus_billed == 1 and not cost.billed_on_whole_nodes
    assert "a2-ultragpu-1g" in (cost.priced_instance or "") and (cost.billed_instances or "").startswith(
        "1 x gcp"
    )
    od = cost.cloud["on_demand"]
    storage_h = (p.sizing.storage.cloud_usd_per_month or 0.0) / 730
    assert p.best.cost_usd_per_hour == pytest.approx(one.on_demand + storage_h)  # headline = BOM month / 730
    assert od.usd_per_month / 730 == pytest.approx(p.best.cost_usd_per_hour)
    assert p.best.cost_usd_per_m_output_tokens == pytest.approx(od.usd_per_million_units)
    assert "idle_billed_gpus" not in {f.rule for f in advise(p)}
    # the plan says what whole nodes would have cost instead
    assert any(n.startswith("billed on 1 x gcp a2-ultragpu-1g") and "would cost $" in n for n in cost.notes)


def test_idle_gpus_are_reported_only_where_no_smaller_shape_exists() -> None:
    p = plan(ROOT / "examples" / "dlrm-criteo-batch-serving.yaml")  # one H200: no 1-GPU shape
    assert p.sizing.cost.gpus_billed == 8 and not p.sizing.cost.smaller_shape_holds_replica
    assert "idle_billed_gpus" in {f.rule for f in advise(p)}


def test_on_premises_idle_gpus_are_still_reported() -> None:
    """A server is bought whole: one A100 owned is a whole 8-GPU node, shapes or not."""
    spec = yaml.safe_load((ROOT / "examples" / "llama2-7b-batch1.yaml").read_text())
    spec.setdefault("infrastructure", {}).setdefault("facility", {})["deployment"] = "onprem"
    p = plan(spec)
    assert p.sizing.cost.gpus_billed == 8 and not p.sizing.cost.smaller_shape_holds_replica
    assert "idle_billed_gpus" in {f.rule for f in advise(p)}


def test_the_maintainers_stale_list_covers_shapes() -> None:
    stale = dict(stale_prices(today=date(2026, 11, 26)))
    key = "shapes.a100-sxm-80gb[gcp a2-ultragpu-1g].on_demand_usd_per_instance_hour"
    assert stale[key].as_of == "2025-03"  # 20 months old on that day: re-check it
    assert not [k for k, _ in stale_prices(today=date(2025, 4, 1)) if k.startswith("shapes.")]
