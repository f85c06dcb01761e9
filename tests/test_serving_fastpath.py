"""The fast capacity search against the full one: the same plans.

The planner's capacity search starts from an analytic estimate (`search.serving_start`),
settles trickle-failing options with one run, gallops and stops runs once their verdict is
certain. The full path is the reference bisection: BISECTION_STEPS halvings of the rate,
every run to the end, no estimate. Both must choose the same accelerator, tensor
parallelism and replicas with the same SLO capacity, for the best option and for every
alternative, and report the same figures (within 1%).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rightsize.search.serving as serving
from rightsize.search.serving_capacity import leaf_rate
from rightsize.search.serving_plan import ServingCandidate
from rightsize.spec import load_spec, parse_spec

EX = Path(__file__).resolve().parent.parent / "examples"


def _reference_capacity(passes: Callable[[float], bool], lo: float, hi: float, steps: int, **_: Any) -> float:
    """Plain geometric bisection, `steps` halvings; lo itself checked when every halving fails."""
    k, a, b = 0, lo, hi
    for _ in range(steps):
        mid = math.sqrt(a * b)
        k <<= 1
        if passes(mid):
            a, k = mid, k | 1
        else:
            b = mid
    rate = leaf_rate(lo, hi, steps, k)
    return rate if k > 0 or passes(rate) else 0.0


def _spec(**over: Any):  # type: ignore[no-untyped-def]
    data: dict[str, Any] = {
        "kind": "inference",
        "model": "llama3-8b",
        "serving": {"weight_precision": "bf16", "kv_precision": "bf16"},
        "traffic": {"rate": 20, "prompt_tokens": 1024, "output_tokens": 256},
        "slo": {"ttft": "300ms", "tpot": "40ms", "percentile": 95},
        "targets": {"accelerators": ["h100-sxm", "a100-sxm-80gb", "l40s", "mi300x"]},
    }
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v}
    return parse_spec(data, Path("."))


SPECS = {
    "tpot-bound": lambda: _spec(),
    "ttft-bound": lambda: _spec(slo={"ttft": "120ms", "tpot": "60ms"}, traffic={"prompt_tokens": 3000}),
    "trickle-fails-somewhere": lambda: _spec(slo={"ttft": "90ms"}, traffic={"prompt_tokens": 2048}),
    "multi-node": lambda: load_spec(EX / "llama3-405b-serve-multinode.yaml"),
}


def _options(plan: Any) -> list[ServingCandidate]:
    return [plan.best] + [c for c, _ in plan.alternatives]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_fast_search_gives_the_full_searchs_plan(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = serving.plan_serving(SPECS[name]())
    with monkeypatch.context() as m:
        m.setattr(serving, "capacity_rps", _reference_capacity)
        m.setattr(serving, "start_rate", lambda *a, **k: None)
        full = serving.plan_serving(SPECS[name]())
    assert [(c.accelerator, c.tp, c.pp, c.replicas) for c in _options(fast)] == [
        (c.accelerator, c.tp, c.pp, c.replicas) for c in _options(full)
    ]
    for f, r in zip(_options(fast), _options(full), strict=True):
        assert f.replica_capacity_rps == r.replica_capacity_rps
        assert f.cost_usd_per_hour == r.cost_usd_per_hour
        for key, value in r.latency_s.items():
            assert f.latency_s[key] == pytest.approx(value, rel=0.01, nan_ok=True)
        assert f.output_tokens_per_s == pytest.approx(r.output_tokens_per_s, rel=0.01)
    assert [c.accelerator for c in fast.pareto] == [c.accelerator for c in full.pareto]
