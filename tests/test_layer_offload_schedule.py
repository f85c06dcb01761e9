"""Megatron-Core layer offload's copy/reload timing (perf.offload_time) against an event-by-event
replay of Transformer Engine's default offload synchroniser, and the whole-layer rounding of
the offloaded share in memory.

Ground truth not written here: the maps of `DefaultOffloadSynchronizer.
_init_offload_synchronization_dicts` (transformer_engine/pytorch/cpu_offload.py, TE >= 2.10,
NVIDIA/TransformerEngine at d0067d0): layer i < k offloads when layer i+1's forward starts,
layer num_layers - k + i's forward waits for that copy (`finish_offload_map`), layer i's reload
starts when layer num_layers - 1 - k + i's backward starts (`start_reload_map`), and one
offload stream runs every copy in turn."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from perf_helpers import catalog_hw

from rightsize.perf import remat
from rightsize.perf.memory import activation_bytes_per_token_layer, offloaded_bytes_per_token_layer
from rightsize.perf.offload_time import layer_offload_stall_s
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.presets import get_preset


def _te_maps(layers: int, k: int) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """TE's finish_offload_map and start_reload_map for k offloaded layers of `layers`."""
    finish: dict[int, list[int]] = defaultdict(list)
    reload: dict[int, list[int]] = defaultdict(list)
    for i in range(k):
        finish[layers - k + i].append(i)
        reload[layers - 1 - k + i].append(i)
    return finish, reload


def _replay_forward(layers: int, k: int, copy_s: float, layer_s: float) -> float:
    """Forward pass time minus its compute, replaying the synchroniser layer by layer."""
    finish, _ = _te_maps(layers, k)
    now, stream_free, done = 0.0, 0.0, {}
    for layer in range(layers):
        if 0 < layer <= k:  # fwd_step(layer) starts the previous layer's offload
            start = max(stream_free, now)
            stream_free = done[layer - 1] = start + copy_s
        for i in finish[layer]:  # release_activation_forward_gpu_memory waits for the copy
            now = max(now, done[i])
        now += layer_s
    return now - layers * layer_s


def _replay_backward(layers: int, k: int, copy_s: float, layer_s: float) -> float:
    """Backward pass time minus its compute (layers in reverse; reloads on the one stream)."""
    _, reload = _te_maps(layers, k)
    now, stream_free, done = 0.0, 0.0, {}
    for layer in reversed(range(layers)):
        for i in reload[layer]:  # bwd_step(layer) starts these reloads
            start = max(stream_free, now)
            stream_free = done[i] = start + copy_s
        if layer < k:  # pop_tensor waits for the layer's own reload
            now = max(now, done[layer])
        now += layer_s
    return now - layers * layer_s


@pytest.mark.parametrize("layers", [4, 32, 80, 126])
@pytest.mark.parametrize("ratio", [0.3, 1.0, 1.45, 2.5, 6.0])
def test_stall_matches_the_synchroniser_replay(layers: int, ratio: float) -> None:
    t = 0.0115
    for k in range(1, layers):
        want_f = _replay_forward(layers, k, ratio * t, t)
        want_b = _replay_backward(layers, k, ratio * 2 * t, 2 * t)
        got_f = float(
            layer_offload_stall_s(np.array([k]), float(layers), np.array([ratio * t]), np.array([t]))[0]
        )
        got_b = float(
            layer_offload_stall_s(np.array([k]), float(layers), np.array([ratio * 2 * t]), np.array([2 * t]))[
                0
            ]
        )
        assert got_f == pytest.approx(want_f, abs=1e-12), (k, layers, ratio)
        assert got_b == pytest.approx(want_b, abs=1e-12), (k, layers, ratio)


def _w(arch: str = "llama-3-70b") -> TrainWorkload:
    return TrainWorkload(arch=get_preset(arch), seq_len=8192, global_batch=256, precision="fp8")


def _cfg(policies: list[str]) -> ParallelConfigs:
    n = len(policies)
    return ParallelConfigs(
        tp=1,
        pp=1,
        dp=64,
        cp=1,
        ep=1,
        vpp=1,
        micro_batch=2,
        recompute=np.array([remat.CODES[p] for p in policies]),
        sequence_parallel=False,
        zero_stage=np.full(n, 3),
    )


def test_recipe_copies_hide_over_nvlink_c2c_and_show_over_a_slow_link() -> None:
    """Megatron-Bridge's GB200 70B FP8 recipe offloads 40 of 80 layers: at the catalog's
    NVLink-C2C rate each 3.8 GB stack copies in ~1.45 layers' forward, and 40 such copies fit
    in the 78 layers' forward the schedule gives them, so no layer waits; over a link 4x
    slower the copies set the forward and offloading more layers costs more."""
    w = _w()
    hw = catalog_hw("gb200")
    names = ["none", "layer_offload_2of8", "layer_offload_4of8", "layer_offload_6of8"]
    fast = train_step(w, _cfg(names), hw).step_time
    np.testing.assert_allclose(fast[1:], fast[0], rtol=1e-9)  # every copy hidden
    slow = train_step(
        w, _cfg(names), hw.with_overrides(host_link_bytes_per_s=hw.host_link_bytes_per_s / 4)
    ).step_time
    assert slow[0] == pytest.approx(fast[0], rel=1e-9)
    assert slow[1] < slow[2] < slow[3]
    assert slow[3] > 1.2 * fast[0]


def test_offloaded_share_rounds_up_to_whole_layers() -> None:
    """On 126 layers, 2/8 offloads ceil(31.5) = 32 layers: the device keeps 94 stacks, the host
    takes 32, as the NeMo export's cpu_offloading_num_layers says."""
    w = _w("llama-3.1-405b")
    cfg = _cfg(["none", "layer_offload_2of8"])
    kept = activation_bytes_per_token_layer(w, cfg)
    off = offloaded_bytes_per_token_layer(w, cfg)
    assert remat.layer_offload_count(remat.CODES["layer_offload_2of8"], 126) == 32
    np.testing.assert_allclose(off[1] / kept[0], 32 / 126, rtol=1e-12)
    np.testing.assert_allclose(kept[1] / kept[0], 94 / 126, rtol=1e-12)


def test_rounding_to_every_layer_cannot_fit() -> None:
    """A policy that rounds up to all of a short model's layers is one Megatron-Core refuses
    (cpu_offloading_num_layers < num_layers): infeasible, not planned."""
    arch = get_preset("llama-3-8b")
    w = TrainWorkload(
        arch=arch.model_copy(update={"layers": 4}), seq_len=4096, global_batch=64, precision="bf16"
    )
    mem = train_step(w, _cfg(["layer_offload_7of8", "layer_offload_4of8"]), catalog_hw("gb200")).memory
    assert np.isinf(mem.activations[0]) and not bool(mem.fits[0])
    assert np.isfinite(mem.activations[1])


def test_a_plan_that_offloads_says_so_and_how_much_goes_to_host() -> None:
    """A spec naming layer offload plans it on GB200 and the plan's memory table shows what
    leaves the device (the NeMo export and the Megatron-LM refusal: test_layer_offload)."""
    from pathlib import Path

    from rightsize.report.plan_doc import training_document
    from rightsize.sizing.pipeline import run_pipeline
    from rightsize.spec.load import parse_spec

    spec = parse_spec(
        {
            "name": "gb200-70b-offload",
            "model": "llama3-70b",
            "training": {"seq_len": 8192, "global_batch": 256, "train_tokens": "1T", "precision": "fp8"},
            "targets": {"accelerators": ["gb200"], "gpus": 64},
            "parallel": {
                "tp": 1,
                "pp": 1,
                "cp": 1,
                "micro_batch": 2,
                "zero_stage": 3,
                "recompute": "layer_offload_5of8",
            },
        },
        Path("."),
    )
    plan = run_pipeline(spec)
    assert plan.best.parallel["recompute"] == "layer_offload_5of8"
    host = plan.best.memory["host_offload_bytes"]
    # 50 of 80 layers' stacks of one micro-batch (2 x 8192 tokens) leave the device
    w, cfg = _w(), _cfg(["none"])
    stack = activation_bytes_per_token_layer(w, cfg)[0] * 2 * 8192
    assert host == pytest.approx(50 * stack, rel=1e-9)
    memory = next(s for s in training_document(plan).sections if s.id == "memory")
    rows = {r[0]: r[1] for r in memory.tables[0].rows}
    assert "in host memory (offloaded)" in rows
