"""`rightsize calibrate` fits latency and bandwidth per tier (within a node, across nodes)
from a comms profile of several hosts, and `plan --calibration` uses the across-node fit
in the fabric model: a slower measured fabric gives a slower data-parallel step."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rightsize.api import estimate
from rightsize.profile.calibrate import _BUS, _STEPS, calibrate_profiles, catalog_hardware

ROOT = Path(__file__).resolve().parents[1]
TRUE = {"intra_node": (150e9, 8e-6), "inter_node": (20e9, 30e-6)}  # bytes/s, s per step
SIZES = [2**16, 2**20, 2**24, 2**28]


def _records() -> list[dict]:
    recs = []
    for tier, (bw, lat) in TRUE.items():
        n = 8 if tier == "intra_node" else 16
        for op in _STEPS:
            for b in SIZES:
                arr = np.array([float(n)])
                t = float(_STEPS[op](arr)[0] * lat + _BUS[op](arr)[0] * b / bw)
                recs.append({"type": "result", "kind": "comms", "key": f"comms:{op}:{b}:{n}:{tier}", "status": "ok",
                             "op": op, "bytes": b, "world_size": n, "tier": tier, "time_s": {"median": t}})  # fmt: skip
    return recs


def _profile(tmp_path: Path) -> Path:
    hdr = {"type": "header", "schema_version": 1, "kind": "comms", "created": "2026-11-23T00:00:00+00:00",
           "config": {"backend": "nccl", "launcher": "srun"}, "environment": {"gpu_name": "NVIDIA A100-SXM4-80GB"}}  # fmt: skip
    path = tmp_path / "comms.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [hdr, *_records()]) + "\n")
    return path


def test_fit_recovers_each_tier(tmp_path: Path) -> None:
    doc = calibrate_profiles([_profile(tmp_path)])
    tiers = doc["fit"]["comms"]["tiers"]
    for tier, (bw, lat) in TRUE.items():
        assert tiers[tier]["bus_bytes_per_s"] == pytest.approx(bw, rel=1e-6)
        assert tiers[tier]["latency_s"] == pytest.approx(lat, rel=1e-6)
        assert tiers[tier]["ops"] == sorted(_STEPS)
    base = catalog_hardware("NVIDIA A100-SXM4-80GB", "fp32")
    over = doc["overrides"][base.accelerator_id]
    assert over["scaleout_bw_fraction"] == pytest.approx(20e9 / base.scaleout_bytes_per_s_per_gpu, rel=1e-6)
    assert over["scaleup_bw_fraction"] == pytest.approx(150e9 / base.scaleup_bytes_per_s, rel=1e-6)
    assert over["scaleout_latency_s"] == pytest.approx(30e-6, rel=1e-6)


def test_plan_uses_the_fabric_fit(tmp_path: Path) -> None:
    spec = ROOT / "examples/gpt3-175b-megatron.yaml"
    base = catalog_hardware("NVIDIA A100-SXM4-80GB", "bf16")
    slow = {base.accelerator_id: {"scaleout_bw_fraction": 0.05, "scaleout_latency_s": 200e-6}}
    fast = {base.accelerator_id: {"scaleout_bw_fraction": 0.9, "scaleout_latency_s": 5e-6}}
    s_slow, s_fast = estimate(spec, calibration=slow).best, estimate(spec, calibration=fast).best
    assert s_slow.step["dp_comm_exposed_s"] + s_slow.step["pp_comm_exposed_s"] > (
        s_fast.step["dp_comm_exposed_s"] + s_fast.step["pp_comm_exposed_s"]
    )
    assert s_slow.step_time_s > s_fast.step_time_s
