"""torchtitan's op-level selective checkpointing repeats the sequence-parallel all-gathers
(issue #27): its save list names the reduce-scatter, not the all-gather, so under tensor
parallelism the backward gathers the attention and MLP inputs again (perf.remat, selective_op)."""

from __future__ import annotations

import numpy as np
import pytest
from perf_helpers import catalog_hw

from rightsize.perf import remat
from rightsize.perf.layer import layer_times
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec import get_preset

LLAMA3_8B = get_preset("llama3-8b")


def _layer(cfg: ParallelConfigs) -> tuple[float, float]:
    """(recompute s, forward exposed TP s) of one layer under this policy."""
    w = TrainWorkload(arch=LLAMA3_8B, seq_len=8192, global_batch=96, precision="bf16")
    lt = layer_times(w, cfg, catalog_hw("h100-sxm", "bf16"), moe=False)
    return float(lt.recompute[0]), float(lt.tp_comm_fwd[0])


def _cfg(tp: int, sp: bool, recompute: str) -> ParallelConfigs:
    return ParallelConfigs.single(dp=8, tp=tp, micro_batch=12, sequence_parallel=sp, recompute=recompute)


def test_selective_op_rebuilds_the_gathers_and_full_still_repeats_all_tp() -> None:
    assert remat.REBUILT["tp_gather"][remat.CODES["selective_op"]] == 1
    assert remat.REBUILT["tp_gather"][remat.CODES["selective"]] == 0
    assert remat.REBUILT["tp_gather"][remat.CODES["none"]] == 0


def test_selective_op_under_sequence_parallelism_pays_half_the_forward_tp_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two all-gathers (before the QKV and MLP-up projections) of the forward's four
    equal-sized collectives (two all-gathers, two reduce-scatters): the recompute grows by
    exactly half the forward's exposed TP time, and by nothing without sequence parallelism
    (the input is replicated) or without tensor parallelism."""
    with_sp, tp_f = _layer(_cfg(8, True, "selective_op"))
    no_sp, tp_f_nosp = _layer(_cfg(8, False, "selective_op"))
    tp1, tp_f_tp1 = _layer(_cfg(1, True, "selective_op"))
    assert tp_f > 0 and tp_f_nosp > 0 and tp_f_tp1 == 0.0
    monkeypatch.setitem(remat.REBUILT, "tp_gather", np.zeros_like(remat.REBUILT["tp_gather"]))
    assert with_sp - _layer(_cfg(8, True, "selective_op"))[0] == pytest.approx(0.5 * tp_f)
    assert no_sp == pytest.approx(_layer(_cfg(8, False, "selective_op"))[0])
    assert tp1 == pytest.approx(_layer(_cfg(1, True, "selective_op"))[0])


def test_full_recompute_counts_the_tp_collectives_once() -> None:
    """'full' repeats the whole forward, TP collectives included, once: the new part must not
    add the gathers a second time."""
    rec_full, tp_f = _layer(_cfg(8, True, "full"))
    w = TrainWorkload(arch=LLAMA3_8B, seq_len=8192, global_batch=96, precision="bf16")
    lt = layer_times(w, _cfg(8, True, "full"), catalog_hw("h100-sxm", "bf16"), moe=False)
    forward = float(lt.gemm_fwd[0] + lt.attn_fwd[0] + lt.elementwise_fwd[0] + lt.tp_comm_fwd[0])
    assert rec_full == pytest.approx(forward, rel=0.05)
    assert rec_full < forward + 0.25 * tp_f
