"""`profile comms` with a real gloo process group of 2 local ranks (issue #5)."""

from __future__ import annotations

import importlib.util
import os

import pytest

if importlib.util.find_spec("torch") is None:  # pragma: no cover
    if os.environ.get("RIGHTSIZE_REQUIRE_TORCH"):
        raise RuntimeError("RIGHTSIZE_REQUIRE_TORCH is set but torch is not installed")
    pytest.skip("torch is not installed (the profile extra)", allow_module_level=True)

from rightsize.profile import jsonl  # noqa: E402
from rightsize.profile.calibrate import _fit_comms, cpu_host_hardware  # noqa: E402
from rightsize.profile.comms import OPS, run_comms_profile  # noqa: E402


def test_gloo_collectives_bandwidth_and_latency(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "comms.jsonl"
    sizes = [4096, 65536, 1048576]
    res = run_comms_profile("gloo", 2, sizes=sizes, iters=3, timeout_s=60, out=out)
    rows = [r for r in res["results"] if r.get("kind") == "comms"]
    assert {r["op"] for r in rows} == set(OPS)
    assert len(rows) == len(OPS) * len(sizes)
    for r in rows:
        assert r["time_s"]["median"] > 0 and r["bus_bytes_per_s"] > 0
        factor = {"all_reduce": 2 * (2 - 1) / 2, "p2p": 1.0}.get(r["op"], (2 - 1) / 2)
        assert r["bus_bytes_per_s"] == pytest.approx(r["alg_bytes_per_s"] * factor)
    assert jsonl.read_profile(out)[0]["environment"]["torch"]
    # the calibration's link fit: positive bandwidth and latency from the all-reduce rows
    hw = cpu_host_hardware(
        {},
        [
            {"kind": "gemm", "status": "ok", "flops_per_s": 1e11},
            {"kind": "membw", "status": "ok", "bytes_per_s": 1e10},
        ],
    )
    fit = _fit_comms(hw, rows)
    assert fit["bus_bytes_per_s"] > 0 and fit["latency_s"] >= 0
    # resume: nothing left to measure, nothing lost
    again = run_comms_profile("gloo", 2, sizes=sizes, iters=3, timeout_s=60, out=out, resume=True)
    assert len([r for r in again["results"] if r.get("kind") == "comms"]) == len(rows)
