"""The plan's parallel layout and model as each training framework's own arguments, for the
releases named in `FRAMEWORKS` (each checked against that release's own code in the tests):

- Megatron-LM (`fw_megatron`): tag core_v0.13.0, `pretrain_gpt.py`, one process per GPU under
  torchrun; every model the plan can describe except ALiBi ones.
- torchtitan (`fw_torchtitan`): v0.1.0, a TOML job file; its registered Llama 3 flavors only.
- NeMo 2.0 (`fw_nemo`): nemo_toolkit 2.3.0 (NeMo 25.04) recipes of the plan's model shape; LoRA fine-tuning.

On Intel Gaudi, Megatron-LM is Intel's fork (`fw_megatron_gaudi`); torchtitan and NeMo are
refused there. A framework that cannot express the plan (a model family, a layout, a
precision) refuses with the reason and the framework that can. `--framework auto` chooses NeMo for LoRA (the one
with adapters) and Megatron-LM otherwise (it builds any shape the plan describes).
"""

from __future__ import annotations

from collections.abc import Callable

from rightsize.errors import BadInput
from rightsize.export import fw_offload
from rightsize.export.fw_common import FRAMEWORKS, Launch, save_interval_steps, tokens_per_step
from rightsize.export.fw_megatron import megatron, pipeline_layout
from rightsize.export.fw_megatron_gaudi import megatron_gaudi
from rightsize.export.fw_nemo import nemo
from rightsize.export.fw_torchtitan import torchtitan
from rightsize.export.plan_view import TrainingView
from rightsize.perf.remat import LAYER_OFFLOAD, MEGATRON_MODULES

__all__ = [
    "FRAMEWORKS",
    "Launch",
    "launch_for",
    "megatron",
    "nemo",
    "pipeline_layout",
    "save_interval_steps",
    "tokens_per_step",
    "torchtitan",
]

_WRITERS: dict[str, Callable[[TrainingView], Launch]] = {
    "megatron": megatron,
    "torchtitan": torchtitan,
    "nemo": nemo,
}


# The remat policies each PyTorch framework can express (MaxText's run on Cloud TPU only).
FRAMEWORK_RECOMPUTE = {
    "megatron": ("none", "selective", "full", *MEGATRON_MODULES),  # module recompute (perf.remat)
    "nemo": ("none", "selective", "full", *MEGATRON_MODULES, *LAYER_OFFLOAD),
    "torchtitan": ("none", "selective", "full", "selective_op"),
}


def _check(v: TrainingView, framework: str) -> None:
    allowed = FRAMEWORK_RECOMPUTE[framework]
    if framework == "megatron" and fw_offload.is_layer_offload(v):
        raise fw_offload.megatron_refusal(v)
    if v.recompute not in allowed:
        raise BadInput(
            f"{FRAMEWORKS[framework]} has no remat policy {v.recompute!r}.",
            (
                "The plan offloads layer activations to host memory (Megatron-Core cpu_offloading, set by NeMo)"
                if fw_offload.is_layer_offload(v)
                else "The plan's recompute is a MaxText (JAX) policy"
            )
            + f"; {FRAMEWORKS[framework]} offers {', '.join(allowed)}.",
            "Plan with parallel.recompute set to one of those, or train on Cloud TPU with MaxText.",
        )
    if v.moe_dispatch_dtype == "fp8" and v.model.experts > 1:
        raise BadInput(
            f"The plan times MoE tokens dispatched in fp8 (training.moe_dispatch_dtype: fp8), which "
            f"{FRAMEWORKS[framework]} as pinned cannot do.",
            "Megatron-Core dispatches in 16 bit until its quantised dispatch (2026-08), after the pinned "
            "Megatron-LM core_v0.13.0 and NeMo 2.3.0; torchtitan 0.1.0 has no fp8 dispatch either. The job "
            "would move twice the planned bytes per token and run slower than planned.",
            "Plan with training.moe_dispatch_dtype: bf16 to export, or run DeepSeek-style fp8 dispatch "
            "with a stack of your own.",
        )
    if v.method in ("lora", "qlora") and framework != "nemo":
        raise BadInput(
            f"{FRAMEWORKS[framework]} has no {v.method.upper()} fine-tuning.",
            "The plan fine-tunes adapters; Megatron-LM and torchtitan train full weights only.",
            "Export with --framework nemo (NeMo 2.0 has LoRA through `llm.finetune`).",
        )
    if v.method == "qlora":
        raise BadInput(
            "NeMo 2.0 has no QLoRA (4-bit base weights) in its recipes.",
            "The plan keeps the base weights in NF4.",
            "Plan with training.method: lora, or run QLoRA with a PEFT/bitsandbytes script of your own.",
        )


def launch_for(v: TrainingView, framework: str) -> Launch:
    if framework == "auto":  # NeMo for adapter fine-tuning (the one with LoRA), else Megatron-LM
        framework = "nemo" if v.method in ("lora", "qlora") else "megatron"
        if fw_offload.is_layer_offload(v):  # the pinned Megatron-LM cannot set cpu_offloading
            framework = "nemo"
    if framework not in FRAMEWORKS:
        raise BadInput(
            f"Unknown framework {framework!r}.",
            f"Export writes arguments for {', '.join(FRAMEWORKS)}.",
            "Use --framework megatron, torchtitan or nemo.",
        )
    _check(v, framework)
    if v.hw.vendor == "intel":  # Gaudi: Intel's Megatron-LM fork only
        if framework != "megatron":
            raise BadInput(
                f"{FRAMEWORKS[framework]} is not exported for {v.hw.accelerator} (Intel Gaudi).",
                "Gaudi training is written for Intel's Megatron-LM fork (HPU builds of torchtitan and NeMo "
                "have no release pinned here).",
                "Plan full-weight training (LoRA is exported through NeMo), or plan for NVIDIA or AMD GPUs."
                if v.method in ("lora", "qlora")
                else "Export with --framework megatron (or auto).",
            )
        return megatron_gaudi(v)
    return _WRITERS[framework](v)
