"""Predicting published serving measurements: one engine (tp GPUs) per case.

fixed_batch: `batch` streams decode together, output tokens/s of the engine.
offline_max_throughput: the engine keeps its KV cache full (batch chosen by memory).
"""

from __future__ import annotations

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica, fixed_batch_metrics, offline_throughput
from rightsize.spec.model import ModelArch
from rightsize.validate.cases import Case, model_fields


def _int(row: dict[str, str], key: str) -> int | None:
    v = (row.get(key) or "").strip()
    return int(float(v)) if v else None


def predict_inference(case: Case) -> tuple[float, dict[str, float | int]]:
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
    prompt, output = _int(r, "input_len") or 1, _int(r, "output_len") or 1
    scenario = r.get("scenario", "")
    if scenario == "fixed_batch":
        batch = _int(r, "batch") or 1
        m = fixed_batch_metrics(rep, batch, prompt, output)
        return m["output_tokens_per_s"], {"tp": tp, "batch": batch}
    if scenario == "offline_max_throughput":
        m = offline_throughput(rep, prompt, output, max_batch=_int(r, "batch"))
        return m["output_tokens_per_s"], {"tp": tp, "batch": int(m["batch"])}
    raise BadInput(f"Unknown scenario {scenario!r}.", "Known: fixed_batch, offline_max_throughput.")
