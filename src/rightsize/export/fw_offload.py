"""Megatron-Core's layer activation offload (perf.remat `layer_offload_<n>of8`) in each
framework's terms.

Megatron-Core offloads the saved activations of the first k layers to host memory through
`TransformerConfig.cpu_offloading` and `cpu_offloading_num_layers` (with
`cpu_offloading_activations` on and `cpu_offloading_weights` off, as Megatron-Bridge's
GB200/GB300 Llama 3 70B recipes set them). Megatron-LM core_v0.13.0's `pretrain_gpt.py`
exposes no command-line flag for it (its megatron/training/arguments.py has no
`--cpu-offloading*`; checked in the tests against that file's flags), so a Megatron-LM launch
is refused; NeMo 2.0 sets the TransformerConfig fields on its recipe.
"""

from __future__ import annotations

from rightsize.errors import BadInput
from rightsize.export.fw_common import refuse
from rightsize.export.plan_view import TrainingView
from rightsize.perf.remat import CODES, LAYER_OFFLOAD, layer_offload_count


def is_layer_offload(v: TrainingView) -> bool:
    return v.recompute in LAYER_OFFLOAD


def offload_layers(v: TrainingView) -> int:
    """Layers Megatron-Core offloads (`cpu_offloading_num_layers`) for the plan's policy."""
    if v.pp != 1:
        raise BadInput(
            f"The plan offloads layer activations ({v.recompute}) with pipeline parallelism {v.pp}.",
            "Megatron-Core refuses cpu_offloading with pipeline parallelism (transformer_config.py).",
            "Plan with parallel.pp: 1, or with parallel.recompute: full.",
        )
    try:
        return layer_offload_count(CODES[v.recompute], v.model.layers)
    except ValueError as exc:
        raise BadInput(
            f"The plan's {v.recompute} cannot be written for a {v.model.layers}-layer model.",
            str(exc),
            "Plan with a smaller parallel.recompute layer_offload_<n>of8, or with parallel.recompute: full.",
        ) from exc


def megatron_refusal(v: TrainingView) -> BadInput:
    """Why Megatron-LM core_v0.13.0 cannot launch a layer-offload plan."""
    return refuse(
        "megatron",
        f"activation offload of {offload_layers(v)} of {v.model.layers} layers to host memory ({v.recompute})",
        "Megatron-LM core_v0.13.0's pretrain_gpt.py has no --cpu-offloading flag (TransformerConfig."
        "cpu_offloading exists in Megatron-Core, but megatron/training/arguments.py does not set it).",
        "Export with --framework nemo (it sets recipe.model.config.cpu_offloading), or plan with "
        "parallel.recompute: full.",
    )


def nemo_lines(v: TrainingView) -> str:
    """The NeMo 2.0 recipe lines that offload the plan's layers (empty for other policies)."""
    if not is_layer_offload(v):
        return ""
    k = offload_layers(v)
    return (
        "recipe.model.config.cpu_offloading = True\n"
        f"recipe.model.config.cpu_offloading_num_layers = {k}\n"
        "recipe.model.config.cpu_offloading_activations = True\n"
        "recipe.model.config.cpu_offloading_weights = False\n"
    )
