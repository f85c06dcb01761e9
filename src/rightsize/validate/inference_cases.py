"""Predicting published serving measurements: one engine (tp GPUs) per case.

fixed_batch: `batch` streams decode together, output tokens/s of the engine.
offline_max_throughput: the engine keeps its KV cache full (batch chosen by memory).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica, fixed_batch_metrics, offline_throughput
from rightsize.search.ground import serving_ground_report
from rightsize.search.uncertainty import spread_factors
from rightsize.spec.model import ModelArch
from rightsize.validate.cases import Case, model_fields


def _int(row: dict[str, str], key: str) -> int | None:
    v = (row.get(key) or "").strip()
    return int(float(v)) if v else None


def predict_inference(case: Case) -> tuple[float, dict[str, Any]]:
    r = case.row
    arch = ModelArch(**model_fields(r))
    acc = get_accelerator(r["accelerator"])
    node = node_for(acc.id)
    tp = _int(r, "tp") or 1
    rep = Replica.build(
        arch, acc, node, tp, r.get("weight_precision") or "bf16", r.get("kv_precision") or "bf16"
    )
    if not rep.fits:
        raise BadInput(
            f"{arch.name} in {rep.weight_precision} does not fit on {tp} x {acc.id}.",
            f"Weights take {rep.weight_bytes_per_gpu / 1e9:.0f} GB per GPU.",
            "Use a larger tp or a smaller weight precision.",
        )
    value, chosen = _value(rep, r)
    chosen.update(_range(case, rep, value))
    return value, chosen


def _value(rep: Replica, r: dict[str, str]) -> tuple[float, dict[str, Any]]:
    prompt, output = _int(r, "input_len") or 1, _int(r, "output_len") or 1
    scenario = r.get("scenario", "")
    if scenario == "fixed_batch":
        batch = _int(r, "batch") or 1
        m = fixed_batch_metrics(rep, batch, prompt, output)
        return m["output_tokens_per_s"], {"tp": rep.tp, "batch": batch}
    if scenario == "offline_max_throughput":
        m = offline_throughput(rep, prompt, output, max_batch=_int(r, "batch"))
        return m["output_tokens_per_s"], {"tp": rep.tp, "batch": int(m["batch"])}
    raise BadInput(f"Unknown scenario {scenario!r}.", "Known: fixed_batch, offline_max_throughput.")


def _range(case: Case, rep: Replica, value: float) -> dict[str, Any]:
    """P10/P50/P90 of the throughput from the plans' uncertainty model: the efficiency spread
    through this engine's elasticities, times the model error for its distance from the
    validated serving rows (this row left out)."""
    r = case.row
    ground = serving_ground_report(
        rep.hw.accelerator_id,
        rep.weight_precision,
        rep.tp,
        r.get("scenario", ""),
        _int(r, "batch"),
        12.0 * rep.arch.layers * rep.arch.hidden**2 + rep.arch.vocab * rep.arch.hidden,
        exclude=(case.id,),
    )
    k = spread_factors(rep.hw, lambda h: 1.0 / _value(replace(rep, hw=h), r)[0], ground["sigma"])
    samples = value / k
    q = {name: float(np.quantile(samples, p)) for name, p in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))}
    return {"range": q, "ground": ground}
