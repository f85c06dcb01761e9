"""The performance model's physics: FLOPs, activation memory, collectives, GEMM shape effects,
and the invariants a step breakdown must keep."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rightsize.perf import collectives as coll
from rightsize.perf.gemm import gemm_efficiency, gemm_time_s
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import activation_bytes_per_token_layer, stage_params, train_memory
from rightsize.perf.params import count_params
from rightsize.perf.step import model_flops_per_token, train_step
from rightsize.perf.workload import RECOMPUTE_CODES, ParallelConfigs, TrainWorkload
from rightsize.spec import get_preset
from rightsize.spec.model import ModelArch

GPT_22B = ModelArch(
    name="gpt-22b", layers=48, hidden=6144, heads=64, ffn_hidden=24576, vocab=51200, mlp="gelu"
)


def _w(arch: ModelArch, seq: int = 2048, batch: int = 64, **kw: object) -> TrainWorkload:
    return TrainWorkload(arch=arch, seq_len=seq, global_batch=batch, precision="bf16", **kw)  # type: ignore[arg-type]


# --- parameters and FLOPs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "billions", "tol"),
    [
        ("llama2-7b", 6.74, 0.01),  # Touvron et al. 2023
        ("llama2-70b", 68.98, 0.01),
        ("llama3-8b", 8.03, 0.01),  # Meta model card
        ("llama3-70b", 70.55, 0.01),
        ("llama3.1-405b", 405.8, 0.01),
        ("mixtral-8x7b", 46.7, 0.01),  # Mistral AI: 46.7B total
        ("gpt3-175b", 174.6, 0.01),  # Brown et al. 2020: 175B
        ("bloom-176b", 176.2, 0.01),  # BigScience: 176,247M
    ],
)
def test_parameter_counts_match_published(preset: str, billions: float, tol: float) -> None:
    assert count_params(get_preset(preset)).total / 1e9 == pytest.approx(billions, rel=tol)


@pytest.mark.parametrize("preset", ["llama3-8b", "llama2-70b", "gpt3-175b", "bloom-176b"])
def test_flops_are_6nd_plus_attention_and_logits(preset: str) -> None:
    arch = get_preset(preset)
    seq = 4096
    c = count_params(arch)
    per_token = model_flops_per_token(_w(arch, seq))
    attention = 12 * arch.layers * arch.heads * arch.head_dim * seq
    logits = 6 * arch.vocab * arch.hidden
    assert per_token - attention - logits == pytest.approx(6 * c.transformer, rel=1e-9)
    # and 6N alone is within the attention and logits terms
    assert abs(per_token - 6 * (c.transformer + arch.vocab * arch.hidden)) <= attention + 1


def test_gpt3_training_flops_match_paper() -> None:
    # Brown et al. 2020, Table D.1: 3.14e23 FLOPs for 300B tokens (6ND, no attention term).
    arch = get_preset("gpt3-175b")
    c = count_params(arch)
    assert 6 * c.total * 300e9 == pytest.approx(3.14e23, rel=0.01)


def test_moe_active_flops_count_only_routed_experts() -> None:
    arch = get_preset("mixtral-8x7b")
    dense_equiv = model_flops_per_token(_w(arch))
    # Mixtral: ~12.9B active parameters per token (Mistral AI)
    attention = 12 * arch.layers * arch.heads * arch.head_dim * 2048
    assert (dense_equiv - attention) / 6 / 1e9 == pytest.approx(12.9, rel=0.02)


# --- activation memory: Korthikanti et al. 2022 --------------------------------------------


@pytest.mark.parametrize(
    ("tp", "sp", "recompute", "expected_per_token"),
    [
        # eq. 1: 34 h + 5 a s per token, one GPU
        (1, False, "none", lambda h, a, s, t: 34 * h + 5 * a * s),
        # eq. 2: tensor parallel: 10 h + 24 h / t + 5 a s / t
        (8, False, "none", lambda h, a, s, t: 10 * h + 24 * h / t + 5 * a * s / t),
        # eq. 4: tensor + sequence parallel: (34 h + 5 a s) / t
        (8, True, "none", lambda h, a, s, t: (34 * h + 5 * a * s) / t),
        # section 5: + selective recompute: 34 h / t
        (8, True, "selective", lambda h, a, s, t: 34 * h / t),
        # full recompute keeps the layer input: 2 h (sequence parallel splits it)
        (8, False, "full", lambda h, a, s, t: 2 * h),
        (8, True, "full", lambda h, a, s, t: 2 * h / t),
    ],
)
def test_activation_memory_reproduces_korthikanti(
    tp: int, sp: bool, recompute: str, expected_per_token
) -> None:  # type: ignore[no-untyped-def]
    w = _w(GPT_22B, flash_attention=False, dropout=True)
    cfg = ParallelConfigs.single(tp=tp, sequence_parallel=sp, recompute=recompute)
    got = activation_bytes_per_token_layer(w, cfg)[0]
    h, a, s = GPT_22B.hidden, GPT_22B.heads, 2048
    assert got == pytest.approx(expected_per_token(h, a, s, tp), rel=1e-9)


def test_flash_attention_removes_quadratic_activation_term() -> None:
    cfg = ParallelConfigs.single(tp=1)
    flash = activation_bytes_per_token_layer(_w(GPT_22B, 8192, flash_attention=True), cfg)[0]
    no_flash = activation_bytes_per_token_layer(_w(GPT_22B, 8192, flash_attention=False), cfg)[0]
    assert no_flash - flash > 2 * GPT_22B.heads * 8192 * 0.99  # the kept softmax output, 2 bytes per score


def test_model_state_bytes_follow_zero_stages(a100_like: Hardware) -> None:
    arch = get_preset("llama2-7b")
    w = _w(arch, 4096, 64)
    n = count_params(arch).total
    # 2 (bf16 weights) + 4 (fp32 grads) + 12 (Adam: master, m, v) bytes per parameter
    base = train_memory(w, ParallelConfigs.single(dp=8, zero_stage=0), a100_like)
    assert base.weights[0] + base.gradients[0] + base.optimizer[0] == pytest.approx(18 * n, rel=1e-9)
    z1 = train_memory(w, ParallelConfigs.single(dp=8, zero_stage=1), a100_like)
    assert z1.optimizer[0] == pytest.approx(12 * n / 8, rel=1e-9)
    z3 = train_memory(w, ParallelConfigs.single(dp=8, zero_stage=3), a100_like)
    # issue #14: ZeRO-3 / FSDP keeps 16 bytes per parameter sharded (16-bit gradients, no
    # separate fp32 gradient), plus the unsharded 16-bit weights of two layers (the one
    # computing and the one prefetched).
    per_layer = (n - count_params(arch).embedding - count_params(arch).output) / arch.layers
    two_layers = 2 * 2 * per_layer * n / n
    state = z3.weights[0] + z3.gradients[0] + z3.optimizer[0]
    assert state == pytest.approx(16 * n / 8 + two_layers, rel=0.02)


# --- GEMMs and collectives ------------------------------------------------------------------


def test_gemm_wave_quantisation_penalises_one_extra_tile(a100_like: Hardware) -> None:
    # 108 SMs, 128x256 tiles: 108 tiles fill one wave; a shape with 109 tiles needs a
    # second wave for one tile unless the half-width tile saves it.
    full = gemm_efficiency(np.array([128 * 12]), np.array([256 * 9]), np.array([8192]), a100_like)[0]
    assert full == pytest.approx(0.8 * 8192 / (8192 + 96), rel=1e-6)
    ragged = gemm_efficiency(np.array([128 * 109]), np.array([256]), np.array([8192]), a100_like)[0]
    assert ragged < full


def test_small_gemms_are_memory_bound(a100_like: Hardware) -> None:
    # A matrix-vector product (m = 1) moves the whole matrix for 2 flops per element.
    t = gemm_time_s(1.0, 8192.0, 8192.0, a100_like, 2.0)[()]
    bytes_moved = 2.0 * (8192 + 8192 * 8192 + 8192)
    assert t == pytest.approx(bytes_moved / (2.0e12 * 0.8) + 5e-6, rel=1e-6)


def test_all_reduce_time_is_ring_formula(a100_like: Hardware) -> None:
    bw, lat = coll.group_link(np.array([8.0]), np.array([1.0]), a100_like)
    assert bw[0] == pytest.approx(300e9 * 0.75)
    t = coll.all_reduce_s(np.array([1e9]), np.array([8.0]), bw, lat)[0]
    assert t == pytest.approx(2 * 7 / 8 * 1e9 / 225e9 + 2 * 6 * 8e-6, rel=1e-9)


def test_groups_spanning_nodes_use_the_nics(a100_like: Hardware) -> None:
    # dp group of 4 with stride 8 (TP fills the node): one member per node, one NIC each
    bw, _ = coll.group_link(np.array([4.0]), np.array([8.0]), a100_like)
    assert bw[0] == pytest.approx(25e9 * 0.85)
    # stride 2: 4 members per node share 4 NICs
    bw, _ = coll.group_link(np.array([16.0]), np.array([2.0]), a100_like)
    assert bw[0] == pytest.approx(4 * 25e9 * 0.85)


# --- invariants over random configurations --------------------------------------------------

configs = st.fixed_dictionaries(
    {
        "tp": st.sampled_from([1, 2, 4, 8]),
        "pp": st.sampled_from([1, 2, 4, 8]),
        "dp": st.sampled_from([1, 2, 4, 16]),
        "cp": st.sampled_from([1, 2]),
        "micro_batch": st.sampled_from([1, 2]),
        "recompute": st.sampled_from(list(RECOMPUTE_CODES)),
        "zero_stage": st.sampled_from([0, 1, 2, 3]),
        "sequence_parallel": st.booleans(),
    }
)


@settings(max_examples=60, deadline=None)
@given(configs)
def test_breakdowns_add_up(a100_like: Hardware, c: dict) -> None:  # type: ignore[type-arg]
    w = _w(get_preset("llama3-8b"), 8192, 64)
    stp = train_step(w, ParallelConfigs.single(**c), a100_like)
    parts = stp.as_dict(0)
    total = parts.pop("step_time_s")
    assert sum(parts.values()) == pytest.approx(total, rel=1e-12)
    assert all(v >= 0 for v in parts.values())
    mem = stp.memory.as_dict(0)
    pieces = [v for k, v in mem.items() if k not in ("total_bytes", "capacity_bytes", "host_offload_bytes")]
    assert sum(pieces) == pytest.approx(mem["total_bytes"], rel=1e-12)
    assert 0 < stp.mfu[0] <= stp.hfu[0] < 1


@settings(max_examples=40, deadline=None)
@given(configs, st.sampled_from(["tp", "pp"]))
def test_more_model_parallelism_never_raises_weight_memory(a100_like: Hardware, c: dict, axis: str) -> None:  # type: ignore[type-arg]
    w = _w(get_preset("llama2-13b"), 4096, 64)
    before = stage_params(w, ParallelConfigs.single(**c))[0][0]
    c2 = dict(c, **{axis: c[axis] * 2})
    after = stage_params(w, ParallelConfigs.single(**c2))[0][0]
    assert after <= before * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(configs, st.sampled_from(["scaleup", "scaleout", "hbm"]))
def test_more_bandwidth_never_slows_a_step(a100_like: Hardware, c: dict, link: str) -> None:  # type: ignore[type-arg]
    w = _w(get_preset("llama3-8b"), 8192, 64)
    cfg = ParallelConfigs.single(**c)
    field = {
        "scaleup": "scaleup_bytes_per_s",
        "scaleout": "scaleout_bytes_per_s_per_gpu",
        "hbm": "hbm_bytes_per_s",
    }[link]
    faster = a100_like.with_overrides(**{field: getattr(a100_like, field) * 2})
    assert train_step(w, cfg, faster).step_time[0] <= train_step(w, cfg, a100_like).step_time[0] * (1 + 1e-12)


def test_vectorised_evaluation_matches_one_by_one(a100_like: Hardware) -> None:
    w = _w(get_preset("llama3-8b"), 8192, 256)
    rows = [
        {"tp": 1, "pp": 1, "dp": 8},
        {"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": True, "recompute": "selective"},
        {"tp": 8, "pp": 4, "dp": 2, "zero_stage": 1, "micro_batch": 2, "recompute": "full"},
    ]
    singles = [train_step(w, ParallelConfigs.single(**r), a100_like).step_time[0] for r in rows]  # type: ignore[arg-type]
    batch = ParallelConfigs(
        tp=np.array([1, 2, 8]),
        pp=np.array([1, 2, 4]),
        dp=np.array([8, 4, 2]),
        cp=1,
        ep=1,
        vpp=1,
        micro_batch=np.array([1, 1, 2]),
        recompute=np.array([0, 1, 2]),
        sequence_parallel=np.array([False, True, False]),
        zero_stage=np.array([0, 0, 1]),
    )
    assert train_step(w, batch, a100_like).step_time == pytest.approx(np.array(singles), rel=1e-12)
