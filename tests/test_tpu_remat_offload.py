"""Issue 28: MaxText's custom remat policies that offload each layer's input to host memory
(the Trillium recipes' decoder_layer_input=offload), which is how Llama 3.1 405B trains on
32 GB TPU v6e chips; and the MaxText export that writes them."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

from rightsize.catalog import get_accelerator, node_for
from rightsize.export import render_files
from rightsize.perf import remat
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import offloaded_bytes_per_token_layer
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.model import ModelArch

sys.path.insert(0, str(Path(__file__).parent))
from test_k8s_platforms import _maxtext, tpu_plan  # noqa: E402, F401

LLAMA_405B = ModelArch(
    name="llama-3.1-405b",
    layers=126,
    hidden=16384,
    heads=128,
    kv_heads=8,
    ffn_hidden=53248,
    vocab=128256,
    mlp="swiglu",
)


def _hw(acc_id: str) -> Hardware:
    acc = get_accelerator(acc_id)
    return Hardware.from_catalog(acc, node_for(acc.id), "bf16")


def test_input_offload_policies_keep_nothing_on_device() -> None:
    for name in ("input_qkv_offloaded", "input_qkv_out_offloaded"):
        p = remat.POLICIES[remat.CODES[name]]
        assert not p.kept and "input" in p.offloaded and "qkv" in p.offloaded
        assert name in remat.SEARCHED_JAX and name not in remat.SEARCHED
    # out_proj offloaded too: the out-projection GEMM is no longer rebuilt
    assert "out_gemm" in remat.POLICIES[remat.CODES["input_qkv_offloaded"]].rebuilt
    assert "out_gemm" not in remat.POLICIES[remat.CODES["input_qkv_out_offloaded"]].rebuilt


def test_llama_405b_fits_on_v6e_only_with_the_layer_input_offloaded() -> None:
    """maxtext_trillium_model_configs.py llama3_1_405b_8192_fsdp_dcn: 1 sequence of 8K per chip,
    ici_tensor_parallelism 4, FSDP over the rest of the 256-chip slice, decoder_layer_input and
    q/k/v/out_proj offloaded. It ran (tiering.md: 123 tokens/s/device), so it must fit; keeping
    the layer input on device (qkv_proj_offloaded) must not."""
    w = TrainWorkload(arch=LLAMA_405B, seq_len=8192, global_batch=256, precision="bf16")
    hw = _hw("tpu-v6e")
    names = ["qkv_proj_offloaded", "input_qkv_out_offloaded"]
    st = train_step(
        w,
        ParallelConfigs(
            tp=4,
            pp=1,
            dp=64,
            cp=1,
            ep=1,
            vpp=1,
            micro_batch=1,
            recompute=[remat.CODES[n] for n in names],
            sequence_parallel=True,
            zero_stage=3,
        ),
        hw,
    )
    assert not bool(st.memory.fits[0]) and bool(st.memory.fits[1])
    # the layer input (2h bytes per token, sharded over tp by sequence parallelism) leaves the device
    cfg = ParallelConfigs.single(tp=4, dp=64, recompute="input_qkv_out_offloaded", sequence_parallel=True)
    per_token = offloaded_bytes_per_token_layer(w, cfg)[0]
    qkv = 2 * (128 * 128 + 2 * 8 * 128) / 4
    assert per_token == pytest.approx(2 * 16384 / 4 + qkv + 2 * 16384 / 4)


def test_maxtext_export_writes_the_custom_policy(tpu_plan: dict[str, Any]) -> None:  # noqa: F811
    plan = copy.deepcopy(tpu_plan)
    plan["best"]["parallel"]["recompute"] = "input_qkv_out_offloaded"
    cfg, _ = _maxtext(render_files(plan, "kubernetes"))
    assert cfg["remat_policy"] == "custom"
    for key in ("decoder_layer_input", "query_proj", "key_proj", "value_proj", "out_proj"):
        assert cfg[key] == "offload"
    plan["best"]["parallel"]["recompute"] = "save_qkv_proj"  # a named policy passes through
    cfg, _ = _maxtext(render_files(plan, "kubernetes"))
    assert cfg["remat_policy"] == "save_qkv_proj" and "decoder_layer_input" not in cfg
