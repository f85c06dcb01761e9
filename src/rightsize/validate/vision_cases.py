"""Vision validation cases (`validate/data/vision.csv`): images per second of published ResNet
and ViT runs, predicted by the vision planner itself.

Training rows plan the run with the row's GPU count, batch per GPU, precision, kernels (eager or
fused BN/ReLU/add) and decode (CPU DataLoader or GPU/DALI) fixed, and compare the plan's images/s
while training; the range is the plan's own uncertainty. Inference rows (decoded tensors in, as
MLPerf) take the capacity one GPU serves at full load at the batch the planner picks: the best
within the row's p99 bound (server), the best without one (offline), or the row's batch; the
GPUs of a row serve independently (one engine each).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rightsize.catalog import get_accelerator, node_for
from rightsize.search.calibrated import calibrated_hardware
from rightsize.spec.load import parse_spec
from rightsize.spec.vision import VisionSpec
from rightsize.validate.kind_cases import KindCase, Prediction, served_rate

METRICS = ("images_per_s",)


def _spec(case: KindCase) -> VisionSpec:
    acc = case.text("accelerator")
    data: dict[str, Any] = {
        "kind": "vision",
        "model": case.text("model"),
        "mode": case.text("mode", "training"),
    }
    if data["mode"] == "training":
        data["train"] = {
            "images": 1281167,
            "epochs": 1,
            "precision": case.text("precision", "bf16"),
            "decode": case.text("decode", "cpu"),
            "kernels": case.text("kernels", "eager"),
            **({"batch_per_gpu": case.batch} if case.batch else {}),
        }
        data["targets"] = {"accelerators": [acc], "gpus": case.gpus}
    else:
        data["inference"] = {
            "streams": 1,
            "fps": 1,
            "latency_p99_s": case.latency_bound_s(),
            "precision": case.text("precision", "int8"),
            "decode": case.text("decode", "none"),
            **({"batch": case.batch} if case.batch and case.scenario != "server" else {}),
        }
        data["targets"] = {"accelerators": [acc]}
    spec = parse_spec(data, Path("."))
    assert isinstance(spec, VisionSpec)
    return spec


def predict_vision(case: KindCase) -> Prediction:
    """Images/s of the row's configuration, with its P10-P90 range and what was chosen."""
    from rightsize.search.uncertainty_steps import vision_uncertainty
    from rightsize.search.vision import plan_vision, serving_capacity

    spec = _spec(case)
    if spec.mode == "training":
        plan = plan_vision(spec)
        b = plan.best
        unc = vision_uncertainty(plan, spec)["metrics"]["images_per_s_per_gpu"]
        detail: dict[str, Any] = {
            "gpus": b.gpus,
            "batch_per_gpu": b.batch_per_gpu,
            "mfu": round(b.mfu, 4),
            "input_bound": b.input_bound,
            "range": {q: unc[q] * b.gpus for q in ("p10", "p50", "p90")},
        }
        return b.images_per_s, detail
    inf = spec.inference
    assert inf is not None
    acc = get_accelerator(case.text("accelerator"))
    hw = calibrated_hardware(acc, node_for(acc.id), inf.precision, None)
    # A Server row's batch is the engine's largest: the planner picks among batches up to it.
    cap = case.batch if case.scenario == "server" else None
    batch, rate, latency, rng = served_rate(
        spec, hw, lambda s, h: serving_capacity(s, acc.id, h, max_batch=cap), f"one {acc.id}"
    )
    return rate * case.gpus, {
        "gpus": case.gpus,
        "batch": batch,
        "latency_p99_s": latency,
        "range": {q: v * case.gpus for q, v in rng.items()},
    }
