"""Ranked by cost, the serving search does not build options of accelerators without a price
(the plan drops them whatever their capacity): it only asks whether some rate meets the
SLOs, by the capacity search's own runs up to the first that passes. The plan must be the
one the full evaluation gives: the same best option, alternatives, Pareto front, the same
rejections in the same order (an unpriced accelerator named once for its missing price, an
option that fails even a trickle named as such) and the same error when nothing is priced.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import rightsize.search.serving as serving
from rightsize.errors import BadInput
from rightsize.spec import parse_spec


def _spec(accelerators: list[str], **over: Any):  # type: ignore[no-untyped-def]
    data: dict[str, Any] = {
        "kind": "inference",
        "model": "llama3-8b",
        "serving": {"weight_precision": "bf16", "kv_precision": "bf16"},
        "traffic": {"rate": 20, "prompt_tokens": 2048, "output_tokens": 256},
        "slo": {"ttft": "90ms", "tpot": "40ms", "percentile": 95},
        "targets": {"accelerators": accelerators},
    }
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v}
    return parse_spec(data, Path("."))


def _plan(spec: Any) -> str:
    plan = serving.plan_serving(spec)
    fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan) if f.name != "seconds"}
    return json.dumps(
        {k: dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v for k, v in fields.items()},
        default=lambda o: dataclasses.asdict(o) if dataclasses.is_dataclass(o) else str(o),
        sort_keys=True,
    )


def _full(spec: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(serving, "_dropped_for_price", lambda *_: False)
        return _plan(spec)


def test_unpriced_options_are_not_built_and_the_plan_is_the_full_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # h20 and rtx-pro-6000 have no price; at a 90 ms TTFT some options miss even a trickle
    spec = _spec(["h100-sxm", "h20", "rtx-pro-6000", "l40s"])
    built: list[str] = []
    real = serving._candidate
    monkeypatch.setattr(
        serving, "_candidate", lambda rep, *a: built.append(rep.hw.accelerator_id) or real(rep, *a)
    )
    fast = _plan(spec)
    assert built and not {"h20", "rtx-pro-6000"} & set(built)
    assert "no price for h20" in fast  # still named once for its missing price
    assert "even a trickle" in fast
    assert fast == _full(spec, monkeypatch)


def test_nothing_priced_gives_the_full_evaluations_error(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(["h20", "rtx-pro-6000"], slo={"ttft": "300ms"})
    errors = []
    for plan in (_plan, lambda s: _full(s, monkeypatch)):
        with pytest.raises(BadInput) as err:
            plan(spec)
        errors.append(str(err.value))
    assert errors[0] == errors[1]
    assert "h20" in errors[0]


@pytest.mark.parametrize("passes_above_trickle", [True, False])
def test_a_failing_trickle_still_runs_the_search_until_a_pass(
    passes_above_trickle: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where meeting the SLOs is not monotone in the rate (here: the trickle fails, higher
    rates pass), the answer is the capacity search's, not the trickle's alone."""
    from rightsize.catalog import get_accelerator, node_for
    from rightsize.perf.inference import Replica
    from rightsize.search.serving_engine import workload

    spec = _spec(["h100-sxm"], slo={"ttft": "300ms"})
    rep = Replica.build(spec.model, get_accelerator("h100-sxm"), node_for("h100-sxm"), 1, "bf16", "bf16")
    wl = workload(spec, 300)
    tried: list[float] = []

    def fake(self: Any, rate: float) -> bool:
        tried.append(rate)
        return passes_above_trickle and rate > min(tried)  # the first run is the trickle's

    monkeypatch.setattr(serving.ReplicaRuns, "passes", fake)
    assert serving._meets_at_some_rate(rep, spec, wl) is passes_above_trickle
    assert (serving.replica_capacity(rep, spec, wl) > 0) is passes_above_trickle
