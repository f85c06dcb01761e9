"""Megatron-Core's module recompute as named remat policies (perf.remat): `moe_act` frees each
routed copy's expert activation output and repeats the activation kernel; `mla_up_proj_moe_act`
also frees MLA's up-projected q, k, v and repeats the two up-projection GEMMs. What each frees
and repeats is checked against the tensor shapes, not against a fitted figure."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.perf import remat
from rightsize.perf.hardware import Hardware
from rightsize.perf.layer import layer_times, moe_load_factor
from rightsize.perf.memory import activation_bytes_per_token_layer
from rightsize.perf.params import attention_linears, mla_up_proj_share
from rightsize.perf.step import recompute_flops_per_token
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.model import ModelArch
from rightsize.spec.presets import get_preset

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
DSV3 = get_preset("deepseek-v3")


def _cfg(recompute: str, ep: int = 8) -> ParallelConfigs:
    return ParallelConfigs.single(dp=ep, ep=ep, micro_batch=1, recompute=recompute)


def test_moe_act_frees_each_routed_copys_activation_output() -> None:
    w = TrainWorkload(arch=QWEN3_30B_A3B, seq_len=4096, global_batch=512, precision="fp8")
    none = float(activation_bytes_per_token_layer(w, _cfg("none"))[0])
    act = float(activation_bytes_per_token_layer(w, _cfg("moe_act"))[0])
    load = float(moe_load_factor(w, _cfg("none"))[0])
    # fp8: the down projection's saved input is one byte per element, k x load copies of f_e
    assert none - act == pytest.approx(1.0 * 768 * 8 * load)


def test_mla_up_proj_also_frees_the_attention_kernels_q_k_v() -> None:
    w = TrainWorkload(arch=DSV3, seq_len=4096, global_batch=4096, precision="bf16")
    act = float(activation_bytes_per_token_layer(w, _cfg("moe_act"))[0])
    both = float(activation_bytes_per_token_layer(w, _cfg("mla_up_proj_moe_act"))[0])
    a = DSV3.heads
    dqk = DSV3.head_dim + (DSV3.qk_rope_head_dim or 0)
    dv = DSV3.v_head_dim or DSV3.head_dim
    assert act - both == pytest.approx(2.0 * (a * dqk + a * dqk + a * dv))
    # and keeps far more than full recomputation (the layer input only)
    assert both > 3 * float(activation_bytes_per_token_layer(w, _cfg("full"))[0])


def test_dense_models_free_nothing_under_the_moe_policies() -> None:
    dense = ModelArch(
        name="d", layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256, mlp="swiglu"
    )
    w = TrainWorkload(arch=dense, seq_len=8192, global_batch=64, precision="bf16")
    cfg = ParallelConfigs.single(dp=8, recompute="none")
    ref = float(activation_bytes_per_token_layer(w, cfg)[0])
    for name in ("moe_act", "mla_up_proj_moe_act"):
        cfg = ParallelConfigs.single(dp=8, recompute=name)
        assert float(activation_bytes_per_token_layer(w, cfg)[0]) == pytest.approx(ref)


def test_recompute_time_is_the_rebuilt_modules_only() -> None:
    acc = get_accelerator("h100-sxm")
    hw = Hardware.from_catalog(acc, node_for(acc.id), "bf16")
    w = TrainWorkload(arch=DSV3, seq_len=4096, global_batch=4096, precision="bf16")
    t = {
        n: float(layer_times(w, _cfg(n), hw, True).recompute[0])
        for n in ("none", "moe_act", "mla_up_proj_moe_act", "full")
    }
    assert t["none"] == 0.0
    assert 0.0 < t["moe_act"] < t["mla_up_proj_moe_act"] < t["full"]
    # The MLA up-projections' share of the attention projections, by their weights
    lin = attention_linears(DSV3)
    total = sum(i * o for s in lin.values() for i, o in s)
    assert mla_up_proj_share(DSV3) == pytest.approx(
        (lin["q"][1][0] * lin["q"][1][1] + lin["v"][0][0] * lin["v"][0][1]) / total
    )
    assert mla_up_proj_share(QWEN3_30B_A3B) == 0.0
    # hardware FLOPs: mla_up_proj repeats GEMM FLOPs, moe_act none (an elementwise kernel)
    flops = recompute_flops_per_token(
        w, np.array([float(remat.CODES[n]) for n in ("moe_act", "mla_up_proj_moe_act")])
    )
    assert flops[0] == 0.0 and flops[1] > 0.0


def test_the_search_tries_them_only_where_they_apply() -> None:
    assert remat.searched_policies("nvidia") == remat.SEARCHED
    assert remat.searched_policies("nvidia", moe=True) == (*remat.SEARCHED, "moe_act")
    assert remat.searched_policies("nvidia", moe=True, mla=True)[-1] == "mla_up_proj_moe_act"
    assert remat.searched_policies("google", moe=True, mla=True) == remat.SEARCHED_JAX
    assert remat.MEGATRON_MODULES["mla_up_proj_moe_act"] == ("mla_up_proj", "moe_act")


def test_megatron_and_nemo_exports_write_the_modules() -> None:
    """A plan that chose a module recompute launches with it: Megatron-LM's
    `--recompute-granularity selective --recompute-modules mla_up_proj moe_act`, NeMo's
    `recompute_modules` list."""
    from export_plans import plan_dict

    from rightsize.export.frameworks import launch_for
    from rightsize.export.plan_view import training_view

    plan = plan_dict("deepseek-v3-pretrain")
    plan["best"]["parallel"]["recompute"] = "mla_up_proj_moe_act"
    args = dict(launch_for(training_view(plan), "megatron").arg_list)
    assert args["--recompute-granularity"] == "selective"
    assert args["--recompute-modules"] == "mla_up_proj moe_act"
    plan = plan_dict("mixtral-8x7b-pretrain")  # NeMo splits layers evenly: Mixtral's 32 do
    plan["best"]["parallel"]["recompute"] = "moe_act"
    nemo = launch_for(training_view(plan), "nemo")
    script = "\n".join(nemo.files.values())
    assert "recompute_modules = ['moe_act']" in script
    assert 'recompute_granularity = "selective"' in script
