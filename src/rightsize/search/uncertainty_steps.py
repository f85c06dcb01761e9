"""P10/P50/P90 for the vision and recommendation workloads, by the same method as training
and LLM serving (`rightsize.search.uncertainty`): the chosen option is re-evaluated with the
real model at +-10% of each efficiency (central differences in log space), which gives the
elasticity of its step (or service) time; the Monte Carlo then samples the efficiency
multipliers and scales the plan's own figures.

A job's time to train, GPU-hours and cost scale with the step time; its throughput with the
inverse. A service's capacity per GPU scales with the inverse of its service time per unit
of work; the GPUs (replicas) needed at the design rate follow from it, and the cost per hour
with them; the p99 latency scales with the service time (queueing is not re-simulated).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from rightsize.catalog import get_accelerator, get_node
from rightsize.perf.hardware import Hardware
from rightsize.search.calibrated import Calibration, calibrated_hardware, power_limit_of
from rightsize.search.uncertainty import (
    SAMPLES,
    SEED,
    _capped,
    _elasticities,
    _factor,
    _measured,
    _ranges,
    _triangular,
    summary,
)

METHOD = (
    "first-order elasticities of the chosen option's {what} time (central differences, +-10%), "
    "vectorised Monte Carlo over triangular efficiency multipliers"
)


def _sampled(
    hw: Hardware, time_of: Callable[[Hardware], float], samples: int, seed: int, sigma: float | None
) -> tuple[dict[str, float], np.ndarray]:
    el = _elasticities(hw, time_of)
    rng = np.random.default_rng(seed)
    mult = _capped(_triangular(rng, samples), hw)
    return el, _factor(el, mult) * _measured(rng, samples, sigma)


# A spread beyond the accelerator's efficiencies: (rng, samples) -> (elasticities, factor samples).
Extra = Callable[[np.random.Generator, int], tuple[dict[str, float], np.ndarray]]


def _with_extra(
    el: dict[str, float], k: np.ndarray, extra: Extra | None, seed: int, samples: int
) -> tuple[dict[str, float], np.ndarray]:
    if extra is None:
        return el, k
    more_el, more_k = extra(np.random.default_rng(seed + 1), samples)
    return {**el, **more_el}, k * more_k


def _spread(name: str, time_at: Callable[[float], float], low: float, high: float) -> Extra:
    """The spread of one host-side rate (multiplied by low..high, triangular about 1) through
    the time's elasticity to it (central difference at +-10%)."""

    def extra(rng: np.random.Generator, n: int) -> tuple[dict[str, float], np.ndarray]:
        e = math.log(time_at(1.1) / time_at(1 / 1.1)) / (2 * math.log(1.1))
        return {name: e}, rng.triangular(low, 1.0, high, size=n) ** e

    return extra


def job_uncertainty(
    plan: Any,
    hw: Hardware,
    step_of: Callable[[Hardware], float],
    rate_key: str,
    *,
    samples: int = SAMPLES,
    seed: int = SEED,
    measured_sigma: float | None = None,
    extra: Extra | None = None,
) -> dict[str, Any]:
    """A training job of any workload: its step time, time to train, GPU-hours, cost and
    throughput (`rate_key`, a field of the chosen option), and the chance of the deadline.
    `extra(rng, samples)` adds a spread beyond the accelerator's efficiencies: (elasticities,
    step-time factor samples), e.g. the host data pipeline's rate."""
    b = plan.best
    el, k = _with_extra(*_sampled(hw, step_of, samples, seed, measured_sigma), extra, seed, samples)
    step_s = float(b.step["step_s"])
    metrics: dict[str, Any] = {"step_time_s": summary(step_s * k, step_s)}
    for name in ("time_to_train_s", "gpu_hours", "cost_usd"):
        value = getattr(b, name, None)
        if value is not None:
            metrics[name] = summary(value * k, value)
    rate = float(getattr(b, rate_key))
    metrics[rate_key] = summary(rate / k, rate)
    if getattr(b, "mfu", None) is not None:
        metrics["mfu"] = summary(b.mfu / k, b.mfu)
    out: dict[str, Any] = {
        "kind": "training",
        "method": METHOD.format(what="step"),
        "samples": samples,
        "seed": seed,
        "measured_sigma": measured_sigma,
        "ranges": _ranges(),
        "elasticities": el,
        "metrics": metrics,
    }
    deadline = (getattr(plan, "targets", None) or {}).get("deadline_s")
    if deadline and b.time_to_train_s is not None:
        ttt = b.time_to_train_s * k
        out["deadline"] = {
            "deadline_s": deadline,
            "probability_met": float(np.mean(ttt <= deadline)),
            "margin_fraction": deadline / metrics["time_to_train_s"]["p50"] - 1.0,
        }
    return out


def service_uncertainty(
    plan: Any,
    hw: Hardware,
    unit_time_of: Callable[[Hardware], float],
    rate_key: str,
    per_replica_capacity: float,
    design_units_per_s: float,
    *,
    samples: int = SAMPLES,
    seed: int = SEED,
    measured_sigma: float | None = None,
    extra: Extra | None = None,
) -> dict[str, Any]:
    """A vision or recommendation service: capacity (`rate_key`, per GPU or per replica),
    replicas needed at the design rate, cost per hour and p99 latency; `extra` as in
    `job_uncertainty` (e.g. the video decoders' rate)."""
    b = plan.best
    el, k = _with_extra(*_sampled(hw, unit_time_of, samples, seed, measured_sigma), extra, seed, samples)
    rate = float(getattr(b, rate_key))
    metrics: dict[str, Any] = {rate_key: summary(rate / k, rate)}
    replicas = int(getattr(b, "replicas", None) or b.gpus)
    out: dict[str, Any] = {
        "kind": "serving",
        "method": METHOD.format(what="service") + "; latency scaled with the service time (queueing not "
        "re-simulated)",
        "samples": samples,
        "seed": seed,
        "measured_sigma": measured_sigma,
        "ranges": _ranges(),
        "elasticities": el,
        "metrics": metrics,
    }
    if design_units_per_s > 0 and per_replica_capacity > 0:
        # Replicas needed when each one's capacity (at the planned utilisation) scales by 1/k.
        needed = np.maximum(1.0, np.ceil(design_units_per_s / per_replica_capacity * k - 1e-9))
        metrics["replicas"] = summary(needed, replicas)
        if b.cost_usd is not None:
            metrics["cost_usd_per_hour"] = summary(b.cost_usd * needed / replicas, b.cost_usd)
        out["replicas"] = {"planned": replicas, "probability_sufficient": float(np.mean(needed <= replicas))}
    if getattr(b, "latency_p99_s", None):
        metrics["latency_p99_s"] = summary(b.latency_p99_s * k, b.latency_p99_s)
    return out


# --- per workload: the time to re-evaluate ---------------------------------------------------


def vision_uncertainty(plan: Any, spec: Any, calibration: Calibration | None = None) -> dict[str, Any]:
    from rightsize.perf import datapipe
    from rightsize.perf.vision import count_model
    from rightsize.search import vision as V

    b = plan.best
    acc, node = get_accelerator(b.accelerator), get_node(b.node)
    arch = spec.arch
    if plan.mode == "training":
        t = spec.train
        hw = calibrated_hardware(acc, node, t.precision, calibration, power_limit_of(spec, acc.id))
        counts = count_model(arch)
        image_bytes = t.mean_image_bytes or datapipe.mean_image_bytes()
        optimizer = t.optimizer or arch.optimizer
        if optimizer not in V.OPTIMIZER_STATE_BYTES_PER_PARAM:
            optimizer = "sgd"

        def step_at(h: Hardware, loader_scale: float = 1.0) -> float:
            o = V._train_option(
                arch,
                counts,
                acc,
                node,
                h,
                b.batch_per_gpu,
                b.gpus,
                spec,
                image_bytes,
                optimizer,
                loader_scale,
            )
            return float(o.step["step_s"])

        f = datapipe.figures()
        loader = _spread(
            "dataloader_rate",
            lambda scale: step_at(hw, scale),
            f.value("images.dataloader_rate_low_vs_catalog"),
            f.value("images.dataloader_rate_high_vs_catalog"),
        )
        return job_uncertainty(plan, hw, step_at, "images_per_s_per_gpu", extra=loader)
    inf = spec.inference
    hw = calibrated_hardware(acc, node, inf.precision, calibration, power_limit_of(spec, acc.id))
    at_batch = spec.model_copy(update={"inference": inf.model_copy(update={"batch": b.batch_per_gpu})})

    def unit_time_of(h: Hardware, decode_scale: float = 1.0) -> float:
        # The planner's own serving figure at the chosen batch (decode, preprocessing, engine).
        got = V.serving_capacity(at_batch, acc.id, h, decode_scale)
        return 1.0 / got[1] if got else math.inf

    f = datapipe.figures()
    decoders = _spread(
        "nvdec_rate",
        lambda scale: unit_time_of(hw, scale),
        f.value("video.nvdec_rate_low_vs_catalog"),
        f.value("video.nvdec_rate_high_vs_catalog"),
    )
    design = plan.demand.design_rate_rps if plan.demand is not None else 0.0
    return service_uncertainty(
        plan, hw, unit_time_of, "images_per_s_per_gpu", b.images_per_s_per_gpu, design or 0.0, extra=decoders
    )


def recsys_uncertainty(plan: Any, spec: Any, calibration: Calibration | None = None) -> dict[str, Any]:
    from rightsize.search import recsys as R

    b = plan.best
    acc, node = get_accelerator(b.accelerator), get_node(b.node)
    if plan.mode == "training":
        hw = calibrated_hardware(acc, node, spec.train.precision, calibration, power_limit_of(spec, acc.id))

        def step_of(h: Hardware) -> float:
            o = R._train_option(spec, acc, node, h, b.gpus)
            return float(o.step["step_s"]) if not isinstance(o, str) else math.inf

        return job_uncertainty(plan, hw, step_of, "samples_per_s_per_gpu")
    inf = spec.inference
    hw = calibrated_hardware(acc, node, inf.precision, calibration, power_limit_of(spec, acc.id))
    design_sps = (plan.demand.design_rate_rps or 0.0) * inf.samples_per_query
    # Re-evaluated without the latency check: a slower sample is a longer service, not a rejection.
    relaxed = spec.model_copy(update={"inference": inf.model_copy(update={"latency_p99_s": math.inf})})

    def unit_time_of(h: Hardware) -> float:
        o = R._serve_option(relaxed, acc, node, h, b.gpus_per_replica, b.batch, design_sps)
        return float(o.step["step_s"]) if not isinstance(o, str) else math.inf

    per_replica = b.samples_per_s / max(b.replicas or 1, 1)
    return service_uncertainty(plan, hw, unit_time_of, "samples_per_s", per_replica, design_sps)
