"""The plan as a NeMo 2.0 job script (nemo_toolkit 2.3.0 in nvcr.io/nvidia/nemo:25.04,
`nemo.collections.llm` recipes run with NeMo-Run): the recipe of the plan's model, its parallel
layout on `trainer.strategy`, the data as a real data module, and a stop that saves. The recipe
names, their model shapes, the strategy fields and the data modules' keywords are checked
against the 2.3.0 wheel's source in tests/test_nemo_release.py (NeMo's llm collection cannot be
imported in this project's environment: it pins numpy<2; see there).

- The recipe is chosen by the model's shape, never by a near name: a model with no NeMo
  recipe of its shape is refused (a GPT-3 plan is GPT-3's `gpt3_175b`, never a Llama).
- Pre-training reads `$DATA_PATH` (a Megatron indexed-dataset prefix) with `$TOKENIZER_MODEL`
  (the model's Hugging Face tokenizer) through `llm.PreTrainingDataModule`; LoRA reads a
  fine-tuning folder (`llm.FineTuningDataModule`, training.jsonl/validation.jsonl) at
  `$DATA_PATH`. The script stops with the variable's name when one is unset.
- A layout NeMo 25.04's Megatron-Core cannot run (layers not divisible by pp x vpp, an
  interleaved schedule whose micro-batches are not a multiple of pp) is refused.
- LoRA recipes keep their own optimizer: NeMo's fine-tuning trainer builds its strategy with
  no DDP config (the field would raise) and the LoRA recipe turns the distributed optimizer
  off itself. Pre-training sets it on both the DDP config and the optimizer, which must agree.
- `PreemptionCallback` saves a checkpoint on SIGTERM (Slurm's time warning, a preemption);
  `trainer.max_time` from `$EXIT_MIN` (minutes, the Slurm segment's budget) ends a segment
  with a checkpoint before the scheduler's limit.
"""

from __future__ import annotations

from rightsize.export import fw_offload
from rightsize.export.fw_common import FRAMEWORKS, Launch, container_note, refuse, save_interval_steps
from rightsize.export.header import comment_block
from rightsize.export.names import python_literal
from rightsize.export.plan_view import TrainingView
from rightsize.perf.remat import MEGATRON_MODULES

# NeMo 2.3.0 recipes (nemo/collections/llm/recipes/<name>.py) by model shape (each one's model
# config read from the wheel in the tests; DeepSeek-V3's has a LoRA finetune_recipe in 2.3.0):
# (layers, hidden, heads, kv_heads, ffn_hidden, experts, rope scaling) -> (recipe, has LoRA)
RECIPES = {
    (96, 12288, 96, 96, 49152, 0, None): ("gpt3_175b", False),
    (32, 4096, 32, 8, 14336, 0, None): ("llama3_8b", True),
    (80, 8192, 64, 8, 28672, 0, None): ("llama3_70b", True),
    (32, 4096, 32, 8, 14336, 0, 8.0): ("llama31_8b", True),
    (80, 8192, 64, 8, 28672, 0, 8.0): ("llama31_70b", True),
    (126, 16384, 128, 8, 53248, 0, 8.0): ("llama31_405b", True),
    (32, 4096, 32, 8, 14336, 8, None): ("mixtral_8x7b", True),
    (61, 7168, 128, 128, 18432, 256, None): ("deepseek_v3", True),
}


def recipe_name(v: TrainingView) -> str:
    m = v.model
    found = RECIPES.get(
        (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.experts, m.rope_scaling_factor)
    )
    if found is None:
        raise refuse(
            "nemo",
            f"the model {m.name} has no NeMo recipe of its shape",
            "NeMo 2.3.0 builds models from its recipes (GPT-3 175B, Llama 3 8B/70B, Llama 3.1 8B/70B/405B, "
            "Mixtral 8x7B, DeepSeek-V3); another shape needs a model config of its own.",
            "Export with --framework megatron, which builds the model from the plan's shape.",
        )
    name, has_lora = found
    if v.method == "lora" and not has_lora:
        raise refuse("nemo", f"LoRA on {name}", f"NeMo 2.3.0's {name} recipe has no finetune_recipe.",
                     "Plan full training, or LoRA on a Llama 3 or Mixtral model.")  # fmt: skip
    return name


_PRELUDE = """import os
import sys

import nemo_run as run
from nemo.collections import llm
from nemo.collections.common.tokenizers.huggingface.auto_tokenizer import AutoTokenizer
from nemo.lightning.pytorch.callbacks import PreemptionCallback


def need(var: str, what: str) -> str:
    value = os.environ.get(var)
    if not value:
        sys.exit(f"set {var} to {what}")
    return value


DATA_PATH = need("DATA_PATH", {data_what})
"""
_TOKENIZER = (
    'TOKENIZER_MODEL = need("TOKENIZER_MODEL", "the model\'s Hugging Face tokenizer (hub id or folder)")\n'
)


def _data(v: TrainingView, lora: bool) -> str:
    common = f"seq_length={v.seq_len}, micro_batch_size={v.micro_batch}, global_batch_size={v.global_batch}"
    if lora:
        return f"recipe.data = run.Config(llm.FineTuningDataModule, dataset_root=DATA_PATH, {common})\n"
    return (
        "recipe.data = run.Config(\n    llm.PreTrainingDataModule, paths=[DATA_PATH], "
        f"{common},\n    tokenizer=run.Config(AutoTokenizer, pretrained_model_name=TOKENIZER_MODEL),\n)\n"
    )


def _strategy(v: TrainingView, lora: bool) -> str:
    s = f"""s = recipe.trainer.strategy
s.tensor_model_parallel_size = {v.tp}
s.pipeline_model_parallel_size = {v.pp}
s.virtual_pipeline_model_parallel_size = {v.vpp if v.vpp > 1 else None}
s.context_parallel_size = {v.cp}
s.expert_model_parallel_size = {v.ep}
s.sequence_parallel = {bool(v.sequence_parallel and v.tp > 1)}
s.ckpt_async_save = {v.checkpoint_async}
"""
    if lora:
        return s
    # the DDP buffers and the optimizer must agree (the recipe's Adam has it on by default)
    dist = v.zero_stage >= 1
    return (
        s
        + f"s.ddp.use_distributed_optimizer = {dist}\nrecipe.optim.config.use_distributed_optimizer = {dist}\n"
    )


def _check_layout(v: TrainingView) -> None:
    """NeMo 25.04's Megatron-Core (before core_v0.13's free layout) splits layers evenly over
    pp x vpp, and its interleaved schedule runs micro-batches in groups of pp."""
    if v.model.layers % (v.pp * v.vpp):
        raise refuse("nemo", f"{v.model.layers} layers over {v.pp * v.vpp} pipeline stages",
                     "NeMo 25.04 splits layers evenly over pp x vpp; an uneven split needs Megatron-LM "
                     "core_v0.13's --pipeline-model-parallel-layout.",
                     "Export with --framework megatron.")  # fmt: skip
    micro = v.global_batch // (v.micro_batch * v.dp)
    if v.vpp > 1 and (v.pp < 2 or micro % v.pp):
        raise refuse("nemo", f"interleaved pipeline with {micro} micro-batches and pp {v.pp}",
                     "The interleaved schedule runs micro-batches in groups of pp: their count must be "
                     "a multiple of pp.",
                     "Export with --framework megatron (it sets the group size), or plan with parallel.vpp: 1.")  # fmt: skip


def nemo(v: TrainingView) -> Launch:
    recipe = recipe_name(v)
    _check_layout(v)
    lora = v.method == "lora"
    fn, extra = ("finetune_recipe", ', peft_scheme="lora"') if lora else ("pretrain_recipe", "")
    ckpt_steps = min(save_interval_steps(v), v.steps)  # Lightning wants intervals within the run
    modules = MEGATRON_MODULES.get(v.recompute, ())  # module recompute (perf.remat)
    ac = (
        '"selective"'
        if modules
        else {"none": "None", "selective": '"selective"', "full": '"full"'}.get(v.recompute, "None")
    )
    data_what = "the fine-tuning folder (training.jsonl, validation.jsonl)" if lora else "the dataset prefix"
    notes = [container_note(v, "nemo"), f"Recipe: llm.{recipe}.{fn} (the plan's model shape)."]
    py = comment_block(v.header, f"NeMo job script ({FRAMEWORKS['nemo']})", notes)
    py += '"""NeMo 2.0 job for the plan named in PLAN_NAME; run by srun (one task per GPU) or torchrun."""\n'
    py += _PRELUDE.replace("{data_what}", python_literal(data_what)) + ("" if lora else _TOKENIZER)
    py += (
        f"""PLAN_NAME = {python_literal(v.header.name)}

recipe = llm.{recipe}.{fn}(
    name=PLAN_NAME, dir=os.environ.get("CKPT_DIR", "./checkpoints"),
    num_nodes={v.nodes}, num_gpus_per_node={min(v.gpus, v.hw.gpus_per_node)}{extra},
)
"""
        + _strategy(v, lora)
        + f"""recipe.model.config.seq_length = {v.seq_len}
recipe.model.config.recompute_granularity = {ac}
"""
        + (
            "recipe.model.config.recompute_modules = ["
            + ", ".join(python_literal(m) for m in modules)
            + "]\n"
            if modules
            else ""
        )
        + fw_offload.nemo_lines(v)  # Megatron-Core layer offload (perf.remat)
        + _data(v, lora)
        + f"""recipe.trainer.max_steps = {v.steps}
recipe.trainer.val_check_interval = {ckpt_steps}
recipe.log.ckpt.every_n_train_steps = {ckpt_steps}
recipe.trainer.callbacks = [*(recipe.trainer.callbacks or []), run.Config(PreemptionCallback)]
if os.environ.get("EXIT_MIN", "").isdigit():  # the segment's budget: stop (and save) before the limit
    recipe.trainer.max_time = {{"minutes": int(os.environ["EXIT_MIN"])}}
"""
    )
    if v.precision == "fp8":
        py += "recipe.trainer.plugins = llm.recipes.precision.mixed_precision.bf16_with_fp8_mixed()\n"
    if lora and v.lora_rank:
        py += f"recipe.peft.dim = {v.lora_rank}\n"
        py += f"recipe.peft.alpha = {v.lora_alpha:g}\n" if v.lora_alpha else ""
    py += '\nif __name__ == "__main__":\n    run.run(recipe, direct=True)\n'
    return Launch("nemo", FRAMEWORKS["nemo"], "nemo_train.py", (), {"nemo_train.py": py}, False, tuple(notes))
