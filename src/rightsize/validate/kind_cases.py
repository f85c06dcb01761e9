"""Validation cases of the non-LLM kinds (vision, recommendation), read once for both: a CSV of
published runs with their configuration (model, accelerator, count, precision, batch, scenario)
and the published rate. Each kind's module builds its spec from a row and predicts the rate; this
one reads the file, dispatches by the file's metric, and turns each prediction into a row of
`rightsize validate` (error, P10-P90 range and whether the published figure falls inside; the
range joins the plans' efficiency spread and the model's error on the kind's other rows).

Scenarios: 'training' (images or samples per second while training), 'offline' (an engine's
best throughput, no latency bound), 'server' (the most an engine serves within the row's p99
bound), 'fixed_batch' (throughput at the row's batch).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rightsize.errors import BadInput, RightsizeError
from rightsize.perf.hardware import Hardware
from rightsize.safe_read import read_text_capped
from rightsize.validate.cases import published_value

MAX_BYTES = 4 * 2**20
Z90 = 1.2815515655446004  # standard normal 90th percentile
SCENARIOS = ("training", "offline", "server", "fixed_batch")
# An offline run has no latency bound; a bound this long never binds a batch.
OFFLINE_BOUND_S = 3600.0
COMMON_COLUMNS = (
    "id",
    "model",
    "mode",
    "accelerator",
    "gpus",
    "precision",
    "batch",
    "scenario",
    "metric",
    "value",
)


@dataclass(frozen=True)
class KindCase:
    """One published rate of a vision or recommendation run."""

    id: str
    metric: str
    published: float
    row: dict[str, str]

    def text(self, key: str, default: str = "") -> str:
        return (self.row.get(key) or "").strip() or default

    def number(self, key: str) -> float | None:
        raw = self.text(key)
        return float(raw) if raw else None

    @property
    def gpus(self) -> int:
        return int(self.number("gpus") or 1)

    @property
    def batch(self) -> int | None:
        b = self.number("batch")
        return int(b) if b else None

    @property
    def scenario(self) -> str:
        s = self.text("scenario", "training")
        if s not in SCENARIOS:
            raise ValueError(f"scenario {s!r} is not one of {', '.join(SCENARIOS)}")
        return s

    def latency_bound_s(self) -> float:
        """The row's p99 bound in seconds (offline and fixed-batch rows: none that binds)."""
        ms = self.number("latency_p99_ms")
        if self.scenario == "server" and ms is None:
            raise ValueError("a server row needs latency_p99_ms")
        return ms / 1e3 if ms is not None and self.scenario == "server" else OFFLINE_BOUND_S


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a validation CSV, read with the size cap; a clear error for a broken file."""
    text = read_text_capped(
        path, "the validation file", MAX_BYTES, "Give the path of a CSV of published runs."
    )
    try:
        return list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise BadInput(f"Cannot read validation file '{path}'.", str(exc), "Give a UTF-8 CSV file.") from None


def read_kind_cases(path: Path, metrics: tuple[str, ...]) -> list[KindCase] | None:
    """The cases of a vision or recommendation CSV (its metric column holds one of `metrics`),
    or None when the file is not one (it is left to the LLM readers)."""
    rows = read_csv_rows(path)
    if not rows or not all(r.get("metric") in metrics for r in rows):
        return None
    missing = [c for c in COMMON_COLUMNS if c not in rows[0]]
    if missing:
        raise BadInput(
            f"Validation file '{path}' lacks columns: {', '.join(missing)}.",
            "Vision and recommendation cases need the model, mode, accelerator, GPU count, precision, "
            "batch, scenario, metric and the published value.",
            "Use the header of the bundled vision.csv or recsys.csv (validate/data/README.md).",
        )
    cases = []
    for n, r in enumerate(rows, start=2):
        value = published_value(path, n, r)
        cases.append(KindCase(r["id"], r["metric"], value, r))
    return cases


Prediction = tuple[float, dict[str, Any]]


def range_of_rate(hw: Hardware, unit_time_of: Callable[[Hardware], float], rate: float) -> dict[str, float]:
    """P10/P50/P90 of a rate whose time per unit is `unit_time_of(hardware)`, by the plans' own
    uncertainty model (elasticities of each efficiency, Monte Carlo over their ranges)."""
    from rightsize.search.uncertainty_steps import service_uncertainty

    best = SimpleNamespace(rate=rate, gpus=1, replicas=1, cost_usd=None, latency_p99_s=None)
    unc = service_uncertainty(SimpleNamespace(best=best), hw, unit_time_of, "rate", rate, 0.0)
    m = unc["metrics"]["rate"]
    return {q: float(m[q]) for q in ("p10", "p50", "p90")}


# (spec, hardware) -> (batch, units/s one engine serves at full load, p99 latency), or None
Capacity = Callable[[Any, Hardware], tuple[int, float, float] | None]


def served_rate(
    spec: Any, hw: Hardware, capacity_of: Capacity, where: str
) -> tuple[int, float, float, dict[str, float]]:
    """(batch, rate, p99 latency, P10/P50/P90 of the rate) of one inference engine at full load,
    for either kind: the batch its planner picks (`capacity_of`), and the range of the rate with
    that batch held (the plans' uncertainty model); a clear error when no batch meets the bound."""
    from rightsize.errors import Infeasible

    found = capacity_of(spec, hw)
    if found is None:
        raise Infeasible(f"No batch of {spec.arch.title} on {where} meets the row's bound.")
    batch, rate, latency = found
    inf = spec.inference
    held = spec.model_copy(update={"inference": inf.model_copy(update={"batch": batch})})

    def unit_time_of(h: Hardware) -> float:
        got = capacity_of(held, h)
        return 1.0 / got[1] if got else math.inf

    return batch, rate, latency, range_of_rate(hw, unit_time_of, rate)


def _with_model_error(rows: list[dict[str, Any]]) -> None:
    """Each predicted row's P10-P90: the efficiency spread of the plans' uncertainty model
    combined with the model's own error on the other rows of its metric (leave-one-out: a row
    never vouches for itself). Both are taken as lognormal: sigma_e from the efficiency
    P10-P90, sigma_m the RMS log error of the n other rows. sigma_m is itself estimated from n
    residuals, so the new row's error over it follows Student's t with n degrees of freedom
    (residuals about zero: no mean is fitted), not the normal: with 5 other rows the 90th
    percentile is 1.48 sigma, not 1.28. P10/P90 = P50 x exp(-/+ hypot(z90 sigma_e, t90_n sigma_m))."""
    logs = {id(r): math.log(r["predicted"] / r["published"]) for r in rows if r.get("predicted")}
    for r in rows:
        eff = r.get("efficiency_range")
        if eff is None:
            continue
        others = [logs[id(o)] for o in rows if o is not r and o["metric"] == r["metric"] and id(o) in logs]
        sigma_m = math.sqrt(sum(e * e for e in others) / len(others)) if others else 0.0
        sigma_e = math.log(eff["p90"] / eff["p10"]) / (2 * Z90) if eff["p10"] > 0 else 0.0
        spread = math.hypot(Z90 * sigma_e, t90(len(others)) * sigma_m)
        r.update(p10=eff["p50"] * math.exp(-spread), p50=eff["p50"], p90=eff["p50"] * math.exp(spread))
        r["model_sigma"] = sigma_m
        r["within_p10_p90"] = r["p10"] <= r["published"] <= r["p90"]


def t90(dof: int) -> float:
    """Student's t 90th percentile with `dof` degrees of freedom (the normal's past 1,000; 0 for none)."""
    if dof <= 0:
        return 0.0
    if dof > 1000:
        return Z90
    from scipy.stats import t

    return float(t.ppf(0.9, dof))


def validate_kind_rows(
    cases: list[KindCase], predict: Callable[[KindCase], Prediction], file: str, progress: Any = None
) -> list[dict[str, Any]]:
    """Each case as a row of `rightsize validate`: predicted, error, range; a case the model
    cannot handle is kept with predicted None and the reason."""
    rows: list[dict[str, Any]] = []
    for case in cases:
        if progress:
            progress(case.id)
        row: dict[str, Any] = {
            "id": case.id,
            "metric": case.metric,
            "published": case.published,
            "file": file,
            "accelerator": case.text("accelerator"),  # for the per-family breakdown
        }
        try:
            value, detail = predict(case)
        except (KeyError, ValueError) as exc:
            row.update(predicted=None, error=None, reason=f"the case's columns cannot be read: {exc}")
            rows.append(row)
            continue
        except RightsizeError as exc:
            row.update(predicted=None, error=None, reason=exc.message().replace("\n", " "))
            rows.append(row)
            continue
        row["predicted"] = value
        row["error"] = (value - case.published) / case.published
        rng = detail.pop("range", None)
        if rng is not None:
            row["efficiency_range"] = rng
        row["chosen"] = detail
        rows.append(row)
    _with_model_error(rows)
    return rows
