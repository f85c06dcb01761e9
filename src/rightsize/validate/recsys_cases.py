"""Recommendation validation cases (`validate/data/recsys.csv`): samples per second of published
DLRM runs, predicted by the recommendation planner itself.

Training rows plan the run at the row's GPU count and global batch (tables sharded over the GPUs,
the pooled-embedding all-to-all, the dense all-reduce) and compare samples/s while training.
Inference rows: one replica per GPU (the tables fit one GPU's HBM in the published runs), the
batch the row names or the best within its p99 bound; a published 'sample' may aggregate several
user-item pairs (MLPerf DLRMv2: 270 on average), so the model's pairs/s is divided by the row's
pairs_per_sample. The range is the plans' own uncertainty model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rightsize.catalog import get_accelerator, node_for
from rightsize.search.calibrated import calibrated_hardware
from rightsize.spec.load import parse_spec
from rightsize.spec.recsys import RecsysSpec
from rightsize.validate.kind_cases import KindCase, Prediction, served_rate

METRICS = ("samples_per_s",)


def _training_spec(case: KindCase) -> RecsysSpec:
    if not case.batch:
        raise ValueError("a training row needs its global batch in `batch`")
    data: dict[str, Any] = {
        "kind": "recommendation",
        "model": case.text("model"),
        "mode": "training",
        "embeddings": {"precision": case.text("embedding_precision", "fp32")},
        "train": {"global_batch": case.batch, "precision": case.text("precision", "bf16")},
        "targets": {"accelerators": [case.text("accelerator")], "gpus": case.gpus},
    }
    spec = parse_spec(data, Path("."))
    assert isinstance(spec, RecsysSpec)
    return spec


def _spec(case: KindCase) -> RecsysSpec:
    pairs = int(case.number("pairs_per_sample") or 1)
    data: dict[str, Any] = {
        "kind": "recommendation",
        "model": case.text("model"),
        "mode": "inference",
        "embeddings": {"precision": case.text("embedding_precision", "fp32")},
        "inference": {
            "qps": 1,
            "samples_per_query": pairs,
            "latency_p99_s": case.latency_bound_s(),
            "precision": case.text("precision", "fp16"),
            **({"batch": case.batch} if case.batch and case.scenario != "server" else {}),
        },
        "targets": {"accelerators": [case.text("accelerator")], "gpus_per_replica": 1},
    }
    spec = parse_spec(data, Path("."))
    assert isinstance(spec, RecsysSpec)
    return spec


def predict_recsys(case: KindCase) -> Prediction:
    """Samples/s of the row's configuration (all its GPUs), with its P10-P90 range."""
    from rightsize.search.recsys import plan_recsys, serving_capacity
    from rightsize.search.uncertainty_steps import recsys_uncertainty

    if case.text("mode", "inference") == "training":
        tspec = _training_spec(case)
        plan = plan_recsys(tspec)
        b = plan.best
        unc = recsys_uncertainty(plan, tspec)["metrics"]["samples_per_s_per_gpu"]
        return b.samples_per_s, {
            "gpus": b.gpus,
            "global_batch": b.batch,
            "step_s": b.step["step_s"],
            "all_to_all_s": b.step["all_to_all_s"],
            "range": {q: unc[q] * b.gpus for q in ("p10", "p50", "p90")},
        }
    spec = _spec(case)
    inf = spec.inference
    assert inf is not None
    acc = get_accelerator(case.text("accelerator"))
    node = node_for(acc.id)
    hw = calibrated_hardware(acc, node, inf.precision, None)
    # A Server row's batch is the engine's largest: the planner picks among batches up to it.
    cap = case.batch if case.scenario == "server" else None
    batch, pairs_per_s, latency, rng = served_rate(
        spec, hw, lambda s, h: serving_capacity(s, acc, node, h, max_batch=cap), f"one {acc.id}"
    )
    per_sample, g = inf.samples_per_query, case.gpus
    return pairs_per_s / per_sample * g, {
        "gpus": g,
        "batch_pairs": batch,
        "latency_p99_s": latency,
        "range": {q: v / per_sample * g for q, v in rng.items()},
    }
