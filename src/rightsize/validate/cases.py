"""Reading validation cases (published runs) from CSV into specs the planner understands."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.safe_read import read_text_capped

MAX_CASES_BYTES = 16 * 2**20

TRAINING_METRICS = ("step_time_s", "tokens_per_s_per_gpu", "gpu_hours")
INFERENCE_METRICS = ("output_tokens_per_s", "input_tokens_per_s")
MODEL_COLUMNS = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab")
PARALLEL_INT_COLUMNS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero_stage")
# Optional architecture columns (blank or absent: the ModelArch default): head width when it is
# not hidden / heads, and the mixture-of-experts shape (routed experts, experts per token, each
# expert's FFN width, shared experts, leading dense layers).
OPTIONAL_ARCH_INT_COLUMNS = (
    "head_dim",
    "experts",
    "experts_per_token",
    "expert_ffn_hidden",
    "shared_experts",
    "dense_layers",
)
DEFAULT_BATCH_TOKENS = 4 * 2**20
REQUIRED_COLUMNS = ("id", "metric", "value", "accelerator", *MODEL_COLUMNS, "mlp")


@dataclass(frozen=True)
class Case:
    """One published measurement."""

    id: str
    metric: str
    published: float
    row: dict[str, str]
    source: str

    @property
    def is_training(self) -> bool:
        return self.metric in TRAINING_METRICS


def bundled_paths(holdout: bool = False) -> list[Path]:
    base = resources.files("rightsize.validate") / "data"
    names = (
        ["holdout_training.csv", "holdout_inference.csv"]
        if holdout
        else ["training.csv", "inference.csv", "finetune.csv", "whole_runs.csv", "vision.csv", "recsys.csv"]
    )
    return [Path(str(base / n)) for n in names]


MORE_FILES = ("training_more.csv",)
# Training runs of other stacks (MaxText on TPU v5e/v5p, torchtitan's December 2024 H100
# benchmarks): `rightsize validate --stacks`, reported as their own set like `--more`.
STACKS_FILES = ("stacks_training.csv",)
SEPARATE_FILES = (*MORE_FILES, *STACKS_FILES)


def more_paths() -> list[Path]:
    """Published training runs of kinds the bundled set does not cover (MoE pre-training on
    Hopper and Blackwell, torchtitan's 2025 TP and Float8 runs): `rightsize validate --more`
    checks them and reports them as their own set (`by_file`)."""
    base = resources.files("rightsize.validate") / "data"
    return [Path(str(base / n)) for n in MORE_FILES]


def stacks_paths() -> list[Path]:
    """Published training runs of other stacks (`STACKS_FILES`): `rightsize validate --stacks`
    checks them and reports them as their own set (`by_file`)."""
    base = resources.files("rightsize.validate") / "data"
    return [Path(str(base / n)) for n in STACKS_FILES]


def serving_public_paths() -> list[Path]:
    """Tuning-visible serving runs kept apart from the default set (`validate --engines`): older
    engine releases and static-batching tables (`data/README.md`, serving_public.csv)."""
    return [Path(str(resources.files("rightsize.validate") / "data" / "serving_public.csv"))]


def published_value(path: Any, line: int, r: dict[str, Any]) -> float:
    """The row's published figure (`value`), or BadInput naming the file, line and case."""
    try:
        return float(r["value"])
    except (TypeError, ValueError):
        raise BadInput(
            f"{path}:{line}: value '{r.get('value')}' of case '{r.get('id')}' is not a number.",
            fix="Write the published figure as a plain number.",
        ) from None


def read_cases(path: Path) -> list[Case]:
    text = read_text_capped(
        path,
        "the validation file",
        MAX_CASES_BYTES,
        "Give the path of a CSV with the columns of the bundled training.csv.",
    )
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise BadInput(f"Cannot read validation file '{path}'.", str(exc), "Give a UTF-8 CSV file.") from None
    if not rows:
        raise BadInput(
            f"Validation file '{path}' has no rows.", fix="Add at least one case below the header."
        )
    missing = [c for c in REQUIRED_COLUMNS if c not in rows[0]]
    if missing:
        raise BadInput(
            f"Validation file '{path}' lacks columns: {', '.join(missing)}.",
            "Cases need the model shape, the accelerator, the metric and the published value.",
            "Use the header of `rightsize validate`'s bundled training.csv (see its README).",
        )
    cases = []
    for n, r in enumerate(rows, start=2):
        value = published_value(path, n, r)
        cases.append(Case(id=r["id"], metric=r["metric"], published=value, row=r, source=r.get("source", "")))
    return cases


def _blank(v: str | None) -> bool:
    return v is None or v.strip() == ""


def _bool(v: str) -> bool:
    return v.strip().lower() in ("true", "1", "yes")


def model_fields(row: dict[str, str]) -> dict[str, Any]:
    """The row's architecture from its shape columns, with the optional MoE ones."""
    fields: dict[str, Any] = {
        "name": row.get("model") or row["id"],
        **{c: int(float(row[c])) for c in MODEL_COLUMNS},
        "mlp": row["mlp"],
    }
    for c in OPTIONAL_ARCH_INT_COLUMNS:
        if not _blank(row.get(c)):
            fields[c] = int(float(row[c]))
    if not _blank(row.get("tied_embeddings")):
        fields["tied_embeddings"] = _bool(row["tied_embeddings"])
    for flag in ("qk_norm", "parallel_block"):  # optional model columns (blank: the spec's default)
        if not _blank(row.get(flag)):
            fields[flag] = _bool(row[flag])
    return fields


def _expert_parallel_over_tp(parallel: dict[str, Any]) -> None:
    """Megatron-Core with expert tensor parallelism 1 lets an expert-parallel group span the
    tensor-parallel ranks too (ep divides tp x dp x cp, not dp x cp: Megatron-Bridge's Qwen3
    235B H100 recipe runs TP2 EP32 over 16 data-parallel ranks). rightsize splits each expert
    over the tp ranks instead and places ep inside dp x cp; ep / tp there holds the same expert
    weights per GPU (experts / ep of them, whole or split) and runs the same expert FLOPs per
    GPU, so such a row is written as ep / tp."""
    tp, ep = parallel.get("tp", 1), parallel.get("ep", 1)
    dpc = parallel.get("dp", 0) * parallel.get("cp", 1)
    if dpc and ep > 1 and dpc % ep and ep % tp == 0 and dpc % (ep // tp) == 0:
        parallel["ep"] = ep // tp


def training_spec_data(case: Case) -> dict[str, Any]:
    """The spec a planner would be given for this run: what the source published is
    fixed, blanks are left for the search."""
    r = case.row
    seq_len = int(float(r["seq_len"]))
    if _blank(r.get("global_batch")):
        # Not published: a batch of about 4Mi tokens, what dense LLM pre-training runs
        # of this era used (Llama 2: 4M; Llama 3: 4M rising to 16M).
        global_batch = max(1, DEFAULT_BATCH_TOKENS // seq_len)
    else:
        global_batch = int(float(r["global_batch"]))
    training: dict[str, Any] = {
        "seq_len": seq_len,
        "global_batch": global_batch,
        "precision": r.get("precision") or "bf16",
        "flash_attention": True if _blank(r.get("flash_attention")) else _bool(r["flash_attention"]),
    }
    if not _blank(r.get("train_tokens")):
        training["train_tokens"] = float(r["train_tokens"])
    # Optional columns (blank or absent: the spec's default): the attention kernel the stack
    # ran, optimizer states offloaded to host memory, the fp8 scaling recipe and the MoE dispatch dtype.
    for column in (
        "attention_kernel",
        "fp8_recipe",
        "cp_comm",
        "moe_dispatch_dtype",
        "moe_dispatcher",
        "cuda_graph_scope",
    ):
        if not _blank(r.get(column)):
            training[column] = r[column].strip()
    if not _blank(r.get("moe_capacity_factor")):
        training["moe_capacity_factor"] = float(r["moe_capacity_factor"])
    for flag in ("optimizer_offload", "cp_load_balance", "tp_comm_overlap", "grad_reduce_in_fp32"):
        if not _blank(r.get(flag)):
            training[flag] = _bool(r[flag])
    # Fine-tuning columns (finetune.csv): method full | lora | qlora, adapter rank and targets
    # ('attention', 'all_linear' or names joined by '+', e.g. 'q+v').
    if not _blank(r.get("method")):
        training["method"] = r["method"].strip()
        if training["method"] != "full":
            lora: dict[str, Any] = {}
            if not _blank(r.get("lora_rank")):
                lora["rank"] = int(float(r["lora_rank"]))
            if not _blank(r.get("lora_targets")):
                names = r["lora_targets"].strip()
                lora["targets"] = names if names in ("attention", "all_linear") else names.split("+")
            training["lora"] = lora
    parallel: dict[str, Any] = {}
    for c in PARALLEL_INT_COLUMNS:
        if not _blank(r.get(c)):
            parallel[c] = int(float(r[c]))
    _expert_parallel_over_tp(parallel)
    if not _blank(r.get("sequence_parallel")):
        parallel["sequence_parallel"] = _bool(r["sequence_parallel"])
    if not _blank(r.get("recompute")):
        parallel["recompute"] = r["recompute"].strip()
    targets: dict[str, Any] = {"accelerators": [r["accelerator"]]}
    spec: dict[str, Any] = {}
    if not _blank(r.get("gpu_power_limit_w")):
        # the board power limit the run published (nvidia-smi -pl; Llama 2's 350 / 400 W)
        spec["infrastructure"] = {"facility": {"gpu_power_limit_w": float(r["gpu_power_limit_w"])}}
    if not _blank(r.get("gpus")):
        targets["gpus"] = int(float(r["gpus"]))
    targets["objective"] = "gpu_hours" if case.metric == "gpu_hours" else "time"
    return {
        "kind": "training",
        "name": case.id,
        # A `preset` names shapes the columns cannot write (MLA); the columns keep its headline shape.
        "model": r["preset"].strip() if not _blank(r.get("preset")) else model_fields(r),
        "training": training,
        "targets": targets,
        "parallel": parallel,
        **spec,
    }
