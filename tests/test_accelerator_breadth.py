"""Issue 19: the accelerators a 2026 buyer compares (Blackwell Ultra, H20, inference cards,
CDNA 4, Gaudi 3, Trainium2, Cloud TPUs) are in the catalog with sources, plan for training
and serving or are refused with the true reason, and speak their own topology and terms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from rightsize.api import plan
from rightsize.catalog import accelerators, get_accelerator, nodes
from rightsize.errors import BadInput, Infeasible
from rightsize.perf.collectives import all_gather_s, group_link
from rightsize.perf.hardware import Hardware
from rightsize.report.catalog_text import render_catalog

EXAMPLES = Path(__file__).parent.parent / "examples"
NEW = (
    "b300",
    "gb300",
    "h20",
    "rtx-pro-6000",
    "t4",
    "a10g",
    "mi355x",
    "mi350x",
    "gaudi3",
    "trn2",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
    "tpu-v7",
)
TERMS = {
    "tpu-v5p": ("ICI", "torus3d"),
    "tpu-v6e": ("ICI", "torus2d"),
    "trn2": ("NeuronLink", "torus2d"),
    "mi355x": ("Infinity Fabric", "mesh"),
    "gb300": ("NVLink", "switch"),
    "t4": ("PCIe", "pcie"),
}


@pytest.mark.parametrize("acc_id", NEW)
def test_every_figure_is_sourced_and_dated(acc_id: str) -> None:
    acc = get_accelerator(acc_id)
    node = nodes()[acc.default_node]
    assert node.accelerator == acc_id
    for key in (
        "hbm_bytes",
        "hbm_bytes_per_s",
        "scaleup_bytes_per_s",
        "tdp_w",
        "peak_dense_flops_per_s.bf16",
    ):
        key = key if key in acc.sources else "peak_dense_flops_per_s.fp16"
        fig = acc.sources[key]
        assert fig.source.strip() and fig.as_of[:4].isdigit(), (acc_id, key)


def test_vendor_terms_and_topologies() -> None:
    for acc_id, (name, topology) in TERMS.items():
        acc = get_accelerator(acc_id)
        assert (acc.scaleup_name, acc.scaleup_topology) == (name, topology)
    # Entries that do not say get their vendor's term.
    assert get_accelerator("mi300x").scaleup_name == "Infinity Fabric"
    assert get_accelerator("h100-sxm").scaleup_name == "NVLink"
    assert get_accelerator("l40s").scaleup_name == "PCIe"
    text = render_catalog()
    for acc_id in NEW:
        assert acc_id in text
    assert "ICI (3D torus)" in text and "NeuronLink (2D torus)" in text


def test_torus_group_on_one_axis_gets_its_share_of_the_links() -> None:
    acc = get_accelerator("tpu-v5e")  # 16 x 16 2D torus
    hw = Hardware.from_catalog(acc, nodes()[acc.default_node], "bf16")
    bw, lat = group_link(np.array([16.0, 256.0]), np.array([1.0, 1.0]), hw)
    up = hw.scaleup_bytes_per_s * hw.scaleup_bw_fraction
    assert bw[0] == pytest.approx(up / 2)  # one axis of two
    assert bw[1] == pytest.approx(up)  # both axes
    # A ring per axis: 16 members on one axis take 15 steps, 256 on two take 2 x 15, where a
    # flat ring of 256 would take 255.
    flat = hw.with_overrides(torus_dims=0)
    bw_flat, lat_flat = group_link(np.array([16.0, 256.0]), np.array([1.0, 1.0]), flat)
    assert bw_flat[0] == pytest.approx(up)
    n = np.array([16.0, 256.0])
    torus_t = all_gather_s(np.zeros(2), n, bw, lat)
    flat_t = all_gather_s(np.zeros(2), n, bw_flat, lat_flat)
    assert torus_t == pytest.approx(np.array([15.0, 30.0]) * hw.scaleup_latency_s)
    assert flat_t[1] == pytest.approx(255.0 * hw.scaleup_latency_s)


def _spec(example: str, acc_id: str, **extra: object) -> dict[str, object]:
    raw = yaml.safe_load((EXAMPLES / example).read_text())
    raw["targets"]["accelerators"] = [acc_id]
    raw.update(extra)
    return raw


@pytest.mark.parametrize("acc_id", NEW)
def test_training_plans_or_refuses_with_the_reason(acc_id: str) -> None:
    spec = _spec("llama3-8b-lora-weekly.yaml", acc_id)
    try:
        result = plan(spec)
    except (Infeasible, BadInput) as exc:
        text = str(exc)
        assert acc_id in text or "memory" in text or "deadline" in text, text
        return
    assert result.best.accelerator == acc_id


@pytest.mark.parametrize("acc_id", NEW)
def test_serving_plans_or_refuses_with_the_reason(acc_id: str) -> None:
    spec = _spec("llama3-70b-chat-serving.yaml", acc_id)
    try:
        result = plan(spec)
    except (Infeasible, BadInput) as exc:
        text = str(exc)
        # issue 13: a cost objective with only unpriced parts says so instead of ranking by GPUs
        assert any(w in text for w in ("SLO", "TPOT", "memory", "has a price", "loads no")), text
        return
    assert result.best.accelerator == acc_id


def test_missing_precision_is_refused_with_what_the_chip_has() -> None:
    acc = get_accelerator("tpu-v6e")
    with pytest.raises(BadInput, match="supports: bf16, int8"):
        acc.peak_flops_per_s("fp8")
    assert not get_accelerator("t4").supports("bf16")  # Turing has no BF16


def test_a_torus_domain_does_not_have_to_fit_in_one_rack() -> None:
    result = plan(_spec("llama3-70b-pretrain.yaml", "tpu-v6e"))
    assert result.best.accelerator == "tpu-v6e"
    assert result.sizing.nodes.scaleup_domain_nodes == 1


def test_catalog_counts_the_new_parts() -> None:
    assert set(NEW) <= set(accelerators())


def test_torus_counts_beyond_a_slice_are_whole_slices() -> None:
    from rightsize.search.space import gpu_count_candidates

    counts = gpu_count_candidates(8, 4096, slice_gpus=256)  # TPU v5e: 256-chip slices
    assert {256.0, 512.0, 1024.0, 4096.0} <= set(counts)
    assert all(c <= 256 or c % 256 == 0 for c in counts)
    assert 384.0 in gpu_count_candidates(8, 4096)  # a switched cluster may take 1.5x counts
