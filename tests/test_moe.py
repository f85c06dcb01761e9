"""Mixture of experts and multi-head latent attention (issue #7): parameter counts, the
dispatch/combine all-to-all by hand, capacity factor and load imbalance, expert weights
read per decode step, MLA's KV cache, and DeepSeek-V3's published GPU-hours."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rightsize.search.train as train_planner
from rightsize.catalog import get_accelerator, node_for
from rightsize.perf import collectives as coll
from rightsize.perf.hardware import Hardware
from rightsize.perf.inference import Replica
from rightsize.perf.layer import layer_times, moe_dispatch_bytes, moe_load_factor
from rightsize.perf.memory import activation_bytes_per_token_layer
from rightsize.perf.params import active_params, count_params
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec import get_preset
from rightsize.spec.load import load_spec
from rightsize.spec.training import TrainingSpec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MIXTRAL = get_preset("mixtral-8x7b")
DSV3 = get_preset("deepseek-v3")


def _w(arch=MIXTRAL, seq: int = 4096, batch: int = 64, **kw) -> TrainWorkload:  # type: ignore[no-untyped-def]
    return TrainWorkload(arch=arch, seq_len=seq, global_batch=batch, precision="bf16", **kw)


# --- parameters ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "total_b", "active_b"),
    [
        ("deepseek-v3", 671.0, 37.0),  # DeepSeek-AI 2024, arXiv:2412.19437: 671B total, 37B activated
        ("mixtral-8x7b", 46.7, 12.9),  # Mistral AI: 46.7B total, 12.9B active
    ],
)
def test_moe_parameter_counts_match_published(preset: str, total_b: float, active_b: float) -> None:
    arch = get_preset(preset)
    assert count_params(arch).total / 1e9 == pytest.approx(total_b, rel=0.02)
    assert active_params(arch) / 1e9 == pytest.approx(active_b, rel=0.02)


def test_mla_attention_parameters_by_hand() -> None:
    h, a, q_lora, kv_lora, nope, rope, v = 7168, 128, 1536, 512, 128, 64, 128
    by_hand = (
        h * q_lora  # q down
        + q_lora * a * (nope + rope)  # q up
        + h * (kv_lora + rope)  # kv down + shared rotary key
        + kv_lora * a * (nope + v)  # kv up
        + a * v * h  # output
        + q_lora
        + kv_lora  # latent RMSNorms
    )
    assert count_params(DSV3).attention_per_layer == by_hand  # 187.1M per layer


# --- expert-parallel all-to-all ---------------------------------------------------------------


def test_dispatch_bytes_by_hand() -> None:
    # one micro-batch of 1 x 4096 tokens, top-2, hidden 4096, 2 bytes: 4096 * 2 * 4096 * 2
    cfg = ParallelConfigs.single(dp=8, ep=8)
    assert moe_dispatch_bytes(_w(), cfg)[0] == pytest.approx(67_108_864 * moe_load_factor(_w(), cfg)[0])
    # sequence parallelism splits the tokens over the TP ranks
    sp = ParallelConfigs.single(tp=2, dp=8, ep=8, sequence_parallel=True)
    assert moe_dispatch_bytes(_w(), sp)[0] == pytest.approx(moe_dispatch_bytes(_w(), cfg)[0] / 2)


def test_all_to_all_inside_and_across_nodes_by_hand(a100_like: Hardware) -> None:
    nbytes = np.array([64e6])
    # ep 8 inside one NVLink domain: 7/8 of the bytes over 300 GB/s x 0.75
    inside = coll.all_to_all_group_s(nbytes, np.array([8.0]), np.array([1.0]), a100_like)[0]
    assert inside == pytest.approx(7 / 8 * 64e6 / 225e9 + 6 * 8e-6)
    # ep 32 at stride 1: 8 members per node; 24/32 leave through the GPU's own 25 GB/s x 0.85 NIC
    across = coll.all_to_all_group_s(nbytes, np.array([32.0]), np.array([1.0]), a100_like)[0]
    steps = min(31, 2 * np.log2(32))
    assert across == pytest.approx(24 / 32 * 64e6 / (25e9 * 0.85) + steps * 15e-6)


def test_layer_charges_four_all_to_alls(a100_like: Hardware) -> None:
    """Dispatch and combine forward, and their gradients backward."""
    w, cfg = _w(), ParallelConfigs.single(dp=8, ep=8)
    lt = layer_times(w, cfg, a100_like, moe=True)
    one = coll.all_to_all_group_s(moe_dispatch_bytes(w, cfg), cfg.ep, cfg.tp * cfg.cp, a100_like)[0]
    assert lt.ep_comm_fwd[0] + lt.ep_comm_bwd[0] == pytest.approx(4 * one)
    assert layer_times(w, cfg, a100_like, moe=False).ep_comm_fwd[0] == 0.0


# --- capacity factor and imbalance --------------------------------------------------------------


def test_load_factor_is_capacity_or_routing_statistics() -> None:
    cfg = ParallelConfigs.single(dp=8, ep=8)
    routed = 4096 * 2  # tokens a GPU receives on average per micro-batch
    stat = 1 + np.sqrt(2 * np.log(8) / routed)
    assert moe_load_factor(_w(), cfg)[0] == pytest.approx(stat)  # ~1.02
    assert moe_load_factor(_w(moe_capacity_factor=1.25), cfg)[0] == pytest.approx(1.25)
    assert moe_load_factor(_w(), ParallelConfigs.single(dp=8, ep=1))[0] == pytest.approx(1.0)


def test_capacity_factor_slows_experts_and_grows_activations(a100_like: Hardware) -> None:
    cfg = ParallelConfigs.single(dp=8, ep=8)
    base, padded = _w(), _w(moe_capacity_factor=1.5)
    t0, t1 = layer_times(base, cfg, a100_like, True), layer_times(padded, cfg, a100_like, True)
    assert t1.gemm_fwd[0] > t0.gemm_fwd[0]
    ratio = t1.ep_comm_fwd[0] / t0.ep_comm_fwd[0]
    assert 1.3 < ratio < 1.5  # bytes scale 1.5 / 1.02; latency does not
    a0 = activation_bytes_per_token_layer(base, cfg)[0]
    a1 = activation_bytes_per_token_layer(padded, cfg)[0]
    f_e, h, k = 14336, 4096, 2
    routed_per_token = (6 * f_e + 4 * h) * k  # SwiGLU inner tensors + dispatched input and output, per copy
    assert a1 - a0 == pytest.approx(routed_per_token * (1.5 - moe_load_factor(base, cfg)[0]))


def test_zero3_gathers_expert_weights_too(a100_like: Hardware) -> None:
    """Regression: ZeRO-3's per-micro-batch gathers once covered only the dense weights."""
    w = _w(batch=64)
    # A slow fabric, so that the per-unit gathers cannot hide under compute (issue #14: each
    # unit's gather hides only under its neighbour's compute).
    slow = a100_like.with_overrides(scaleout_bytes_per_s_per_gpu=1e9)
    z2 = train_step(w, ParallelConfigs.single(dp=16, ep=1, zero_stage=2, recompute="full"), slow)
    z3 = train_step(w, ParallelConfigs.single(dp=16, ep=1, zero_stage=3, recompute="full"), slow)
    assert z3.dp_comm[0] > 2 * z2.dp_comm[0]


# --- inference -------------------------------------------------------------------------------------


def _replica(arch, tp: int = 8) -> Replica:  # type: ignore[no-untyped-def]
    acc = get_accelerator("h200-sxm")
    return Replica.build(arch, acc, node_for(acc.id), tp, "fp8", "fp8")


def test_decode_reads_only_the_experts_a_batch_touches() -> None:
    rep = _replica(MIXTRAL)
    c = count_params(MIXTRAL)
    per_expert = c.routed_experts_per_layer / 8
    non_expert = rep.linear_params - c.moe_layers * c.routed_experts_per_layer
    # batch 1: top-2 of 8 experts per layer
    assert rep.decode_weight_params(1.0)[()] == pytest.approx(non_expert + c.moe_layers * 2 * per_expert)
    # batch 4: 8 (1 - (1 - 2/8)^4) = 5.47 distinct experts per layer
    touched = 8 * (1 - 0.75**4)
    assert rep.decode_weight_params(4.0)[()] == pytest.approx(
        non_expert + c.moe_layers * touched * per_expert
    )
    # large batches read every expert
    assert rep.decode_weight_params(256.0)[()] == pytest.approx(rep.linear_params, rel=1e-6)
    assert rep.decode_step_s(1.0, 1000.0)[()] < rep.decode_step_s(64.0, 64000.0)[()]


def test_mla_kv_cache_is_the_latent() -> None:
    rep = _replica(DSV3)
    # 61 layers x (512 latent + 64 rotary key) x 1 byte (fp8), whole replica; every TP rank keeps it all
    assert rep.kv_bytes_per_token == 61 * 576 * 1.0
    assert rep.kv_shards == 1
    # ~1/57 of an equivalent multi-head cache: 2 x 128 heads x 128 x 61 layers
    assert 2 * 128 * 128 * 61 / rep.kv_bytes_per_token > 50


# --- DeepSeek-V3's published training cost ------------------------------------------------------


def test_deepseek_v3_gpu_hours_per_trillion_tokens() -> None:
    """DeepSeek-V3 pre-training: 2.664M H800 GPU-hours for 14.8T tokens, 180K per trillion
    (arXiv:2412.19437, Table 1), on 2048 H800s in fp8 with sequences of 4096.

    Tolerance 30% (the bundled gpu_hours bar). The planner predicts ~220K/T (+22%): it keeps
    the expert all-to-alls exposed, where DualPipe overlaps them with computation and DeepSeek
    dispatches in fp8 to at most 4 nodes per token, so it plans without expert parallelism;
    and without DeepSeek's selective recomputation (norms, MLA up-projections) and fp8
    activation caching, activations force full recomputation (+1/3 forward work).
    """
    mp = pytest.MonkeyPatch()
    mp.setattr(
        train_planner, "workload_from_spec", lambda spec: TrainWorkload.from_spec(spec.model, spec.training)
    )
    try:
        spec = load_spec(EXAMPLES / "deepseek-v3-pretrain.yaml")
        assert isinstance(spec, TrainingSpec)
        plan = train_planner.plan_training(spec)
    finally:
        mp.undo()
    assert plan.best.gpus == 2048 and plan.best.gpu_hours is not None
    # The paper's figure is its steady rate x tokens (sec. 1): the steady steps of the whole run
    # the search ranks by (its other parts, failures and unplanned losses, are validated on
    # published whole runs in `validate`).
    steady_gpu_hours = 2048 * 14.8e12 / (plan.best.tokens_per_s_per_gpu * 2048) / 3600
    per_trillion = steady_gpu_hours / 14.8
    assert per_trillion == pytest.approx(180e3, rel=0.30)
    assert plan.best.gpu_hours > steady_gpu_hours
