"""Validated ground: which published training runs the model has been checked against.

These are the tuning-visible rows of `rightsize validate`: ``training.csv`` and
``finetune.csv`` shipped with the validation data, and the per-family published runs of
``family_training.csv`` (TPU, Blackwell, Gaudi, Trainium, ROCm), each of which carries its
family's measured spread (`GroundRun.family`: `search.ground` starts its sigma there). The catalog reads only the columns that
say *where* a run sits (accelerator, precision, parallel mechanisms, model size, sequence
length, GPUs); the published values stay with `rightsize.validate`, so nothing here can
be used to tune a prediction. `rightsize.search.ground` measures how far a prediction stands
from these runs and widens its range with that distance. The held-out rows are not ground.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources

# The bundled public validation files (data only: read as files, no code imported).
GROUND_FILES = ("training.csv", "finetune.csv")
# Per-family public runs: ground for where a family was checked, with the family's own spread.
FAMILY_GROUND_FILES = ("family_training.csv",)
GROUND_PACKAGE = "rightsize.validate"


@dataclass(frozen=True)
class GroundRun:
    """Where one validated run sits. Unpublished settings are None (no credit is given for
    a mechanism the source did not say it used)."""

    id: str
    accelerator: str
    precision: str  # fp16 and bf16 are one mechanism: "16bit"
    params: float  # total parameters (approximate: 12 l h^2 + vocab h)
    seq_len: int
    gpus: int | None
    mechanisms: frozenset[str]
    method: str
    # True for a per-family run (`FAMILY_GROUND_FILES`): the model's spread there is the
    # family's measured one, not the public set's.
    family: bool = False


def _int(row: dict[str, str], key: str) -> int | None:
    v = (row.get(key) or "").strip()
    try:
        return int(float(v)) if v else None
    except ValueError:
        return None


def mechanisms_of(
    tp: int | None,
    pp: int | None,
    vpp: int | None,
    cp: int | None,
    zero_stage: int | None,
    dp: int | None,
    method: str,
    moe: bool,
) -> frozenset[str]:
    """The parallel and training mechanisms a run exercises."""
    out = set()
    if tp and tp > 1:
        out.add("tensor_parallel")
    if pp and pp > 1:
        out.add("pipeline_parallel")
    if vpp and vpp > 1:
        out.add("interleaved_pipeline")
    if cp and cp > 1:
        out.add("context_parallel")
    if zero_stage is not None and zero_stage >= 3:
        out.add("zero3_fsdp")
    if dp and dp > 1:
        out.add("data_parallel")
    if method != "full":
        out.add("lora")
    if moe:
        out.add("mixture_of_experts")
    return frozenset(out)


def precision_class(precision: str) -> str:
    p = precision.strip().lower() or "bf16"
    return "16bit" if p in ("bf16", "fp16") else p


def _run(row: dict[str, str], family: bool = False) -> GroundRun | None:
    try:
        layers, hidden, vocab = (int(float(row[k])) for k in ("layers", "hidden", "vocab"))
        seq = int(float(row["seq_len"]))
    except (KeyError, ValueError):
        return None
    method = (row.get("method") or "full").strip() or "full"
    tp, pp, dp, cp, vpp = (_int(row, k) for k in ("tp", "pp", "dp", "cp", "vpp"))
    gpus = _int(row, "gpus")
    if dp is None and gpus and tp and pp:
        dp = gpus // (tp * pp * (cp or 1))
    return GroundRun(
        id=row["id"],
        accelerator=row["accelerator"].strip(),
        precision=precision_class(row.get("precision") or "bf16"),
        params=12.0 * layers * hidden**2 + vocab * hidden,
        seq_len=seq,
        gpus=gpus,
        mechanisms=mechanisms_of(tp, pp, vpp, cp, _int(row, "zero_stage"), dp, method, moe=False),
        method=method,
        family=family,
    )


@cache
def validated_runs() -> tuple[GroundRun, ...]:
    """Every training run of the bundled public validation set, as ground."""
    base = resources.files(GROUND_PACKAGE) / "data"
    runs: list[GroundRun] = []
    for name in GROUND_FILES + FAMILY_GROUND_FILES:
        text = (base / name).read_text(encoding="utf-8")
        for row in csv.DictReader(io.StringIO(text, newline="")):
            if row.get("metric") not in ("step_time_s", "tokens_per_s_per_gpu", "gpu_hours"):
                continue
            run = _run(row, family=name in FAMILY_GROUND_FILES)
            if run is not None and math.isfinite(run.params):
                runs.append(run)
    return tuple(runs)


@dataclass(frozen=True)
class ServingGround:
    """Where one validated serving measurement sits."""

    id: str
    accelerator: str
    weight_precision: str
    tp: int
    scenario: str
    batch: int | None
    params: float


@cache
def validated_serving() -> tuple[ServingGround, ...]:
    """Every serving row of the bundled public validation set (``inference.csv``), as ground."""
    text = (resources.files(GROUND_PACKAGE) / "data" / "inference.csv").read_text(encoding="utf-8")
    out: list[ServingGround] = []
    for row in csv.DictReader(io.StringIO(text, newline="")):
        try:
            layers, hidden, vocab = (int(float(row[k])) for k in ("layers", "hidden", "vocab"))
        except (KeyError, ValueError):
            continue
        out.append(
            ServingGround(
                id=row["id"],
                accelerator=row["accelerator"].strip(),
                weight_precision=precision_class(row.get("weight_precision") or "bf16"),
                tp=_int(row, "tp") or 1,
                scenario=(row.get("scenario") or "").strip(),
                batch=_int(row, "batch"),
                params=12.0 * layers * hidden**2 + vocab * hidden,
            )
        )
    return tuple(out)
