"""How sure a plan is: P10, P50 and P90 of its key numbers from a Monte Carlo over the
efficiencies' ranges (DESIGN.md, principle 3).

Method. The performance model is not linear in the efficiencies (overlapped
communication hides until it does not; decode is the larger of a memory and a compute
time), and `train_step` deduplicates layer shapes, so a Hardware whose fields are arrays
does not broadcast through it. Instead, the chosen configuration is re-evaluated with the
real model once per efficiency at +-10% (central finite differences in log space), which
gives the elasticity e_f = d ln T / d ln f of each time T to each efficiency f at the
operating point. The Monte Carlo is then vectorised over samples:

    ln T_sample = ln T_base + sum_f e_f ln(m_f),   m_f ~ triangular(low_f, 1, high_f)

with m_f the sampled multiplier on the catalog efficiency (clipped so that no efficiency
exceeds 0.99). A measured spread from a calibration (lognormal, sigma) multiplies on top.
The first-order expansion is cross-checked against full re-evaluations in the tests.

Training: time to train, GPU-hours and cost scale with the step time (goodput does not
depend on it). Serving: a replica's capacity scales with the inverse of its GPU time per
request (prefill share x prefill factor + decode share x decode factor); the replicas
needed follow from it; latency percentiles at the planned load scale with the prefill
factor (TTFT), the decode factor (TPOT) and their mix (end to end). Queueing grows faster
than linearly near saturation and is not re-simulated, so the latency P90 is optimistic
for a plan running close to its SLO capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rightsize.catalog import get_accelerator, get_node
from rightsize.catalog.families import family_sigma, validation_of
from rightsize.perf.hardware import Hardware
from rightsize.perf.inference import Replica
from rightsize.perf.step import train_step
from rightsize.perf.workload import RECOMPUTE_CODES, ParallelConfigs
from rightsize.search.calibrated import calibrated_hardware, power_limit_of
from rightsize.search.constraints import margins_of
from rightsize.search.ground import ground_report, position
from rightsize.search.uncertainty_whole_run import method_note as whole_run_method
from rightsize.search.uncertainty_whole_run import whole_run_samples

SAMPLES = 2000
SEED = 0
# Relative step of the finite differences: large enough to step over the kinks of
# overlap (min/max), small enough to stay first order over the ranges below.
FD_STEP = 0.10
# No efficiency reaches the peak: sampled values are capped here.
MAX_EFFICIENCY = 0.99
# Quantiles kept in the output (every 5%): enough to say which percentile a margin covers.
QUANTILE_STEPS = np.linspace(0.0, 1.0, 21)


@dataclass(frozen=True)
class EfficiencyRange:
    """A multiplier on a catalog efficiency: triangular(low, 1, high)."""

    field: str  # Hardware field
    low: float
    high: float
    source: str


# The spread of each efficiency around its catalog value, skewed low: catalog GEMM and
# bandwidth fractions are best cases. The widths put the step-time P10-P90 of the bundled
# examples at about -2% / +12% of the plan, in line with the model's errors on published
# runs (`rightsize validate --holdout`: median |error| 5% on step time, 19% on held-out
# tokens/s per GPU; 3% on the bundled set the efficiencies were fitted on).
EFFICIENCY_RANGES: tuple[EfficiencyRange, ...] = (
    EfficiencyRange(
        "gemm_fraction",
        0.80,
        1.10,
        "H100 SXM BF16 GEMMs: 0.803 of peak best-shape (MAMF) vs ~0.73 on Llama-70B shapes "
        "(SemiAnalysis 2024-12), ratio 0.91; MI300X moved 0.60 -> 0.51 between ROCm releases",
    ),
    EfficiencyRange(
        "attention_fraction",
        0.75,
        1.15,
        "attention fractions are estimates by analogy (FA2/FA3 scaled by GEMM ratios), not measured",
    ),
    EfficiencyRange(
        "memory_bw_fraction",
        0.88,
        1.05,
        "measured HBM stream fractions span 0.81 (MI300X, arXiv 2510.27583) to 0.92 (GB200, Azure)",
    ),
    EfficiencyRange(
        "scaleup_bw_fraction",
        0.80,
        1.10,
        "NCCL all-reduce bus bandwidth on 8x A100 NVLink is 230-250 of 300 GB/s (0.77-0.83); "
        "NVLink SHARP (NVLS) can exceed the ring figure",
    ),
    EfficiencyRange(
        "scaleout_bw_fraction",
        0.65,
        1.05,
        "shared or oversubscribed fabrics, ECMP collisions and RoCE congestion lose 10-30% of line "
        "rate; rail-optimised InfiniBand reaches ~0.9",
    ),
)


def _triangular(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {r.field: rng.triangular(r.low, 1.0, r.high, size=n) for r in EFFICIENCY_RANGES}


def _capped(mult: dict[str, np.ndarray], hw: Hardware) -> dict[str, np.ndarray]:
    out = {}
    for f, m in mult.items():
        base = float(getattr(hw, f))
        out[f] = np.minimum(m, MAX_EFFICIENCY / base) if base > 0 else m
    return out


def _elasticities(hw: Hardware, time_of: Any) -> dict[str, float]:
    """d ln T / d ln f for each efficiency f, by central differences on the real model."""
    out = {}
    for r in EFFICIENCY_RANGES:
        base = float(getattr(hw, r.field))
        if base <= 0:
            out[r.field] = 0.0
            continue
        hi = min(base * (1 + FD_STEP), MAX_EFFICIENCY)
        lo = base * (1 - FD_STEP)
        t_hi = time_of(hw.with_overrides(**{r.field: hi}))
        t_lo = time_of(hw.with_overrides(**{r.field: lo}))
        out[r.field] = (math.log(t_hi) - math.log(t_lo)) / (math.log(hi) - math.log(lo))
    return out


def _factor(elasticity: dict[str, float], mult: dict[str, np.ndarray]) -> np.ndarray:
    log_k = sum(e * np.log(mult[f]) for f, e in elasticity.items())
    return np.exp(np.asarray(log_k, dtype=np.float64))


def quantiles(samples: np.ndarray, q: np.ndarray) -> np.ndarray:
    """numpy's default ('linear') quantiles by sorting once and interpolating the order
    statistics: the same numbers as np.quantile, without its masked-array import."""
    x = np.sort(np.asarray(samples, dtype=np.float64).ravel())
    return np.interp(np.asarray(q, dtype=np.float64) * (x.size - 1), np.arange(x.size), x)


def summary(samples: np.ndarray, base: float | None = None) -> dict[str, Any]:
    """P10/P50/P90, the mean and every 5% quantile of one sampled quantity."""
    q = quantiles(samples, QUANTILE_STEPS)
    p10, p50, p90 = quantiles(samples, np.array([0.1, 0.5, 0.9]))
    out: dict[str, Any] = {
        "p10": float(p10),
        "p50": float(p50),
        "p90": float(p90),
        "mean": float(np.mean(samples)),
        "quantiles": [float(v) for v in q],
    }
    if base is not None:
        out["base"] = float(base)
    return out


def coverage(metric: dict[str, Any], value: float) -> float:
    """Share of the sampled spread at or below `value` (from the 5% quantiles), 0..1."""
    q = np.asarray(metric["quantiles"], dtype=np.float64)
    if value <= q[0]:
        return 0.0
    if value >= q[-1]:
        return 1.0
    return float(np.interp(value, q, QUANTILE_STEPS))


def _ranges() -> list[dict[str, Any]]:
    return [
        {"efficiency": r.field, "low": r.low, "mode": 1.0, "high": r.high, "source": r.source}
        for r in EFFICIENCY_RANGES
    ]


def _measured(rng: np.random.Generator, n: int, sigma: float | None) -> np.ndarray:
    return np.exp(rng.normal(0.0, sigma, size=n)) if sigma else np.ones(n)


def _train_hardware(plan: Any, spec: Any, calibration: dict[str, dict[str, float]] | None) -> Hardware:
    b = plan.best
    return calibrated_hardware(
        get_accelerator(b.accelerator),
        get_node(b.node),
        spec.training.precision,
        calibration,
        power_limit_of(spec, b.accelerator),
    )


def parallel_row(parallel: dict[str, Any]) -> ParallelConfigs:
    """The one-row ParallelConfigs of a candidate's `parallel` dict."""
    p = dict(parallel)
    rec = p.get("recompute", "none")
    p["recompute"] = RECOMPUTE_CODES[rec] if isinstance(rec, str) else int(rec)
    return ParallelConfigs(**{k: np.array([v]) for k, v in p.items()})


def _family_entry(accelerator: str, kind: str) -> dict[str, Any]:
    """The accelerator family's validation status on `kind` and the error sigma it adds (issue 28)."""
    v = validation_of(accelerator, kind)
    return {"family": v.family, "kind": kind, "sigma": v.sigma, "status": v.headline(), "rows": v.rows}


def training_uncertainty(
    plan: Any,
    spec: Any,
    *,
    samples: int = SAMPLES,
    seed: int = SEED,
    measured_sigma: float | None = None,
    calibration: dict[str, dict[str, float]] | None = None,
    exclude_ground: tuple[str, ...] = (),
) -> dict[str, Any]:
    """P10/P50/P90 of step time, time to train, GPU-hours and cost of the chosen configuration.

    Two spreads multiply: the efficiencies' ranges (through the step model's elasticities)
    and the model's own error, a lognormal whose sigma grows with the distance from the
    validated runs (`search.ground`). `exclude_ground` leaves runs out of the ground (the
    validation of a run must not count the run itself).

    Longer than 80 lines for one reason: the sampled figures (step, time, GPU-hours, cost, MFU)
    and the model-error, family and whole-run spreads meet here, each from its own module."""
    from rightsize.search.train import workload_from_spec
    from rightsize.search.train_demand import dci_link

    b = plan.best
    w = workload_from_spec(spec)
    cfg = parallel_row(b.parallel)
    hw = _train_hardware(plan, spec, calibration)

    dci = dci_link(get_node(b.node), b.gpus)  # a cluster across buildings pays its DCI term too

    def step_of(h: Hardware) -> float:
        return float(train_step(w, cfg, h, dci=dci).step_time[0])

    el = _elasticities(hw, step_of)
    ground = ground_report(
        position(w.arch, w.seq_len, w.precision, w.method, b.accelerator, b.parallel), exclude_ground
    )
    rng = np.random.default_rng(seed)
    mult = _capped(_triangular(rng, samples), hw)
    # The model error is the wider of the ground's (distance to validated runs) and the
    # family's own (its published rows' spread, wide where it has few or none: issue 28).
    sigma = max(ground["sigma"], family_sigma(b.accelerator, "training"))
    k = _factor(el, mult) * _measured(rng, samples, measured_sigma) * _measured(rng, samples, sigma)
    # The spread is relative: it scales the plan's own figures (which may carry a calibration).
    metrics: dict[str, Any] = {"step_time_s": summary(b.step_time_s * k, b.step_time_s)}
    # The run's time, GPU-hours and cost spread as its whole run does (each part with its own
    # spread, `search.uncertainty_whole_run`), else with the step time.
    whole = getattr(getattr(getattr(plan, "sizing", None), "run", None), "whole_run", None)
    share = float(b.step.get("straggler_s", 0.0)) / b.step_time_s if b.step_time_s else 0.0
    run_samples = whole_run_samples(whole, k, seed, share)
    run_k = run_samples / float(whole.total_s) if run_samples is not None and whole is not None else k
    for name, value in (
        ("time_to_train_s", b.time_to_train_s),
        ("gpu_hours", b.gpu_hours),
        ("cost_usd", b.cost_usd),
    ):
        if value is not None:
            metrics[name] = summary(value * run_k, value)
    metrics["tokens_per_s_per_gpu"] = summary(b.tokens_per_s_per_gpu / k, b.tokens_per_s_per_gpu)
    metrics["mfu"] = summary(b.mfu / k, b.mfu)
    out: dict[str, Any] = {
        "kind": "training",
        "method": "first-order elasticities from the step model (central differences, +-10%), "
        "vectorised Monte Carlo over triangular efficiency multipliers, times the model error "
        "(lognormal, sigma from the distance to validated runs)",
        "samples": samples,
        "seed": seed,
        "measured_sigma": measured_sigma,
        "ranges": _ranges(),
        "elasticities": el,
        "ground": ground,
        "family": _family_entry(b.accelerator, "training"),
        "metrics": metrics,
    }
    if run_samples is not None:
        out["method"] += "; " + whole_run_method()
    deadline = getattr(plan, "deadline_s", None)
    if deadline and b.time_to_train_s is not None:
        ttt = b.time_to_train_s * run_k
        out["deadline"] = {
            "deadline_s": deadline,
            "probability_met": float(np.mean(ttt <= deadline)),
            "margin_fraction": deadline / metrics["time_to_train_s"]["p50"] - 1.0,
        }
    return out


def _serving_point(plan: Any, spec: Any) -> tuple[float, float, float, float]:
    """(prompt tokens to prefill, output tokens, decode batch, total context) at the planned load."""
    b = plan.best
    tr = spec.traffic
    prompt = float(tr.prompt_tokens.mean_tokens)
    output = float(tr.output_tokens.mean_tokens)
    prefill = max(1.0, prompt * (1.0 - float(getattr(tr, "prefix_cache_hit_rate", 0.0) or 0.0)))
    if plan.scenario == "fixed_batch":
        batch = float(spec.serving.batch or 1)
    elif plan.scenario == "serving":
        rate = b.design_rate_rps / max(b.replicas, 1)
        tpot = b.latency_s.get("tpot_p50_s") or 0.03
        batch = max(1.0, rate * output * tpot)
    else:  # offline: as many sequences as the KV cache holds
        batch = max(1.0, float(b.memory.get("kv_capacity_tokens", 0.0)) / (prompt + output))
    return prefill, output, batch, batch * (prompt + output / 2.0)


def serving_uncertainty(
    plan: Any,
    spec: Any,
    *,
    samples: int = SAMPLES,
    seed: int = SEED,
    measured_sigma: float | None = None,
    calibration: dict[str, dict[str, float]] | None = None,
) -> dict[str, Any]:
    """P10/P50/P90 of replica capacity, replicas needed, cost per hour and latency percentiles."""
    b = plan.best
    rep = Replica.build(
        spec.model,
        get_accelerator(b.accelerator),
        get_node(b.node),
        b.tp,
        b.weight_precision,
        b.kv_precision,
        (calibration or {}).get(b.accelerator),
        spec.engine.name,
        power_limit_w=power_limit_of(spec, b.accelerator),
    )
    prefill_tokens, output, batch, ctx = _serving_point(plan, spec)

    def prefill_of(h: Hardware) -> float:
        return float(replace(rep, hw=h).prefill_s(prefill_tokens))

    def decode_of(h: Hardware) -> float:
        return float(replace(rep, hw=h).decode_step_s(batch, ctx))

    hw = rep.hw
    el_p = _elasticities(hw, prefill_of)
    el_d = _elasticities(hw, decode_of)
    p_s = prefill_of(hw)
    d_s = output * decode_of(hw) / batch
    share_p = p_s / (p_s + d_s)
    rng = np.random.default_rng(seed)
    mult = _capped(_triangular(rng, samples), hw)
    extra = _measured(rng, samples, measured_sigma) * _measured(
        rng, samples, family_sigma(b.accelerator, "serving")
    )
    k_p = _factor(el_p, mult) * extra
    k_d = _factor(el_d, mult) * extra
    gpu_time_factor = share_p * k_p + (1.0 - share_p) * k_d
    metrics: dict[str, Any] = {
        "replica_capacity_rps": summary(b.replica_capacity_rps / gpu_time_factor, b.replica_capacity_rps),
        "output_tokens_per_s": summary(b.output_tokens_per_s / gpu_time_factor, b.output_tokens_per_s),
    }
    out: dict[str, Any] = {
        "kind": "serving",
        "method": "first-order elasticities of prefill and decode times (central differences, +-10%), "
        "vectorised Monte Carlo over triangular efficiency multipliers; latencies scaled analytically "
        "at the planned load (queueing not re-simulated)",
        "samples": samples,
        "seed": seed,
        "measured_sigma": measured_sigma,
        "ranges": _ranges(),
        "elasticities": {"prefill": el_p, "decode": el_d},
        "prefill_share_of_gpu_time": share_p,
        "operating_point": {"decode_batch": batch, "context_tokens": ctx},
        "family": _family_entry(b.accelerator, "serving"),
        "metrics": metrics,
    }
    if plan.scenario == "serving" and b.design_rate_rps > 0:
        out["replicas"] = _replica_ranges(
            b, margins_of(spec).utilisation_target, (k_p, k_d), gpu_time_factor, metrics
        )
    metrics.update(_latency_ranges(b.latency_s or {}, k_p, k_d))
    return out


def _replica_ranges(
    b: Any,
    util: float,
    phase_slowdowns: tuple[np.ndarray, np.ndarray],
    gpu_time_factor: np.ndarray,
    metrics: dict[str, Any],
) -> dict[str, Any]:
    """Replicas needed and cost per hour across the samples (into `metrics`), and how often
    the planned count suffices. A disaggregated plan's replicas are two pools, each sized by
    its own SLO and slowed by its own phase (prefill `k_p`, decode `k_d`)."""
    pools = _disaggregated_pools(b)
    if pools:
        metrics.pop("replica_capacity_rps", None)
        for pool, k in zip(pools, phase_slowdowns, strict=True):
            metrics[f"{pool.role}_replica_capacity_rps"] = summary(
                pool.replica_capacity_rps / k, pool.replica_capacity_rps
            )
        needed = np.sum(
            [
                _pool_needed(b.design_rate_rps, util, pool.replicas, pool.replica_capacity_rps, k)
                for pool, k in zip(pools, phase_slowdowns, strict=True)
            ],
            axis=0,
        )
    else:
        needed = _pool_needed(b.design_rate_rps, util, None, b.replica_capacity_rps, gpu_time_factor)
    metrics["replicas"] = summary(needed, b.replicas)
    if b.cost_usd_per_hour is not None:
        per_replica = b.cost_usd_per_hour / b.replicas
        metrics["cost_usd_per_hour"] = summary(needed * per_replica, b.cost_usd_per_hour)
    return {"planned": b.replicas, "probability_sufficient": float(np.mean(needed <= b.replicas))}


def _disaggregated_pools(b: Any) -> tuple[Any, Any] | None:
    """(prefill pool, decode pool) when the plan chose disaggregated serving, else None."""
    d = getattr(b, "disaggregation", None)
    if d is None or d.chosen != "disaggregated" or d.prefill is None or d.decode is None:
        return None
    return d.prefill, d.decode


def _pool_needed(
    design_rps: float, util: float, planned: int | None, capacity_rps: float, slowdown: np.ndarray
) -> np.ndarray:
    """Replicas a pool needs in each sample: the design rate over the sampled capacity at the
    utilisation target, plus any replicas the plan added beyond that rule (grown until the
    simulated end-to-end SLOs held), so the unperturbed sample needs exactly the plan's count."""

    def rule(cap: np.ndarray | float) -> np.ndarray:
        return np.maximum(1.0, np.ceil(design_rps / (np.asarray(cap) * util) - 1e-9))

    grown = 0.0 if planned is None else max(0.0, planned - float(rule(capacity_rps)))
    return rule(capacity_rps / slowdown) + grown


def _latency_ranges(lat: dict[str, float], k_p: np.ndarray, k_d: np.ndarray) -> dict[str, Any]:
    """Each latency's range: TTFT scales with prefill, TPOT with decode, end to end with
    both in the planned shares of its median."""
    ttft50, e2e50 = lat.get("ttft_p50_s"), lat.get("e2e_p50_s")
    e2e_factor = k_d
    if ttft50 is not None and e2e50:
        w_p = min(1.0, ttft50 / e2e50)
        e2e_factor = w_p * k_p + (1.0 - w_p) * k_d
    out = {}
    for key, value in lat.items():
        f = k_p if key.startswith("ttft") else k_d if key.startswith("tpot") else e2e_factor
        out[f"latency_{key}"] = summary(value * f, value)
    return out


def spread_factors(
    hw: Hardware, time_of: Any, sigma: float, *, samples: int = SAMPLES, seed: int = SEED
) -> np.ndarray:
    """Samples of the multiplier on a time `time_of(hw)`: the efficiency spread through its
    elasticities, times the model error (lognormal, `sigma`). For callers outside a plan
    (`rightsize validate`'s serving rows), the same model `training_uncertainty` uses."""
    el = _elasticities(hw, time_of)
    rng = np.random.default_rng(seed)
    mult = _capped(_triangular(rng, samples), hw)
    return _factor(el, mult) * _measured(rng, samples, sigma)
