"""A synthetic week of DCGM exporter and vLLM metrics with known patterns, as OpenMetrics
text for `promtool tsdb create-blocks-from openmetrics` (real Prometheus backfill).

The deployment is the plan of tests/data/monitor/serving.yaml: 6 replicas of Llama 3 8B, one
H100 each, planned for 100 req/s on average and 200 at peak (design 240 with headroom).
Patterns (each switchable) are written the way the exporters would show them:

- idle night: 00:00-06:00 UTC at 5% of the planned peak;
- overloaded peak: 14:00-17:00 UTC at 1.5x the planned peak, with a queue;
- SLO breach: time to first token slows past the 500 ms SLO in the overloaded hours;
- slow GPU: node-b/gpu1 is 40% busier than its peers for the same work and power-throttled.

The GPUs follow the plan's own power model (idle + (TDP - idle) x activity) and activity
is 0.6 x the replica load, as the plan assumes, so power is on plan unless traffic is not.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

WEEK_S = 7 * 86400
INTERVAL_S = 300
PLANNED_PEAK = 200.0
REPLICA_CAPACITY = 53.0
GPUS = [("node-a", g) for g in range(4)] + [("node-b", g) for g in range(2)]
SLOW_GPU = ("node-b", 1)
TDP_W, IDLE_W = 700.0, 70.0
FB_USED_MIB = 74821245337.6 * 0.98 / 2**20
PROMPT_MEAN, OUTPUT_MEAN = 512.0, 128.0
TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                40.0, 80.0, 160.0, 640.0, 2560.0]  # fmt: skip
ITL_BUCKETS = [
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
]
TOKEN_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]

# Share of the planned peak per UTC hour.
DIURNAL = [0.05] * 6 + [
    0.2,
    0.35,
    0.5,
    0.6,
    0.65,
    0.7,
    0.75,
    0.8,
    1.5,
    1.5,
    1.5,
    0.8,
    0.7,
    0.6,
    0.5,
    0.4,
    0.25,
    0.1,
]
FLAT = [0.55, 0.56, 0.57, 0.58, 0.6, 0.6, 0.58, 0.6, 0.62, 0.62, 0.6, 0.6, 0.6, 0.62, 0.62, 0.62, 0.6, 0.6, 0.58, 0.58,
        0.57, 0.56, 0.55, 0.55]  # fmt: skip
OVERLOAD_HOURS = (14, 15, 16)


@dataclass(frozen=True)
class Scenario:
    shape: tuple[float, ...] = tuple(DIURNAL)
    slow_gpu: bool = True
    slo_breach: bool = True
    prompt_scale: float = 1.0
    itl_scale: float = 1.0  # decode slower than the plan's model by this factor
    days: float = 7.0


def _lognorm_cdf(x: np.ndarray, median: float, sigma: float) -> np.ndarray:
    from math import erf

    z = (np.log(np.maximum(x, 1e-12)) - math.log(median)) / (sigma * math.sqrt(2))
    return np.array([0.5 * (1 + erf(v)) for v in z])


def _lognorm_from_mean(mean: float, std: float) -> tuple[float, float]:
    sigma2 = math.log(1 + (std / mean) ** 2)
    return math.exp(math.log(mean) - sigma2 / 2), math.sqrt(sigma2)


def _fmt(v: float) -> str:
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


def series(sc: Scenario, end_s: int) -> dict[str, np.ndarray]:
    """Per-step arrays: rate, load, ttft median, itl median, activity per GPU."""
    n = int(sc.days * 86400 / INTERVAL_S)
    t = end_s - INTERVAL_S * np.arange(n, 0, -1)
    rng = np.random.default_rng(7)
    hours = (t // 3600) % 24
    shape = np.array(sc.shape)[hours]
    rate = PLANNED_PEAK * shape * (1 + 0.03 * rng.standard_normal(n))
    load = rate / (len(GPUS) * REPLICA_CAPACITY)
    overloaded = np.isin(hours, OVERLOAD_HOURS) & (shape > 1.0)
    ttft_med = np.where(overloaded & sc.slo_breach, 0.9, 0.06)
    itl_med = np.where(load > 0.8, 0.025, 0.012) * sc.itl_scale
    out = {
        "t": t,
        "rate": rate,
        "load": load,
        "ttft_med": ttft_med,
        "itl_med": itl_med,
        "overloaded": overloaded,
    }
    for host, g in GPUS:
        act = np.clip(0.6 * load + 0.02 + 0.005 * rng.standard_normal(n), 0, 1)
        if sc.slow_gpu and (host, g) == SLOW_GPU:
            act = np.clip(act * 1.4, 0, 0.99)
        out[f"act/{host}/{g}"] = act
    return out


def _hist_lines(name: str, labels: str, t: np.ndarray, counts: np.ndarray, cdf: np.ndarray, mean: np.ndarray,
                bounds: list[float]) -> Iterator[str]:  # fmt: skip
    """Cumulative histogram points: `counts` observations per step, bucket shares from `cdf`."""
    cum_n = np.cumsum(counts)
    cum_sum = np.cumsum(counts * mean)
    cum_b = np.cumsum(counts[:, None] * cdf, axis=0)
    for i, ts in enumerate(t):
        for j, le in enumerate(bounds):
            yield f'{name}_bucket{{{labels},le="{_fmt(le)}"}} {math.floor(cum_b[i, j])} {ts}'
        yield f'{name}_bucket{{{labels},le="+Inf"}} {math.floor(cum_n[i])} {ts}'
        yield f"{name}_count{{{labels}}} {math.floor(cum_n[i])} {ts}"
        yield f"{name}_sum{{{labels}}} {_fmt(round(cum_sum[i], 3))} {ts}"


def openmetrics(scenarios: dict[str, Scenario], end_s: int) -> str:
    """One OpenMetrics document holding every scenario, each under its own `cluster` label
    (families are not interleaved, as the format requires)."""
    data = {name: series(sc, end_s) for name, sc in scenarios.items()}
    lines: list[str] = []
    for name, kind in (("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge"), ("DCGM_FI_DEV_POWER_USAGE", "gauge"),
                       ("DCGM_FI_DEV_FB_USED", "gauge"), ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "unknown"),
                       ("DCGM_FI_DEV_POWER_VIOLATION", "unknown")):  # fmt: skip
        lines.append(f"# TYPE {name} {kind}")
        for cluster, sc in scenarios.items():
            lines.extend(_gpu_lines(name, cluster, sc, data[cluster]))
    vllm: dict[str, list[str]] = {}
    for cluster, sc in scenarios.items():
        for family, fl in _vllm_families(cluster, sc, data[cluster]).items():
            vllm.setdefault(family, fl[:1]).extend(fl[1:])
    for family_lines in vllm.values():
        lines.extend(family_lines)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _gpu_lines(name: str, cluster: str, sc: Scenario, s: dict[str, np.ndarray]) -> Iterator[str]:
    t = s["t"]
    for h, g in GPUS:
        lab = f'gpu="{g}",UUID="GPU-{h}-{g}",Hostname="{h}",modelName="NVIDIA H100 80GB HBM3",job="dcgm",cluster="{cluster}"'
        act = s[f"act/{h}/{g}"]
        power = IDLE_W + (TDP_W - IDLE_W) * act
        if name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
            vals = act
        elif name == "DCGM_FI_DEV_POWER_USAGE":
            vals = power
        elif name == "DCGM_FI_DEV_FB_USED":
            vals = np.full(t.size, round(FB_USED_MIB))
        elif name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
            vals = np.cumsum(power * INTERVAL_S * 1000.0)  # mJ
        else:
            throttled = 0.3 * (act > 0.2) if sc.slow_gpu and (h, g) == SLOW_GPU else np.zeros(t.size)
            vals = np.cumsum(throttled * INTERVAL_S * 1e9)  # ns
        yield from (f"{name}{{{lab}}} {_fmt(round(float(v), 4))} {ts}" for v, ts in zip(vals, t, strict=True))


def _vllm_families(cluster: str, sc: Scenario, s: dict[str, np.ndarray]) -> dict[str, list[str]]:
    t = s["t"]
    lab = f'model_name="meta-llama/Llama-3.1-8B-Instruct",job="vllm",cluster="{cluster}"'
    out: dict[str, list[str]] = {}
    n_req = s["rate"] * INTERVAL_S
    out["vllm:request_success"] = [
        f'vllm:request_success_total{{{lab},finished_reason="stop"}} {_fmt(round(v, 2))} {ts}'
        for v, ts in zip(np.cumsum(n_req), t, strict=True)
    ]
    e2e = s["ttft_med"] + OUTPUT_MEAN * s["itl_med"]
    waiting = np.where(s["overloaded"], 40.0, 0.0)
    kv = np.clip(0.1 + 0.7 * s["load"], 0, 0.97)
    for name, vals in (("vllm:num_requests_running", s["rate"] * e2e), ("vllm:num_requests_waiting", waiting),
                       ("vllm:kv_cache_usage_perc", kv)):  # fmt: skip
        out[name] = [
            f"{name}{{{lab}}} {_fmt(round(float(v), 4))} {ts}" for v, ts in zip(vals, t, strict=True)
        ]
    ttft_cdf = np.vstack([_lognorm_cdf(np.array(TTFT_BUCKETS), m, 0.5) for m in s["ttft_med"]])
    itl_cdf = np.vstack([_lognorm_cdf(np.array(ITL_BUCKETS), m, 0.3) for m in s["itl_med"]])
    n_tok = n_req * OUTPUT_MEAN
    for name, counts, cdf, mean, bounds in (
        ("vllm:time_to_first_token_seconds", n_req, ttft_cdf, s["ttft_med"] * math.exp(0.125), TTFT_BUCKETS),
        ("vllm:inter_token_latency_seconds", n_tok, itl_cdf, s["itl_med"] * math.exp(0.045), ITL_BUCKETS),
    ):
        out[name] = list(_hist_lines(name, lab, t, counts, cdf, mean, bounds))
    for name, m, sd in (("vllm:request_prompt_tokens", PROMPT_MEAN * sc.prompt_scale, 256.0 * sc.prompt_scale),
                        ("vllm:request_generation_tokens", OUTPUT_MEAN, 64.0)):  # fmt: skip
        med, sig = _lognorm_from_mean(m, sd)
        cdf = np.tile(_lognorm_cdf(np.array(TOKEN_BUCKETS, dtype=float), med, sig), (t.size, 1))
        out[name] = list(
            _hist_lines(name, lab, t, n_req, cdf, np.full(t.size, m), [float(b) for b in TOKEN_BUCKETS])
        )
    kinds = {"vllm:request_success": "counter", "vllm:num_requests_running": "gauge",
             "vllm:num_requests_waiting": "gauge", "vllm:kv_cache_usage_perc": "gauge"}  # fmt: skip
    return {k: [f"# TYPE {k} {kinds.get(k, 'histogram')}"] + v for k, v in out.items()}


# A fleet: many GPUs at a short scrape interval, written straight to a file (never held whole).
FLEET_GPUS_PER_NODE = 8
FLEET_BUSY, FLEET_IDLE = 0.75, 0.08  # activity by day (06:00-22:00 UTC) and by night
FLEET_SLOW = (17, 3)  # node n17, GPU 3: half as busy as its peers and power-throttled
FLEET_SLOW_ACTIVITY = 0.4
FLEET_THROTTLED = 0.3  # seconds throttled per second while busy
FLEET_METRICS = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_VIOLATION")


def fleet_activity(t: np.ndarray, gpu: int) -> np.ndarray:
    """One GPU's activity at times `t`: the fleet's day/night shape, a little noise, the slow GPU slower."""
    hours = (t // 3600) % 24
    base = np.where((hours >= 6) & (hours < 22), FLEET_BUSY, FLEET_IDLE)
    noise = 0.02 * np.random.default_rng(gpu).standard_normal(t.size)
    act = np.clip(base + noise, 0.0, 1.0)
    if (gpu // FLEET_GPUS_PER_NODE, gpu % FLEET_GPUS_PER_NODE) == FLEET_SLOW:
        act = np.where(base > 0.5, FLEET_SLOW_ACTIVITY, act)
    return np.round(act, 3)


def write_fleet_openmetrics(
    path: str, gpus: int, days: float, interval_s: int, end_s: int, metrics: tuple[str, ...] = FLEET_METRICS
) -> int:
    """`gpus` GPUs (8 a node, hosts n0, n1, ...) every `interval_s` for `days` up to `end_s`, as
    OpenMetrics for promtool; returns the number of samples. Memory: one GPU's series at a time."""
    n = int(days * 86400 / interval_s)
    t = end_s - interval_s * np.arange(n - 1, -1, -1, dtype=np.int64)
    stamps = [f" {ts}\n" for ts in t.tolist()]
    table = [f"{i / 1000:.3f}" for i in range(1001)]  # activity to 3 decimals: 1,001 strings
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for name in metrics:
            f.write(f"# TYPE {name} {'unknown' if name.endswith('VIOLATION') else 'gauge'}\n")
            for gpu in range(gpus):
                node, g = divmod(gpu, FLEET_GPUS_PER_NODE)
                head = f'{name}{{Hostname="n{node}",gpu="{g}"}} '
                act = fleet_activity(t, gpu)
                f.write("".join(head + v + ts for v, ts in zip(_fleet_values(name, act, gpu, interval_s, table),
                                                               stamps, strict=True)))  # fmt: skip
                count += t.size
        f.write("# EOF\n")
    return count


def _fleet_values(name: str, act: np.ndarray, gpu: int, interval_s: int, table: list[str]) -> list[str]:
    if name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
        return [table[i] for i in np.rint(act * 1000).astype(np.int64).tolist()]
    if name == "DCGM_FI_DEV_POWER_USAGE":
        return [f"{w:.1f}" for w in (IDLE_W + (TDP_W - IDLE_W) * act).tolist()]
    slow = (gpu // FLEET_GPUS_PER_NODE, gpu % FLEET_GPUS_PER_NODE) == FLEET_SLOW
    if not slow:
        return ["0"] * act.size
    throttled = FLEET_THROTTLED * (act > 0.2) * interval_s * 1e9  # ns per interval
    return [str(int(v)) for v in np.cumsum(throttled).tolist()]


def backfill(
    openmetrics_path: str, data_dir: str, promtool: str, timeout_s: float = 1800.0, block: str = "168h"
) -> None:
    """TSDB blocks from an OpenMetrics file, as an operator backfills (promtool); promtool reads the
    file once per block, so a long synthetic history goes faster in one long block."""
    import subprocess

    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", f"--max-block-duration={block}", "-q",
         openmetrics_path, data_dir],
        check=True, capture_output=True, timeout=timeout_s,
    )  # fmt: skip


@contextlib.contextmanager
def prometheus_on_loopback(
    prometheus: str, data_dir: str, workdir: str, ready_s: float = 60.0
) -> Iterator[str]:
    """A Prometheus serving `data_dir` on 127.0.0.1 (no scrapes, long retention); yields its URL."""
    import socket
    import subprocess
    import time
    import urllib.request
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    config = Path(workdir) / "prometheus.yml"
    config.write_text("global: {scrape_interval: 1m}\nscrape_configs: []\n", encoding="utf-8")
    log = open(Path(workdir) / "prometheus.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [prometheus, f"--config.file={config}", f"--storage.tsdb.path={data_dir}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=3650d"],
        stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + ready_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError(
                    "Prometheus did not become ready: "
                    + (Path(workdir) / "prometheus.log").read_text()[-2000:]
                )
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
