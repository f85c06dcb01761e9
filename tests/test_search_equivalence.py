"""The search's shortcuts give the answers of the plain evaluation they replace.

Each fast path (memory by parts while enumerating, one vectorised pass for the risk
sensitivities, runs of configurations, top-k per GPU count without a full sort, the
ground distance without a dict, threads over accelerators) is checked against the
straightforward computation on real workloads: same layouts, same figures.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rightsize.catalog import get_accelerator, node_for
from rightsize.catalog.ground import validated_runs
from rightsize.perf import workload as perf_workload
from rightsize.perf.memory import memory_grid, train_memory
from rightsize.perf.remat import searched_policies
from rightsize.perf.step import step_time_variants, train_step
from rightsize.perf.workload import ParallelConfigs
from rightsize.search import train as search_train
from rightsize.search.calibrated import calibrated_hardware
from rightsize.search.ground import distance, distance_terms, ground_report, ground_sigma, position
from rightsize.search.risk import pick_per_count, top_per_count
from rightsize.search.space import enumerate_configs, enumerate_where, gpu_count_candidates
from rightsize.search.train import MEMORY_CUT_MARGIN, plan_training, workload_from_spec
from rightsize.spec import load_spec, parse_spec

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CASES = [
    ("llama3.1-405b-pretrain.yaml", "h100-sxm"),
    ("mixtral-8x7b-pretrain.yaml", "tpu-v6e"),
    ("llama3-8b-lora-weekly.yaml", "a100-sxm-80gb"),
]


def _setup(example: str, acc_id: str, max_gpus: int = 4096) -> tuple[Any, Any, Any, np.ndarray]:
    spec = load_spec(EXAMPLES / example)
    w = workload_from_spec(spec)
    acc, node = get_accelerator(acc_id), node_for(acc_id)
    hw = calibrated_hardware(acc, node, w.precision, None)
    counts = gpu_count_candidates(
        node.gpus_per_node, max_gpus, acc.scaleup_domain_gpus if acc.torus_dims else 0
    )
    return spec, w, hw, counts


def _sample(cfg: ParallelConfigs, n: int, seed: int = 0) -> ParallelConfigs:
    idx = np.random.default_rng(seed).choice(len(cfg), size=min(n, len(cfg)), replace=False)
    return cfg.take(np.sort(idx))


@pytest.mark.parametrize(("example", "acc_id"), CASES)
def test_memory_by_parts_equals_each_layouts_memory(example: str, acc_id: str) -> None:
    spec, w, hw, counts = _setup(example, acc_id)
    cfg, _ = enumerate_configs(w.arch, w.seq_len, w.global_batch, counts, hw.domain_gpus, spec.parallel)
    rows = _sample(cfg, 300)
    rc, zero = np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0, 3.0])
    grid = memory_grid(w, rows, rc, zero, hw.framework_bytes)
    assert grid.shape == (len(rows), 3, 4)
    for r in range(3):
        for z in range(4):
            one = ParallelConfigs(
                **{
                    f.name: getattr(rows, f.name)
                    for f in fields(rows)
                    if f.name not in ("recompute", "zero_stage")
                },
                recompute=np.full(len(rows), rc[r]),
                zero_stage=np.full(len(rows), zero[z]),
            )
            exact = train_memory(w, one, hw).total
            np.testing.assert_allclose(grid[:, r, z], exact, rtol=1e-12)


@pytest.mark.parametrize(("example", "acc_id"), CASES)
def test_enumeration_builds_exactly_the_layouts_that_may_fit(example: str, acc_id: str) -> None:
    spec, w, hw, counts = _setup(example, acc_id)
    every, _ = enumerate_configs(w.arch, w.seq_len, w.global_batch, counts, hw.domain_gpus, spec.parallel)
    usable = hw.hbm_bytes * hw.usable_fraction * (1.0 + MEMORY_CUT_MARGIN)
    kept, excluded = enumerate_where(
        w.arch,
        w.seq_len,
        w.global_batch,
        counts,
        hw.domain_gpus,
        spec.parallel,
        lambda rows, rc, zero: memory_grid(w, rows, rc, zero, hw.framework_bytes) <= usable,
    )
    assert len(kept) + excluded == len(every)
    assert excluded > 0  # the rule does reject layouts here
    fits = train_step(w, every, hw).memory.total <= usable
    expected = every.take(np.flatnonzero(fits))
    for f in fields(every):  # the same layouts, in the same order
        np.testing.assert_array_equal(getattr(kept, f.name), getattr(expected, f.name))


@pytest.mark.parametrize(("example", "acc_id"), CASES)
def test_search_picks_what_evaluating_every_layout_picks(example: str, acc_id: str) -> None:
    spec, w, hw, counts = _setup(example, acc_id, max_gpus=1024)
    policies = searched_policies(get_accelerator(acc_id).vendor)  # MaxText's names on TPU
    every, _ = enumerate_configs(
        w.arch, w.seq_len, w.global_batch, counts, hw.domain_gpus, spec.parallel, policies
    )
    st_all = train_step(w, every, hw)
    best_all, risk_all = pick_per_count(w, every, hw, st_all.step_time, st_all.memory.fits, 0.5)
    acc, node = get_accelerator(acc_id), node_for(acc_id)
    ev = search_train._evaluate_accelerator(spec, w, acc, node, hw, counts, 0.5)
    assert not isinstance(ev, str)
    assert ev.n_configs == len(every)
    assert [ev.cfg.row(int(i)) for i in ev.best_idx] == [every.row(int(i)) for i in best_all]
    np.testing.assert_array_equal(ev.st.step_time[ev.best_idx], st_all.step_time[best_all])
    assert sorted(ev.risk.values()) == sorted(risk_all.values())


def test_runs_of_configurations_give_the_single_pass_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    spec, w, hw, counts = _setup("llama3.1-405b-pretrain.yaml", "b200", max_gpus=2048)
    cfg = _sample(enumerate_configs(w.arch, w.seq_len, w.global_batch, counts, 8, spec.parallel)[0], 5000)
    whole = train_step(w, cfg, hw)
    monkeypatch.setattr(perf_workload, "EVAL_CHUNK_ROWS", 777)
    assert len(cfg.chunks()) == 7
    runs = train_step(w, cfg, hw)
    for name in ("step_time", "mfu", "hfu"):
        np.testing.assert_array_equal(getattr(runs, name), getattr(whole, name))
    np.testing.assert_array_equal(runs.memory.total, whole.memory.total)
    assert runs.memory.as_dict(4321) == whole.memory.as_dict(4321)


def test_sensitivity_variants_in_one_pass_equal_one_call_each() -> None:
    spec, w, hw, counts = _setup("mixtral-8x7b-pretrain.yaml", "h100-sxm", max_gpus=2048)
    cfg = _sample(enumerate_configs(w.arch, w.seq_len, w.global_batch, counts, 8, spec.parallel)[0], 400)
    variants: list[dict[str, float]] = [
        {"gemm_fraction": hw.gemm_fraction * 1.05},
        {"attention_fraction": hw.attention_fraction * 0.95},
        {"memory_bw_fraction": 0.5},
        {"scaleup_bw_fraction": hw.scaleup_bw_fraction * 0.9},
        {"scaleout_bw_fraction": hw.scaleout_bw_fraction * 1.1, "gemm_fraction": 0.5},
    ]
    together = step_time_variants(w, cfg, hw, variants)
    assert together.shape == (len(variants), len(cfg))
    for j, v in enumerate(variants):
        np.testing.assert_array_equal(together[j], train_step(w, cfg, hw.with_overrides(**v)).step_time)
    assert not np.array_equal(together[0], together[2])  # the variants do differ


def _top_by_lexsort(gpus: np.ndarray, t: np.ndarray, fits: np.ndarray, k: int) -> np.ndarray:
    idx = np.flatnonzero(fits)
    if idx.size == 0:
        return idx
    order = idx[np.lexsort((t[idx], gpus[idx]))]
    g = gpus[order]
    starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    rank = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    return order[rank < k]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5), st.integers(0, 6), st.booleans()), max_size=120),
    st.integers(1, 7),
)
def test_top_per_count_keeps_the_k_fastest_ties_by_position(
    rows: list[tuple[int, int, bool]], k: int
) -> None:
    rows = sorted(rows, key=lambda r: r[0])  # grouped by count, as the search enumerates
    gpus = np.array([r[0] for r in rows], dtype=float)
    t = np.array([r[1] for r in rows], dtype=float)  # few distinct times: many ties
    fits = np.array([r[2] for r in rows], dtype=bool)
    np.testing.assert_array_equal(top_per_count(gpus, t, fits, k), _top_by_lexsort(gpus, t, fits, k))
    shuffled = np.random.default_rng(len(rows)).permutation(len(rows))  # unsorted input: the general path
    np.testing.assert_array_equal(
        top_per_count(gpus[shuffled], t[shuffled], fits[shuffled], k),
        _top_by_lexsort(gpus[shuffled], t[shuffled], fits[shuffled], k),
    )


@pytest.mark.parametrize(("example", "acc_id"), CASES)
def test_ground_distance_and_sigma_match_the_report(example: str, acc_id: str) -> None:
    spec, w, hw, counts = _setup(example, acc_id)
    cfg = _sample(
        enumerate_configs(w.arch, w.seq_len, w.global_batch, counts, hw.domain_gpus, spec.parallel)[0], 40
    )
    for i in range(len(cfg)):
        p = position(w.arch, w.seq_len, w.precision, w.method, acc_id, cfg.row(i))
        for r in validated_runs():
            assert distance(p, r) == sum(distance_terms(p, r).values())
        assert ground_sigma(p) == ground_report(p)["sigma"]


def test_threads_over_accelerators_give_the_sequential_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = parse_spec(
        {
            "model": "llama3-70b",
            "training": {"seq_len": 8192, "global_batch": 512, "train_tokens": "1T"},
            "targets": {"accelerators": ["h100-sxm", "mi300x", "tpu-v5p", "l4"], "deadline": "60d"},
        },
        Path("."),
    )
    monkeypatch.setattr(search_train, "SEARCH_THREADS", 1)
    one = plan_training(spec)
    monkeypatch.setattr(search_train, "SEARCH_THREADS", 3)
    three = plan_training(spec)
    assert one.best == three.best
    assert [(c.accelerator, c.gpus, c.parallel) for c, _ in one.alternatives] == [
        (c.accelerator, c.gpus, c.parallel) for c, _ in three.alternatives
    ]
    assert [(r.accelerator, r.reason) for r in one.rejected] == [
        (r.accelerator, r.reason) for r in three.rejected
    ]
    assert one.configs_evaluated == three.configs_evaluated


@pytest.mark.parametrize(
    "fixed",
    [
        {"zero_stage": 1, "recompute": "full"},
        {"zero_stage": 3, "sequence_parallel": False},
        {"tp": 8, "micro_batch": 2},
        {"zero_stage": 0, "dp": 1},
    ],
)
def test_fixed_settings_search_like_evaluating_every_layout(fixed: dict[str, Any]) -> None:
    """User-fixed settings reach the memory check by parts as they reach the enumeration."""
    spec = parse_spec(
        {
            "model": "llama3-70b",
            "training": {"seq_len": 8192, "global_batch": 512, "train_tokens": "1T"},
            "targets": {"accelerators": ["h100-sxm"], "deadline": "90d"},
            "parallel": fixed,
        },
        Path("."),
    )
    w = workload_from_spec(spec)
    acc, node = get_accelerator("h100-sxm"), node_for("h100-sxm")
    hw = calibrated_hardware(acc, node, w.precision, None)
    counts = gpu_count_candidates(node.gpus_per_node, 2048)
    every, _ = enumerate_configs(w.arch, w.seq_len, w.global_batch, counts, hw.domain_gpus, spec.parallel)
    st_all = train_step(w, every, hw)
    best_all, _ = pick_per_count(w, every, hw, st_all.step_time, st_all.memory.fits, 0.5)
    ev = search_train._evaluate_accelerator(spec, w, acc, node, hw, counts, 0.5)
    if isinstance(ev, str):  # no layout at all: the plain enumeration agrees
        assert len(every) == 0
        return
    assert ev.n_configs == len(every)
    assert len(best_all) > 0  # the case does pick layouts
    assert [ev.cfg.row(int(i)) for i in ev.best_idx] == [every.row(int(i)) for i in best_all]
