"""Quotas that admit (issue #29): a model of Kueue's admission run against the planned timeline.

The model follows Kueue (v0.9+, `pkg/cache` resource nodes and `pkg/scheduler/flavorassigner`):
a pod set goes to ONE flavor, tried in the ClusterQueue's order, skipping flavors whose node labels
contradict the pods' node selector; it fits a flavor when every resource it requests is within what
the queue has available there: its guaranteed quota (nominal minus lending limit) left unused, plus
what the cohort has left of what its queues lend, capped by the queue's borrowing limit. The first
flavor that fits is taken (FlavorFungibility whenCanBorrow: Borrow). Workloads are admitted by
priority. Every copy of every gang and every service replica the plan holds, at every hour of every
month, must be admitted on the flavor the plan put it on; quotas are whole nodes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.fleet.synthetic import write_synthetic_fleet
from rightsize.report.render import render

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "fleet-2027.yaml"
CAPACITY = "rightsize/capacity"
POOL = "rightsize/pool"


@dataclass
class Quota:
    nominal: float
    borrowing_limit: float | None
    lending_limit: float | None

    def guaranteed(self) -> float:
        return self.nominal - self.lending_limit if self.lending_limit is not None else 0.0


@dataclass
class ClusterQueue:
    name: str
    flavors: list[str]  # in order
    labels: dict[str, dict[str, str]]  # flavor -> node labels
    quotas: dict[tuple[str, str], Quota]  # (flavor, resource) -> quota
    usage: dict[tuple[str, str], float] = field(default_factory=dict)


class Cohort:
    """One cohort of ClusterQueues, Kueue's hierarchical quota arithmetic for one level."""

    def __init__(self, queues: list[ClusterQueue]) -> None:
        self.queues = {q.name: q for q in queues}

    def _lendable(self, fr: tuple[str, str]) -> float:
        # a cohort's subtree quota: what each queue stores in it (its quota beyond the guaranteed part)
        return sum(
            q.quotas[fr].nominal - q.quotas[fr].guaranteed() for q in self.queues.values() if fr in q.quotas
        )

    def _used(self, fr: tuple[str, str]) -> float:
        return sum(
            max(0.0, q.usage.get(fr, 0.0) - q.quotas[fr].guaranteed())
            for q in self.queues.values()
            if fr in q.quotas
        )

    def available(self, cq: ClusterQueue, fr: tuple[str, str]) -> float:
        quota = cq.quotas.get(fr)
        if quota is None:
            return 0.0
        use = cq.usage.get(fr, 0.0)
        local = max(0.0, quota.guaranteed() - use)
        parent = self._lendable(fr) - self._used(fr)
        if quota.borrowing_limit is not None:
            stored = quota.nominal - quota.guaranteed()
            used_in_parent = max(0.0, use - quota.guaranteed())
            parent = min(stored - used_in_parent + quota.borrowing_limit, parent)
        return local + parent

    def admit(
        self, cq_name: str, count: int, requests: dict[str, float], selector: dict[str, str]
    ) -> str | None:
        """The flavor a pod set of `count` pods is admitted on, or None; usage is charged."""
        cq = self.queues[cq_name]
        for f in cq.flavors:
            labels = cq.labels[f]
            if any(k in labels and labels[k] != v for k, v in selector.items()):
                continue  # the pods' node selector rules this flavor out
            need = {r: count * q for r, q in requests.items()}
            if all(need[r] <= self.available(cq, (f, r)) + 1e-6 for r in need):
                for r, q in need.items():
                    cq.usage[(f, r)] = cq.usage.get((f, r), 0.0) + q
                return f
        return None


def _queues(q: dict[str, Any]) -> list[ClusterQueue]:
    labels = {f["name"]: dict(f["node_labels"]) for f in q["resource_flavors"]}
    out = []
    for cq in q["cluster_queues"]:
        quotas = {}
        for f in cq["flavors"]:
            for r, v in f["resources"].items():
                quotas[(f["name"], r)] = Quota(v["nominal_quota"], v["borrowing_limit"], v["lending_limit"])
        out.append(ClusterQueue(cq["name"], [f["name"] for f in cq["flavors"]], labels, quotas))
    return out


SUFFIX = {"reserved": "reserved", "on_demand": "on-demand", "spot": "spot", "capacity_block": "block"}


ADMITTED: list[int] = [0]  # pod sets admitted by the last run of the model (it ran on something)


def _admit_plan(data: dict[str, Any]) -> list[str]:
    """Run every planned hour through the model; the failures, as text."""
    ADMITTED[0] = 0
    q = data["quotas"]
    queue_of = {w: cq["name"] for cq in q["cluster_queues"] for w in cq["workloads"]}
    pods = {p["workload"]: p for p in q["pod_sets"]}
    order = sorted(pods.values(), key=lambda p: (-p["priority"], p["workload"]))
    failures = []
    for month in data["holdings"]["by_month"]:
        holders = month["holders_gpus"]
        for hour in range(24):
            cohort = Cohort(_queues(q))
            for p in order:
                for kind, gpus in holders.get(p["workload"], {}).items():
                    copies = gpus[hour] // p["unit_gpus"]
                    selector = {CAPACITY: SUFFIX[kind], POOL: p["pool"]}
                    for _ in range(copies):
                        got = cohort.admit(
                            queue_of[p["workload"]], p["pods_per_unit"], p["pod_requests"], selector
                        )
                        ADMITTED[0] += got is not None
                        assert got in (None, f"{p['pool']}-{SUFFIX[kind]}")  # the flavor the plan chose
                        if got is None:
                            failures.append(f"{month['month']} {hour:02d}:00 {p['workload']} on {kind}")
    return failures


def _check_whole_nodes(data: dict[str, Any]) -> None:
    gpn = {acc: pr["gpus_per_node"] for acc, pr in data["pools"].items()}
    for f in data["quotas"]["resource_flavors"]:
        assert f["gpus"] % gpn[f["node_labels"][POOL]] == 0
    for cq in data["quotas"]["cluster_queues"]:
        for f in cq["flavors"]:
            acc = (
                f["name"].rsplit("-", 2)[0]
                if f["name"].endswith("on-demand")
                else f["name"].rsplit("-", 1)[0]
            )
            for key in ("nominal_quota", "borrowing_limit", "lending_limit"):
                assert f[key] % gpn[acc] == 0, (cq["name"], f["name"], key)


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return json.loads(render(plan(EXAMPLE), "json"))  # type: ignore[no-any-return]


def test_every_planned_hour_of_the_example_is_admitted(example: dict[str, Any]) -> None:
    assert _admit_plan(example) == []
    assert ADMITTED[0] > 18 * 24  # a service replica at least, every hour
    _check_whole_nodes(example)


def test_a_gang_fits_one_flavor(example: dict[str, Any]) -> None:
    caps = {f["name"]: f["gpus"] for f in example["quotas"]["resource_flavors"]}
    for month in example["holdings"]["by_month"]:
        for name, flavors in month["holders_gpus"].items():
            p = next(p for p in example["quotas"]["pod_sets"] if p["workload"] == name)
            for kind, gpus in flavors.items():
                if max(gpus) > 0:
                    assert p["unit_gpus"] <= caps[f"{p['pool']}-{SUFFIX[kind]}"]


def test_the_model_refuses_a_gang_its_queue_has_no_quota_for(example: dict[str, Any]) -> None:
    """The model can fail: take away the quota of the queue of the biggest planned gang on its
    flavor, and that gang stays pending (its node selector rules out every other flavor)."""
    data = json.loads(json.dumps(example))
    units = data["holdings"]["unit_gpus"]
    held = [
        (units[n], n, k)
        for month in data["holdings"]["by_month"]
        for n, flavors in month["holders_gpus"].items()
        for k, gpus in flavors.items()
        if max(gpus) > 0
    ]
    _, name, kind = max(held)
    pool = next(w["pool"] for w in data["workloads"] if w["name"] == name)
    for cq in data["quotas"]["cluster_queues"]:
        if name in cq["workloads"]:
            for f in cq["flavors"]:
                if f["name"] == f"{pool}-{SUFFIX[kind]}":
                    for v in f["resources"].values():
                        v.update(nominal_quota=0.0, borrowing_limit=0.0, lending_limit=0.0)
    failures = _admit_plan(data)
    assert failures and all(name in f for f in failures)


def test_a_synthetic_fleet_is_admitted(tmp_path: Path) -> None:
    path = write_synthetic_fleet(tmp_path, ROOT / "examples", 16, 4)
    data = json.loads(render(plan(path), "json"))
    assert _admit_plan(data) == []
    _check_whole_nodes(data)
