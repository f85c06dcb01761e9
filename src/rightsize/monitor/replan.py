"""Re-planning from what was measured: the demand a recommender would size for, and the
plan that fits it.

The recommendation follows the Kubernetes Vertical Pod Autoscaler's recommender
(kubernetes/autoscaler, vertical-pod-autoscaler/pkg/recommender/logic/recommender.go): size
for a high percentile of the observed demand plus the safety margin, and widen the bounds
for short histories with its confidence multipliers, upper bound x (1 + 1/days) and lower
bound x (1 + 0.001/days)^-2, days being the length of the history. Here the demand is the
request rate per step; the target is its 95th percentile, the lower bound its 90th and the
upper bound its 99th; the plan's own headroom is the margin (the planner adds it).

The observed traffic replaces the spec's: the mean rate, the target as the peak, the prompt
and output lengths as lognormals with the measured mean and spread. The spec is planned
again and the two plans compared: accelerator, replicas by hour, GPUs, cost per month.
Nothing is changed on the running system; this is a report.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.monitor.compare import HOURS, pct, replicas_by_hour
from rightsize.monitor.plan_view import Planned, planned
from rightsize.monitor.queries import LengthHistogram, Observed

DAY_S = 86400.0
TARGET_PERCENTILE = 95.0
LOWER_PERCENTILE = 90.0
UPPER_PERCENTILE = 99.0
# VPA recommender confidence multipliers (recommender.go): upper x (1 + 1/days)^1,
# lower x (1 + 0.001/days)^-2.
UPPER_MULTIPLIER, UPPER_EXPONENT = 1.0, 1.0
LOWER_MULTIPLIER, LOWER_EXPONENT = 0.001, -2.0
# Decode measured more than 10% slower than planned at or under the planned load is a real
# efficiency gap (the model's serving error on published runs is ~6% median).
SLOWER_THAN_PLANNED = 0.9
MIN_BW_FRACTION = 0.05


@dataclass
class Recommendation:
    """The demand to size for, with bounds that widen when the history is short."""

    history_days: float
    mean_rps: float
    target_rps: float
    lower_rps: float
    upper_rps: float
    upper_factor: float
    lower_factor: float

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Replan:
    """The recommendation, the re-planned configuration and how it differs from the plan."""

    recommendation: Recommendation | None
    spec_changes: dict[str, Any] = field(default_factory=dict)
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    replicas_by_hour_before: list[int] = field(default_factory=list)
    replicas_by_hour_after: list[int | None] = field(default_factory=list)
    replicas_range: tuple[int, int] | None = None
    efficiency: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    plan: Any = None  # the new plan object (not serialised)

    def as_dict(self) -> dict[str, Any]:
        return {
            "recommendation": self.recommendation.as_dict() if self.recommendation else None,
            "spec_changes": self.spec_changes,
            "before": self.before,
            "after": self.after,
            "replicas_by_hour_before": self.replicas_by_hour_before,
            "replicas_by_hour_after": self.replicas_by_hour_after,
            "replicas_range": list(self.replicas_range) if self.replicas_range else None,
            "efficiency": self.efficiency,
            "notes": self.notes,
        }


def recommend(obs: Observed) -> Recommendation | None:
    rate = obs.serving.get("request_success")
    if rate is None:
        return None
    target, lower, upper = (pct(rate, q) for q in (TARGET_PERCENTILE, LOWER_PERCENTILE, UPPER_PERCENTILE))
    finite = rate[np.isfinite(rate)]
    if target is None or lower is None or upper is None or finite.size == 0:
        return None
    mean = float(finite.mean())
    days = max(finite.size * obs.window.step_s / DAY_S, 1e-3)
    up = (1.0 + UPPER_MULTIPLIER / days) ** UPPER_EXPONENT
    low = (1.0 + LOWER_MULTIPLIER / days) ** LOWER_EXPONENT
    # ordered by construction: 0 <= lower <= target <= upper, whatever the percentiles did
    target = max(target, 0.0)
    return Recommendation(
        days, max(mean, 0.0), target, min(max(lower * low, 0.0), target), max(upper * up, target), up, low
    )


def _lengths(hist: LengthHistogram | None, original: Any) -> dict[str, Any] | None:
    """A lognormal with the observed mean and spread, clipped like the spec's distribution."""
    if hist is None or not math.isfinite(hist.mean) or hist.mean < 1:
        return None
    low = int(getattr(original, "min", 1) or 1)
    high = getattr(original, "max", None)
    mean = max(low, int(round(hist.mean)))
    if high is not None:
        mean = min(mean, int(high))
    std = hist.std()
    out: dict[str, Any] = {
        "kind": "lognormal",
        "mean": mean,
        "std": max(float(std), 1.0) if math.isfinite(std) else mean / 2,
        "min": low,
    }
    if high is not None:
        out["max"] = int(high)
    return out


def observed_spec(spec: Any, obs: Observed, rec: Recommendation) -> tuple[Any, dict[str, Any]]:
    """The spec with the observed traffic in place of the planned one, and what changed."""
    from rightsize.spec.inference import Traffic

    tr = spec.traffic
    prompt = _lengths(obs.lengths.get("prompt"), tr.prompt_tokens)
    output = _lengths(obs.lengths.get("output"), tr.output_tokens)
    peak = max(rec.target_rps, rec.mean_rps)
    raw: dict[str, Any] = {
        "rate": max(rec.mean_rps, 1e-6),
        "peak_rate": max(peak, 1e-6),
        "arrival": tr.arrival,
        "burst_cv": tr.burst_cv,
        "prompt_tokens": prompt or tr.prompt_tokens,
        "output_tokens": output or tr.output_tokens,
        "prefix_cache_hit_rate": tr.prefix_cache_hit_rate,
    }
    new_traffic = Traffic.model_validate(raw)
    changes = {
        "traffic.rate": (tr.rate_per_s, new_traffic.rate_per_s),
        "traffic.peak_rate": (tr.peak_rate_per_s, new_traffic.peak_rate_per_s),
        "traffic.prompt_tokens.mean": (tr.prompt_tokens.mean_tokens, new_traffic.prompt_tokens.mean_tokens),
        "traffic.output_tokens.mean": (tr.output_tokens.mean_tokens, new_traffic.output_tokens.mean_tokens),
    }
    return spec.model_copy(update={"traffic": new_traffic}), changes


def _summary(p: Planned) -> dict[str, Any]:
    return {
        "accelerator": p.accelerator,
        "tp": p.tp,
        "replicas": p.replicas,
        "gpus": p.gpus,
        "replica_capacity_rps": p.replica_capacity_rps,
        "peak_rate_rps": p.peak_rate_rps,
        "usd_per_month": p.usd_per_month,
    }


def efficiency(obs: Observed, p: Planned) -> dict[str, Any]:
    """Observed against planned decode speed at loads within the plan: how fast the replicas
    really are (a ratio below 1 means slower than the model predicted)."""
    itl, rate = obs.serving.get("inter_token_latency"), obs.serving.get("request_success")
    planned_tpot = p.latency_s.get("tpot_s")
    if itl is None or rate is None or not planned_tpot or not p.peak_rate_rps:
        return {}
    within = (
        np.isfinite(itl) & np.isfinite(rate) & (rate >= 0.5 * p.peak_rate_rps) & (rate <= p.peak_rate_rps)
    )
    if within.sum() < 3:
        return {"note": "too few steps at planned load to compare decode speed"}
    observed = float(np.median(itl[within]))
    return {
        "planned_tpot_at_percentile_s": planned_tpot,
        "observed_itl_at_percentile_s": observed,
        "decode_speed_ratio": planned_tpot / observed if observed > 0 else None,
        "steps_compared": int(within.sum()),
    }


def observed_calibration(p: Planned, eff: dict[str, Any]) -> dict[str, dict[str, float]] | None:
    """Hardware overrides that make the model's decode as slow as the one measured.

    Decode is bound by reading weights and KV cache from HBM, so its speed scales with the
    reachable share of HBM bandwidth; the catalog's share times the observed speed ratio is
    what this deployment reaches. Applied only when the replicas are clearly slower than planned
    (faster-looking decode at lighter load is expected and proves nothing).
    """
    ratio = eff.get("decode_speed_ratio")
    if ratio is None or ratio >= SLOWER_THAN_PLANNED:
        return None
    from rightsize.catalog import get_accelerator
    from rightsize.errors import RightsizeError

    try:
        base = float(get_accelerator(p.accelerator).efficiency.memory_bw_fraction)
    except (RightsizeError, KeyError):
        return None
    return {p.accelerator: {"memory_bw_fraction": max(MIN_BW_FRACTION, base * ratio)}}


def replan(obs: Observed, before: Planned, spec: Any, plan_fn: Callable[..., Any] | None) -> Replan:
    """Recommend from the measurements and, given the spec and a planner, plan again."""
    rec = recommend(obs)
    out = Replan(recommendation=rec, before=_summary(before))
    out.replicas_by_hour_before = [before.replicas] * HOURS if before.kind == "serving" else []
    out.efficiency = efficiency(obs, before)
    if rec is None:
        out.notes.append("No request rate was measured, so there is no traffic to re-plan for.")
        return out
    if spec is None or plan_fn is None:
        out.notes.append("Re-planning needs the spec: give the YAML spec instead of the saved plan.")
        out.replicas_by_hour_after = replicas_by_hour(obs, before)
        return out
    new_spec, out.spec_changes = observed_spec(spec, obs, rec)
    calibration = observed_calibration(before, out.efficiency)
    if calibration:
        out.efficiency["calibration"] = calibration
        out.notes.append(
            f"Decode ran {1 - out.efficiency['decode_speed_ratio']:.0%} slower than planned at planned load: the "
            f"re-plan uses {before.accelerator}'s memory_bw_fraction scaled to match."
        )
    new_plan = plan_fn(new_spec, calibration) if calibration else plan_fn(new_spec)
    after = planned(new_plan, new_spec)
    out.plan, out.after = new_plan, _summary(after)
    out.replicas_by_hour_after = replicas_by_hour(obs, after)
    if after.replica_capacity_rps:
        per = after.replica_capacity_rps * after.utilisation_target
        ends = sorted(
            max(1, math.ceil(r * (1.0 + after.headroom) / per - 1e-9)) for r in (rec.lower_rps, rec.upper_rps)
        )
        out.replicas_range = (ends[0], ends[1])  # lower <= upper by construction
    if rec.history_days < 7:
        out.notes.append(
            f"Only {rec.history_days:.1f} days of history: the upper bound is {rec.upper_factor:.2f}x the "
            "99th percentile; a week or more narrows it."
        )
    return out
