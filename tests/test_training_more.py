"""The further published training runs (validate/data/training_more.csv): MoE rows read as MoE
models, expert parallelism over tensor-parallel ranks, and the fp8 expert activations they fit by."""

from __future__ import annotations

from pathlib import Path

import pytest

from rightsize.perf.layer import moe_load_factor
from rightsize.perf.memory import activation_bytes_per_token_layer
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.load import parse_spec
from rightsize.spec.model import ModelArch
from rightsize.spec.training import TrainingSpec
from rightsize.validate.cases import more_paths, read_cases, training_spec_data

# Qwen/Qwen3-30B-A3B config.json
QWEN3_30B_A3B = ModelArch(
    name="qwen3-30b-a3b",
    layers=48,
    hidden=2048,
    heads=32,
    kv_heads=4,
    head_dim=128,
    ffn_hidden=6144,
    vocab=151936,
    mlp="swiglu",
    experts=128,
    experts_per_token=8,
    expert_ffn_hidden=768,
)


def _cases() -> dict[str, object]:
    return {c.id: c for c in read_cases(more_paths()[0])}


def test_every_row_builds_a_valid_spec_with_its_published_layout() -> None:
    for case in _cases().values():
        spec = parse_spec(training_spec_data(case), Path("."))  # type: ignore[arg-type]
        assert isinstance(spec, TrainingSpec)
        row = case.row  # type: ignore[attr-defined]
        assert spec.targets.gpus == int(row["gpus"])
        if row.get("experts"):
            assert spec.model.experts == int(row["experts"])
            assert spec.model.experts_per_token == int(row["experts_per_token"])


def test_moe_columns_and_preset_reach_the_model() -> None:
    cases = _cases()
    qwen = training_spec_data(cases["mb2604-qwen3-30b-a3b-b200-8gpu-mxfp8"])  # type: ignore[arg-type]
    assert qwen["model"]["expert_ffn_hidden"] == 768 and qwen["model"]["head_dim"] == 128
    assert qwen["parallel"]["ep"] == 8
    deepseek = training_spec_data(cases["mb2604-deepseek-v3-b200-256gpu-mxfp8"])  # type: ignore[arg-type]
    assert deepseek["model"] == "deepseek-v3"  # MLA: the preset, not the headline columns


def test_gpt_oss_rows_run_the_recompute_their_published_presets_set() -> None:
    """Megatron-Bridge's GPT_OSS_120B_PRETRAIN_CONFIG_*_BF16_V2 presets: recompute_modules
    [layernorm, moe_act] on GB200 / B200 / H100 (the model's moe_act), none on GB300 / B300
    (CUDA graphs instead); the planner runs them as published, not a searched choice."""
    cases = _cases()
    expected = {"gb200": "moe_act", "b200": "moe_act", "h100-sxm": "moe_act", "gb300": "none", "b300": "none"}
    for acc, policy in expected.items():
        case = next(c for i, c in cases.items() if i.startswith(f"mb2604-gpt-oss-120b-{acc}-"))
        spec = parse_spec(training_spec_data(case), Path("."))  # type: ignore[arg-type]
        assert isinstance(spec, TrainingSpec)
        assert spec.parallel.recompute == policy


def test_expert_parallel_over_tensor_parallel_ranks_becomes_ep_over_tp() -> None:
    # Megatron-Bridge's Qwen3 235B H100 recipe: TP2 PP8 EP32 on 256 GPUs (16 dp ranks).
    data = training_spec_data(_cases()["mb2604-qwen3-235b-a22b-h100-sxm-256gpu-fp8"])  # type: ignore[arg-type]
    assert data["parallel"]["tp"] == 2 and data["parallel"]["dp"] == 16
    assert data["parallel"]["ep"] == 16
    assert isinstance(parse_spec(data, Path(".")), TrainingSpec)


def test_fp8_experts_keep_their_linear_inputs_in_fp8() -> None:
    """Transformer Engine saves the quantised input of each expert GEMM, as of te.Linear: per
    routed copy the up projection's input (h) and the down projection's input (f_e) are one
    byte, not two; bf16 keeps every tensor it kept before."""
    cfg = ParallelConfigs.single(dp=8, ep=8, micro_batch=4)
    bf16 = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=512, precision="bf16")
    fp8 = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=512, precision="fp8")
    load = float(moe_load_factor(bf16, cfg)[0])
    saved = QWEN3_30B_A3B.experts_per_token * load * (768 + 2048)
    dense_inputs = 2 * 2048  # the QKV and MLP inputs, also one byte under fp8
    b = float(activation_bytes_per_token_layer(bf16, cfg)[0])
    f = float(activation_bytes_per_token_layer(fp8, cfg)[0])
    assert b - f == pytest.approx(saved + dense_inputs)


def test_moe_layers_move_their_tokens_through_permute_and_unpermute() -> None:
    """Each token's k routed copies are gathered before the dispatch and scattered back after
    the combine: 2 x (1 + k load) x h x 2 bytes more memory traffic than the same layer's
    elementwise kernels without routing, and none for a dense model."""
    from dataclasses import replace as dc_replace

    from rightsize.perf.layer import elementwise_bytes_per_token

    cfg = ParallelConfigs.single(dp=8, ep=8, micro_batch=4)
    moe = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=512, precision="bf16")
    load = float(moe_load_factor(moe, cfg)[0])
    k, h = QWEN3_30B_A3B.experts_per_token, QWEN3_30B_A3B.hidden
    # the same shape with the routed MLP as a dense one of k x f_e (identical activation bytes)
    dense = dc_replace(
        moe,
        arch=QWEN3_30B_A3B.model_copy(update={"experts": 0, "experts_per_token": 1, "ffn_hidden": 768 * k}),
    )
    extra = float(elementwise_bytes_per_token(moe, cfg)[0] - elementwise_bytes_per_token(dense, cfg)[0])
    assert extra == pytest.approx(2.0 * 2.0 * h * (1.0 + k * load))


def test_a_stack_without_tp_overlap_exposes_every_tensor_parallel_collective() -> None:
    """torchtitan's vanilla TP runs its all-gathers and reduce-scatters in line: the layer's
    exposed TP time is the whole collective time, more than the overlapping stack's."""
    from dataclasses import replace as dc_replace

    from perf_helpers import catalog_hw, llama2_7b

    from rightsize.perf.layer import layer_times

    cfg = ParallelConfigs.single(tp=8, dp=1, micro_batch=2, sequence_parallel=True)
    hw = catalog_hw("h100-sxm")
    usual = TrainWorkload(arch=llama2_7b(), seq_len=4096, global_batch=8, precision="bf16")
    inline = dc_replace(usual, tp_comm_overlap=False)
    overlapped = dc_replace(usual, tp_comm_overlap=True)
    t_usual = float(layer_times(usual, cfg, hw, moe=False).tp_comm_fwd[0])
    assert float(layer_times(overlapped, cfg, hw, moe=False).tp_comm_fwd[0]) == pytest.approx(t_usual)
    t_inline = float(layer_times(inline, cfg, hw, moe=False).tp_comm_fwd[0])
    assert hw.tp_comm_overlap > 0 and t_inline > t_usual


def test_mxfp8_casts_read_once_and_write_two_block_scaled_copies() -> None:
    """MXFP8's scales are local to 32-value blocks (no tensor-wide amax pass): 2 bytes read,
    a rowwise and a columnwise fp8 copy written with one E8M0 scale per 32 values each; less
    than current scaling's amax + cast + transpose (6)."""
    from rightsize.perf.layer import FP8_CAST_BYTES_PER_ELEMENT, cast_bytes_per_element

    mx = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=8, precision="fp8", fp8_recipe="mxfp8")
    cs = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=8, precision="fp8")
    assert cast_bytes_per_element(mx) == (pytest.approx(2 + 2 * (1 + 1 / 32)),) * 2
    assert cast_bytes_per_element(cs) == (FP8_CAST_BYTES_PER_ELEMENT, FP8_CAST_BYTES_PER_ELEMENT)


def test_fp8_moe_casts_each_routed_copy_of_the_expert_tensors() -> None:
    """Megatron-Core dispatches the routed copies in 16 bit and the grouped linear quantises
    what arrived: each routed copy's up- and down-projection inputs (forward) and both expert
    GEMMs' output gradients (backward) are quantised per copy, k load times a dense MLP of the
    expert's width; the attention inputs once per token."""
    from dataclasses import replace as dc_replace

    from rightsize.perf.layer import (
        cast_bytes_per_element,
        elementwise_bytes_per_token,
        fp8_backward_cast_bytes_per_token,
    )

    cfg = ParallelConfigs.single(dp=8, ep=8, micro_batch=4)
    moe = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=512, precision="fp8")
    bf16 = dc_replace(moe, precision="bf16")
    load = float(moe_load_factor(moe, cfg)[0])
    copies, h, f = QWEN3_30B_A3B.experts_per_token * load, 2048.0, 768.0
    fwd, bwd = cast_bytes_per_element(moe)
    cast_f = float(elementwise_bytes_per_token(moe, cfg)[0] - elementwise_bytes_per_token(bf16, cfg)[0])
    assert cast_f == pytest.approx(fwd * (h + 32 * 128 + copies * (h + f)))
    qkv_out = (32 + 2 * 4) * 128
    cast_b = float(fp8_backward_cast_bytes_per_token(moe, cfg)[0])
    assert cast_b == pytest.approx(bwd * (h + qkv_out + copies * (h + 2 * f)))


def test_an_fp8_dispatch_quantises_each_token_once_and_halves_the_forward_dispatch() -> None:
    """DeepSeek-V3's stack quantises a token before the dispatch (report sec. 3.3): its up-
    projection input is cast once, not once per routed copy, and the forward dispatch carries
    fp8 with one fp32 scale per 128 values; the combine and the gradients stay 16 bit."""
    from dataclasses import replace as dc_replace

    from perf_helpers import catalog_hw

    from rightsize.perf.layer import cast_bytes_per_element, elementwise_bytes_per_token, layer_times

    cfg = ParallelConfigs.single(dp=8, ep=8, micro_batch=4)
    hw = catalog_hw("b200", "fp8")
    wire16 = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=512, precision="fp8")
    wire8 = dc_replace(wire16, moe_dispatch_dtype="fp8")
    copies = QWEN3_30B_A3B.experts_per_token * float(moe_load_factor(wire16, cfg)[0])
    saved = float(elementwise_bytes_per_token(wire16, cfg)[0] - elementwise_bytes_per_token(wire8, cfg)[0])
    assert saved == pytest.approx(cast_bytes_per_element(wire16)[0] * (copies - 1.0) * 2048)
    a, b = layer_times(wire16, cfg, hw, moe=True), layer_times(wire8, cfg, hw, moe=True)
    assert float(b.ep_comm_bwd[0]) == pytest.approx(float(a.ep_comm_bwd[0]))
    assert float(a.ep_comm_fwd[0]) > float(b.ep_comm_fwd[0]) > 0.5 * float(a.ep_comm_fwd[0])
    # a 16-bit run ignores the knob
    bf16 = dc_replace(wire8, precision="bf16")
    assert float(layer_times(bf16, cfg, hw, moe=True).ep_comm_fwd[0]) == pytest.approx(
        float(layer_times(dc_replace(wire16, precision="bf16"), cfg, hw, moe=True).ep_comm_fwd[0])
    )


def test_moe_dispatch_crosses_the_scale_out_network_once_per_remote_domain() -> None:
    """Within one scale-up domain the dispatch is the plain all-to-all; across two domains a
    token with 8 routed copies crosses the scale-out links once (DeepSeek-V3 sec. 3.2.2), not
    four times, so an IB-bound dispatch takes about a quarter of the per-copy time."""
    import numpy as np
    from perf_helpers import catalog_hw

    from rightsize.perf import collectives as coll

    hw = catalog_hw("h100-sxm", "fp8")
    send = np.array([1e9])
    one = np.array([1.0])
    inside = coll.moe_dispatch_s(send, np.array([8.0]), one, hw, 8)
    assert inside[0] == pytest.approx(coll.all_to_all_group_s(send, np.array([8.0]), one, hw)[0])
    plain = coll.all_to_all_group_s(send, np.array([16.0]), one, hw)[0]
    hier = coll.moe_dispatch_s(send, np.array([16.0]), one, hw, 8)[0]
    distinct_remote = 1.0 - 0.5**8  # of 2 domains, the other one holds one of the 8 experts
    assert hier < plain
    assert (hier - 15 * hw.scaleout_latency_s) / (plain - 15 * hw.scaleout_latency_s) == pytest.approx(
        distinct_remote / 4.0, rel=0.02
    )


def test_training_more_is_its_own_reported_set_with_every_run_predicted() -> None:
    """Issue 27: no run that ran for real is rejected; the set's median |error| stays under the
    bar it reaches (16.1% since each routed copy is quantised where it arrives, 20.5% before;
    worst 80.4%, GPT-OSS on GB200: its sliding-window attention and sinks are not modelled).
    DeepSeek-V3 on GB200 / GB300 fits with the module recompute its recipe runs (mla_up_proj,
    moe_act)."""
    from rightsize.validate.run import validate_paths

    result = validate_paths(more_paths())
    mine = result["by_file"]["training_more.csv"]["tokens_per_s_per_gpu"]
    assert mine["n"] == 28 and mine["not_predicted"] == 0
    assert mine["median_abs_error"] < 0.17 and mine["max_abs_error"] < 0.81
    chosen = {r["id"]: r["chosen"]["parallel"]["recompute"] for r in result["rows"] if "chosen" in r}
    for acc in ("gb200", "gb300"):
        assert chosen[f"mb2604-deepseek-v3-{acc}-256gpu-mxfp8"] == "mla_up_proj_moe_act"


def test_sixteen_bit_gradient_buffers_halve_gradient_memory_and_reduction() -> None:
    """Megatron-Core's grad_reduce_in_fp32 false (Megatron-Bridge's performance recipes): the
    gradient buffers are 2 bytes per parameter, not 4, and so is what data parallelism reduces;
    left unset, bf16 training keeps fp32 gradients as before."""
    from dataclasses import replace as dc_replace

    from perf_helpers import catalog_hw

    from rightsize.perf.memory import train_memory
    from rightsize.perf.step import train_step

    cfg = ParallelConfigs.single(dp=16, ep=8, micro_batch=1, zero_stage=1)
    hw = catalog_hw("h100-sxm", "bf16")
    # one micro-batch per step: little backward to hide the reduction under, so it shows
    default = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=16, precision="bf16")
    fp32 = dc_replace(default, grad_reduce_in_fp32=True)
    half = dc_replace(default, grad_reduce_in_fp32=False)
    assert default.grad_bytes == fp32.grad_bytes == 4.0 and half.grad_bytes == 2.0
    g32 = float(train_memory(fp32, cfg, hw).gradients[0])
    g16 = float(train_memory(half, cfg, hw).gradients[0])
    assert g16 == pytest.approx(g32 / 2.0)
    assert float(train_step(half, cfg, hw).dp_comm[0]) < 0.5 * float(train_step(fp32, cfg, hw).dp_comm[0])
    spec = training_spec_data(_cases()["mb2604-qwen3-30b-a3b-b200-8gpu-mxfp8"])  # type: ignore[arg-type]
    spec["training"]["grad_reduce_in_fp32"] = False
    assert isinstance(parse_spec(spec, Path(".")), TrainingSpec)
