"""Parallel attention/MLP blocks (`ModelArch.parallel_block`, `perf.parallel_block`): one tensor-parallel
exchange forward instead of two (GPT-NeoX's gpt_j_residual, vLLM's Falcon), the backward's two kept,
in training layers and in serving's forward."""

from __future__ import annotations

import pytest
from perf_helpers import catalog_hw

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf import parallel_block
from rightsize.perf.inference import Replica
from rightsize.perf.layer import layer_times
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.load import spec_json_schema
from rightsize.spec.model import ModelArch
from rightsize.spec.presets import get_preset

FALCON = get_preset("falcon-180b")
SEQUENTIAL = FALCON.model_copy(update={"parallel_block": False})


def _workload(arch: ModelArch, **kw: object) -> TrainWorkload:
    return TrainWorkload(arch=arch, seq_len=2048, global_batch=2048, precision="bf16", **kw)  # type: ignore[arg-type]


def test_the_field_defaults_to_the_sequential_block_and_is_described_in_the_schema() -> None:
    assert get_preset("llama3-70b").parallel_block is False
    assert FALCON.parallel_block is True
    props = spec_json_schema("training")["$defs"]["ModelArch"]["properties"]
    assert (
        props["parallel_block"]["type"] == "boolean"
        and "all-reduce" in props["parallel_block"]["description"]
    )


def test_exchanges_per_direction() -> None:
    assert parallel_block.tp_exchanges(SEQUENTIAL) == (2.0, 2.0)
    assert parallel_block.tp_exchanges(FALCON) == (1.0, 2.0)


@pytest.mark.parametrize("sequence_parallel", [False, True])
def test_a_parallel_block_halves_the_forward_tensor_parallel_time_only(sequence_parallel: bool) -> None:
    """With the collectives run in line (nothing hidden under the GEMMs) the exposed time is the
    collective time: the forward's is half the sequential block's, the backward's the same, and
    the layer's compute does not change."""
    cfg = ParallelConfigs.single(tp=8, pp=8, dp=1, sequence_parallel=sequence_parallel)
    hw = catalog_hw("a100-sxm-40gb")
    seq = layer_times(_workload(SEQUENTIAL, tp_comm_overlap=False), cfg, hw, moe=False)
    par = layer_times(_workload(FALCON, tp_comm_overlap=False), cfg, hw, moe=False)
    assert float(seq.tp_comm_fwd[0]) > 0
    assert float(par.tp_comm_fwd[0]) == pytest.approx(0.5 * float(seq.tp_comm_fwd[0]), rel=1e-12)
    assert float(par.tp_comm_bwd[0]) == pytest.approx(float(seq.tp_comm_bwd[0]), rel=1e-12)
    assert float(par.compute_fwd[0]) == pytest.approx(float(seq.compute_fwd[0]), rel=1e-12)
    assert float(par.compute_bwd[0]) == pytest.approx(float(seq.compute_bwd[0]), rel=1e-12)


def test_no_tensor_parallelism_means_no_saving() -> None:
    cfg = ParallelConfigs.single(tp=1, pp=8, dp=1)
    hw = catalog_hw("a100-sxm-40gb")
    seq = train_step(_workload(SEQUENTIAL), cfg, hw)
    par = train_step(_workload(FALCON), cfg, hw)
    assert float(par.step_time[0]) == pytest.approx(float(seq.step_time[0]), rel=1e-12)


def test_falcon_180b_step_on_its_published_layout_saves_the_forward_exchange_on_the_critical_path() -> None:
    """TP8 PP8 DP64 on A100-40GB (the model card's layout), interleaved 1F1B with 2 chunks: each
    of a stage's 10 layers saves half its forward TP time in each of the m + (pp - 1) / vpp
    micro-batch slots of the critical path (m = 2048 / 64 = 32)."""
    cfg = ParallelConfigs.single(tp=8, pp=8, dp=64, vpp=2, sequence_parallel=True, zero_stage=1)
    hw = catalog_hw("a100-sxm-40gb")
    seq = train_step(_workload(SEQUENTIAL), cfg, hw)
    par = train_step(_workload(FALCON), cfg, hw)
    per_layer = float(
        layer_times(_workload(SEQUENTIAL), cfg, hw, moe=False).tp_comm_fwd[0]
        - layer_times(_workload(FALCON), cfg, hw, moe=False).tp_comm_fwd[0]
    )
    saved = float(seq.step_time[0] - par.step_time[0])
    assert saved == pytest.approx(per_layer * (80 // 8) * (32 + (8 - 1) / 2), rel=1e-6)
    assert 0 < saved < 0.05 * float(seq.step_time[0])  # a few per cent of the step


def test_serving_forward_runs_one_all_reduce_per_layer_for_a_parallel_block() -> None:
    """vLLM's Falcon decoder layer sums attention and MLP outputs and all-reduces once."""
    a = get_accelerator("a100-sxm-80gb")

    def replica(arch: ModelArch) -> Replica:
        return Replica.build(arch, a, node_for(a.id), 8, "bf16", "bf16", engine="vllm")

    seq, par = replica(SEQUENTIAL), replica(FALCON)
    for tokens in (64.0, 8192.0):
        assert float(par.tp_comm_s(tokens)) == pytest.approx(0.5 * float(seq.tp_comm_s(tokens)), rel=1e-12)
