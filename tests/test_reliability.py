"""Failures, checkpoints and goodput against published facts."""

from __future__ import annotations

import pytest

from rightsize.catalog.reliability import reliability
from rightsize.perf.params import count_params
from rightsize.sizing.reliability import checkpoint_bytes, goodput
from rightsize.spec import get_preset


def test_llama3_interruption_rate_reproduces_its_source() -> None:
    # 419 unexpected interruptions in 54 days on 16,384 GPUs: one every ~3.1 hours.
    g = goodput(16384, 2048, 1e12, reliability())
    assert g.mtbf_s / 3600 == pytest.approx(54 * 24 / 419, rel=0.01)


def test_llama3_scale_goodput_is_about_ninety_percent() -> None:
    # Llama 3 reports more than 90% effective training time at 16K GPUs.
    arch = get_preset("llama3.1-405b")
    ckpt = checkpoint_bytes(count_params(arch).total, "adamw")
    g = goodput(16384, 2048, ckpt, reliability())
    assert 0.85 <= g.goodput <= 0.97
    # Young/Daly: the interval balances saving against lost work
    assert g.checkpoint_interval_s == pytest.approx((2 * g.checkpoint_write_s * g.mtbf_s) ** 0.5)


def test_bloom_checkpoint_size() -> None:
    # BigScience: the BLOOM-176B checkpoint with optimizer states is 2.3 TB.
    ckpt = checkpoint_bytes(count_params(get_preset("bloom-176b")).total, "adamw")
    assert ckpt == pytest.approx(2.3e12, rel=0.10)


def test_small_clusters_barely_lose_time() -> None:
    assert goodput(8, 1, 1e11, reliability()).goodput > 0.99


def test_every_reliability_figure_is_sourced() -> None:
    rel = reliability()
    assert set(rel.sources) == {
        "failure_rate_per_gpu_hour",
        "restart_s",
        "checkpoint_write_bytes_per_s_per_node",
        "async_checkpoint_sync_s",
    }
    assert all(s.source and s.as_of for s in rel.sources.values())
