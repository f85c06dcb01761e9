"""Predicting published serving measurements: one engine (tp GPUs) per case.

fixed_batch: `batch` streams decode together, output tokens/s of the engine.
decode_batch: one decode step of `batch` sequences holding `input_len` tokens of context
each (a disaggregated decode pool's throughput at its operating point).
prefill_batch: `batch` prompts of `input_len` tokens prefilled together, input tokens/s (a
disaggregated prefill pool's throughput).
Optional columns `preset` (the architecture from a model preset, for MoE and MLA models the
dense columns cannot describe), `ep` (expert-parallel GPUs) and `pp` (pipeline stages).
offline_max_throughput: the engine keeps its KV cache full (batch chosen by memory and
the engine's defaults).

Optional column `harness` names the benchmark script where it changes what is measured:
`vllm-benchmark-latency` sends the same prompts on every iteration, so a V1 engine's prefix
cache holds them after the warm-up (`perf.serving_prompt_reuse`).

Optional columns `engine` (vllm, tensorrt-llm, sglang, gpt-fast) and `version` name the
engine that produced the row: its defaults (catalog/data/engines.yaml) shape the
prediction, and where a measured kernel table exists for (accelerator, engine) — a file
given with `--kernels`, or AIConfigurator's database when its package is installed — the
case is predicted twice, analytically and from the measured kernels, and both errors are
reported.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.engines import engine_id
from rightsize.catalog.families import family_sigma
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica, fixed_batch_metrics, offline_throughput
from rightsize.perf.kernels import aiconfigurator
from rightsize.perf.kernels.table import KernelTable
from rightsize.perf.kernels.timing import OpReport
from rightsize.perf.serving_moe_ep import ExpertParallelReplica
from rightsize.perf.serving_multinode import PipelinedReplica
from rightsize.perf.serving_prompt_reuse import REPEATED_PROMPT_HARNESSES, reused_prompt_tokens
from rightsize.search.ground import serving_ground_report
from rightsize.search.uncertainty import spread_factors
from rightsize.spec.model import ModelArch
from rightsize.spec.presets import get_preset
from rightsize.validate.cases import Case, model_fields


def _int(row: dict[str, str], key: str) -> int | None:
    v = (row.get(key) or "").strip()
    return int(float(v)) if v else None


def _engine(row: dict[str, str]) -> str | None:
    name = (row.get("engine") or "").strip()
    return engine_id(name) if name else None


def _layout(rep: Replica, r: dict[str, str]) -> Replica:
    """The row's replica layout: optional columns `ep` (expert-parallel GPUs, attention
    data-parallel) and `pp` (pipeline stages of tp GPUs) over the plain tp replica."""
    acc = get_accelerator(rep.hw.accelerator_id)
    ep, pp = _int(r, "ep") or 1, _int(r, "pp") or 1
    if ep > 1:
        return ExpertParallelReplica.build_ep(rep, ep, 1.0, ep > acc.scaleup_domain_gpus)
    if pp > 1:
        return PipelinedReplica.build_pipelined(rep, pp, acc, node_for(acc.id))
    return rep


_ANALYTIC_ONLY: list[bool] = [False]


@contextlib.contextmanager
def analytic_only() -> Iterator[None]:
    """Within it, AIConfigurator's optional tables are not read: figures that must not depend
    on which extras are installed (the per-family validation table) use the analytic model."""
    _ANALYTIC_ONLY.append(True)
    try:
        yield
    finally:
        _ANALYTIC_ONLY.pop()


def kernel_table_for(
    accelerator: str, engine: str | None, version: str | None, tables: Sequence[KernelTable] = ()
) -> KernelTable | None:
    """A user table for (accelerator, engine) first, else AIConfigurator's (when installed)."""
    for t in tables:
        if t.accelerator == accelerator and (engine is None or engine_id(t.engine) == engine):
            return t
    if engine is None or _ANALYTIC_ONLY[-1]:
        return None
    return aiconfigurator.load_table(accelerator, engine, version or None)


def _reused_prompt(rep: Replica, r: dict[str, str], prompt: int) -> int:
    """Prompt tokens the row's benchmark finds cached: its `harness` column names one that
    sends the same prompts every iteration (`perf.serving_prompt_reuse`), else none."""
    harness = (r.get("harness") or "").strip()
    return reused_prompt_tokens(rep.engine, prompt) if harness in REPEATED_PROMPT_HARNESSES else 0


def _predict(rep: Replica, r: dict[str, str]) -> tuple[float, dict[str, Any], OpReport]:
    prompt, output = _int(r, "input_len") or 1, _int(r, "output_len") or 1
    scenario = r.get("scenario", "")
    if scenario == "decode_batch":  # one decode step of `batch` sequences at input_len of context
        batch = _int(r, "batch") or 1
        step, report = rep.decode_step_detail(float(batch), float(batch) * prompt)
        return batch / float(step), {"tp": rep.tp, "batch": batch}, report
    if scenario == "prefill_batch":  # `batch` prompts of input_len prefilled together: input tokens/s
        batch = _int(r, "batch") or 1
        t, report = rep.prefill_detail(float(prompt), 0.0, float(batch))
        return batch * prompt / float(t), {"tp": rep.tp, "batch": batch}, report
    if scenario == "fixed_batch":
        batch = _int(r, "batch") or 1
        m = fixed_batch_metrics(rep, batch, prompt, output, _reused_prompt(rep, r, prompt))
        _, report = rep.decode_step_detail(float(batch), batch * (prompt + output / 2.0))
        return m["output_tokens_per_s"], {"tp": rep.tp, "batch": batch}, report
    if scenario == "offline_max_throughput":
        m = offline_throughput(rep, prompt, output, max_batch=_int(r, "batch"))
        b = max(1.0, m["batch"])
        _, report = rep.decode_step_detail(b, b * (prompt + output / 2.0))
        return m["output_tokens_per_s"], {"tp": rep.tp, "batch": int(m["batch"])}, report
    raise BadInput(
        f"Unknown scenario {scenario!r}.",
        "Known: fixed_batch, offline_max_throughput, decode_batch, prefill_batch.",
    )


def predict_inference(case: Case, tables: Sequence[KernelTable] = ()) -> tuple[float, dict[str, Any]]:
    """The prediction (from measured kernels where a table covers the case, else analytic)
    and its detail: the analytic value, the measured-kernel value and which ops fell back."""
    r = case.row
    preset = (r.get("preset") or "").strip()
    arch = get_preset(preset) if preset else ModelArch(**model_fields(r))
    acc = get_accelerator(r["accelerator"])
    node = node_for(acc.id)
    tp = _int(r, "tp") or 1
    engine = _engine(r)
    wp, kvp = r.get("weight_precision") or "bf16", r.get("kv_precision") or "bf16"
    version = (r.get("version") or "").strip() or None
    rep = _layout(Replica.build(arch, acc, node, tp, wp, kvp, engine=engine, engine_version=version), r)
    if not rep.fits:
        raise BadInput(
            f"{arch.name} in {rep.weight_precision} does not fit on {tp} x {acc.id}.",
            f"Weights take {rep.weight_bytes_per_gpu / 1e9:.0f} GB per GPU.",
            "Use a larger tp or a smaller weight precision.",
        )
    analytic, detail, _ = _predict(rep, r)
    detail.update({"engine": engine or "", "source": "analytic", "analytic_predicted": analytic})
    table = kernel_table_for(acc.id, engine, (r.get("version") or "").strip(), tables)
    if table is None:
        detail["kernel_table"] = (
            aiconfigurator.status() or f"no measured kernels for {acc.id} / {engine or 'no engine'}"
        )
        detail.update(_range(case, rep, analytic))
        return analytic, detail
    measured_rep = _layout(
        Replica.build(arch, acc, node, tp, wp, kvp, engine=engine, kernels=table, engine_version=version), r
    )
    measured, _, report = _predict(measured_rep, r)
    detail.update(
        {
            "source": report.source,
            "kernels_predicted": measured,
            "kernel_table": table.source,
            "measured_ops": {k: round(v, 3) for k, v in report.measured.items()},
            "fallbacks": dict(report.reasons),
        }
    )
    value = measured if report.source != "analytic" else analytic
    detail.update(_range(case, rep, value))
    return value, detail


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
    sigma = max(ground["sigma"], family_sigma(r["accelerator"], "serving"))  # the family's spread (issue 28)
    k = spread_factors(rep.hw, lambda h: 1.0 / _predict(replace(rep, hw=h), r)[0], sigma)
    samples = value / k
    q = {name: float(np.quantile(samples, p)) for name, p in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))}
    return {"range": q, "ground": ground}
