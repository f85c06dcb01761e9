"""The plan as a torchtitan job file (torchtitan v0.1.0: `torchtitan.train --job.config_file`;
keys of its torchtitan/config_manager.py JobConfig, checked against that file in the tests).

torchtitan v0.1.0 trains the Llama 3 family only, in its registered flavors (8B, 70B, 405B of
torchtitan/models/llama3/__init__.py), with Llama 3's tiktoken tokenizer and a registered
dataset: a plan of another shape, Llama 3.1's rotary scaling, a mixture of experts (no expert parallelism in v0.1.0),
or fp16 (its FSDP mixed precision is bfloat16 or float32) is
refused with the reason, never written as keys torchtitan would drop. Virtual stages that
v0.1.0 cannot split evenly become its default of 2 per rank, said in the file.

Data parallelism is FSDP2 (`data_parallel_shard_degree`), ZeRO-3 style; ZeRO-1/2 map to FSDP2
without resharding after forward, ZeRO-0 to plain replication (DDP). `$TOKENIZER_MODEL` is the
path of Llama 3's `original/tokenizer.model`; `$DATA_PATH` a local copy of allenai/c4 (the
`c4` dataset); both go on the command line, the checkpoints under `$CKPT_DIR`.
"""

from __future__ import annotations

from rightsize.export.fw_common import (
    DATA,
    FRAMEWORKS,
    TOKENIZER,
    Launch,
    container_note,
    refuse,
    save_interval_steps,
)
from rightsize.export.fw_recipes import recipe_for
from rightsize.export.header import comment_block
from rightsize.export.names import ShellExpr, toml_string
from rightsize.export.plan_view import TrainingView

# torchtitan v0.1.0's llama3 flavors: (layers, hidden, heads, kv_heads, ffn_hidden, rope_theta)
FLAVORS = {
    "8B": (32, 4096, 32, 8, 14336, 500000.0),
    "70B": (80, 8192, 64, 8, 28672, 500000.0),
    "405B": (126, 16384, 128, 8, 53248, 500000.0),
}
_FIX = "Export with --framework megatron (or nemo), which build the model from the plan's shape."

# The plan's asynchronous save (perf.checkpoint): PyTorch DCP async_save from a separate process
# staging into pinned host memory (torchtitan 0.1.0 CheckpointManager), the copy the plan times
# over the host link.
ASYNC_MODE = "async_with_pinned_mem"


def flavor(v: TrainingView) -> str:
    m = v.model
    shape = (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.rope_theta)
    llama = m.mlp == "swiglu" and m.norm == "rmsnorm" and m.positions == "rope" and not m.tied_embeddings
    found = next((name for name, dims in FLAVORS.items() if dims == shape), None)
    if m.experts or m.kv_lora_rank:
        raise refuse("torchtitan", "a mixture-of-experts or latent-attention model",
                     "torchtitan v0.1.0's llama3 model is dense, with no expert parallelism.", _FIX)  # fmt: skip
    if m.rope_scaling_factor:
        raise refuse("torchtitan", "Llama 3.1's rotary scaling",
                     "torchtitan v0.1.0's llama3 model computes plain rotary frequencies (no rope_scaling).",
                     _FIX)  # fmt: skip
    if found is None or not llama or m.head_dim * m.heads != m.hidden:
        raise refuse(
            "torchtitan",
            f"the model {m.name} has no torchtitan flavor",
            "torchtitan v0.1.0 loads only its registered Llama 3 flavors (8B, 70B, 405B: layers, width, "
            "heads, MLP and rotary base); another shape needs a flavor registered in its code.",
            _FIX,
        )
    return found


def _pipeline(v: TrainingView) -> tuple[str, int | None, int]:
    """(schedule, layers per stage or None, virtual stages per rank): v0.1.0 counts the
    embedding and the output as one layer each; with layers per stage it needs an even split,
    without it Interleaved1F1B holds 2 stages per rank (split as evenly as it goes)."""
    if v.vpp <= 1:
        return "1F1B", None, 1
    stages, effective = v.pp * v.vpp, v.model.layers + 2
    if effective % stages == 0:
        return "Interleaved1F1B", effective // stages, v.vpp
    return "Interleaved1F1B", None, 2


def _batches(v: TrainingView) -> int:
    """The local batch: all of a step's micro-batches in one pipelined batch when pp > 1,
    else one micro-batch (torchtitan accumulates gradients to the global batch)."""
    micro = max(1, v.global_batch // (v.dp * v.micro_batch))
    if v.pp == 1:
        return v.micro_batch
    if micro < v.pp * _pipeline(v)[2]:
        raise refuse("torchtitan", f"{micro} micro-batches for {v.pp * _pipeline(v)[2]} pipeline stages",
                     "torchtitan v0.1.0 needs at least as many micro-batches as stages.",
                     "Plan with a larger global batch, or export with --framework megatron.")  # fmt: skip
    return micro * v.micro_batch


def _toml(v: TrainingView, name: str) -> str:
    replicate, shard = (v.dp, 1) if v.zero_stage == 0 else (1, v.dp)
    schedule, per_stage, _ = _pipeline(v)
    r = recipe_for(v)
    text = f"""[job]
description = {toml_string(v.header.name)}

[model]
name = "llama3"
flavor = "{name}"
{'converters = ["float8"]' if v.precision == "fp8" else ""}
[optimizer]
name = "AdamW"
lr = {r.lr:g}
eps = {r.adam_eps:g}
weight_decay = 0.1

[lr_scheduler]
warmup_steps = {r.warmup_steps}
decay_type = "cosine"
lr_min = {r.min_lr / r.lr:g}

[training]
dataset = "c4"
local_batch_size = {_batches(v)}
global_batch_size = {v.global_batch}
seq_len = {v.seq_len}
max_norm = 1.0
steps = {v.steps}
mixed_precision_param = "bfloat16"

[parallelism]
data_parallel_replicate_degree = {replicate}
data_parallel_shard_degree = {shard}
fsdp_reshard_after_forward = "{"default" if v.zero_stage == 3 else "never"}"
tensor_parallel_degree = {v.tp}
enable_async_tensor_parallel = false
pipeline_parallel_degree = {v.pp}
pipeline_parallel_schedule = "{schedule}"
pipeline_parallel_microbatch_size = {v.micro_batch}
context_parallel_degree = {v.cp}
"""
    text += f"pipeline_parallel_layers_per_stage = {per_stage}\n" if per_stage else ""
    text += f"""
[activation_checkpoint]
mode = "{"selective" if v.recompute == "selective_op" else v.recompute}"
selective_ac_option = "op"

[checkpoint]
enable_checkpoint = true
folder = "checkpoint"
interval = {save_interval_steps(v)}
async_mode = "{ASYNC_MODE if v.checkpoint_async else "disabled"}"
"""
    if v.precision == "fp8":
        text += '\n[float8]\nenable_fsdp_float8_all_gather = true\nrecipe_name = "tensorwise"\n'
    return text


def torchtitan(v: TrainingView) -> Launch:
    if v.precision not in ("bf16", "fp8"):
        raise refuse("torchtitan", f"{v.precision} training",
                     "torchtitan v0.1.0 keeps parameters in bfloat16 or float32 (no fp16 loss scaling).",
                     "Plan with training.precision: bf16, or export with --framework megatron.")  # fmt: skip
    name = flavor(v)
    r = recipe_for(v)
    notes = [
        container_note(v, "torchtitan"),
        f"Model: torchtitan's llama3 flavor {name} (the plan's shape). Learning rate: {r.source}.",
        "TOKENIZER_MODEL: Llama 3's original/tokenizer.model; DATA_PATH: a local copy of allenai/c4.",
    ]
    if v.vpp > 1 and _pipeline(v)[2] != v.vpp:
        notes.append(
            f"Pipeline: the plan's {v.vpp} virtual stages per rank need layers + 2 ({v.model.layers + 2}) "
            f"divisible by pp x vpp in torchtitan v0.1.0; written as its default 2 per rank (a larger "
            "bubble than planned; --framework megatron runs the plan's layout)."
        )
    head = comment_block(v.header, f"torchtitan job config ({FRAMEWORKS['torchtitan']})", notes)
    args = (
        ("--job.config_file", "torchtitan.toml"),
        ("--job.dump_folder", ShellExpr("$CKPT_DIR")),
        ("--model.tokenizer_path", TOKENIZER),
        ("--training.dataset_path", DATA),
    )
    files = {"torchtitan.toml": head + _toml(v, name)}
    return Launch(
        "torchtitan", FRAMEWORKS["torchtitan"], "-m torchtitan.train", args, files, True, tuple(notes)
    )
