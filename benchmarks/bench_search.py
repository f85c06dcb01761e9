"""Search speed, end to end first: the Llama 3.1 405B training search over every catalog
accelerator (enumerate, check every layout against memory, time those that fit, rank by
risk, build the candidates), configurations per second over its whole wall time, on one
thread and on the search's default threads (one per core, at most 4).

Two rates, so neither is read for the other: `space_configs_per_s` counts every layout of
the space (each is checked against memory while it is enumerated; the ones that cannot fit
are counted there and never built), `timed_configs_per_s` only those the step model timed.
Then the evaluator alone (`train_step` on an already enumerated space, and on a million
random layouts), which leaves out enumeration and ranking: labelled `evaluator_only_*`.

Run: `python benchmarks/bench_search.py` (prints JSON). numpy's element-wise kernels run
on one thread each.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from rightsize.catalog import get_accelerator, node_for  # noqa: E402
from rightsize.perf.hardware import Hardware  # noqa: E402
from rightsize.perf.step import train_step  # noqa: E402
from rightsize.search.space import enumerate_configs, gpu_count_candidates  # noqa: E402
from rightsize.search.train import MAX_GPUS, plan_training, workload_from_spec  # noqa: E402
from rightsize.spec import load_spec  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def configs_per_second(repeats: int = 3) -> dict[str, float]:
    """Full evaluations (step time breakdown + memory + MFU) of an enumerated space."""
    spec = load_spec(EXAMPLES / "llama3-70b-pretrain.yaml")
    w = workload_from_spec(spec)
    acc = get_accelerator("h100-sxm")
    node = node_for(acc.id)
    hw = Hardware.from_catalog(acc, node, w.precision)
    counts = gpu_count_candidates(node.gpus_per_node, MAX_GPUS)
    cfg, _ = enumerate_configs(w.arch, w.seq_len, w.global_batch, counts, hw.domain_gpus, spec.parallel)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        st = train_step(w, cfg, hw)
        _ = st.step_time, st.memory.fits, st.mfu
        best = min(best, time.perf_counter() - t0)
    return {"configs": float(len(cfg)), "seconds": best, "configs_per_s": len(cfg) / best}


def random_space_configs_per_second(n: int = 1_000_000) -> dict[str, float]:
    """Worst case for the evaluator: a million random layouts, so thousands of distinct
    layer shapes (a real search space has a few hundred)."""
    import numpy as np

    from rightsize.perf.workload import ParallelConfigs

    spec = load_spec(EXAMPLES / "llama3-70b-pretrain.yaml")
    w = workload_from_spec(spec)
    acc = get_accelerator("h100-sxm")
    hw = Hardware.from_catalog(acc, node_for(acc.id), w.precision)
    rng = np.random.default_rng(0)
    cfg = ParallelConfigs(
        tp=rng.choice([1, 2, 4, 8], n),
        pp=rng.choice([1, 2, 4, 5, 8, 10, 16, 20], n),
        dp=rng.choice([1, 2, 4, 8, 16, 32, 64], n),
        cp=rng.choice([1, 2, 4], n),
        ep=1,
        vpp=rng.choice([1, 2], n),
        micro_batch=rng.choice([1, 2, 4], n),
        recompute=rng.choice([0, 1, 2], n),
        sequence_parallel=rng.choice([False, True], n),
        zero_stage=rng.choice([0, 1, 2, 3], n),
    )
    t0 = time.perf_counter()
    st = train_step(w, cfg, hw)
    _ = st.step_time, st.memory.fits, st.mfu
    dt = time.perf_counter() - t0
    return {"configs": float(n), "seconds": dt, "configs_per_s": n / dt}


def plan_405b_seconds(repeats: int = 3, threads: int | None = None) -> dict[str, float]:
    """End to end: the whole training search, best of `repeats` after a warm-up run, on
    `threads` (the search's default when None)."""
    from rightsize.search import train

    default = train.SEARCH_THREADS
    train.SEARCH_THREADS = threads or default
    try:
        spec = load_spec(EXAMPLES / "llama3.1-405b-pretrain.yaml")
        plan = plan_training(spec)  # warm-up: catalog files, imports
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            plan = plan_training(spec)
            best = min(best, time.perf_counter() - t0)
    finally:
        train.SEARCH_THREADS = default
    n, timed = float(plan.configs_evaluated), float(plan.configs_timed)
    return {
        "threads": float(threads or default),
        "seconds": best,
        "configs_in_space": n,
        "configs_timed": timed,
        "space_configs_per_s": n / best,
        "timed_configs_per_s": timed / best,
    }


if __name__ == "__main__":
    result = {
        "end_to_end_search_llama3.1_405b_one_thread": plan_405b_seconds(threads=1),
        "end_to_end_search_llama3.1_405b": plan_405b_seconds(),
        "evaluator_only_enumerated_space": configs_per_second(),
        "evaluator_only_random_space": random_space_configs_per_second(),
    }
    print(json.dumps(result, indent=2))
