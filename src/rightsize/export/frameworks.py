"""The plan's parallel layout as each training framework's own arguments.

- Megatron-LM (`pretrain_gpt.py`, argument names of megatron/training/arguments.py in
  Megatron-LM core_r0.13.0, 2025-07): one process per GPU under torchrun.
- torchtitan (v0.1.0, 2025-07; `torchtitan.train --job.config_file`): a TOML job file;
  data parallelism is FSDP2 (`data_parallel_shard_degree`), ZeRO-3 style; ZeRO-1/2 map to
  FSDP2 without resharding after forward, ZeRO-0 to plain replication (DDP).
- NeMo 2.0 (NeMo 25.04, `nemo.collections.llm` recipes with NeMo-Run): a Python script
  that builds the recipe and sets `trainer.strategy` (MegatronStrategy) fields; one task
  per GPU under srun (Lightning reads SLURM_PROCID and friends).

Uneven pipelines (layers not divisible by pp x vpp, e.g. DeepSeek-V3's 61) use Megatron's
`--pipeline-model-parallel-layout` (core_r0.13), one entry per virtual stage.

ZeRO in Megatron: stages 1 and 2 are `--use-distributed-optimizer` (optimizer states
sharded, gradients reduce-scattered); stage 3 is Megatron-FSDP
(`--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rightsize.errors import BadInput
from rightsize.export.header import comment_block
from rightsize.export.names import Arg, ShellExpr, python_literal, shell_args, toml_string
from rightsize.export.plan_view import TrainingView

FRAMEWORKS = {
    "megatron": "Megatron-LM core_r0.13.0 (pretrain_gpt.py)",
    "torchtitan": "torchtitan v0.1.0 (torchtitan.train, TOML job config)",
    "nemo": "NeMo 2.0 (NeMo 25.04, nemo.collections.llm recipes)",
}


@dataclass(frozen=True)
class Launch:
    """How the framework starts: the command each torchrun/srun task runs, and extra files.

    `arg_list` holds the arguments as (flag, value) pairs; `args` is the same as shell text
    (`names.shell_args`: each entry `--flag WORD`, the value quoted), ready to join with
    spaces or continued lines into a script; `names.argv(arg_list)` gives an argument vector.
    """

    framework: str
    version: str
    entry: str  # the module or script torchrun runs (or srun, for NeMo): code-made shell text
    arg_list: tuple[Arg, ...]
    files: dict[str, str]  # file name -> content written beside the job script
    torchrun: bool  # True: srun starts one torchrun per node; False: srun starts one task per GPU

    @property
    def args(self) -> list[str]:
        """The arguments as shell text, one quoted `--flag WORD` per entry."""
        return shell_args(self.arg_list)


def save_interval_steps(v: TrainingView) -> int:
    """Checkpoint every Young/Daly interval from the reliability model, in optimizer steps."""
    return max(1, round(v.checkpoint_interval_s / v.step_time_s))


def _check(v: TrainingView, framework: str) -> None:
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


def _megatron_model(v: TrainingView) -> list[Arg]:
    m = v.model
    a: list[Arg] = [
        ("--num-layers", m.layers),
        ("--hidden-size", m.hidden),
        ("--ffn-hidden-size", m.ffn_hidden),
        ("--num-attention-heads", m.heads),
        ("--seq-length", v.seq_len),
        ("--max-position-embeddings", max(v.seq_len, m.max_seq_len)),
        ("--position-embedding-type", "rope"),
        ("--normalization", "RMSNorm"),
        ("--swiglu", None),
        ("--untie-embeddings-and-output-weights", None),
        ("--disable-bias-linear", None),
        ("--vocab-size", m.vocab),
        ("--tokenizer-type", "NullTokenizer"),
    ]
    if m.kv_heads != m.heads:
        a += [("--group-query-attention", None), ("--num-query-groups", m.kv_heads)]
    if m.kv_lora_rank:  # multi-head latent attention (DeepSeek-V2/V3)
        a += [
            ("--multi-latent-attention", None),
            ("--kv-lora-rank", m.kv_lora_rank),
            ("--qk-head-dim", m.head_dim),
        ]
        a += [("--q-lora-rank", m.q_lora_rank)] if m.q_lora_rank else []
        a += [("--qk-pos-emb-head-dim", m.qk_rope_head_dim)] if m.qk_rope_head_dim else []
        a += [("--v-head-dim", m.v_head_dim)] if m.v_head_dim else []
    if m.experts:
        a += [("--num-experts", m.experts), ("--moe-router-topk", m.experts_per_token)]
        if m.expert_ffn_hidden:
            a.append(("--moe-ffn-hidden-size", m.expert_ffn_hidden))
            if m.shared_experts:
                a.append(("--moe-shared-expert-intermediate-size", m.shared_experts * m.expert_ffn_hidden))
        if m.dense_layers:
            a.append(("--moe-layer-freq", f"([0]*{m.dense_layers}+[1]*{m.layers - m.dense_layers})"))
        a += [("--moe-grouped-gemm", None), ("--moe-token-dispatcher-type", "alltoall")]
    return a


def _megatron_parallel(v: TrainingView) -> list[Arg]:
    m = v.model
    a: list[Arg] = [
        ("--tensor-model-parallel-size", v.tp),
        ("--pipeline-model-parallel-size", v.pp),
        ("--context-parallel-size", v.cp),
        ("--expert-model-parallel-size", v.ep),
    ]
    if m.layers % (v.pp * v.vpp):
        a.append(("--pipeline-model-parallel-layout", pipeline_layout(m.layers, v.pp, v.vpp)))
    elif v.vpp > 1:
        a.append(("--num-layers-per-virtual-pipeline-stage", m.layers // (v.pp * v.vpp)))
    if v.sequence_parallel and v.tp > 1:
        a.append(("--sequence-parallel", None))
    a += [("--micro-batch-size", v.micro_batch), ("--global-batch-size", v.global_batch)]
    if v.recompute == "selective":
        a.append(("--recompute-granularity", "selective"))
    elif v.recompute == "full":
        a += [
            ("--recompute-granularity", "full"),
            ("--recompute-method", "uniform"),
            ("--recompute-num-layers", 1),
        ]
    if v.zero_stage in (1, 2):
        a += [
            ("--use-distributed-optimizer", None),
            ("--overlap-grad-reduce", None),
            ("--overlap-param-gather", None),
        ]
    elif v.zero_stage == 3:
        a += [("--use-megatron-fsdp", None), ("--data-parallel-sharding-strategy", "optim_grads_params")]
    return a


def megatron(v: TrainingView) -> Launch:
    a = _megatron_model(v) + _megatron_parallel(v)
    a += [("--bf16", None)] if v.precision in ("bf16", "fp8") else [("--fp16", None)]
    if v.precision == "fp8":
        a += [("--fp8-format", "hybrid")]
    a += [
        ("--attention-backend", "flash"),
        ("--train-iters", v.steps),
        ("--save-interval", save_interval_steps(v)),
        ("--save", ShellExpr("$CKPT_DIR")),
        ("--load", ShellExpr("$CKPT_DIR")),
        ("--data-path", ShellExpr("$DATA_PATH")),
        ("--lr", "3.0e-4"),
        ("--min-lr", "3.0e-5"),
        ("--lr-decay-style", "cosine"),
        ("--weight-decay", "0.1"),
        ("--log-interval", 10),
        ("--distributed-timeout-minutes", 30),
        ("--exit-signal-handler", None),  # SIGTERM (preemption, requeue): save a checkpoint, then exit
    ]
    return Launch("megatron", FRAMEWORKS["megatron"], '"$MEGATRON_DIR/pretrain_gpt.py"', tuple(a), {}, True)


def _titan_flavor(name: str) -> str:
    for size in ("405b", "70b", "8b"):
        if size in name.lower():
            return size.upper()
    return "custom"


def torchtitan(v: TrainingView) -> Launch:
    replicate, shard = (v.dp, 1) if v.zero_stage == 0 else (1, v.dp)
    reshard = "default" if v.zero_stage == 3 else "never"
    ac = {"none": "none", "selective": "selective", "full": "full"}[v.recompute]
    flavor = _titan_flavor(v.model.name)
    m = v.model
    dims = (
        f"model dimensions from the plan: layers={m.layers} hidden={m.hidden} heads={m.heads} "
        f"kv_heads={m.kv_heads} ffn_hidden={m.ffn_hidden} vocab={m.vocab}"
        + (" (register a flavor with these)" if flavor == "custom" else "")
    )
    head = comment_block(v.header, f"torchtitan job config ({FRAMEWORKS['torchtitan']})", [dims])
    toml = (
        head
        + f"""[job]
dump_folder = "./outputs"
description = {toml_string(v.header.name)}

[model]
name = "llama3"
flavor = "{flavor}"

[training]
local_batch_size = {v.micro_batch * max(1, v.global_batch // (v.dp * v.micro_batch))}
global_batch_size = {v.global_batch}
seq_len = {v.seq_len}
steps = {v.steps}
mixed_precision_param = "{"float16" if v.precision == "fp16" else "bfloat16"}"

[parallelism]
data_parallel_replicate_degree = {replicate}
data_parallel_shard_degree = {shard}
fsdp_reshard_after_forward = "{reshard}"
tensor_parallel_degree = {v.tp}
enable_async_tensor_parallel = false
pipeline_parallel_degree = {v.pp}
pipeline_parallel_schedule = "{"Interleaved1F1B" if v.vpp > 1 else "1F1B"}"
pipeline_parallel_microbatch_size = {v.micro_batch}
context_parallel_degree = {v.cp}
expert_parallel_degree = {v.ep}

[activation_checkpoint]
mode = "{ac}"
selective_ac_option = "op"

[checkpoint]
enable_checkpoint = true
folder = "checkpoint"
interval = {save_interval_steps(v)}
"""
    )
    if v.precision == "fp8":
        toml += '\n[float8]\nenable_fsdp_float8_all_gather = true\nrecipe_name = "tensorwise"\n'
    return Launch(
        "torchtitan",
        FRAMEWORKS["torchtitan"],
        "-m torchtitan.train",
        (("--job.config_file", "torchtitan.toml"),),
        {"torchtitan.toml": toml},
        True,
    )


def _nemo_recipe(name: str) -> str:
    n = name.lower().replace("-", "_").replace(".", "")
    for known in ("llama31_405b", "llama3_70b", "llama3_8b", "mixtral_8x7b", "deepseek_v3"):
        if known.replace("_", "") in n.replace("_", ""):
            return known
    return "llama3_8b"


def nemo(v: TrainingView) -> Launch:
    recipe = _nemo_recipe(v.model.name)
    lora = v.method == "lora"
    fn = "finetune_recipe" if lora else "pretrain_recipe"
    extra = ', peft_scheme="lora"' if lora else ""
    # The plan's name is the one user string here: a Python literal (`repr`), never inside quotes.
    name = python_literal(v.header.name)
    ckpt_steps = min(save_interval_steps(v), v.steps)  # Lightning wants intervals within the run
    ac = {"none": "None", "selective": '"selective"', "full": '"full"'}[v.recompute]
    py = (
        comment_block(v.header, f"NeMo job script ({FRAMEWORKS['nemo']})")
        + f'''"""NeMo 2.0 job for the plan named in PLAN_NAME; run by srun (one task per GPU) or torchrun."""
import os

import nemo_run as run
from nemo.collections import llm

PLAN_NAME = {name}

recipe = llm.{recipe}.{fn}(
    name=PLAN_NAME, dir=os.environ.get("CKPT_DIR", "./checkpoints"),
    num_nodes={v.nodes}, num_gpus_per_node={min(v.gpus, v.hw.gpus_per_node)}{extra},
)
s = recipe.trainer.strategy
s.tensor_model_parallel_size = {v.tp}
s.pipeline_model_parallel_size = {v.pp}
s.virtual_pipeline_model_parallel_size = {v.vpp if v.vpp > 1 else None}
s.context_parallel_size = {v.cp}
s.expert_model_parallel_size = {v.ep}
s.sequence_parallel = {bool(v.sequence_parallel and v.tp > 1)}
s.ddp.use_distributed_optimizer = {v.zero_stage >= 1}
recipe.model.config.seq_length = {v.seq_len}
recipe.model.config.recompute_granularity = {ac}
recipe.data.seq_length = {v.seq_len}
recipe.data.micro_batch_size = {v.micro_batch}
recipe.data.global_batch_size = {v.global_batch}
recipe.trainer.max_steps = {v.steps}
recipe.trainer.val_check_interval = {ckpt_steps}
recipe.log.ckpt.every_n_train_steps = {ckpt_steps}
'''
    )
    if v.precision == "fp8":
        py += "recipe.trainer.plugins = llm.recipes.precision.mixed_precision.bf16_with_fp8_mixed()\n"
    if lora and v.lora_rank:
        py += f"recipe.peft.dim = {v.lora_rank}\n"
        if v.lora_alpha:
            py += f"recipe.peft.alpha = {v.lora_alpha:g}\n"
    py += '\nif __name__ == "__main__":\n    run.run(recipe, direct=True)\n'
    return Launch("nemo", FRAMEWORKS["nemo"], "nemo_train.py", (), {"nemo_train.py": py}, False)


def launch_for(v: TrainingView, framework: str) -> Launch:
    if framework == "auto":  # NeMo for adapter fine-tuning (the one with LoRA), else Megatron-LM
        framework = "nemo" if v.method in ("lora", "qlora") else "megatron"
    if framework not in FRAMEWORKS:
        raise BadInput(
            f"Unknown framework {framework!r}.",
            f"Export writes arguments for {', '.join(FRAMEWORKS)}.",
            "Use --framework megatron, torchtitan or nemo.",
        )
    _check(v, framework)
    return {"megatron": megatron, "torchtitan": torchtitan, "nemo": nemo}[framework](v)


def pipeline_layout(layers: int, pp: int, vpp: int) -> str:
    """Megatron's `--pipeline-model-parallel-layout` for an uneven split: pp x vpp virtual
    stages separated by '|', 't' per decoder layer, the embedding 'E' on the first and the
    loss 'L' on the last; layers spread as evenly as they go, the extra ones on the middle
    stages (the first and last also hold the embedding and the loss)."""
    stages = pp * vpp
    counts = [layers // stages] * stages
    extra = layers - sum(counts)
    order = sorted(range(stages), key=lambda i: (i in (0, stages - 1), abs(i - (stages - 1) / 2)))
    for i in order[:extra]:
        counts[i] += 1
    parts = ["t" * c for c in counts]
    parts[0] = "E" + parts[0]
    parts[-1] = parts[-1] + "L"
    return "|".join(parts)


def tokens_per_step(v: TrainingView) -> int:
    return v.global_batch * v.seq_len
