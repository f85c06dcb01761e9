"""Telemetry summaries: spread, phases, throttling; NVML absence (issue #5)."""

from __future__ import annotations

import time

import numpy as np

from rightsize.profile.telemetry import Sampler, nvml_status, phases, summarise


def test_alternating_utilisation_is_reported_as_phases_not_just_a_mean() -> None:
    # 70% on average, but really 100% and 40% in turns
    vals = np.array([100.0, 100.0, 40.0] * 20)
    ph = phases(vals)
    assert ph["alternating"]
    assert abs(ph["high_mean"] - 100) < 1e-9 and abs(ph["low_mean"] - 40) < 1e-9
    samples = [{"t": float(i), "gpu0_util_pct": v} for i, v in enumerate(vals)]
    s = summarise(samples)
    assert abs(s["metrics"]["gpu0_util_pct"]["mean"] - 80) < 1e-9
    assert any("alternates" in f for f in s["flags"])


def test_steady_metric_is_not_alternating() -> None:
    assert not phases(np.full(50, 95.0))["alternating"]
    assert not phases(np.random.default_rng(0).normal(95, 1, 200))["alternating"]


def test_thermal_and_power_throttling_are_flagged() -> None:
    samples = [{"t": float(i), "gpu0_throttle_bits": float(0x20 if i % 2 else 0x4)} for i in range(10)]
    s = summarise(samples)
    assert any("thermally throttled" in f for f in s["flags"])
    assert any("power-capped" in f for f in s["flags"])
    assert "sw_thermal_slowdown" in s["metrics"]["gpu0_throttle_reasons"]


def test_sampler_collects_host_metrics_and_says_why_there_is_no_gpu() -> None:
    sampler = Sampler(interval_s=0.02).start()
    time.sleep(0.2)
    samples = sampler.stop()
    assert len(samples) >= 3
    assert "cpu_util_pct" in samples[-1] and "host_mem_used_bytes" in samples[-1]
    nv, why = nvml_status()
    if nv is None:
        assert any("NVML" in n or "nvidia-ml-py" in n for n in sampler.notes)
        assert why
    s = summarise(samples, sampler.notes, {"w": (samples[0]["t"], samples[-1]["t"])})
    assert "cpu_util_pct" in s["windows"]["w"]
