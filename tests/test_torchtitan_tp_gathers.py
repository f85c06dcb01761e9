"""torchtitan's tensor-parallel all-gathers (issue #27): its op-level selective checkpointing
repeats them (the save list names the reduce-scatter, not the all-gather: perf.remat,
selective_op), and under torchao's tensorwise float8 they carry float8 (Float8ColwiseParallel,
PrepareFloat8ModuleInput: perf.lowp_casts), while rowwise gathers 16 bit."""

from __future__ import annotations

import numpy as np
import pytest
from perf_helpers import catalog_hw

from rightsize.perf import collectives as coll
from rightsize.perf import remat
from rightsize.perf.layer import layer_times
from rightsize.perf.lowp_casts import tp_gather_bytes_per_element
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


def _tp_fwd(precision: str, recipe: str, sp: bool) -> tuple[float, float]:
    """(forward exposed TP s, recompute s) of a Llama 3 70B layer at TP8, vanilla TP."""
    w = TrainWorkload(
        arch=get_preset("llama3-70b"),
        seq_len=8192,
        global_batch=512,
        precision=precision,
        fp8_recipe=recipe,
        tp_comm_overlap=False,
    )
    cfg = ParallelConfigs.single(dp=32, tp=8, micro_batch=16, sequence_parallel=sp, recompute="selective_op")
    lt = layer_times(w, cfg, catalog_hw("h100-sxm", precision), moe=False)
    return float(lt.tp_comm_fwd[0]), float(lt.recompute[0])


def test_tensorwise_gathers_float8_rowwise_and_bf16_gather_16_bit() -> None:
    """The two all-gathers per direction move 1 byte per element under torchao tensorwise and 2
    otherwise; the reduce-scatters stay 16 bit, so the saving is exactly two gathers' halves."""
    assert (
        tp_gather_bytes_per_element(
            TrainWorkload(
                arch=LLAMA3_8B, seq_len=8192, global_batch=96, precision="fp8", fp8_recipe="tensorwise"
            )
        )
        == 1.0
    )
    assert (
        tp_gather_bytes_per_element(
            TrainWorkload(
                arch=LLAMA3_8B, seq_len=8192, global_batch=96, precision="fp8", fp8_recipe="rowwise"
            )
        )
        == 2.0
    )
    assert (
        tp_gather_bytes_per_element(
            TrainWorkload(arch=LLAMA3_8B, seq_len=8192, global_batch=96, precision="bf16")
        )
        == 2.0
    )
    bf16, _ = _tp_fwd("bf16", "auto", True)
    row, _ = _tp_fwd("fp8", "rowwise", True)
    tw, _ = _tp_fwd("fp8", "tensorwise", True)
    assert row == pytest.approx(bf16)
    hw = catalog_hw("h100-sxm", "fp8")
    bw, lat = coll.group_link(np.array([8.0]), np.array([1.0]), hw)
    act = 16 * 8192 * 8192 * 2.0
    half = coll.all_gather_s(np.array([act]), np.array([8.0]), bw, lat) - coll.all_gather_s(
        np.array([act / 2]), np.array([8.0]), bw, lat
    )
    assert bf16 - tw == pytest.approx(2.0 * float(half[0]), rel=1e-6)
    # Without sequence parallelism nothing is gathered: the recipe changes no TP byte.
    assert _tp_fwd("fp8", "tensorwise", False)[0] == pytest.approx(_tp_fwd("bf16", "auto", False)[0])


def test_selective_op_regathers_in_float8_under_tensorwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """The repeated gathers are the float8 ones: a third of the forward's exposed TP time (two
    1-byte gathers against two 2-byte reduce-scatters), not a half."""
    tw, rec = _tp_fwd("fp8", "tensorwise", True)
    monkeypatch.setitem(remat.REBUILT, "tp_gather", np.zeros_like(remat.REBUILT["tp_gather"]))
    _, rec_without = _tp_fwd("fp8", "tensorwise", True)
    assert rec - rec_without == pytest.approx(tw / 3.0)
