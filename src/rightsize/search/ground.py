"""How far a training prediction stands from validated ground, and how much wider its
range must be for it.

The model is checked against the published runs of `rightsize.catalog.ground`. A
prediction for a run like those (same accelerator, precision, parallel mechanisms, model
size, sequence length and scale) is as good as the model is there; each step away adds
error the validation never saw. The distance to the nearest validated run counts those
steps:

    accelerator   0 same, 0.5 same die (same vendor and SM count: H100/H200/H800), 1 other
    precision     1 when it differs (fp16 and bf16 are one)
    mechanisms    1 per mechanism the prediction uses that the run did not (tensor, pipeline,
                  interleaved pipeline, context and data parallelism, ZeRO-3/FSDP, LoRA,
                  mixture of experts), 0.5 per one the run used and the prediction does not
    model size    1 per decade of parameters
    sequence      1 per 4x of sequence length
    scale         1 per 8x of GPUs (0.5 when the run did not publish its count)

and the model error's log-sigma grows with it, each step an independent error term, and
with each mechanism no validated run on a like accelerator used (`thin` mechanisms):

    sigma^2 = base^2 + SIGMA_PER_STEP^2 x distance + SIGMA_PER_THIN_MECHANISM^2 x thin

where `base` is the spread the model has on the run measured from: SIGMA_VALIDATED on the
public rows, and on a per-family run (TPU, Blackwell, Gaudi, ...) that family's own measured
spread (`catalog.families.family_sigma`), so a run checked on a family with a 14% median error
does not lend a plan the public rows' 4%. The sigma is the smallest over the runs (the run
that best vouches for the prediction), the distance shown is the nearest run's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rightsize.catalog import get_accelerator
from rightsize.catalog.families import family_sigma
from rightsize.catalog.ground import (
    GroundRun,
    mechanisms_of,
    precision_class,
    validated_runs,
    validated_serving,
)
from rightsize.errors import BadInput

# Spread of the model on its validated ground: the bundled public rows' median |error| on
# step time is about 4% (`rightsize validate`), and a lognormal's median |log error| is
# 0.674 sigma, so sigma ~ 0.06.
SIGMA_VALIDATED = 0.06
# Error added per unit of distance. Estimate: one unvalidated mechanism or hardware step
# carries about the spread of one efficiency estimate (the catalog's efficiencies moved by
# 10-20% between sources and releases: MI300X GEMM 0.60 -> 0.51 across ROCm versions, H100
# GEMM 0.80 best-shape vs 0.73 on real shapes, FA3 vs FA2 attention 2x), taken as 0.10.
SIGMA_PER_STEP = 0.10
# Error added per mechanism that no validated run on a like accelerator (same die) used:
# the validation never saw its efficiency on this hardware at all, a wider gap than one
# step of distance from a run that did (estimate: one more SIGMA_PER_STEP).
SIGMA_PER_THIN_MECHANISM = 0.10
# Beyond this distance the ground says little: the advisor flags the plan.
THIN_DISTANCE = 2.0
NEAREST_SHOWN = 3


@dataclass(frozen=True)
class Position:
    """Where one prediction sits (the same fields as a validated run)."""

    accelerator: str
    precision: str
    params: float
    seq_len: int
    gpus: int
    mechanisms: frozenset[str]


def position(
    arch: Any, seq_len: int, precision: str, method: str, accelerator: str, parallel: Mapping[str, Any]
) -> Position:
    """The position of a chosen configuration (`parallel` as in Candidate.parallel)."""
    tp, pp, dp, cp = (int(parallel.get(k, 1)) for k in ("tp", "pp", "dp", "cp"))
    mech = mechanisms_of(
        tp,
        pp,
        int(parallel.get("vpp", 1)),
        cp,
        int(parallel.get("zero_stage", 0)),
        dp,
        method,
        moe=bool(getattr(arch, "is_moe", False)),
    )
    params = 12.0 * arch.layers * arch.hidden**2 + arch.vocab * arch.hidden
    return Position(accelerator, precision_class(precision), params, seq_len, tp * pp * dp * cp, mech)


@functools.cache  # the shipped catalog is fixed for the process; the search asks for few pairs
def _accelerator_step(a: str, b: str) -> float:
    if a == b:
        return 0.0
    try:
        x, y = get_accelerator(a), get_accelerator(b)
    except BadInput:
        return 1.0
    return 0.5 if (x.vendor, x.sm_count) == (y.vendor, y.sm_count) else 1.0


def distance_terms(p: Position, r: GroundRun) -> dict[str, float]:
    """Each term of the distance from prediction `p` to validated run `r` (non-zero only)."""
    terms = {
        "accelerator": _accelerator_step(p.accelerator, r.accelerator),
        "precision": 0.0 if p.precision == r.precision else 1.0,
        "model_size": abs(math.log10(max(p.params, 1.0) / max(r.params, 1.0))),
        "sequence": abs(math.log2(p.seq_len / r.seq_len)) / 2.0,
        "scale": abs(math.log2(p.gpus / r.gpus)) / 3.0 if r.gpus else 0.5,
    }
    for m in sorted(p.mechanisms - r.mechanisms):
        terms[f"unvalidated:{m}"] = 1.0
    for m in sorted(r.mechanisms - p.mechanisms):
        terms[f"absent:{m}"] = 0.5
    return {k: round(v, 3) for k, v in terms.items() if v > 0}


def distance(p: Position, r: GroundRun) -> float:
    """The sum of `distance_terms(p, r)`, term by term in the same order and rounding (so
    the same float), without building the dict: the search asks for it per layout."""
    total: float = 0  # as sum() of no terms: 0, not 0.0
    for v in (
        _accelerator_step(p.accelerator, r.accelerator),
        0.0 if p.precision == r.precision else 1.0,
        abs(math.log10(max(p.params, 1.0) / max(r.params, 1.0))),
        abs(math.log2(p.seq_len / r.seq_len)) / 2.0,
        abs(math.log2(p.gpus / r.gpus)) / 3.0 if r.gpus else 0.5,
    ):
        if v > 0:
            total += round(v, 3)
    for _ in p.mechanisms - r.mechanisms:
        total += 1.0
    for _ in r.mechanisms - p.mechanisms:
        total += 0.5
    return total


def model_sigma(distance: float, thin_mechanisms: int = 0, base: float = SIGMA_VALIDATED) -> float:
    return math.sqrt(
        base**2 + SIGMA_PER_STEP**2 * max(distance, 0.0) + SIGMA_PER_THIN_MECHANISM**2 * thin_mechanisms
    )


def base_sigma(r: GroundRun) -> float:
    """The model's spread on validated run `r`: the public rows' SIGMA_VALIDATED, or on a
    per-family run the family's measured training spread (never below the public one)."""
    if not r.family:
        return SIGMA_VALIDATED
    return max(SIGMA_VALIDATED, family_sigma(r.accelerator, "training"))


def _vouched_sigma(p: Position, runs: tuple[GroundRun, ...] | list[GroundRun], thin: int) -> float:
    """The smallest model sigma any run gives `p` (its base spread widened by its distance)."""
    return min(
        (model_sigma(distance(p, r), thin, base_sigma(r)) for r in runs),
        default=model_sigma(6.0, thin),
    )


def _thin(p: Position, runs: tuple[GroundRun, ...] | list[GroundRun]) -> frozenset[str]:
    """The mechanisms of `p` that no run on a like accelerator (same die) exercised."""
    like = [r for r in runs if _accelerator_step(p.accelerator, r.accelerator) < 1.0]
    covered: set[str] = set().union(*(r.mechanisms for r in like)) if like else set()
    return frozenset(p.mechanisms - covered)


def ground_report(p: Position, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """Distance to the nearest validated runs, the model-error sigma it implies, and the
    mechanisms of the prediction that no validated run on a like accelerator exercised."""
    runs = [r for r in validated_runs() if r.id not in exclude]
    scored = sorted(((distance(p, r), r) for r in runs), key=lambda x: x[0])
    if not scored:
        return {
            "distance": 6.0,
            "sigma": model_sigma(6.0),
            "nearest": [],
            "thin_mechanisms": sorted(p.mechanisms),
        }
    d = scored[0][0]
    thin = _thin(p, runs)
    return {
        "distance": round(d, 3),
        "sigma": _vouched_sigma(p, runs, len(thin)),
        "nearest": [
            {"id": r.id, "distance": round(dist, 3), "differences": distance_terms(p, r)}
            for dist, r in scored[:NEAREST_SHOWN]
        ],
        "thin_mechanisms": sorted(thin),
        "thin": d > THIN_DISTANCE or bool(thin),
        "method": "distance to the nearest validated public run (accelerator, precision, mechanisms, "
        f"size, sequence, scale); sigma^2 = base^2 + {SIGMA_PER_STEP:.2f}^2 x distance "
        f"+ {SIGMA_PER_THIN_MECHANISM:.2f}^2 x mechanisms no run on a like accelerator used, base "
        f"{SIGMA_VALIDATED:.2f} on the public rows and the family's measured spread on its own rows, "
        "smallest over the runs",
    }


@functools.cache
def ground_sigma(p: Position) -> float:
    """`ground_report(p)["sigma"]` over every validated run, remembered per position (the
    search's risk ranking asks it for thousands of layouts that share few positions)."""
    runs = validated_runs()
    return _vouched_sigma(p, runs, len(_thin(p, runs)))


def serving_ground_report(
    accelerator: str,
    weight_precision: str,
    tp: int,
    scenario: str,
    batch: int | None,
    params: float,
    exclude: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Distance of one serving engine from the validated serving rows, and its sigma: the
    same steps as training (accelerator, precision, size) plus 1 for another scenario, 1 per
    8x of tensor parallelism and 1 per 16x of concurrent sequences."""
    best: tuple[float, str, dict[str, float]] | None = None
    for r in validated_serving():
        if r.id in exclude:
            continue
        terms = {
            "accelerator": _accelerator_step(accelerator, r.accelerator),
            "precision": 0.0 if precision_class(weight_precision) == r.weight_precision else 1.0,
            "model_size": abs(math.log10(max(params, 1.0) / max(r.params, 1.0))),
            "scenario": 0.0 if scenario == r.scenario else 1.0,
            "tensor_parallel": abs(math.log2(max(tp, 1) / max(r.tp, 1))) / 3.0,
            "batch": abs(math.log2(max(batch or 1, 1) / max(r.batch or 1, 1))) / 4.0
            if batch and r.batch
            else 0.5,
        }
        d = sum(terms.values())
        if best is None or d < best[0]:
            best = (d, r.id, {k: round(v, 3) for k, v in terms.items() if v > 0})
    if best is None:
        return {"distance": 6.0, "sigma": model_sigma(6.0), "nearest": []}
    d, rid, diff = best
    return {
        "distance": round(d, 3),
        "sigma": model_sigma(d),
        "nearest": [{"id": rid, "distance": round(d, 3), "differences": diff}],
        "thin_mechanisms": [],
    }
