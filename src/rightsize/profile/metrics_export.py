"""The profiler's telemetry as Prometheus metrics (`rightsize profile ... --metrics-port N`).

While a profile runs, a `Sampler` (the same NVML + psutil sampler the profile records) feeds
an HTTP endpoint served by the official prometheus-client. GPU figures carry the DCGM
exporter's names and units (`DCGM_FI_DEV_GPU_UTIL` in percent, `DCGM_FI_DEV_FB_USED` in
MiB, `DCGM_FI_DEV_POWER_USAGE` in W, as in dcgm-exporter's default-counters.csv) with its
`gpu` and `Hostname` labels, so the dashboards, alert rules and `rightsize monitor` that
read a DCGM exporter read a profile run too. Host figures, which DCGM does not have, are
named `rightsize_profile_*` with their unit in the name. Values are read at scrape time
from the latest sample, so the endpoint never serves a stale copy of its own.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from typing import Any

from rightsize.errors import BadInput
from rightsize.profile.telemetry import Sampler

# sample key pattern -> (DCGM name, help, factor from the sample's unit to DCGM's)
GPU_METRICS: dict[str, tuple[str, str, float]] = {
    "util_pct": ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", 1.0),
    "mem_used_bytes": ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", 1.0 / 2**20),
    "power_w": ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", 1.0),
    "temp_c": ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", 1.0),
    "sm_clock_mhz": ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", 1.0),
    "throttle_bits": (
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "Current clock event (throttle) reasons bitmask.",
        1.0,
    ),
}
HOST_METRICS: dict[str, tuple[str, str, float]] = {
    "cpu_util_pct": (
        "rightsize_profile_cpu_utilisation_ratio",
        "Mean CPU utilisation of all cores (0..1).",
        0.01,
    ),
    "host_mem_used_bytes": ("rightsize_profile_host_memory_used_bytes", "Host memory in use.", 1.0),
    "disk_bytes_per_s": ("rightsize_profile_disk_bytes_per_second", "Disk read + write rate.", 1.0),
    "net_bytes_per_s": ("rightsize_profile_network_bytes_per_second", "Network send + receive rate.", 1.0),
}
_GPU_KEY = re.compile(r"^gpu(\d+)_(.+)$")


class _Collector:
    """A prometheus-client collector over the sampler's latest sample."""

    def __init__(self, sampler: Sampler, command: str) -> None:
        self.sampler = sampler
        self.command = command
        self.host = socket.gethostname()

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        samples = self.sampler.samples
        latest = samples[-1] if samples else {}
        up = GaugeMetricFamily(
            "rightsize_profile_up", "1 while a rightsize profile runs.", labels=["command"]
        )
        up.add_metric([self.command], 1.0)
        yield up
        count = CounterMetricFamily("rightsize_profile_telemetry_samples", "Telemetry samples taken.")
        count.add_metric([], float(len(samples)))
        yield count
        gpu: dict[str, Any] = {}
        for key, value in latest.items():
            m = _GPU_KEY.match(key)
            if m and m[2] in GPU_METRICS:
                name, help_, factor = GPU_METRICS[m[2]]
                fam = gpu.setdefault(name, GaugeMetricFamily(name, help_, labels=["gpu", "Hostname"]))
                fam.add_metric([m[1], self.host], float(value) * factor)
        yield from gpu.values()
        for key, (name, help_, factor) in HOST_METRICS.items():
            if key in latest:
                fam = GaugeMetricFamily(name, help_, labels=["Hostname"])
                fam.add_metric([self.host], float(latest[key]) * factor)
                yield fam


class MetricsExporter:
    """Serve the profiler's telemetry on http://ADDR:PORT/metrics until `stop()`."""

    def __init__(self, port: int, command: str, addr: str = "0.0.0.0", interval_s: float = 1.0) -> None:
        if not 0 <= port <= 65535:
            raise BadInput(
                f"--metrics-port {port} is not a TCP port.", fix="Use a port from 1024 to 65535, e.g. 9400."
            )
        self.port, self.addr, self.command = port, addr, command
        self.sampler = Sampler(interval_s)
        self._server: Any = None

    def start(self) -> MetricsExporter:
        try:
            from prometheus_client import CollectorRegistry, start_http_server
        except ImportError:
            raise BadInput(
                "--metrics-port needs prometheus-client.",
                fix="pip install 'rightsize[profile]' (or pip install prometheus-client).",
            ) from None
        registry = CollectorRegistry(auto_describe=True)
        registry.register(_Collector(self.sampler, self.command))
        try:
            started = start_http_server(self.port, addr=self.addr, registry=registry)
        except OSError as err:
            raise BadInput(
                f"Cannot serve metrics on {self.addr}:{self.port}: {err.strerror or err}.",
                "Another process holds the port, or it needs privileges.",
                "Pick a free port with --metrics-port.",
            ) from None
        self._server = started[0] if isinstance(started, tuple) else None
        if self._server is not None:
            self.port = int(self._server.server_address[1])
        self.sampler.start()
        return self

    def stop(self) -> None:
        self.sampler.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
