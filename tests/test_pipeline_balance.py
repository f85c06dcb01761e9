"""Pipeline memory per stage and the balanced edge stages (Llama 3, arXiv:2407.21783 sec. 3.3.2:
126 layers on PP16 x VP8, the first chunk holding only the embedding and the last only the
output layer and the loss; Megatron-Core's account_for_embedding/loss_in_pipeline_split)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import in_flight_layers, memory_grid, stage_layers, train_memory
from rightsize.perf.step import train_step
from rightsize.perf.workload import RECOMPUTE_CODES, ParallelConfigs, TrainWorkload
from rightsize.spec import get_preset
from rightsize.spec.training import TrainingWorkload

# Llama 3 405B pre-training at 8K (Table 4): 2,048 sequences per step; DP 64 on 8,192 GPUs
# (32 micro-batches of one per pipeline), DP 128 on 16,384 (16).
ARCH = get_preset("llama3.1-405b")
EVEN = TrainWorkload(arch=ARCH, seq_len=8192, global_batch=2048, precision="bf16")
BALANCED = replace(EVEN, pipeline_edge_balance=True)


def _cfg(dp: int = 64, vpp: int = 8, pp: int = 16, recompute: str = "none") -> ParallelConfigs:
    return ParallelConfigs(
        tp=8,
        pp=pp,
        dp=dp,
        cp=1,
        ep=1,
        vpp=vpp,
        micro_batch=1,
        recompute=RECOMPUTE_CODES[recompute],
        sequence_parallel=True,
        zero_stage=2,
    )


@pytest.fixture(scope="module")
def h100() -> Hardware:
    acc = get_accelerator("h100-sxm")
    return Hardware.from_catalog(acc, node_for(acc.id), "bf16")


def test_balanced_edges_hold_one_layer_fewer() -> None:
    cfg = _cfg()
    assert [float(stage_layers(EVEN, cfg, s)[0]) for s in ("first", "middle", "last")] == [8, 8, 8]
    assert [float(stage_layers(BALANCED, cfg, s)[0]) for s in ("first", "middle", "last")] == [7, 8, 7]
    # one stage holds every layer; the embedding and the loss are not layers to give up
    assert float(stage_layers(BALANCED, _cfg(pp=1, vpp=1), "first")[0]) == ARCH.layers


def test_interleaved_warm_up_counts() -> None:
    # Megatron-Core: rank r runs 2 (pp - r - 1) + (vpp - 1) pp warm-up forwards, one more at the
    # peak; one layer per chunk here, so chunk forwards are layer x micro-batches.
    cfg = _cfg()
    assert float(in_flight_layers(EVEN, cfg, "first")[0]) == 2 * 15 + 7 * 16 + 1  # 143
    assert float(in_flight_layers(EVEN, cfg, "middle")[0]) == 2 * 14 + 7 * 16 + 1  # 141
    assert float(in_flight_layers(EVEN, cfg, "last")[0]) == 7 * 16 + 1  # 113
    # 16 micro-batches x 8 chunks = 128 forwards: fewer than the warm-up, so all run first
    assert float(in_flight_layers(EVEN, _cfg(dp=128), "first")[0]) == 16 * 8
    # 1F1B: the first stage holds pp micro-batches of all its layers, the last one
    flat = _cfg(vpp=1)
    assert float(in_flight_layers(EVEN, flat, "first")[0]) == 16 * 8
    assert float(in_flight_layers(EVEN, flat, "last")[0]) == 8


def test_balanced_first_stage_drops_the_embedding_chunk_and_the_peak_moves() -> None:
    cfg = _cfg()
    # the first chunk (2 pp - 1 = 31 forwards in flight) holds no layer: 7 chunks x 16
    assert float(in_flight_layers(BALANCED, cfg, "first")[0]) == 7 * 16
    assert float(in_flight_layers(BALANCED, cfg, "middle")[0]) == 141
    assert float(in_flight_layers(BALANCED, cfg, "last")[0]) == 7 * 16


def test_peak_stage_and_grid_agree(h100: Hardware) -> None:
    rows = ParallelConfigs(
        tp=np.array([8, 8, 8, 8]),
        pp=np.array([16, 16, 2, 1]),
        dp=np.array([64, 128, 64, 64]),
        cp=1,
        ep=1,
        vpp=np.array([8, 8, 1, 1]),
        micro_batch=1,
        recompute=0,
        sequence_parallel=True,
        zero_stage=0,
    )
    rc = np.array([RECOMPUTE_CODES["none"], RECOMPUTE_CODES["full"]], dtype=np.float64)
    zero = np.array([1.0, 2.0])
    for w in (EVEN, BALANCED):
        grid = memory_grid(w, rows, rc, zero, h100.framework_bytes)
        for i in range(len(rows)):
            for j, r in enumerate(rc):
                for k, z in enumerate(zero):
                    one = replace(rows.take(i), recompute=np.array([r]), zero_stage=np.array([z]))
                    total = train_memory(w, one, h100).total[0]
                    assert grid[i, j, k] == pytest.approx(total, rel=1e-12)


def test_balanced_memory_is_the_second_stage_and_lighter(h100: Hardware) -> None:
    cfg = _cfg()
    even, balanced = train_memory(EVEN, cfg, h100), train_memory(BALANCED, cfg, h100)
    assert balanced.total[0] < even.total[0]
    # the second stage: 8 layers, no embedding; 141 layer x micro-batches of activations
    assert balanced.activations[0] == pytest.approx(even.activations[0] * 141 / 143)
    # Megatron's schedule at 32 micro-batches still needs more than an 80 GB H100 without
    # recompute; at 16 (16,384 GPUs) every forward runs first and it fits
    assert not balanced.fits[0]
    assert train_memory(BALANCED, _cfg(dp=128), h100).fits[0]
    assert train_memory(EVEN, _cfg(dp=128), h100).fits[0]


def test_balanced_last_stage_absorbs_the_logits(h100: Hardware) -> None:
    cfg = _cfg(recompute="full")
    even, balanced = train_step(EVEN, cfg, h100), train_step(BALANCED, cfg, h100)
    assert balanced.step_time[0] < even.step_time[0]
    # a 128K-entry output layer costs less than a layer of 405B: the slowest stage is a
    # middle one, so the step is the even split's less the whole output-layer share
    assert balanced.compute[0] < even.compute[0]
    one_stage = _cfg(pp=1, vpp=1, dp=1024)
    assert train_step(BALANCED, one_stage, h100).step_time[0] == pytest.approx(
        train_step(EVEN, one_stage, h100).step_time[0]
    )


def test_spec_field_reaches_the_workload() -> None:
    training = TrainingWorkload(seq_len=8192, global_batch=2048, pipeline_edge_balance=True)
    assert TrainWorkload.from_spec(ARCH, training).pipeline_edge_balance
    assert not TrainingWorkload(seq_len=8192, global_batch=2048).pipeline_edge_balance
