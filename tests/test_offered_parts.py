"""Parts nobody can buy or rent (issue 27): Meta's H100 96GB HBM2e of the torchtitan benchmarks.

`offered: false` keeps a part out of every search that does not name it; a spec that names it
plans on it and says it is not a part one can buy; its figures are sourced like any other.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rightsize.catalog import (
    accelerators,
    build_catalog,
    get_accelerator,
    node_for,
    not_offered_notes,
    offered_accelerators,
)
from rightsize.catalog.families import family_of
from rightsize.catalog.loader import CatalogDataError, read_data_file
from rightsize.catalog.power_limit import power_limit_figures
from rightsize.catalog.providers import why_unpriced
from rightsize.errors import BadInput
from rightsize.search.job_common import accelerator_ids
from rightsize.search.serving import plan_serving
from rightsize.search.train import plan_training
from rightsize.spec import parse_spec

META = "h100-meta-96gb"
TORCHTITAN = "llama3_h100_202412_torchtitan.md"


def _train(accs: Any, **targets: Any):  # type: ignore[no-untyped-def]
    data = {
        "model": "llama3-8b",
        "training": {"seq_len": 8192, "global_batch": 256, "train_tokens": "50B"},
        "targets": {"accelerators": accs, "gpus": 8, "objective": "time", **targets},
    }
    return parse_spec(data, Path("."))


def test_the_part_is_hopper_unoffered_and_on_its_own_node() -> None:
    acc = get_accelerator(META)
    assert not acc.offered and "custom to Meta's H100 variant" in acc.offered_source
    assert META in accelerators() and META not in offered_accelerators()
    assert all(a.offered for a in offered_accelerators().values())
    assert family_of(META) == "hopper"
    node = node_for(META)
    assert node.accelerator == META and node.gpus_per_node == 8
    assert node.nic_bits_per_s == 400e9  # torchtitan: 400 Gb/s RDMA per GPU
    assert META in power_limit_figures().minimum_limit_w  # a 500 W cap on it is accepted


def test_its_numbers_are_the_published_ones_each_sourced_and_dated() -> None:
    acc, sxm = get_accelerator(META), get_accelerator("h100-sxm")
    assert acc.hbm_bytes_per_s == 2.4e12 and acc.hbm_bytes == 96e9 and acc.tdp_w == 700
    assert TORCHTITAN in acc.sources["hbm_bytes_per_s"].source
    assert "roofline_utils.py" in acc.sources["hbm_bytes_per_s"].source
    for key in ("hbm_bytes", "scaleup_domain_gpus", "tdp_w"):
        assert TORCHTITAN in acc.sources[key].source, key
    for key, fig in acc.sources.items():
        assert fig.source and fig.as_of[:4] in ("2024", "2025", "2026"), key
    # The tensor peak and what the pages do not state are marked estimates, not datasheet facts.
    for key in (
        "peak_dense_flops_per_s.bf16",
        "peak_dense_flops_per_s.fp8",
        "scaleup_bytes_per_s",
        "sm_count",
    ):
        assert acc.sources[key].source.startswith("estimate"), key
    # Same die: GEMM fractions are h100-sxm's; memory-bound time follows its own bandwidth.
    assert acc.efficiency.gemm_peak_fraction == sxm.efficiency.gemm_peak_fraction
    achieved = acc.hbm_bytes_per_s * acc.efficiency.memory_bw_fraction
    assert 2.1e12 < achieved < 2.3e12  # torchao: ~2.2 TB/s on Meta's H100 variant
    assert achieved < sxm.hbm_bytes_per_s * sxm.efficiency.memory_bw_fraction


def test_an_all_accelerators_training_search_never_considers_it() -> None:
    plan = plan_training(_train("all"))
    seen = {plan.best.accelerator}
    seen |= {c.accelerator for c, _ in plan.alternatives} | {c.accelerator for c in plan.pareto}
    seen |= {r.accelerator for r in plan.rejected}
    assert META not in seen
    assert len(seen) > 10  # the search did look across the catalog
    assert not any(META in a for a in plan.assumptions)


def test_unnamed_accelerators_exclude_it_for_every_job_kind() -> None:
    spec = _train(None)
    assert spec.targets.accelerators is None
    ids = accelerator_ids(spec)
    assert META not in ids and "h100-sxm" in ids


def test_a_spec_naming_it_plans_on_it_and_says_it_cannot_be_bought() -> None:
    plan = plan_training(_train([META], gpus=8))
    assert plan.best.accelerator == META
    notes = [a for a in plan.assumptions if a.startswith(META)]
    assert len(notes) == 1 and "not a part one can buy or rent" in notes[0]
    assert "no price" in why_unpriced(META)
    # The same model on the 80 GB 3.35 TB/s board: Meta's 2.4 TB/s variant is never faster.
    sxm = plan_training(_train(["h100-sxm"], gpus=8))
    assert plan.best.step_time_s >= sxm.best.step_time_s


def test_a_serving_search_over_all_parts_skips_it_and_a_named_one_plans() -> None:
    base: dict[str, Any] = {
        "kind": "inference",
        "model": "llama3-8b",
        "serving": {"weight_precision": "bf16", "kv_precision": "bf16"},
        "traffic": {"rate": 5, "prompt_tokens": 512, "output_tokens": 128},
        "slo": {"ttft": "500ms", "tpot": "50ms", "percentile": 95},
        "targets": {"accelerators": [META], "tp": 1, "objective": "gpus"},
    }
    named = plan_serving(parse_spec(base, Path(".")))
    assert named.best.accelerator == META
    assert any(a.startswith(META) and "not a part one can buy" in a for a in named.assumptions)
    assert not_offered_notes(["h100-sxm", "b200"]) == []
    # A cost objective cannot rank it, and says why rather than pricing it at zero.
    with pytest.raises(BadInput, match="not a part one can buy or rent"):
        plan_serving(parse_spec({**base, "targets": {"accelerators": [META], "tp": 1}}, Path(".")))
    every = plan_serving(parse_spec({**base, "targets": {"accelerators": "all", "tp": 1}}, Path(".")))
    seen = {every.best.accelerator} | {str(r[0]) for r in every.rejected}
    seen |= {str(getattr(o, "accelerator", "")) for o, _ in getattr(every, "alternatives", [])}
    assert META not in seen and len(seen) > 5


@pytest.mark.parametrize(
    ("offered", "message"),
    [
        ({"value": "no", "source": "x", "as_of": "2026-11"}, "true or false"),
        ({"value": False, "as_of": "2026-11"}, "expected a mapping"),
        ({"value": False, "source": "", "as_of": "2026-11"}, "non-empty"),
        ({"value": False, "source": "x", "as_of": "soon"}, "YYYY-MM"),
    ],
)
def test_a_bad_offered_flag_is_a_catalog_error(offered: dict[str, Any], message: str) -> None:
    accs = copy.deepcopy(read_data_file("accelerators.yaml"))
    entry = next(a for a in accs["accelerators"] if a["id"] == META)
    entry["offered"] = offered
    with pytest.raises(CatalogDataError, match=message):
        build_catalog(accs, read_data_file("nodes.yaml"), read_data_file("efficiency.yaml"))


def test_no_price_file_prices_a_part_that_is_not_offered() -> None:
    prices = read_data_file("prices.yaml")
    unoffered = [acc for acc in accelerators().values() if not acc.offered]
    assert unoffered, "the catalog has a part that is not offered (h100-meta-96gb)"
    assert set(prices["cloud"]).isdisjoint(a.id for a in unoffered)
    assert set(prices["onprem"]).isdisjoint(a.default_node for a in unoffered)


def test_the_catalog_listing_says_which_parts_are_not_offered() -> None:
    from rightsize.report.catalog_text import catalog_dict, render_catalog

    line = next(ln for ln in render_catalog().splitlines() if ln.startswith("Not offered"))
    assert line.endswith(META)
    assert catalog_dict()["accelerators"][META]["offered"] is False
    assert catalog_dict()["accelerators"]["h100-sxm"]["offered"] is True
