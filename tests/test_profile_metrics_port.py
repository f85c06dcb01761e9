"""`rightsize profile ... --metrics-port N`: the profiler's telemetry as Prometheus metrics, with the
DCGM exporter's names and units for GPU figures (so `rightsize monitor` and DCGM dashboards read it)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from rightsize.catalog.metric_names import find_by_name
from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.profile.metrics_export import GPU_METRICS, MetricsExporter

pytest.importorskip("prometheus_client")


def _scrape(port: int) -> str:
    return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text


def test_gpu_figures_use_dcgm_names_and_units() -> None:
    exp = MetricsExporter(0, "profile test", addr="127.0.0.1", interval_s=0.05).start()
    try:
        deadline = time.time() + 5
        while not exp.sampler.samples and time.time() < deadline:
            time.sleep(0.05)
        exp.sampler.stop()  # hold the samples still, then add a GPU sample as NVML gives it
        # A GPU sample as NVML gives it (no GPU here): 73% busy, 40 GiB used, 512 W.
        exp.sampler.samples.append(
            {"t": time.time(), "gpu0_util_pct": 73.0, "gpu0_mem_used_bytes": 40 * 2**30, "gpu0_power_w": 512.0,
             "cpu_util_pct": 50.0}
        )  # fmt: skip
        text = _scrape(exp.port)
    finally:
        exp.stop()
    lines = {ln.split("{")[0]: ln for ln in text.splitlines() if ln and not ln.startswith("#")}
    assert lines["DCGM_FI_DEV_GPU_UTIL"].endswith(" 73.0") and 'gpu="0"' in lines["DCGM_FI_DEV_GPU_UTIL"]
    assert lines["DCGM_FI_DEV_FB_USED"].endswith(" 40960.0")  # MiB, as dcgm-exporter reports it
    assert lines["DCGM_FI_DEV_POWER_USAGE"].endswith(" 512.0")
    assert lines["rightsize_profile_cpu_utilisation_ratio"].endswith(" 0.5")
    assert 'command="profile test"' in lines["rightsize_profile_up"]
    # the names are the catalog's, in the units the catalog says dcgm-exporter uses
    for name, _, _ in GPU_METRICS.values():
        found = find_by_name(name)
        if found is not None:
            assert found[1].unit in ("percent", "MiB", "W")


def test_port_in_use_is_a_clear_error() -> None:
    first = MetricsExporter(0, "a", addr="127.0.0.1").start()
    try:
        with pytest.raises(BadInput, match="Cannot serve metrics"):
            MetricsExporter(first.port, "b", addr="127.0.0.1").start()
    finally:
        first.stop()


def test_profile_command_serves_while_it_runs(capsys: Any) -> None:
    pytest.importorskip("torch")
    assert main(["profile", "memory", "--model", "llama3-8b", "--seq", "512", "--metrics-port", "0"]) == 0
    assert "telemetry as Prometheus metrics on http://" in capsys.readouterr().err
