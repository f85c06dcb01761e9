"""TPU v6e ICI collectives (issue 27): the all-reduce bus bandwidth Google measured on a
v6e-256 slice, reproduced by perf.collectives from the catalog's figures.

tpu-recipes microbenchmarks/trillium/collectives/README.md (commit e6c318b, 2025-03-04) prints
a sample log of accelerator-microbenchmarks' psum over the 256 chips of a slice: a 17408 x
17408 bf16 matrix (0.606 GB) at 235.76 GB/s, where the benchmark reports 2 (n-1)/n x bytes /
time. The model must give back that time from the chip's ICI figure and its measured
fraction, through the same torus placement plans use."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf import collectives as coll
from rightsize.perf.hardware import Hardware

CHIPS = 256
MATRIX_BYTES = 17408 * 17408 * 2  # bf16
PUBLISHED_BUS_BYTES_PER_S = 235.7595345022845e9


def _hw(acc_id: str) -> Hardware:
    acc = get_accelerator(acc_id)
    return Hardware.from_catalog(acc, node_for(acc.id), "bf16")


def _published_time_s() -> float:
    return 2.0 * (CHIPS - 1) / CHIPS * MATRIX_BYTES / PUBLISHED_BUS_BYTES_PER_S


def _model_time_s(hw: Hardware) -> float:
    n = np.array([float(CHIPS)])
    bw, lat = coll.group_link(n, np.ones(1), hw)
    return float(coll.all_reduce_s(np.array([float(MATRIX_BYTES)]), n, bw, lat)[0])


def test_v6e_256_chip_all_reduce_matches_googles_measurement() -> None:
    assert _published_time_s() == pytest.approx(5.12e-3, rel=0.01)
    assert _model_time_s(_hw("tpu-v6e")) == pytest.approx(_published_time_s(), rel=0.02)


def test_the_whole_slice_drives_both_torus_axes() -> None:
    """A 256-chip group spans both axes of the 16 x 16 torus: the full per-chip ICI figure
    times the fraction, where a group along one axis gets half of it."""
    hw = _hw("tpu-v6e")
    whole, _ = coll.group_link(np.array([256.0]), np.ones(1), hw)
    ring_of_8, _ = coll.group_link(np.array([8.0]), np.ones(1), hw)
    assert float(whole[0]) == pytest.approx(hw.scaleup_bytes_per_s * hw.scaleup_bw_fraction)
    assert float(ring_of_8[0]) == pytest.approx(0.5 * float(whole[0]))


def test_the_v6e_measurement_is_not_carried_to_ironwood() -> None:
    """tpu-v7's efficiencies merge tpu-v6e's block (efficiency.yaml anchor); the v6e ICI
    measurement must not become Ironwood's."""
    v6e, v7 = get_accelerator("tpu-v6e").efficiency, get_accelerator("tpu-v7").efficiency
    assert v6e.sources["scaleup_bw_fraction"].source.startswith("measured:")
    assert not v7.sources["scaleup_bw_fraction"].source.startswith("measured:")
    assert v7.scaleup_bw_fraction != v6e.scaleup_bw_fraction
