"""Every workload kind goes through the same stages after its search: the safety margin,
the facility power cap, a calibration, the uncertainty ranges and the advisor each change
the result for training, LLM serving, vision (training and inference) and recommendation
(training and inference) alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.advise import advise, checklists
from rightsize.api import plan
from rightsize.errors import Infeasible
from rightsize.spec import parse_spec

EXAMPLES = Path(__file__).parent.parent / "examples"
# kind -> (example, the accelerator to pin it to, so each plan is quick)
CASES = {
    "training": ("llama3-8b-lora-weekly", "h100-sxm"),
    "serving": ("llama3-70b-chat-serving", "h100-sxm"),
    "vision-training": ("resnet50-imagenet-train", "a100-sxm-80gb"),
    "vision-inference": ("resnet50-video-inference", "l4"),
    "recsys-training": ("dlrm-criteo-train", "h100-sxm"),
    "recsys-inference": ("dlrm-criteo-serving", "a100-sxm-80gb"),
}


def _raw(kind: str) -> dict[str, Any]:
    name, acc = CASES[kind]
    raw = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    raw.setdefault("targets", {})["accelerators"] = [acc]
    # The plan's one safety margin is infrastructure.margins unless `policy` sets its own.
    (raw.get("policy") or {}).pop("headroom", None)
    return raw


def _plan(kind: str, infra: dict[str, Any] | None = None, calibration: Any = None) -> Any:
    raw = _raw(kind)
    for section, values in (infra or {}).items():
        raw.setdefault("infrastructure", {}).setdefault(section, {}).update(values)
    return plan(parse_spec(raw, EXAMPLES), calibration=calibration)


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    return {k: _plan(k) for k in CASES}


def _planned_need(p: Any) -> float:
    """What the margin moves: the deadline a job plans against, or a service's design rate."""
    if p.demand.run_s is not None:
        d = getattr(p, "deadline_s", None) or p.targets.get("deadline_s")
        assert d, "a job example with a deadline"
        return float(d)
    return float(p.demand.design_rate_rps)


@pytest.mark.parametrize("kind", list(CASES))
def test_safety_margin_changes_the_plan(kind: str) -> None:
    low = _plan(kind, {"margins": {"safety_margin": 0.1}})
    high = _plan(kind, {"margins": {"safety_margin": 0.3}})
    a, b = _planned_need(low), _planned_need(high)
    if low.demand.run_s is not None:
        assert b == pytest.approx(a * 1.1 / 1.3)  # deadline / (1 + m)
    else:
        assert b == pytest.approx(a * 1.3 / 1.1)  # peak x (1 + m)
    lines = {m.what: m for m in high.sizing.margins}
    assert any(abs(m.margin_fraction) > 0 for m in lines.values())


@pytest.mark.parametrize("kind", list(CASES))
def test_power_cap_constrains_the_plan(kind: str) -> None:
    with pytest.raises(Infeasible, match="power cap"):
        _plan(kind, {"facility": {"power_cap": "1kW"}})


def _performance(p: Any) -> tuple[Any, ...]:
    b = p.best
    keys = (
        "step",
        "mfu",
        "replica_capacity_rps",
        "latency_p99_s",
        "latency_s",
        "samples_per_s",
        "images_per_s",
    )
    return tuple(str(getattr(b, k, None)) for k in keys)


@pytest.mark.parametrize("kind", list(CASES))
def test_calibration_changes_the_plan(kind: str, base: dict[str, Any]) -> None:
    acc = CASES[kind][1]
    slow = {acc: {"gemm_fraction": 0.3, "memory_bw_fraction": 0.45, "attention_fraction": 0.3}}
    cal = _plan(kind, calibration=slow)
    assert _performance(cal) != _performance(base[kind])
    assert cal.extra.get("calibration_applied") == [acc]


@pytest.mark.parametrize("kind", list(CASES))
def test_every_kind_has_uncertainty_ranges(kind: str, base: dict[str, Any]) -> None:
    u = base[kind].uncertainty
    assert u is not None and u["metrics"]
    spread = [m["p90"] - m["p10"] for m in u["metrics"].values()]
    assert any(s > 0 for s in spread)
    for m in u["metrics"].values():
        assert m["p10"] <= m["p50"] <= m["p90"]


@pytest.mark.parametrize("kind", list(CASES))
def test_every_kind_is_advised_and_checklisted(kind: str, base: dict[str, Any]) -> None:
    p = base[kind]
    found = advise(p)
    assert found, f"{kind}: no finding at all"
    lists = checklists(p)
    assert lists["SCALE"] and lists["DEPLOY"]
    for f in found:
        assert f.title and f.fix and f.evidence


@pytest.mark.parametrize("kind", list(CASES))
def test_advisor_follows_the_plan(kind: str, base: dict[str, Any]) -> None:
    """Lower achieved efficiencies change what the advisor says (findings and checklists) or
    the numbers it cites."""
    acc = CASES[kind][1]
    slow = {acc: {"gemm_fraction": 0.2, "memory_bw_fraction": 0.3, "attention_fraction": 0.2}}

    def said(p: Any) -> list[Any]:
        lists = checklists(p)
        return [(f.rule, sorted(f.evidence.items())) for f in advise(p)] + [
            i.as_dict() for k in ("SCALE", "DEPLOY") for i in lists[k]
        ]

    assert said(base[kind]) != said(_plan(kind, calibration=slow))
