"""Measured against planned: over the window and by hour of day, as advisor findings.

Each rule reads the measurements (`Observed`) and the plan (`Planned`) and returns a
`Finding` (the advisor's record: rule, category, impact, title, evidence, fix) or None.
The evidence carries the measured series by hour of day next to the planned value, so a
reader can check the claim. Thresholds are named constants with the reason for each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rightsize.advise.findings import Finding
from rightsize.monitor import gpu_view
from rightsize.monitor.fleet import BUSY_ACTIVITY
from rightsize.monitor.gpu_view import mean_activity
from rightsize.monitor.plan_view import Planned
from rightsize.monitor.queries import Observed

__all__ = ["BUSY_ACTIVITY", "by_hour", "compare", "mean", "mean_activity", "pct", "replicas_by_hour"]

HOURS = 24
# A replica needs at most half the planned replicas for this many hours a day before
# scaling by hour pays (fewer than 4 h is within a normal evening ramp).
IDLE_MIN_HOURS = 4
IDLE_FRACTION = 0.5
# A GPU whose busy-time activity differs from the median of its peers by more than this
# (absolute, and relative) is out of step: in a synchronous job everyone waits for it.
STRAGGLER_ABS = 0.10
STRAGGLER_REL = 0.20
STRAGGLER_MIN_GPUS = 3
# Steps when the median GPU is at least BUSY_ACTIVITY (fleet.py) busy count as "busy" for the
# straggler test.
# A GPU throttled (power or thermal) this share of the time while its peers are not.
THROTTLE_SHARE = 0.05
# SLO breached in more than 2% of the window's steps (a 95th-percentile SLO tolerates
# slow requests, not slow half-hours).
SLO_BREACH_SHARE = 0.02
# Energy above the planned typical draw by more than 25%: the power and cost budget is wrong.
POWER_OVER = 1.25
# Memory above the planned peak by 5% (allocator slack) risks OOM under a longer batch.
MEMORY_OVER = 1.05
# Prompt or output lengths off the spec by more than 25% change KV cache and prefill cost.
LENGTH_OFF = 0.25
# Training GPUs busier than this on average are well used; below, the job waits on input,
# communication or the scheduler.
TRAINING_ACTIVITY_MIN = 0.5


def hour_of_day(grid: np.ndarray) -> np.ndarray:
    return ((grid // 3600) % HOURS).astype(int)


def by_hour(grid: np.ndarray, values: np.ndarray, stat: str = "mean") -> list[float | None]:
    """The series folded onto the 24 hours of the day (UTC): mean, p95 or max per hour."""
    hours = hour_of_day(grid)
    out: list[float | None] = []
    for h in range(HOURS):
        v = values[(hours == h) & np.isfinite(values)]
        if v.size == 0:
            out.append(None)
        elif stat == "p95":
            out.append(float(np.percentile(v, 95)))
        elif stat == "max":
            out.append(float(v.max()))
        else:
            out.append(float(v.mean()))
    return out


def pct(values: np.ndarray, q: float) -> float | None:
    v = values[np.isfinite(values)]
    return float(np.percentile(v, q)) if v.size else None


def mean(values: np.ndarray) -> float | None:
    v = values[np.isfinite(values)]
    return float(v.mean()) if v.size else None


def replicas_by_hour(obs: Observed, p: Planned) -> list[int | None]:
    """Replicas each hour needs: its P95 rate plus headroom over usable replica capacity."""
    rate = obs.serving.get("request_success")
    if rate is None or not p.replica_capacity_rps:
        return []
    per = p.replica_capacity_rps * p.utilisation_target
    if not (math.isfinite(per) and per > 0 and math.isfinite(p.headroom) and p.headroom >= 0):
        return []  # a plan without a usable capacity (hand-edited?) has no replica count to give
    return [
        None if r is None else max(1, math.ceil(r * (1.0 + p.headroom) / per - 1e-9))
        for r in by_hour(obs.grid, rate, "p95")
    ]


def _hours_text(hours: list[int]) -> str:
    if not hours:
        return "none"
    runs: list[tuple[int, int]] = []
    for h in sorted(hours):
        if runs and h == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], h)
        else:
            runs.append((h, h))
    return ", ".join(f"{a:02d}:00-{b + 1:02d}:00" for a, b in runs) + " UTC"


def _mean_where(values: np.ndarray, mask: np.ndarray) -> float | None:
    v = values[mask & np.isfinite(values)]
    return float(v.mean()) if v.size else None


def peak_over_plan(obs: Observed, p: Planned) -> Finding | None:
    rate = obs.serving.get("request_success")
    if rate is None or not p.peak_rate_rps:
        return None
    design = p.peak_rate_rps * (1.0 + p.headroom)
    p95, top = pct(rate, 95), pct(rate, 100)
    if p95 is None or p95 <= design:
        return None
    hourly = by_hour(obs.grid, rate, "p95")
    over = [h for h, r in enumerate(hourly) if r is not None and r > design]
    waiting = obs.serving.get("num_requests_waiting")
    needed = max((r for r in replicas_by_hour(obs, p) if r is not None), default=None)
    return Finding(
        rule="monitor_peak_over_plan",
        category="under-provisioning",
        impact=min(1.0, p95 / design - 1.0 + 0.15),
        title=(
            f"Traffic outgrew the plan: P95 {p95:.3g} req/s against a planned peak of {p.peak_rate_rps:.3g} "
            f"(+{p.headroom:.0%} headroom = {design:.3g}) during {_hours_text(over)}"
        ),
        evidence={
            "observed_rate_p95_rps": p95,
            "observed_rate_max_rps": top,
            "planned_peak_rps": p.peak_rate_rps,
            "planned_design_rps": design,
            "planned_usable_capacity_rps": p.usable_capacity_rps,
            "hours_over_design": _hours_text(over),
            "waiting_requests_mean_over_design": _mean_where(waiting, rate > design)
            if waiting is not None
            else None,
            "measured_series": "by_hour.rate_p95_rps, series.request_success",
            "planned_replicas": p.replicas,
            "replicas_needed_at_peak": needed,
        },
        fix=(
            f"Add replicas for the busy hours ({needed} instead of {p.replicas} at the peak) or re-plan with the "
            "observed traffic (see the re-plan below); until then the queue grows and latency SLOs break."
        ),
    )


def idle_hours(obs: Observed, p: Planned) -> Finding | None:
    need = replicas_by_hour(obs, p)
    if need:
        idle = [h for h, n in enumerate(need) if n is not None and n <= p.replicas * IDLE_FRACTION]
        spare = sum((p.replicas - n) for n in need if n is not None and n < p.replicas)
        share = spare / (p.replicas * HOURS) if p.replicas else 0.0
        series: dict[str, Any] = {
            "measured_series": "by_hour.replicas_needed",
            "planned_replicas": p.replicas,
        }
    else:
        act = mean_activity(obs)
        if act is None or p.kind != "training":
            return None
        hourly = by_hour(obs.grid, act)
        idle = [h for h, a in enumerate(hourly) if a is not None and a < BUSY_ACTIVITY]
        share = len(idle) / HOURS
        series = {"measured_series": "by_hour.gpu_activity"}
    if len(idle) < IDLE_MIN_HOURS:
        return None
    saving = share * p.usd_per_month if p.usd_per_month else None
    return Finding(
        rule="monitor_idle_hours",
        category="over-provisioning",
        impact=min(1.0, share),
        title=f"Capacity sits idle {len(idle)} h a day ({_hours_text(idle)}): {share:.0%} of GPU-hours unneeded",
        evidence={
            **series,
            "idle_hours": _hours_text(idle),
            "idle_gpu_hour_share": share,
            "saving_usd_per_month": saving,
            "planned_usd_per_month": p.usd_per_month,
        },
        fix=(
            (
                "Scale replicas by hour (the replicas-by-hour table), or lend the idle GPUs to batch work at night"
                if p.kind == "serving"
                else "Queue more jobs into those hours, or release the GPUs while they idle"
            )
            + (f"; worth about ${saving:,.0f} a month on demand." if saving else ".")
        ),
    )


def straggler(obs: Observed, p: Planned) -> Finding | None:
    if gpu_view.activity_key(obs) is None or gpu_view.gpus_seen(obs)[0] < STRAGGLER_MIN_GPUS:
        return None
    found = gpu_view.busy_means(obs)
    if found is None:
        return None
    ids, means, throttle = found
    if len(ids) < STRAGGLER_MIN_GPUS:
        return None
    node = _slow_node(ids, means)
    if node is not None:
        return node
    worst = int(np.nanargmax(np.abs(means - np.nanmedian(means))))
    peers = np.delete(means, worst)
    med = float(np.nanmedian(peers))
    dev = float(means[worst] - med)
    peer_throttle = float(np.nanmedian(np.delete(throttle, worst))) if throttle.size else 0.0
    off_pace = abs(dev) > STRAGGLER_ABS and abs(dev) > STRAGGLER_REL * max(med, 1e-9)
    throttled = throttle.size > 0 and throttle[worst] > THROTTLE_SHARE and peer_throttle < THROTTLE_SHARE / 2
    if not (off_pace or throttled):
        return None
    gid = ids[worst]
    return Finding(
        rule="monitor_straggler_gpu",
        category="bottleneck",
        impact=min(1.0, max(abs(dev) / max(med, 1e-9), float(throttle[worst]) if throttle.size else 0.0)),
        title=(
            f"{gid} is out of step with its {len(peers)} peers: {means[worst]:.0%} busy against their median "
            f"{med:.0%}" + (f", throttled {throttle[worst]:.0%} of the time" if throttle.size else "")
        ),
        evidence={
            "gpu": gid,
            "activity_busy_mean": float(means[worst]),
            "peer_activity_busy_median": med,
            "activity_by_gpu": gpu_view.ids_text(ids, [float(m) for m in means]),
            "throttled_share": float(throttle[worst]) if throttle.size else None,
            "peer_throttled_share_median": peer_throttle if throttle.size else None,
            "activity_metric": next(
                (obs.used[k].name for k in ("gr_engine_active", "gpu_util") if k in obs.used), None
            ),
        },
        fix=(
            f"Inspect {gid}: clocks and throttle reasons (nvidia-smi -q -d PERFORMANCE), cooling and power cap, "
            "PCIe/NVLink errors; drain it or move the replica, since one slow GPU sets the pace of its group."
        ),
    )


def _slow_node(ids: list[str], means: np.ndarray) -> Finding | None:
    """A whole node out of step: every GPU on one host off the other hosts' median, same way."""
    hosts: dict[str, list[float]] = {}
    for gid, m in zip(ids, means, strict=True):
        hosts.setdefault(gid.rsplit("/", 1)[0], []).append(float(m))
    if len(hosts) < 2:
        return None
    host_mean = {h: float(np.mean(v)) for h, v in hosts.items()}
    centre = float(np.median(list(host_mean.values())))
    # only the node farthest from the middle can be the odd one out
    for host in sorted(hosts, key=lambda h: -abs(host_mean[h] - centre))[:1]:
        vals = hosts[host]
        others = [m for h, m in host_mean.items() if h != host]
        med = float(np.median(others))
        devs = [v - med for v in vals]
        same_way = all(d > STRAGGLER_ABS / 2 for d in devs) or all(d < -STRAGGLER_ABS / 2 for d in devs)
        dev = host_mean[host] - med
        if (
            len(vals) > 1
            and same_way
            and abs(dev) > STRAGGLER_ABS
            and abs(dev) > STRAGGLER_REL * max(med, 1e-9)
        ):
            return Finding(
                rule="monitor_straggler_node",
                category="bottleneck",
                impact=min(1.0, abs(dev) / max(med, 1e-9)),
                title=(
                    f"Node {host} ({len(vals)} GPUs) is out of step: {host_mean[host]:.0%} busy against "
                    f"{med:.0%} on the other nodes"
                ),
                evidence={
                    "node": host,
                    "node_activity_busy_mean": host_mean[host],
                    "other_nodes_activity_busy_median": med,
                    "activity_by_node": ", ".join(f"{h} {m:.0%}" for h, m in host_mean.items()),
                },
                fix=(
                    f"Inspect {host} as a whole: power and cooling of the chassis, its NICs and PCIe switches, "
                    "CPU frequency and input pipeline; drain it if it stays slow."
                ),
            )
    return None


def slo_breach(key: str, slo_key: str, label: str) -> Callable[[Observed, Planned], Finding | None]:
    def rule(obs: Observed, p: Planned) -> Finding | None:
        series, limit = obs.serving.get(key), p.slo.get(slo_key)
        if series is None or limit is None:
            return None
        finite = np.isfinite(series)
        if not finite.any():
            return None
        share = float((series[finite] > limit).mean())
        if share <= SLO_BREACH_SHARE:
            return None
        hourly = by_hour(obs.grid, series)
        hours = [h for h, v in enumerate(hourly) if v is not None and v > limit]
        worst = pct(series, 100)
        rate = obs.serving.get("request_success")
        loaded = rate is not None and p.peak_rate_rps is not None and (pct(rate, 95) or 0) > p.peak_rate_rps
        pc = f"P{p.slo_percentile:g}"
        return Finding(
            rule=f"monitor_slo_breach_{slo_key.removesuffix('_s')}",
            category="under-provisioning" if loaded else "bottleneck",
            impact=min(1.0, share + 0.1),
            title=(
                f"{label} {pc} above its SLO of {limit * 1e3:.0f} ms {share:.0%} of the time (worst "
                f"{(worst or 0) * 1e3:.0f} ms) during {_hours_text(hours)}"
            ),
            evidence={
                "slo_s": limit,
                "slo_percentile": p.slo_percentile,
                "planned_at_percentile_s": p.latency_s.get(slo_key),
                "observed_max_s": worst,
                "breached_share": share,
                "hours_breached": _hours_text(hours),
                "measured_series": f"by_hour.{'ttft_s' if slo_key == 'ttft_s' else 'itl_s'}, series.{key}",
                "metric": obs.used[key].name,
            },
            fix=(
                "More replicas for those hours (the load is above plan)"
                if loaded
                else "The load is within plan, so the replicas are slower than planned: check batch limits, "
                "KV-cache preemptions and stragglers, then re-plan with the observed efficiency"
            ),
        )

    return rule


def power_over(obs: Observed, p: Planned) -> Finding | None:
    avg = gpu_view.power_mean_w(obs)
    if avg is None or not p.gpu_typical_w:
        return None
    if avg <= p.gpu_typical_w * POWER_OVER:
        return None
    return Finding(
        rule="monitor_power_over_budget",
        category="under-provisioning",
        impact=min(1.0, avg / p.gpu_typical_w - 1.0),
        title=f"GPUs draw {avg:.0f} W on average against the {p.gpu_typical_w:.0f} W the power and energy plan assumed",
        evidence={
            "observed_mean_w_per_gpu": avg,
            "planned_typical_w_per_gpu": p.gpu_typical_w,
            "planned_tdp_w": p.gpu_tdp_w,
            "measured_series": "series.power_usage_by_gpu",
        },
        fix="Re-budget energy and cooling for the measured draw, or cap GPU power (nvidia-smi -pl) if the SLOs allow.",
    )


def memory_over(obs: Observed, p: Planned) -> Finding | None:
    top = gpu_view.memory_max_bytes(obs)
    if top is None or not p.memory_bytes_per_gpu:
        return None
    if top <= p.memory_bytes_per_gpu * MEMORY_OVER:
        return None
    return Finding(
        rule="monitor_memory_over_plan",
        category="under-provisioning",
        impact=min(1.0, top / p.memory_bytes_per_gpu - 1.0),
        title=f"GPU memory reached {top / 2**30:.1f} GiB against a planned peak of {p.memory_bytes_per_gpu / 2**30:.1f} GiB",
        evidence={
            "observed_max_bytes": top,
            "planned_peak_bytes": p.memory_bytes_per_gpu,
            "hbm_bytes": p.hbm_bytes_per_gpu,
        },
        fix="Find what grew (longer sequences, a larger batch, another process on the GPU) before it runs out of memory.",
    )


def lengths_off(obs: Observed, p: Planned) -> Finding | None:
    rows = {}
    for label, planned_mean in (("prompt", p.prompt_mean_tokens), ("output", p.output_mean_tokens)):
        hist = obs.lengths.get(label)
        if hist is None or not planned_mean or not math.isfinite(hist.mean):
            continue
        off = hist.mean / planned_mean - 1.0
        if abs(off) > LENGTH_OFF:
            rows[label] = (hist.mean, planned_mean, off)
    if not rows:
        return None
    text = "; ".join(
        f"{k} {m:.0f} tokens against {pm:.0f} planned ({o:+.0%})" for k, (m, pm, o) in rows.items()
    )
    return Finding(
        rule="monitor_lengths_differ",
        category="wrong-workload",
        impact=min(1.0, max(abs(o) for _, _, o in rows.values()) / 2),
        title=f"Requests are not the planned shape: {text}",
        evidence={f"{k}_mean_tokens": m for k, (m, _, _) in rows.items()}
        | {f"planned_{k}_mean_tokens": pm for k, (_, pm, _) in rows.items()},
        fix="Re-plan with the observed length distributions (below): KV cache per request and prefill cost follow them.",
    )


def training_underused(obs: Observed, p: Planned) -> Finding | None:
    if p.kind != "training":
        return None
    act = mean_activity(obs)
    avg = mean(act) if act is not None else None
    if avg is None or avg >= TRAINING_ACTIVITY_MIN:
        return None
    return Finding(
        rule="monitor_training_underused",
        category="bottleneck",
        impact=min(1.0, TRAINING_ACTIVITY_MIN - avg + 0.1),
        title=f"Training GPUs are busy only {avg:.0%} of the time on average",
        evidence={"gpu_activity_mean": avg, "measured_series": "by_hour.gpu_activity"},
        fix="Profile the step (rightsize profile train): input pipeline, exposed communication or checkpoint stalls.",
    )


def gpu_count(obs: Observed, p: Planned) -> Finding | None:
    """More or fewer GPUs report than the plan has: a different deployment than planned."""
    seen, ids = gpu_view.gpus_seen(obs)
    if not seen or not p.gpus or seen == p.gpus:
        return None
    more = seen > p.gpus
    return Finding(
        rule="monitor_gpu_count_differs",
        category="over-provisioning" if more else "under-provisioning",
        impact=min(1.0, abs(seen - p.gpus) / max(seen, p.gpus)),
        title=f"{seen} GPUs report metrics where the plan has {p.gpus}",
        evidence={"gpus_measured": seen, "gpus_planned": p.gpus, "gpu_ids": gpu_view.ids_text(ids)},
        fix=(
            "Check --gpu-selector matches only this deployment; if it does, the deployment is "
            + (
                "larger than planned: release the extra GPUs or re-plan."
                if more
                else "smaller than planned: add the missing GPUs or re-plan."
            )
        ),
    )


RULES: tuple[Callable[[Observed, Planned], Finding | None], ...] = (
    peak_over_plan,
    idle_hours,
    straggler,
    slo_breach("time_to_first_token", "ttft_s", "Time to first token"),
    slo_breach("inter_token_latency", "tpot_s", "Inter-token latency"),
    power_over,
    memory_over,
    lengths_off,
    training_underused,
    gpu_count,
)


def compare(obs: Observed, p: Planned) -> list[Finding]:
    """Every rule that fires, highest impact first."""
    found = [f for f in (rule(obs, p) for rule in RULES) if f is not None]
    return sorted(found, key=lambda f: -f.impact)
