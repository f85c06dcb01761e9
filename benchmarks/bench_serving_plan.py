"""Serving-plan speed: one `scenario: serving` plan over every accelerator in the catalog.

Spec: examples/llama3-70b-chat-serving.yaml with `targets.accelerators: all` (Llama 3 70B
in fp8, lognormal chat lengths, TTFT 500 ms and TPOT 50 ms at p95). Measures the search
(`plan_serving`: capacity search per option, the candidates' runs, the reported run) and
the whole `rightsize.plan` (search, sizing, uncertainty): the median and the best of
`repeats`, one core; then the same search on one accelerator (`one_*`: h100-sxm). The
target (issue 30) is a search under 2 s on this machine. `simulator_runs` counts the
engine runs of one all-accelerator search (capacity search, candidates, reported run).

Run: `PYTHONPATH=src python benchmarks/bench_serving_plan.py` (prints JSON). Not a timed
test: the figure depends on the machine.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rightsize import api  # noqa: E402
from rightsize.perf import serving_sim, serving_slo  # noqa: E402
from rightsize.search.serving import plan_serving  # noqa: E402
from rightsize.spec.load import parse_spec, read_spec_yaml  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "llama3-70b-chat-serving.yaml"


def spec_all(accelerators: str | list[str] = "all") -> object:
    data = read_spec_yaml(EXAMPLE)
    data["targets"]["accelerators"] = accelerators
    return parse_spec(data, EXAMPLE.parent, str(EXAMPLE))


def _timed(spec: object, repeats: int) -> tuple[list[float], list[float]]:
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        plan_serving(spec)  # type: ignore[arg-type]
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def _runs(spec: object) -> int:
    """Engine runs in one search (every run goes through `serving_sim._run_engine`)."""
    count = 0
    real = serving_sim._run_engine

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        return real(*args, **kwargs)

    serving_sim._run_engine = counted  # type: ignore[assignment]
    serving_slo._run_engine = counted  # type: ignore[assignment]
    try:
        plan_serving(spec)  # type: ignore[arg-type]
    finally:
        serving_sim._run_engine = real
        serving_slo._run_engine = real
    return count


def bench(repeats: int = 3) -> dict[str, float | str]:
    spec = spec_all()
    search: list[float] = []
    search_cpu: list[float] = []
    whole: list[float] = []
    plan = None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        plan = plan_serving(spec)  # type: ignore[arg-type]
        search.append(time.perf_counter() - t0)
        search_cpu.append(time.process_time() - c0)
        t0 = time.perf_counter()
        api.plan(spec)  # type: ignore[arg-type]
        whole.append(time.perf_counter() - t0)
    assert plan is not None
    one_wall, one_cpu = _timed(spec_all(["h100-sxm"]), repeats)
    return {
        "search_s_median": statistics.median(search),
        "search_cpu_s_median": statistics.median(search_cpu),  # what a loaded machine still measures fairly
        "plan_s_median": statistics.median(whole),
        "search_s_best": min(search),
        "search_cpu_s_best": min(search_cpu),
        "plan_s_best": min(whole),
        "best": f"{plan.best.replicas} x tp{plan.best.tp} {plan.best.accelerator}",
        "replica_capacity_rps": plan.best.replica_capacity_rps,
        "options_evaluated": float(1 + len(plan.alternatives)),
        "simulator_runs": float(_runs(spec)),
        "one_search_s_median": statistics.median(one_wall),
        "one_search_cpu_s_median": statistics.median(one_cpu),
        "one_search_s_best": min(one_wall),
        "one_search_cpu_s_best": min(one_cpu),
    }


if __name__ == "__main__":
    print(json.dumps(bench(), indent=2))
