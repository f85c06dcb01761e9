"""Megatron-Core's partial layer activation offload (perf.remat `layer_offload_<n>of8`): device
and host bytes, link exposure, the search's choice on Grace-Blackwell parts, and its export.

Ground truth not written here: Megatron-Bridge's GB300 Llama 3 70B FP8 recipe (64 GPUs, TP1
PP1, FSDP, MBS 2, seq 8192) offloads 20 of 80 layers (`cpu_offloading_num_layers = 20`,
src/megatron/bridge/perf_recipes/llama/gb300/llama3.py at 067f987d) and ran: the planner must
find that layout feasible with offload, and the pinned Megatron-LM release's flags
(tests/data/megatron_core_v0.13.0_arguments.json) have no `--cpu-offloading`."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from export_plans import plan_dict
from perf_helpers import catalog_hw

from rightsize.errors import BadInput
from rightsize.export.frameworks import launch_for
from rightsize.export.plan_view import training_view
from rightsize.perf import remat
from rightsize.perf.memory import activation_bytes_per_token_layer, offloaded_bytes_per_token_layer
from rightsize.perf.step import train_step
from rightsize.perf.workload import ParallelConfigs, TrainWorkload
from rightsize.spec.presets import get_preset

MEGATRON = json.loads((Path(__file__).parent / "data" / "megatron_core_v0.13.0_arguments.json").read_text())[
    "flags"
]


def _w() -> TrainWorkload:
    return TrainWorkload(arch=get_preset("llama-3-70b"), seq_len=8192, global_batch=256, precision="fp8")


def _cfg(policies: list[str], pp: int = 1) -> ParallelConfigs:
    n = len(policies)
    return ParallelConfigs(
        tp=1,
        pp=pp,
        dp=64 // pp,
        cp=1,
        ep=1,
        vpp=1,
        micro_batch=2,
        recompute=np.array([remat.CODES[p] for p in policies]),
        sequence_parallel=False,
        zero_stage=np.full(n, 3),
    )


def test_offloaded_share_leaves_the_device_and_lands_on_the_host() -> None:
    """n/8 of the stack goes to host, the rest stays: kept + offloaded = the whole stack."""
    w = _w()
    names = ["none", "layer_offload_2of8", "layer_offload_5of8"]
    cfg = _cfg(names)
    kept = activation_bytes_per_token_layer(w, cfg)
    off = offloaded_bytes_per_token_layer(w, cfg)
    assert off[0] == 0.0
    np.testing.assert_allclose(kept[1:] + off[1:], kept[0], rtol=1e-12)
    np.testing.assert_allclose(off[1:] / kept[0], [2 / 8, 5 / 8], rtol=1e-12)
    mem = train_step(w, cfg, catalog_hw("gb300")).memory
    assert mem.activations[2] < mem.activations[1] < mem.activations[0]
    assert mem.host is not None and mem.host[0] == 0.0 and mem.host[2] > mem.host[1] > 0.0


def test_pipeline_parallel_layer_offload_cannot_fit() -> None:
    """Megatron-Core refuses cpu_offloading with pipeline parallelism."""
    w = _w()
    mem = train_step(w, _cfg(["layer_offload_2of8", "full"], pp=2), catalog_hw("gb300")).memory
    assert np.isinf(mem.activations[0]) and not bool(mem.fits[0])
    assert np.isfinite(mem.activations[1])
    # The same layer (tp, micro-batch, policy) without pipeline parallelism is finite: the
    # per-layer bytes do not depend on pp (the step caches them per layer shape).
    assert np.isfinite(activation_bytes_per_token_layer(w, _cfg(["layer_offload_2of8"], pp=2))[0])


def test_gb300_recipe_fits_with_offload_and_beats_full_recompute() -> None:
    """The published GB300 layout does not fit keeping every layer, fits offloading 20 of 80
    (2/8), and offloading over NVLink-C2C is hidden behind compute where recompute is not."""
    w = _w()
    hw = catalog_hw("gb300")
    st = train_step(w, _cfg(["none", "layer_offload_2of8", "full"]), hw)
    assert not bool(st.memory.fits[0]) and bool(st.memory.fits[1]) and bool(st.memory.fits[2])
    assert st.step_time[1] < 0.85 * st.step_time[2]
    # Over a link 100x slower the copies are exposed and offload costs time.
    slow = train_step(w, _cfg(["layer_offload_2of8"]), hw.with_overrides(host_link_bytes_per_s=2.25e9))
    assert slow.step_time[0] > 1.2 * st.step_time[1]


def test_every_policy_has_its_own_layer_cost() -> None:
    """The step evaluates each distinct layer shape once: policies with the same tp and
    micro-batch must not share a cost (policy codes past 16 once collided)."""
    w = _w()
    names = ["none", "full", "layer_offload_1of8", "layer_offload_7of8"]
    both = replace(_cfg(names), micro_batch=np.array([2.0, 2.0, 1.0, 1.0]))
    together = train_step(w, both, catalog_hw("gb300")).step_time
    alone = [train_step(w, both.take(np.array([i])), catalog_hw("gb300")).step_time[0] for i in range(4)]
    np.testing.assert_allclose(together, alone, rtol=1e-12)


def test_searched_only_on_coherent_host_links() -> None:
    assert set(remat.LAYER_OFFLOAD) <= set(
        remat.searched_policies("nvidia", host_link_bytes_per_s=225e9, offload=True)
    )
    assert not set(remat.LAYER_OFFLOAD) & set(
        remat.searched_policies("nvidia", host_link_bytes_per_s=64e9, offload=True)
    )
    # Not tried by default: on GB200 it exposes a compute model that reads too fast (remat docstring).
    assert not set(remat.LAYER_OFFLOAD) & set(remat.searched_policies("nvidia", host_link_bytes_per_s=225e9))
    assert catalog_hw("gb200").host_link_bytes_per_s >= remat.COHERENT_HOST_LINK_BYTES_PER_S
    assert catalog_hw("b200").host_link_bytes_per_s < remat.COHERENT_HOST_LINK_BYTES_PER_S


def test_offload_count_is_at_least_the_modelled_share_and_below_all_layers() -> None:
    code = remat.CODES["layer_offload_2of8"]
    assert remat.layer_offload_count(code, 80) == 20
    assert remat.layer_offload_count(code, 126) == 32  # ceil(31.5)
    assert remat.layer_offload_count(remat.CODES["full"], 80) == 0
    with pytest.raises(ValueError, match="at most"):
        remat.layer_offload_count(remat.CODES["layer_offload_7of8"], 4)


def _offload_plan(policy: str) -> dict:
    plan = plan_dict("llama3-70b-pretrain")
    plan["best"]["parallel"] |= {"recompute": policy, "pp": 1, "vpp": 1, "tp": 1}
    return plan


def test_nemo_writes_megatron_core_offload_fields() -> None:
    py = launch_for(training_view(_offload_plan("layer_offload_2of8")), "nemo").files["nemo_train.py"]
    ast.parse(py)
    assert "recipe.model.config.cpu_offloading = True" in py
    assert "recipe.model.config.cpu_offloading_num_layers = 20" in py
    assert "recipe.model.config.cpu_offloading_weights = False" in py
    assert "recipe.model.config.recompute_granularity = None" in py


def test_megatron_lm_refuses_with_the_reason() -> None:
    # the pinned release really has no such flag (else it should be written, not refused)
    assert not [f for f in MEGATRON if f.startswith("--cpu-offload")]
    with pytest.raises(BadInput, match="20 of 80 layers") as exc:
        launch_for(training_view(_offload_plan("layer_offload_2of8")), "megatron")
    assert "--cpu-offloading" in exc.value.message() and "--framework nemo" in exc.value.message()


def test_auto_framework_is_nemo_for_layer_offload() -> None:
    launch = launch_for(training_view(_offload_plan("layer_offload_2of8")), "auto")
    assert "nemo_train.py" in launch.files
    with pytest.raises(BadInput, match="layer activations to host memory"):
        launch_for(training_view(_offload_plan("layer_offload_2of8")), "torchtitan")
