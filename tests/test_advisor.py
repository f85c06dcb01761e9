"""The advisor: every rule has a plan that triggers it and one that does not; findings
carry evidence and a fix and are ranked by impact; checklists answer from the plan."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from rightsize.advise import RULES, advise, checklists
from rightsize.advise import findings as F
from rightsize.advise.view import view
from rightsize.constants import DAY_S, GiB
from rightsize.search.candidates import Candidate
from rightsize.search.serving import ServingCandidate, ServingPlan
from rightsize.search.train import TrainingPlan

# A healthy 1024 x H100 run: 80% compute, 10% exposed communication, 5% bubble.
STEP = {
    "step_time_s": 10.0,
    "compute_s": 8.0,
    "tp_comm_exposed_s": 0.3,
    "cp_comm_exposed_s": 0.0,
    "ep_comm_exposed_s": 0.0,
    "pp_comm_exposed_s": 0.2,
    "dp_comm_exposed_s": 0.5,
    "bubble_s": 0.5,
    "optimizer_s": 0.5,
}
PARALLEL = {
    "tp": 8,
    "pp": 4,
    "dp": 32,
    "cp": 1,
    "ep": 1,
    "vpp": 1,
    "micro_batch": 1,
    "recompute": "none",
    "sequence_parallel": True,
    "zero_stage": 1,
}


@dataclass
class FakeSizing:
    sections: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return self.sections


@dataclass
class FakeDemand:
    step_s_by_nic_gbps: dict[float, float] = field(default_factory=dict)
    data_read_bytes_per_s: float = 0.0
    duty_cycle: float = 1.0
    params: float = 70e9


def cand(step: dict[str, float] | None = None, **kw: Any) -> Candidate:
    s = {**STEP, **(step or {})}
    if step and "step_time_s" not in step:
        s["step_time_s"] = sum(v for k, v in s.items() if k != "step_time_s")
    base: dict[str, Any] = {
        "accelerator": "h100-sxm",
        "node": "hgx-h100",
        "gpus": 1024,
        "parallel": dict(PARALLEL),
        "step": s,
        "memory": {"weights_bytes": 4.4e9, "total_bytes": 50 * GiB, "capacity_bytes": 80 * GiB},
        "mfu": 0.5,
        "hfu": 0.5,
        "tokens_per_s_per_gpu": 1000.0,
        "time_to_train_s": 30 * DAY_S,
        "gpu_hours": 1024 * 30 * 24.0,
        "cost_usd": 1024 * 30 * 24 * 3.0,
        "reliability": {"checkpoint_write_s": 2.0, "checkpoint_interval_s": 600.0, "goodput": 0.97},
    }
    base.update(kw)
    return Candidate(**base)


def tplan(best: Candidate | None = None, **kw: Any) -> TrainingPlan:
    b = best or cand()
    p = TrainingPlan(
        name="t",
        model="llama3-70b",
        objective=kw.pop("objective", "gpu_hours"),
        deadline_s=kw.pop("deadline_s", 60 * DAY_S),
        best=b,
        alternatives=kw.pop("alternatives", []),
        runner_up_layout=None,
        pareto=kw.pop("pareto", [b]),
        rejected=[],
        assumptions=[],
        configs_evaluated=1,
        search_seconds=0.0,
    )
    sizing = kw.pop("sizing", None)
    p.sizing = FakeSizing(sizing) if sizing is not None else None
    p.demand = kw.pop("demand", None)
    p.uncertainty = kw.pop("uncertainty", None)  # type: ignore[attr-defined]
    assert not kw, kw
    return p


def scand(**kw: Any) -> ServingCandidate:
    base: dict[str, Any] = {
        "accelerator": "h100-sxm",
        "node": "hgx-h100",
        "tp": 2,
        "replicas": 4,
        "weight_precision": "fp8",
        "kv_precision": "fp8",
        "replica_capacity_rps": 10.0,
        "design_rate_rps": 30.0,
        "latency_s": {
            "ttft_p50_s": 0.1,
            "ttft_p95_s": 0.3,
            "tpot_p50_s": 0.05,
            "tpot_p95_s": 0.06,
            "e2e_p95_s": 10.0,
        },
        "slo_headroom": {"ttft_s": 1.7, "tpot_s": 1.5},
        "goodput": 1.0,
        "cost_usd_per_hour": 40.0,
        "cost_usd_per_m_output_tokens": 1.0,
        "output_tokens_per_s": 8000.0,
        "memory": {"weights_bytes_per_gpu": 35e9, "kv_capacity_tokens": 5e5},
    }
    base.update(kw)
    return ServingCandidate(**base)


def splan(
    best: ServingCandidate | None = None,
    alternatives: list[tuple[ServingCandidate, str]] | None = None,
    sizing: dict[str, Any] | None = None,
) -> ServingPlan:
    b = best or scand()
    p = ServingPlan("s", "llama3-70b", "serving", "cost", b, alternatives or [], [b], [], [], 0.0)
    if sizing is not None:
        p.sizing = FakeSizing(sizing)  # type: ignore[assignment]
    return p


# a serving plan that bought a back-end fabric (issue 13: only then is it a training cluster)
_SERVING_FABRIC = {"fabric": {"needed": True, "nic_gbps_per_gpu": 400, "capex_usd": 1e6}}


def _growth(ok: bool) -> dict[str, Any]:
    return {
        "growth": {
            "horizon_years": 3,
            "stages": [{"needed_at_years": 1.0, "gpus": 2048, "fabric_ok": ok, "power_ok": True}],
        }
    }


# rule -> (a plan that triggers it, a plan that does not)
CASES: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
    "compute_bound": (lambda: tplan(), lambda: tplan(cand({"compute_s": 5.0, "dp_comm_exposed_s": 3.5}))),
    "network_bound": (lambda: tplan(cand({"compute_s": 6.0, "dp_comm_exposed_s": 2.5})), lambda: tplan()),
    "pipeline_bubble": (lambda: tplan(cand({"compute_s": 6.5, "bubble_s": 2.0})), lambda: tplan()),
    "memory_bandwidth_bound": (
        lambda: tplan(cand({"compute_s": 7.0, "optimizer_s": 1.5})),
        lambda: tplan(),
    ),
    "input_bound": (
        lambda: tplan(sizing={"storage": {"read_bytes_per_s_needed": 10e9, "read_bytes_per_s": 5e9}}),
        lambda: tplan(sizing={"storage": {"read_bytes_per_s_needed": 10e9, "read_bytes_per_s": 20e9}}),
    ),
    "storage_bound": (
        lambda: tplan(cand(reliability={"checkpoint_write_s": 60.0, "checkpoint_interval_s": 600.0})),
        lambda: tplan(),
    ),
    "memory_headroom": (
        lambda: tplan(
            cand(memory={"weights_bytes": 4e9, "total_bytes": 76 * GiB, "capacity_bytes": 80 * GiB})
        ),
        lambda: tplan(),
    ),
    "fabric_too_slow": (
        lambda: tplan(demand=FakeDemand({200.0: 12.0, 400.0: 10.0, 800.0: 8.5})),
        lambda: tplan(demand=FakeDemand({200.0: 12.0, 400.0: 10.0, 800.0: 9.9})),
    ),
    "thermal_limit": (
        lambda: tplan(
            sizing={"power": {"throttle_slowdown": 0.06, "kw_per_rack": 40.0, "cooling_max_rack_kw": 45.0}}
        ),
        lambda: tplan(
            sizing={"power": {"throttle_slowdown": 0.0, "kw_per_rack": 40.0, "cooling_max_rack_kw": 45.0}}
        ),
    ),
    "deadline_risk": (
        lambda: tplan(cand(time_to_train_s=58 * DAY_S)),
        lambda: tplan(cand(time_to_train_s=40 * DAY_S)),
    ),
    "slo_headroom": (lambda: splan(scand(slo_headroom={"ttft_s": 1.05, "tpot_s": 1.6})), lambda: splan()),
    "growth_limits": (lambda: tplan(sizing=_growth(False)), lambda: tplan(sizing=_growth(True))),
    "low_utilisation": (lambda: tplan(cand(mfu=0.2)), lambda: tplan()),
    "faster_than_needed": (
        lambda: tplan(
            cand(time_to_train_s=10 * DAY_S, gpu_hours=1024 * 240.0),
            pareto=[
                cand(gpus=256, time_to_train_s=36 * DAY_S, gpu_hours=256 * 36 * 24.0),
                cand(time_to_train_s=10 * DAY_S),
            ],
        ),
        lambda: tplan(cand(time_to_train_s=50 * DAY_S)),
    ),
    "unplanned_spare_gpus": (
        lambda: tplan(sizing={"nodes": {"gpus": 1280, "gpus_per_node": 8}}),
        lambda: tplan(sizing={"nodes": {"gpus": 1024, "gpus_per_node": 8}}),
    ),
    "idle_billed_gpus": (  # issue 13: whole-node billing, GPUs paid for and unused
        lambda: splan(sizing={"cost": {"gpus_billed": 8, "gpus_used": 6}}),
        lambda: splan(sizing={"cost": {"gpus_billed": 8, "gpus_used": 8}}),
    ),
    "cheaper_per_unit": (
        lambda: tplan(
            alternatives=[
                (cand(accelerator="mi300x", node="mi300x-platform", cost_usd=cand().cost_usd * 0.8), "")
            ]
        ),
        lambda: tplan(
            alternatives=[
                (cand(accelerator="mi300x", node="mi300x-platform", cost_usd=cand().cost_usd * 1.2), "")
            ]
        ),
    ),
    "training_cluster_for_serving": (
        lambda: splan(sizing=_SERVING_FABRIC),
        lambda: splan(),  # no fabric sized: no RDMA advice (issue 13)
    ),
    "serving_cluster_for_training": (
        lambda: tplan(cand(accelerator="l40s", node="l40s-server", gpus=16)),
        lambda: tplan(),
    ),
    "prototype_wont_scale": (
        lambda: tplan(
            cand(
                {
                    "compute_s": 1.0,
                    "tp_comm_exposed_s": 0.1,
                    "pp_comm_exposed_s": 0.0,
                    "dp_comm_exposed_s": 0.0,
                    "bubble_s": 0.0,
                    "optimizer_s": 0.1,
                },
                gpus=8,
                memory={"weights_bytes": 17.5e9, "total_bytes": 60 * GiB, "capacity_bytes": 80 * GiB},
            )
        ),
        lambda: tplan(),
    ),
}


def test_every_rule_has_a_case() -> None:
    assert {r.__name__ for r in RULES} == set(CASES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.__name__)
def test_rule_triggers_and_stays_quiet(rule: Callable[..., Any]) -> None:
    trig, quiet = CASES[rule.__name__]
    f = rule(view(trig()))
    assert isinstance(f, F.Finding), rule.__name__
    assert f.rule == rule.__name__ and f.category in F.CATEGORIES
    assert f.evidence and any(isinstance(v, int | float) for v in f.evidence.values())
    assert f.fix and f.impact >= 0
    assert rule(view(quiet())) is None


def test_serving_memory_bandwidth_bound() -> None:
    # H100: 3.35 TB/s x 0.9; 35 GB of weights per GPU read in ~11.6 ms; TPOT 14 ms is bound by it.
    bound = splan(scand(latency_s={"tpot_p50_s": 0.014}))
    free = splan(scand(latency_s={"tpot_p50_s": 0.06}))
    f = F.memory_bandwidth_bound(view(bound))
    assert f is not None and "int4" in f.fix
    assert F.memory_bandwidth_bound(view(free)) is None


def test_serving_over_provisioned() -> None:
    over = splan(scand(replicas=10, design_rate_rps=10.0))
    assert F.low_utilisation(view(over)) is not None
    assert F.low_utilisation(view(splan())) is None


def test_deadline_risk_uses_the_spread_when_present() -> None:
    unc = {"deadline": {"deadline_s": 60 * DAY_S, "probability_met": 0.7, "margin_fraction": 0.05}}
    f = F.deadline_risk(view(tplan(uncertainty=unc)))
    assert f is not None and f.impact == pytest.approx(0.3)
    unc["deadline"]["probability_met"] = 0.99
    assert F.deadline_risk(view(tplan(uncertainty=unc))) is None


def test_findings_ranked_by_impact() -> None:
    p = tplan(
        cand({"compute_s": 5.5, "dp_comm_exposed_s": 2.0, "bubble_s": 1.5}, mfu=0.3), sizing=_growth(False)
    )
    found = advise(p)
    assert len(found) >= 3
    assert [f.impact for f in found] == sorted((f.impact for f in found), reverse=True)
    assert found[0].severity == "high" and found[-1].impact <= found[0].impact


def test_finding_as_dict_has_severity() -> None:
    f = advise(tplan())[0]
    d = f.as_dict()
    assert set(d) >= {"rule", "category", "impact", "severity", "title", "evidence", "fix"}


def test_checklists_answer_from_numbers() -> None:
    lists = checklists(
        tplan(
            sizing={
                "growth": _growth(True)["growth"],
                "fabric": {"kind": "infiniband", "topology": "rail_optimized", "nic_gbps_per_gpu": 400},
            }
        )
    )
    scale, deploy = lists["SCALE"], lists["DEPLOY"]
    assert {i.step for i in scale} == {
        "scale",
        "compute",
        "accelerator interconnect",
        "latency and locality",
        "economics",
    }
    assert {i.step for i in deploy} == {
        "define",
        "estimate",
        "pick platform",
        "load-test",
        "observe",
        "yield plan",
    }
    compute = next(i for i in scale if i.step == "compute")
    assert compute.status == "answered" and "1,024 x h100-sxm" in compute.answer
    growth = next(i for i in scale if i.question.startswith("How will it grow"))
    assert growth.status == "answered"
    assert any(i.status == "to_decide" for i in deploy)  # the provider and region are the user's call


def test_checklists_mark_missing_sizing_as_to_decide() -> None:
    scale = checklists(tplan())["SCALE"]
    assert next(i for i in scale if i.question.startswith("How will it grow")).status == "to_decide"
    assert next(i for i in scale if i.step == "accelerator interconnect").status == "to_decide"


def test_serving_checklists() -> None:
    lists = checklists(splan())
    lat = next(i for i in lists["SCALE"] if i.question == "What latency do users see?")
    assert lat.status == "answered" and "ttft p95 300 ms" in lat.answer
    load = next(i for i in lists["DEPLOY"] if i.step == "load-test")
    assert "10.00 req/s" in load.answer


def test_other_results_get_empty_checklists() -> None:
    @dataclass
    class Other:
        sizing: Any = None

    assert checklists(Other()) == {"SCALE": [], "DEPLOY": []}
    assert advise(replace(Other(), sizing=FakeSizing(_growth(False))))[0].rule == "growth_limits"
