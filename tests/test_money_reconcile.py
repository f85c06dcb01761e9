"""One figure per quantity: every bundled example's cost and energy per unit of work agree,
within 1%, between the JSON headline, the sizing's cost and power records, the bill of
materials, the cost section and the markdown and terminal reports; and each is recomputed
here independently, from the plan's own bill and the spec's average rate (not from the code
that computes it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.constants import HOUR_S, HOURS_PER_MONTH
from rightsize.report.render import render
from rightsize.spec import load_spec

EXAMPLES = sorted(
    p
    for p in (Path(__file__).parent.parent / "examples").glob("*.yaml")
    if "\nkind: fleet" not in p.read_text()
)
MONTH_S = HOURS_PER_MONTH * HOUR_S
TOL = 0.01
_UNIT_WORDS = {"output_token": "output tokens", "query": "queries"}


def _close(a: float, b: float, rel: float = TOL) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b))


def _shown(text: str) -> float:
    """A dollar figure as printed ($4.12, $1.57M, $0.00540) back to a number."""
    m = re.fullmatch(r"\$([0-9,.]+(?:e-?\d+)?)(M?)", text.strip())
    assert m, f"not a dollar figure: {text!r}"
    return float(m.group(1).replace(",", "")) * (1e6 if m.group(2) else 1.0)


def _printed_close(text: str, value: float) -> bool:
    """Within 1%, or within the rounding of the printed digits (a figure like $0.95)."""
    shown = _shown(text)
    digits = text.split(".")[-1] if "." in text else ""
    half_step = 0.5 * 10 ** -len(re.sub(r"\D", "", digits)) if digits else 0.5
    return _close(shown, value) or abs(shown - value) <= half_step


@pytest.fixture(scope="module", params=[p.name for p in EXAMPLES])
def planned(request: pytest.FixtureRequest) -> dict[str, Any]:
    path = Path(__file__).parent.parent / "examples" / request.param
    result = plan(path)
    return {
        "name": request.param,
        "spec": load_spec(path),
        "json": json.loads(render(result, "json")),
        "markdown": render(result, "markdown"),
        "table": render(result, "table"),
    }


def _average_units_per_s(spec: Any, data: dict[str, Any]) -> float:
    """A service's work served per second on average, from the spec alone (the plan's
    capacity only where the engine runs flat out)."""
    kind = type(spec).__name__
    if kind == "InferenceSpec":
        tr = spec.traffic
        if spec.serving.scenario != "serving":
            return float(data["best"]["output_tokens_per_s"])
        return float(tr.rate_per_s or tr.peak_rate_per_s) * tr.output_tokens.mean_tokens
    if kind == "VisionSpec":
        return float(spec.inference.streams * spec.inference.fps)
    if kind == "RecsysSpec":
        return float(spec.inference.qps)
    raise AssertionError(f"no average rate for a {kind} service")


def test_cost_per_unit_recomputed_from_the_bill(planned: dict[str, Any]) -> None:
    data, spec = planned["json"], planned["spec"]
    cost = data["sizing"]["cost"]
    od = (cost.get("cloud") or {}).get("on_demand")
    if not od or od.get("usd_per_million_units") is None:
        pytest.skip(f"{planned['name']}: no cloud on-demand price")
    if cost["schedule"] == "continuous":
        units = _average_units_per_s(spec, data) * MONTH_S
        recomputed = od["usd_per_month"] / units * 1e6
    else:
        recomputed = od["usd_per_run"] / cost["work_units_per_run"] * 1e6
    assert _close(od["usd_per_million_units"], recomputed), (od["usd_per_million_units"], recomputed)
    headline = data["best"].get("cost_usd_per_m_output_tokens")
    if headline is not None:  # an LLM service's headline is the same figure
        assert _close(headline, recomputed), (headline, recomputed)


def test_training_units_are_the_specs_tokens(planned: dict[str, Any]) -> None:
    spec, cost = planned["spec"], planned["json"]["sizing"]["cost"]
    tokens = getattr(getattr(spec, "training", None), "train_tokens", None)
    if cost["schedule"] == "continuous" or cost["work_unit"] != "token" or not tokens:
        pytest.skip("not a token-counted job")
    assert _close(cost["work_units_per_run"], float(tokens))


def test_energy_per_unit_recomputed_from_the_energy_bill(planned: dict[str, Any]) -> None:
    data = planned["json"]
    power, cost = data["sizing"]["power"], data["sizing"]["cost"]
    kwh = power.get("energy_per_million_units_kwh")
    assert kwh is not None
    if cost["schedule"] == "continuous":
        units = _average_units_per_s(planned["spec"], data) * MONTH_S
        recomputed = power["energy_per_month_mwh"] * 1e3 / units * 1e6
    else:
        recomputed = power["energy_per_run_mwh"] * 1e3 / cost["work_units_per_run"] * 1e6
    assert _close(kwh, recomputed), (kwh, recomputed)
    per_joule = data["best"].get("output_tokens_per_joule")
    if per_joule is not None and cost["schedule"] == "continuous":
        assert _close(per_joule, 1e6 / (kwh * 3.6e6)), (per_joule, kwh)


def test_gpu_hours_times_price_is_the_cost(planned: dict[str, Any]) -> None:
    data = planned["json"]
    cost = data["sizing"]["cost"]
    billed, used = cost["gpu_hours_billed"], cost["gpu_hours_used"]
    assert billed >= used > 0
    assert _close(billed / used, cost["gpus_billed"] / cost["gpus_used"])
    od = (cost.get("cloud") or {}).get("on_demand")
    if od:
        total = od[f"usd_per_{cost['period']}"]
        assert _close(billed * od["usd_per_gpu_hour"] + cost["storage_usd"], total)
        if od.get("usd_per_instance_hour") is not None:  # the billed instance's price, whole
            instances = cost["gpus_billed"] * od["usd_per_gpu_hour"] / od["usd_per_instance_hour"]
            assert abs(instances - round(instances)) < 1e-6 and round(instances) >= 1
    best = data["best"]
    if cost["period"] == "run" and best.get("gpu_hours") is not None:
        # the headline's GPU-hours are the GPUs the job uses for the sized run
        assert _close(best["gpu_hours"], used), (best["gpu_hours"], used)
    headline_cost = best.get("cloud_cost_usd", best.get("cost_usd"))
    if od and cost["period"] == "run" and headline_cost is not None:
        assert _close(headline_cost, od["usd_per_run"])


def _unit_words(work_unit: str) -> str:
    return _UNIT_WORDS.get(work_unit, work_unit.replace("_", " ") + "s")


def test_reports_print_the_same_figures(planned: dict[str, Any]) -> None:
    data, md, table = planned["json"], planned["markdown"], planned["table"]
    cost = data["sizing"]["cost"]
    od = (cost.get("cloud") or {}).get("on_demand")
    if not od or od.get("usd_per_million_units") is None:
        pytest.skip("no cloud on-demand price")
    value = od["usd_per_million_units"]
    words = _unit_words(cost["work_unit"])
    bom = re.search(r"\| cloud on demand \| [^|]*?; (\$[0-9.,e-]+M?) per 1M " + words, md)
    assert bom, "the bill of materials shows no on-demand cost per unit"
    assert _printed_close(bom.group(1), value), (bom.group(1), value)
    # option | per instance-hour | per GPU-hour | as of | per run/month | per 1M units |
    row = re.search(r"\| on demand \| [^|]+ \| [^|]+ \| [^|]+ \| [^|]+ \| (\$[0-9.,e-]+M?) \|", md)
    assert row, "the cost section shows no on-demand cost per unit"
    assert _printed_close(row.group(1), value), (row.group(1), value)
    assert re.search(r"cloud on demand .*per 1M " + words, table), "the terminal BOM lacks the figure"
    headline = data["best"].get("cost_usd_per_m_output_tokens")
    if headline is not None:
        shown = re.search(r"\| per 1M output tokens \| (\$[0-9.,e-]+M?) \|", md)
        assert shown and _printed_close(shown.group(1), value), (shown, value)
    kwh = data["sizing"]["power"]["energy_per_million_units_kwh"]
    line = re.search(r"; ([0-9.e-]+) kWh per 1M " + words, md)
    assert line and _close(float(line.group(1)), kwh, 0.005 + 1e-9), (line, kwh)


def test_gpu_hours_objective_counts_billed_gpu_hours() -> None:
    # ResNet-50 used to pick 1 H100 in a whole 8-GPU node under `objective: gpu_hours`: 5 GPU-hours
    # used, 41 billed, ten times the cost of the `objective: cost` plan. Ranked by billed GPU-hours,
    # the two objectives agree on what is paid for.
    import yaml

    raw = yaml.safe_load(
        (Path(__file__).parent.parent / "examples" / "resnet50-imagenet-train.yaml").read_text()
    )
    picked = {}
    for objective in ("gpu_hours", "cost"):
        raw["targets"]["objective"] = objective
        d = json.loads(render(plan(raw), "json"))
        best, cost = d["best"], d["sizing"]["cost"]
        nodes_hours = cost["nodes"] * cost["gpus_billed"] // cost["nodes"] * cost["run_s"] / HOUR_S
        assert _close(cost["gpu_hours_billed"], nodes_hours)
        assert _close(best["gpu_hours_billed"], cost["gpu_hours_billed"])
        assert _close(best["gpu_hours"], cost["gpu_hours_used"])
        picked[objective] = (best["gpu_hours_billed"], best["cost_usd"])
    assert picked["gpu_hours"][0] <= picked["cost"][0] * (1 + TOL)
    assert picked["gpu_hours"][1] <= picked["cost"][1] * 1.5  # no longer 10x the cost plan
