"""Full-mesh scale-up (MI300X Infinity Fabric, Gaudi 3's on-chip RoCE): each pair of chips has
its own links, so a group of n of the 8 drives n - 1 of the 7 links; a switched NVLink domain
gives any group the whole per-GPU bandwidth (issue 28: Gaudi 3 70B on 2 cards too fast)."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf.collectives import group_link
from rightsize.perf.hardware import Hardware


def _bw(acc: str, n: int) -> float:
    a = get_accelerator(acc)
    hw = Hardware.from_catalog(a, node_for(a.id), "bf16")
    return float(group_link(np.asarray(float(n)), np.asarray(1.0), hw)[0])


@pytest.mark.parametrize("acc", ["gaudi3", "mi300x", "mi355x"])
def test_a_pair_on_a_mesh_drives_one_of_seven_links(acc: str) -> None:
    assert _bw(acc, 2) == pytest.approx(_bw(acc, 8) / 7.0)
    assert _bw(acc, 4) == pytest.approx(_bw(acc, 8) * 3.0 / 7.0)


def test_a_switched_domain_gives_any_group_the_whole_bandwidth() -> None:
    assert _bw("h100-sxm", 2) == pytest.approx(_bw("h100-sxm", 8))


def test_more_members_never_lower_a_mesh_groups_bandwidth() -> None:
    bws = [_bw("gaudi3", n) for n in (2, 3, 4, 8)]
    assert bws == sorted(bws)
