"""Issue #27: GPT-OSS's own layer features as Megatron-Core runs them (perf.moe_step), and the
expert optimizer states' ZeRO shard in the step's optimizer time."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf import moe_step
from rightsize.perf.hardware import Hardware
from rightsize.perf.layer import layer_times, moe_load_factor
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.presets import get_preset


@pytest.fixture(scope="module")
def b200() -> Hardware:
    acc = get_accelerator("b200")
    return Hardware.from_catalog(acc, node_for(acc.id), "bf16")


def _plain(arch_name: str = "gpt-oss-120b"):  # type: ignore[no-untyped-def]
    """The preset with its GPT-OSS features removed: the same shapes, a Qwen-style layer."""
    return get_preset(arch_name).model_copy(
        update={
            "sliding_window": None,
            "attention_sinks": False,
            "linear_bias": False,
            "glu_clamp": None,
            "rope_type": "default",
        }
    )


def _workload(arch, seq: int = 4096) -> TrainWorkload:  # type: ignore[no-untyped-def]
    return TrainWorkload(arch=arch, seq_len=seq, global_batch=1280, precision="bf16")


CFG = ParallelConfigs.single(dp=64, ep=8, micro_batch=4, zero_stage=1)


def test_gpt_oss_preset_carries_its_config_json_features() -> None:
    arch = get_preset("gpt-oss-120b")
    assert (arch.sliding_window, arch.full_attention_every, arch.glu_clamp) == (128, 2, 7.0)
    assert arch.attention_sinks and arch.linear_bias and arch.rope_type == "yarn"
    # alternate layers through the window: 18 of 36
    assert moe_step.windowed_layer_share(_workload(arch)) == 0.5


def test_a_window_longer_than_the_sequence_changes_nothing(b200: Hardware) -> None:
    arch = get_preset("gpt-oss-120b")
    assert moe_step.windowed_layer_share(_workload(arch, seq=128)) == 0.0
    assert moe_step.attention_time_factor(_workload(_plain()), CFG, b200)[0] == 1.0


def test_sliding_window_layers_skip_key_tiles(b200: Hardware) -> None:
    """At 4k tokens a 128-token window visits 2 of 16.5 key tiles per query tile, at a lower
    short-key efficiency: the windowed half costs ~a fifth of a causal layer, so the average
    layer's attention is between half and two thirds of full causal."""
    factor = moe_step.attention_time_factor(_workload(get_preset("gpt-oss-120b")), CFG, b200)[0]
    assert 0.5 < factor < 0.67
    # longer sequences: the window's share of the causal work shrinks further
    longer = moe_step.attention_time_factor(_workload(get_preset("gpt-oss-120b"), seq=32768), CFG, b200)[0]
    assert 0.5 < longer < factor


def test_features_cost_nothing_without_them(b200: Hardware) -> None:
    """Without GPT-OSS's features a MoE layer keeps only its small kernels (moe_small_kernels_s)."""
    w = _workload(_plain())
    fwd, bwd, act = moe_step.feature_elementwise_s(w, CFG, b200, True, moe_load_factor(w, CFG))
    small_f, small_b = moe_step.moe_small_kernels_s(w, CFG, b200)
    assert fwd[0] == pytest.approx(small_f[0]) and bwd[0] == pytest.approx(small_b[0])
    assert np.all(act == 0.0)


def test_moe_small_kernels_count_megatron_core_launches(b200: Hardware) -> None:
    """Issue 27: each small kernel of a MoE layer costs the accelerator's kernel overhead. Without
    expert parallelism: router (4), permutation pair (3) forward, 4 backward; EP adds preprocess's
    6 reductions; the alltoall dispatcher with several local experts adds its sort pair both ways
    and the latency-bound count all-gather and probability all-to-all; compiled stacks (TPU)
    and dense layers pay none of it."""
    from dataclasses import replace

    k = b200.kernel_overhead_s
    cfgs = ParallelConfigs(
        tp=1, pp=1, dp=64, cp=1, ep=np.array([1, 8, 8]), vpp=1, micro_batch=4,
        recompute=0, sequence_parallel=False, zero_stage=1,
    )  # fmt: skip
    base = _workload(_plain())
    f, b = moe_step.moe_small_kernels_s(replace(base, moe_dispatcher="hybridep"), cfgs, b200)
    assert f[0] == pytest.approx(7 * k) and b[0] == pytest.approx(4 * k)
    assert f[1] == pytest.approx(13 * k) and b[1] == pytest.approx(4 * k)
    fa, ba = moe_step.moe_small_kernels_s(replace(base, moe_dispatcher="alltoall"), cfgs, b200)
    assert fa[0] == pytest.approx(7 * k)  # no EP: no dispatch, no collectives
    # 16 local experts: the sort pair (2 kernels each way) and three small collectives, each at
    # least one NVLink latency step
    assert fa[2] > (13 + 2) * k + 2 * b200.scaleup_latency_s
    assert ba[2] > (4 + 2) * k + b200.scaleup_latency_s
    assert fa[2] - fa[1] < 0.1e-3  # a few bytes each: latency, not bandwidth
    dense = replace(base, arch=get_preset("llama3-8b"))
    assert np.all(moe_step.moe_small_kernels_s(dense, cfgs, b200)[0] == 0.0)
    acc = get_accelerator("tpu-v6e")
    tpu = Hardware.from_catalog(acc, node_for(acc.id), "bf16")
    assert np.all(moe_step.moe_small_kernels_s(base, cfgs, tpu)[0] == 0.0)


def test_clamp_and_expert_bias_scale_with_routed_tokens(b200: Hardware) -> None:
    w = _workload(get_preset("gpt-oss-120b"))
    one = moe_step.feature_elementwise_s(w, CFG, b200, True, np.ones(1))
    two = moe_step.feature_elementwise_s(
        w, ParallelConfigs.single(dp=64, ep=8, micro_batch=8), b200, True, np.ones(1)
    )
    # bytes double with the tokens; only the kernel launches (per expert and the layer's small
    # kernels, moe_small_kernels_s) stay fixed
    launches_f = moe_step.EXPERT_BIAS_KERNELS_FWD * 128 / 8 * b200.kernel_overhead_s
    launches_f += moe_step.moe_small_kernels_s(w, CFG, b200)[0][0]
    assert two[0][0] - launches_f == pytest.approx(2.0 * (one[0][0] - launches_f))
    # the clamps rerun with the activation under moe_act recomputation
    assert one[2][0] > 0.0
    # a dense layer of the same model keeps only the out-projection bias and the unfused rotary
    dense = moe_step.feature_elementwise_s(w, CFG, b200, False, np.ones(1))
    assert 0.0 < dense[0][0] < one[0][0] and dense[2][0] == 0.0


def test_gpt_oss_layer_spends_more_on_memory_passes_and_less_on_attention(b200: Hardware) -> None:
    cfg = ParallelConfigs.single(dp=64, ep=8, micro_batch=4, recompute="moe_act")
    real = layer_times(_workload(get_preset("gpt-oss-120b")), cfg, b200, moe=True)
    plain = layer_times(_workload(_plain()), cfg, b200, moe=True)
    assert real.elementwise_fwd[0] > plain.elementwise_fwd[0]
    assert real.elementwise_bwd[0] > plain.elementwise_bwd[0]
    assert real.recompute[0] > plain.recompute[0]
    assert real.attn_fwd[0] < plain.attn_fwd[0] and real.attn_bwd[0] < plain.attn_bwd[0]
    assert real.gemm_fwd[0] == pytest.approx(plain.gemm_fwd[0])


def test_issue_27_expert_optimizer_states_shard_over_expert_replicas_only(b200: Hardware) -> None:
    """ZeRO-1 over 64 data-parallel ranks: a GPU owns 1/64 of the dense states but 1/(64 / ep) of
    its local experts' (perf.memory's state_memory). With ep x local experts fixed, the expert
    states one GPU updates do not depend on ep: ep 8 was counted at an eighth of ep 1's."""
    w = _workload(_plain())
    times = [
        float(
            train_step(w, ParallelConfigs.single(dp=64, ep=ep, micro_batch=4, zero_stage=1), b200).optimizer[
                0
            ]
        )
        for ep in (1, 8, 64)
    ]
    assert times[0] == pytest.approx(times[1], rel=1e-9)
    assert times[1] == pytest.approx(times[2], rel=1e-9)


# openai/gpt-oss-120b config.json (the keys the reader uses)
GPT_OSS_120B_CONFIG = {
    "architectures": ["GptOssForCausalLM"],
    "model_type": "gpt_oss",
    "num_hidden_layers": 36,
    "hidden_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "intermediate_size": 2880,
    "num_local_experts": 128,
    "num_experts_per_tok": 4,
    "vocab_size": 201088,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "max_position_embeddings": 131072,
    "rope_theta": 150000,
    "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096},
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18,
    "attention_bias": True,
    "swiglu_limit": 7.0,
}


def test_gpt_oss_config_json_reads_as_the_preset(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from rightsize.spec.hf_config import read_hf_config_fields

    (tmp_path / "config.json").write_text(json.dumps(GPT_OSS_120B_CONFIG))
    fields = read_hf_config_fields(tmp_path)
    preset = get_preset("gpt-oss-120b")
    for name in (
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "head_dim",
        "experts",
        "experts_per_token",
        "expert_ffn_hidden",
        "vocab",
        "sliding_window",
        "full_attention_every",
        "attention_sinks",
        "linear_bias",
        "glu_clamp",
        "rope_type",
    ):
        assert fields[name] == getattr(preset, name), name


def test_alltoall_dispatcher_sorts_received_tokens_by_local_expert(b200: Hardware) -> None:
    """Megatron-Core's alltoall dispatcher sorts the received copies by local expert and back
    (sort_chunks_by_idxs) when a GPU holds more than one expert; HybridEP's own permute blocks are
    the pair perf.layer already counts."""
    from dataclasses import replace

    base = _workload(_plain())
    load = np.ones(3)
    cfgs = ParallelConfigs(
        tp=1, pp=1, dp=128, cp=1, ep=np.array([8, 128, 1]), vpp=1, micro_batch=4,
        recompute=0, sequence_parallel=False, zero_stage=1,
    )  # fmt: skip
    alltoall = moe_step.dispatcher_bytes_per_token(replace(base, moe_dispatcher="alltoall"), cfgs, load)
    # 16 local experts: two sorts of k h 16-bit copies, read and write; one expert each, or no EP: none
    assert alltoall[0] == pytest.approx(2 * 2 * 2.0 * 4 * 2880)
    assert alltoall[1] == 0.0 and alltoall[2] == 0.0
    for name in ("auto", "hybridep"):
        assert np.all(
            moe_step.dispatcher_bytes_per_token(replace(base, moe_dispatcher=name), cfgs, load) == 0.0
        )
    deepep = moe_step.dispatcher_bytes_per_token(replace(base, moe_dispatcher="deepep"), cfgs, load)
    assert deepep[1] == pytest.approx(alltoall[0]) and deepep[2] == 0.0


def test_qwen3_query_key_norm_adds_its_passes(b200: Hardware) -> None:
    """Megatron-Bridge runs Qwen3's q_norm / k_norm as qk_layernorm: an RMSNorm pass over every
    query and key element (4 bytes forward, 6 backward)."""
    plain = _workload(_plain())
    normed = _workload(_plain().model_copy(update={"qk_norm": True}))
    load = np.ones(1)
    f0, b0, _ = moe_step.feature_elementwise_s(plain, CFG, b200, True, load)
    f1, b1, _ = moe_step.feature_elementwise_s(normed, CFG, b200, True, load)
    elems = 4 * 4096 * (64 + 8) * 64
    bw = b200.hbm_bytes_per_s * b200.memory_bw_fraction
    assert f1[0] - f0[0] == pytest.approx(elems * 4.0 / bw)
    assert b1[0] - b0[0] == pytest.approx(elems * 6.0 / bw)


# Qwen/Qwen3-30B-A3B config.json (the keys the reader uses)
QWEN3_30B_A3B_CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "num_hidden_layers": 48,
    "hidden_size": 2048,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "vocab_size": 151936,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "max_position_embeddings": 40960,
    "rope_theta": 1000000.0,
}


def test_qwen3_moe_config_json_reads_experts_and_qk_norm(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from rightsize.errors import BadInput
    from rightsize.spec.hf_config import read_hf_config_fields

    (tmp_path / "config.json").write_text(json.dumps(QWEN3_30B_A3B_CONFIG))
    f = read_hf_config_fields(tmp_path)
    assert (f["experts"], f["experts_per_token"], f["expert_ffn_hidden"], f["dense_layers"]) == (
        128,
        8,
        768,
        0,
    )
    assert f["qk_norm"] and f["head_dim"] == 128
    (tmp_path / "config.json").write_text(json.dumps({**QWEN3_30B_A3B_CONFIG, "mlp_only_layers": [3, 7]}))
    with pytest.raises(BadInput, match="leading dense layers"):
        read_hf_config_fields(tmp_path)
