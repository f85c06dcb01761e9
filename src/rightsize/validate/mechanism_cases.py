"""Published figures of single serving mechanisms, each checked against the formula of the
mechanism that owns it rather than through a whole engine's throughput (`rightsize validate
--mechanisms`, or any CSV with a `mechanism` column).

Mechanisms and their rows (`data/serving_mechanisms.csv`, every row with its source and date):

- `specdec`, metric `acceptance_length`: the mean tokens one verification step yields with
  `draft_tokens` = k drafted, predicted by `perf.serving_specdec.tokens_per_step` from the
  row's `acceptance_rate` (the per-token acceptance probability the spec takes), or given
  directly by the row's `acceptance_length_input` when a measured one is the input.

- `lora`, metric `lora_throughput_ratio`: an engine's offline output tokens/s with LoRA
  adapters over the same run without them, predicted by `perf.serving_lora.LoraReplica` over
  the row's preset, accelerator, TP and lengths (adapters, rank, max_loras, modules).

A row's `acceptance_rate` comes from the same source's k = 1 figure, where the mean tokens
per step is exactly 1 + the acceptance probability whatever the draft: the larger-k rows then
test the independent, position-blind acceptance the formula assumes.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

from rightsize.catalog import get_accelerator, node_for
from rightsize.errors import BadInput
from rightsize.perf.inference import Replica, offline_throughput
from rightsize.perf.serving_lora import LoraReplica
from rightsize.perf.serving_specdec import tokens_per_step
from rightsize.spec.presets import get_preset
from rightsize.validate.cases import published_value
from rightsize.validate.kind_cases import KindCase, Prediction, read_csv_rows

MAX_BYTES = 4 * 2**20
BUNDLED = "serving_mechanisms.csv"
REQUIRED_COLUMNS = ("id", "source", "mechanism", "metric", "value")


def _specdec(case: KindCase) -> Prediction:
    if case.metric != "acceptance_length":
        raise ValueError(
            f"metric {case.metric!r} is not one the specdec mechanism predicts (acceptance_length)"
        )
    k = int(case.number("draft_tokens") or 0)
    if k < 1:
        raise ValueError("draft_tokens must be at least 1")
    measured = case.number("acceptance_length_input")
    if measured is not None:
        return tokens_per_step(k, 1.0, measured), {"draft_tokens": k, "acceptance_length_input": measured}
    rate = case.number("acceptance_rate")
    if rate is None or not 0.0 < rate <= 1.0:
        raise ValueError("acceptance_rate must be in (0, 1]")
    return tokens_per_step(k, rate), {"draft_tokens": k, "acceptance_rate": rate}


def _lora(case: KindCase) -> Prediction:
    """Offline throughput with the adapters over the base model's, same lengths and engine."""
    if case.metric != "lora_throughput_ratio":
        raise ValueError(
            f"metric {case.metric!r} is not one the lora mechanism predicts (lora_throughput_ratio)"
        )
    acc = get_accelerator(case.text("accelerator"))
    precision = case.text("weight_precision", "bf16")
    base = Replica.build(
        get_preset(case.text("preset")), acc, node_for(acc.id), int(case.number("tp") or 1),
        precision, precision, None, case.text("engine") or None, engine_version=case.text("version") or None,
    )  # fmt: skip
    adapters, rank = int(case.number("adapters") or 1), int(case.number("rank") or 16)
    lora = LoraReplica.wrap(
        base, adapters, rank, int(case.number("max_loras") or adapters), case.text("modules", "attention")
    )
    prompt, output = case.number("input_len") or 1.0, case.number("output_len") or 1.0
    plain = offline_throughput(base, prompt, output)["output_tokens_per_s"]
    with_lora = offline_throughput(lora, prompt, output)["output_tokens_per_s"]
    return with_lora / plain, {"base_output_tokens_per_s": plain, "lora_output_tokens_per_s": with_lora}


PREDICTORS: dict[str, Callable[[KindCase], Prediction]] = {"specdec": _specdec, "lora": _lora}


def bundled_path() -> Path:
    """The bundled mechanism rows (`rightsize validate --mechanisms`)."""
    return Path(str(resources.files("rightsize.validate") / "data" / BUNDLED))


def mechanism_cases(path: Path) -> list[KindCase] | None:
    """The cases of a mechanism CSV (one with a `mechanism` column), or None for another file."""
    rows = read_csv_rows(path)
    if not rows or "mechanism" not in rows[0]:
        return None
    missing = [c for c in REQUIRED_COLUMNS if c not in rows[0]]
    if missing:
        raise BadInput(
            f"Validation file '{path}' lacks columns: {', '.join(missing)}.",
            "Mechanism cases need an id, their source, the mechanism, the metric and the published value.",
            f"Use the header of the bundled {BUNDLED} (validate/data/README.md).",
        )
    return [
        KindCase(r["id"], r["metric"], published_value(path, n, r), r) for n, r in enumerate(rows, start=2)
    ]


def predict_mechanism(case: KindCase) -> Prediction:
    """The mechanism's own prediction of the row's figure."""
    name = case.text("mechanism")
    predict = PREDICTORS.get(name)
    if predict is None:
        raise ValueError(f"mechanism {name!r} is not one of {', '.join(sorted(PREDICTORS))}")
    return predict(case)
