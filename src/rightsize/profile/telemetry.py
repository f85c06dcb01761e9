"""Background telemetry while a profile runs: NVML on GPUs, psutil for the host.

A `Sampler` thread records timestamped samples every `interval_s`:

- GPU (NVML, where a driver is present): utilisation, memory used, power, temperature,
  SM clock, and the clock-throttle-reason bitmask;
- host (psutil): CPU utilisation per core, host memory used, disk and network bytes/s.

`summarise` reports, per metric, the mean and the spread (std, min, p5, p50, p95, max) and
its phases: samples are split at the midpoint between the lowest and highest tenth, and
when both groups hold a real share of the time with well-separated means, the metric is
reported as alternating ("a GPU at 70% average may be alternating between 100% and 40%").
Thermal and power throttling are flagged from NVML's throttle reasons. Where NVML is
absent (no GPU, no driver), the summary says so instead of inventing numbers.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

# NVML clocks-throttle-reason bits (nvml.h: nvmlClocksThrottleReason*).
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
THERMAL = 0x20 | 0x40
POWER = 0x4 | 0x80


def nvml_status() -> tuple[Any, str]:
    """(pynvml module initialised, "") or (None, why NVML cannot be used)."""
    try:
        import pynvml
    except ImportError:
        return None, "nvidia-ml-py is not installed (pip install 'rightsize[profile]')"
    try:
        pynvml.nvmlInit()
    except Exception as err:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, f"NVML unavailable: {err} (no NVIDIA driver on this host)"
    return pynvml, ""


def nvml_versions() -> dict[str, Any]:
    nv, why = nvml_status()
    if nv is None:
        return {"nvml": why}
    out: dict[str, Any] = {}
    try:
        out["nvidia_driver"] = _text(nv.nvmlSystemGetDriverVersion())
        out["nvml_version"] = _text(nv.nvmlSystemGetNVMLVersion())
        out["gpus"] = [
            _text(nv.nvmlDeviceGetName(nv.nvmlDeviceGetHandleByIndex(i)))
            for i in range(nv.nvmlDeviceGetCount())
        ]
    except Exception as err:
        out["nvml"] = f"NVML query failed: {err}"
    return out


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class Sampler:
    """Samples telemetry in a daemon thread between `start()` and `stop()`."""

    def __init__(self, interval_s: float = 0.1) -> None:
        self.interval_s = interval_s
        self.samples: list[dict[str, float]] = []
        self.notes: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nv: Any = None
        self._handles: list[Any] = []
        self._psutil: Any = None

    def start(self) -> Sampler:
        try:
            import psutil

            self._psutil = psutil
            psutil.cpu_percent(percpu=True)  # prime the per-core counters
        except ImportError:
            self.notes.append("psutil is not installed: no host telemetry (pip install 'rightsize[profile]')")
        nv, why = nvml_status()
        if nv is None:
            self.notes.append(why)
        else:
            self._nv = nv
            self._handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
        self._thread = threading.Thread(target=self._run, name="rightsize-telemetry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, float]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return self.samples

    def _run(self) -> None:
        last_io: tuple[float, Any, Any] | None = None
        while not self._stop.is_set():
            t = time.time()
            s: dict[str, float] = {"t": t}
            ps = self._psutil
            if ps is not None:
                cores = ps.cpu_percent(percpu=True)
                for i, c in enumerate(cores):
                    s[f"cpu{i}_util_pct"] = float(c)
                s["cpu_util_pct"] = float(np.mean(cores)) if cores else 0.0
                s["host_mem_used_bytes"] = float(ps.virtual_memory().used)
                disk, net = ps.disk_io_counters(), ps.net_io_counters()
                if last_io is not None and disk is not None and net is not None:
                    dt = max(t - last_io[0], 1e-6)
                    s["disk_bytes_per_s"] = (
                        disk.read_bytes + disk.write_bytes - last_io[1].read_bytes - last_io[1].write_bytes
                    ) / dt
                    s["net_bytes_per_s"] = (
                        net.bytes_sent + net.bytes_recv - last_io[2].bytes_sent - last_io[2].bytes_recv
                    ) / dt
                last_io = (t, disk, net) if disk is not None and net is not None else None
            for i, h in enumerate(self._handles):
                self._gpu_sample(s, i, h)
            self.samples.append(s)
            self._stop.wait(self.interval_s)

    def _gpu_sample(self, s: dict[str, float], i: int, h: Any) -> None:
        nv = self._nv
        try:
            util = nv.nvmlDeviceGetUtilizationRates(h)
            mem = nv.nvmlDeviceGetMemoryInfo(h)
            s[f"gpu{i}_util_pct"] = float(util.gpu)
            s[f"gpu{i}_mem_used_bytes"] = float(mem.used)
            s[f"gpu{i}_power_w"] = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
            s[f"gpu{i}_temp_c"] = float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
            s[f"gpu{i}_sm_clock_mhz"] = float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
            s[f"gpu{i}_throttle_bits"] = float(nv.nvmlDeviceGetCurrentClocksThrottleReasons(h))
        except Exception as err:  # a metric the device does not support
            note = f"gpu{i}: {err}"
            if note not in self.notes:
                self.notes.append(note)


def spread(values: np.ndarray) -> dict[str, float]:
    return {
        "mean": float(values.mean()),
        "std": float(values.std()),
        "min": float(values.min()),
        "p5": float(np.percentile(values, 5)),
        "p50": float(np.percentile(values, 50)),
        "p95": float(np.percentile(values, 95)),
        "max": float(values.max()),
    }


def phases(values: np.ndarray, min_share: float = 0.15, min_gap_frac: float = 0.25) -> dict[str, Any]:
    """Split a metric into a low and a high phase; `alternating` when both are real."""
    lo, hi = np.percentile(values, 10), np.percentile(values, 90)
    if hi - lo <= 0:
        return {"alternating": False}
    cut = (lo + hi) / 2.0
    low, high = values[values < cut], values[values >= cut]
    share = len(high) / len(values)
    gap = (high.mean() - low.mean()) / max(abs(high.mean()), 1e-12) if len(low) and len(high) else 0.0
    return {
        "alternating": bool(min_share <= share <= 1 - min_share and gap >= min_gap_frac),
        "high_mean": float(high.mean()) if len(high) else None,
        "low_mean": float(low.mean()) if len(low) else None,
        "high_share": float(share),
        "transitions": int(np.count_nonzero(np.diff((values >= cut).astype(int)))),
    }


def summarise(
    samples: list[dict[str, float]],
    notes: list[str] | None = None,
    windows: dict[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """Mean, spread and phases per metric; throttling flags; per-window means (e.g. per point)."""
    out: dict[str, Any] = {"samples": len(samples), "notes": list(notes or []), "metrics": {}, "flags": []}
    if not samples:
        return out
    out["duration_s"] = samples[-1]["t"] - samples[0]["t"]
    keys = sorted({k for s in samples for k in s if k != "t" and not k.endswith("throttle_bits")})
    for k in keys:
        vals = np.array([s[k] for s in samples if k in s], dtype=np.float64)
        if vals.size == 0:
            continue
        out["metrics"][k] = {**spread(vals), "phases": phases(vals)}
        if out["metrics"][k]["phases"]["alternating"] and k.endswith("util_pct") and not k.startswith("cpu"):
            ph = out["metrics"][k]["phases"]
            out["flags"].append(
                f"{k} alternates between ~{ph['high_mean']:.0f}% and ~{ph['low_mean']:.0f}% "
                f"(mean {vals.mean():.0f}%): look for input stalls, synchronisation or communication gaps"
            )
    for k in sorted({k for s in samples for k in s if k.endswith("throttle_bits")}):
        bits = [int(s[k]) for s in samples if k in s]
        gpu = k.split("_", 1)[0]
        thermal = sum(1 for b in bits if b & THERMAL) / len(bits)
        power = sum(1 for b in bits if b & POWER) / len(bits)
        reasons = sorted({name for b in bits for bit, name in THROTTLE_BITS.items() if b & bit})
        out["metrics"][k.replace("_bits", "_reasons")] = reasons
        if thermal > 0:
            out["flags"].append(f"{gpu} thermally throttled during {thermal:.0%} of samples")
        if power > 0:
            out["flags"].append(f"{gpu} power-capped during {power:.0%} of samples")
    if windows:
        wanted = [
            k
            for k in keys
            if k in ("cpu_util_pct", "host_mem_used_bytes")
            or (k.startswith("gpu") and k.endswith(("util_pct", "power_w", "mem_used_bytes", "sm_clock_mhz")))
        ]
        per: dict[str, dict[str, float]] = {}
        for name, (t0, t1) in windows.items():
            inside = [s for s in samples if t0 <= s["t"] <= t1]
            if inside:
                per[name] = {k: float(np.mean([s[k] for s in inside if k in s])) for k in wanted}
        out["windows"] = per
    return out
