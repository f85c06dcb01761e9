"""rightsize against AIConfigurator's own estimates on the serving validation rows it can predict.

For each dense row (no `preset`) of a serving CSV on a system and engine AIConfigurator covers,
runs `aiconfigurator.cli.api.cli_estimate(mode="static")` with the row's shape (a Llama
`config.json` written to a temporary folder: the machine may be offline), tensor parallelism,
precisions, lengths and batch (`fixed_batch` rows: the published batch; offline rows: the
batch rightsize chose, from a `rightsize validate --format json` file), and turns its TTFT
and TPOT into output tokens/s as a static batch: batch x output / (TTFT + TPOT x (output - 1)).
Prints each row's error beside rightsize's analytic and measured-kernel errors (marking the
rows where AIConfigurator is closer), the medians on the rows both predict, and how many rows
AIConfigurator is closer on.

Run (needs the optional `aiconfigurator` extra; about 5 s a row):
    rightsize validate --holdout --engines --format json -o /tmp/v.json
    PYTHONPATH=src python benchmarks/compare_aiconfigurator.py /tmp/v.json \
        src/rightsize/validate/data/holdout_inference.csv [--ops]

With `--ops` each row also gets one decode step at its batch and mean context (input + output
/ 2) broken down by operation, AIConfigurator's (`static_gen`, one step) beside rightsize's
measured-kernel step (`OpReport.seconds`), in milliseconds: where the two compositions of the
same tables differ (element-wise kernels' fixed cost, per-step engine overhead, sampling).
"""

from __future__ import annotations

import csv
import json
import logging
import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

SYSTEMS = {
    "a100-sxm-80gb": "a100_sxm",
    "h100-sxm": "h100_sxm",
    "h200-sxm": "h200_sxm",
    "b200": "b200_sxm",
    "gb200": "gb200",
    "l40s": "l40s",
}
BACKENDS = {"tensorrt-llm": "trtllm", "vllm": "vllm", "sglang": "sglang"}
QUANT = {
    "fp8": "fp8",
    "fp4": "nvfp4",
}  # AIConfigurator 0.12.0 rejects 'float16' here: 16-bit rows are skipped


def _config(row: dict[str, str], folder: Path) -> Path:
    """A Llama-architecture config.json with the row's shape."""
    from rightsize.perf.kernels import aiconfigurator

    shape = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab")
    config = aiconfigurator.llama_config(*(int(row[k]) for k in shape))
    path = folder / row["id"]
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return path


def _aic_static(row: dict[str, str], batch: int, folder: Path) -> tuple[float, float]:
    """AIConfigurator's static-batch (TTFT ms, TPOT ms) for the row at `batch`."""
    from aiconfigurator.cli.api import cli_estimate

    isl, osl = int(row["input_len"]), int(row["output_len"])
    est = cli_estimate(
        str(_config(row, folder)),
        SYSTEMS[row["accelerator"]],
        mode="static",
        backend_name=BACKENDS[row["engine"]],
        isl=isl,
        osl=osl,
        batch_size=batch,
        tp_size=int(row["tp"] or 1),
        gemm_quant_mode=QUANT[row["weight_precision"]],
        kvcache_quant_mode=QUANT.get(row["kv_precision"], "fp8"),
    )
    return float(est.ttft), float(est.tpot)


def _aic_tokens_per_s(ttft_ms: float, tpot_ms: float, batch: int, osl: int) -> float:
    return batch * osl / ((ttft_ms + tpot_ms * (osl - 1)) / 1000.0)


def per_token_split(
    row: dict[str, str], batch: int, ttft_ms: float, tpot_ms: float
) -> dict[str, tuple[float, float]]:
    """Seconds per output token split into decode steps and prefill, (AIConfigurator, rightsize):
    AIConfigurator's static batch spends TPOT x (output - 1) decoding and TTFT prefilling per
    `batch` x output tokens; rightsize's offline model one decode step per `batch` tokens plus
    each prompt's packed prefill per output token, its fixed batch its TTFT and decode steps."""
    from rightsize.perf.inference import fixed_batch_metrics, prefill_per_prompt_s

    rep = _replica(row)
    isl, osl = int(row["input_len"]), int(row["output_len"])
    theirs = (tpot_ms * (osl - 1) / 1e3 / (batch * osl), ttft_ms / 1e3 / (batch * osl))
    if row["scenario"] == "fixed_batch":
        m = fixed_batch_metrics(rep, batch, isl, osl)
        total = 1.0 / m["output_tokens_per_s"]
        prefill = m["ttft_s"] / (batch * osl)
        ours = (total - prefill, prefill)
    else:
        step = float(rep.decode_step_s(float(batch), batch * (isl + osl / 2.0)))
        ours = (step / batch, prefill_per_prompt_s(rep, isl, batch) / osl)
    return {"decode": (theirs[0], ours[0]), "prefill": (theirs[1], ours[1])}


def _replica(row: dict[str, str]) -> Any:
    """rightsize's measured-kernel replica for the row (AIConfigurator's tables)."""
    from rightsize.catalog import get_accelerator, node_for
    from rightsize.perf.inference import Replica
    from rightsize.perf.kernels import aiconfigurator
    from rightsize.spec.model import ModelArch
    from rightsize.validate.cases import model_fields

    acc = get_accelerator(row["accelerator"])
    return Replica.build(
        ModelArch(**model_fields(row)),
        acc,
        node_for(acc.id),
        int(row["tp"] or 1),
        row["weight_precision"],
        row["kv_precision"],
        engine=row["engine"],
        kernels=aiconfigurator.load_table(acc.id, row["engine"], row.get("version") or None),
        engine_version=row.get("version") or None,
    )


def op_breakdown(row: dict[str, str], batch: int, folder: Path) -> dict[str, tuple[float, float]]:
    """One decode step at the row's batch and mean context, op -> (AIConfigurator ms, rightsize ms)."""
    from aiconfigurator.cli.api import cli_estimate

    from rightsize.perf.kernels import aiconfigurator

    isl, osl = int(row["input_len"]), int(row["output_len"])
    ctx = isl + osl // 2
    est = cli_estimate(
        str(_config(row, folder)),
        SYSTEMS[row["accelerator"]],
        mode="static_gen",
        backend_name=BACKENDS[row["engine"]],
        isl=ctx - 1,
        osl=2,
        batch_size=batch,
        tp_size=int(row["tp"] or 1),
        gemm_quant_mode=QUANT[row["weight_precision"]],
        kvcache_quant_mode=QUANT.get(row["kv_precision"], "fp8"),
    )
    theirs: dict[str, float] = {}
    for name, ms in est.summary.get_generation_latency_dict().items():
        op = aiconfigurator.LLAMA_GENERATION_OPS.get(name.removeprefix("generation_"), name)
        theirs[op] = theirs.get(op, 0.0) + float(ms)
    rep = _replica(row)
    _, report = rep.decode_step_detail(float(batch), float(batch * ctx))
    ours = {op: 1e3 * float(t) for op, t in report.seconds.items()}
    return {op: (theirs.get(op, 0.0), ours.get(op, 0.0)) for op in {**theirs, **ours}}


def compare(validate_json: Path, csv_path: Path, ops: bool = False) -> dict[str, Any]:
    ours = {r["id"]: r for r in json.loads(validate_json.read_text(encoding="utf-8"))["rows"]}
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, csv_path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            mine = ours.get(row["id"])
            if (
                mine is None
                or (row.get("preset") or "").strip()
                or row["accelerator"] not in SYSTEMS
                or row.get("engine") not in BACKENDS
                or row["weight_precision"] not in QUANT
                or row["metric"] != "output_tokens_per_s"
            ):
                continue
            batch = int(row["batch"]) if row["scenario"] == "fixed_batch" else int(mine["chosen"]["batch"])
            try:
                ttft_ms, tpot_ms = _aic_static(row, batch, Path(tmp))
                osl = int(row["output_len"])
                aic = _aic_tokens_per_s(ttft_ms, tpot_ms, batch, osl) / float(row["value"]) - 1.0
            except Exception as exc:  # noqa: BLE001 - report what AIConfigurator refused, go on
                print(f"{row['id']}: AIConfigurator refused: {str(exc)[:120]}")
                continue
            kernels = mine["error"] if mine.get("source") != "analytic" else None
            out.append({"id": row["id"], "aic": aic, "analytic": mine["analytic_error"], "kernels": kernels})
            k = f"{100 * kernels:+6.1f}%" if kernels is not None else "   -   "
            ours_err = kernels if kernels is not None else mine["analytic_error"]
            closer = "  AIC closer" if abs(aic) < abs(ours_err) else ""
            print(
                f"{row['id']:58s} AIC {100 * aic:+6.1f}%  analytic {100 * mine['analytic_error']:+6.1f}%"
                f"  kernels {k}{closer}"
            )
            if ops:
                parts = op_breakdown(row, batch, Path(tmp))
                total = [sum(v[i] for v in parts.values()) for i in (0, 1)]
                cells = "  ".join(f"{op} {a:.3f}/{b:.3f}" for op, (a, b) in sorted(parts.items()))
                print(f"    step ms AIC/ours {total[0]:.2f}/{total[1]:.2f}: {cells}")
                split = per_token_split(row, batch, ttft_ms, tpot_ms)
                print(
                    "    us per output token AIC/ours: "
                    + "  ".join(f"{k} {1e6 * a:.2f}/{1e6 * b:.2f}" for k, (a, b) in split.items())
                )
    med = {
        "aiconfigurator": statistics.median(abs(r["aic"]) for r in out) if out else None,
        "analytic": statistics.median(abs(r["analytic"]) for r in out) if out else None,
        "with_kernels": statistics.median(
            abs(r["kernels"] if r["kernels"] is not None else r["analytic"]) for r in out
        )
        if out
        else None,
    }
    closer = sum(
        abs(r["aic"]) < abs(r["kernels"] if r["kernels"] is not None else r["analytic"]) for r in out
    )
    return {"rows": out, "n": len(out), "median_abs_error": med, "aiconfigurator_closer_rows": closer}


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    result = compare(Path(sys.argv[1]), Path(sys.argv[2]), ops="--ops" in sys.argv[3:])
    keys = ("n", "median_abs_error", "aiconfigurator_closer_rows")
    print(json.dumps({k: result[k] for k in keys}, indent=2))
