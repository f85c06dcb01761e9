"""The plan as Megatron-LM arguments (`pretrain_gpt.py`, Megatron-LM tag core_v0.13.0, run in
nvcr.io/nvidia/pytorch:25.05-py3, the base image of that release's own CI). Every exported
command is run in the tests through that release's own `parse_args`, `validate_args`, model
config and interleaved-schedule checks (tests/test_megatron_release.py).

The model is written as the spec describes it, never left to Megatron's defaults: activation
(`--swiglu` or Megatron's GeLU), normalisation, tied or untied embeddings, learned absolute
or rotary positions with the model's rotary base, biases (LayerNorm-era models such as GPT-3
carry them, RMSNorm ones such as Llama do not), head width, and the mixture-of-experts router
of the model's published recipe (`fw_recipes`). The tokenizer is the model's own Hugging Face
tokenizer (`$TOKENIZER_MODEL`), the data `$DATA_PATH`.

ZeRO: stages 1 and 2 are `--use-distributed-optimizer`; stage 3 is core_v0.13's custom FSDP
(`--use-custom-fsdp --data-parallel-sharding-strategy optim_grads_params`, which needs the
distributed optimizer and no gradient-accumulation fusion). Uneven pipelines (layers not
divisible by pp x vpp) use `--pipeline-model-parallel-layout`.

The environment follows validate_args too: CUDA_DEVICE_MAX_CONNECTIONS=1 with tensor or
context parallelism, unset under FSDP (which asserts it is not 1). Experts over ep > 1 with
tp > 1 turn sequence parallelism on (TransformerConfig requires it).

The interleaved schedule (vpp > 1) runs micro-batches in groups of N per virtual stage
(megatron/core/pipeline_parallel/schedules.py, core_v0.13.0): N must lie in [pp, M] for M
micro-batches, and M mod N must be 0 or at least pp. N is pp by default; when that fails a
valid N is passed (`--microbatch-group-size-per-virtual-pipeline-stage`), and a plan with fewer
micro-batches than stages is refused.
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
from rightsize.export.fw_recipes import Recipe, recipe_for
from rightsize.export.names import Arg, ShellExpr
from rightsize.export.plan_view import TrainingView
from rightsize.perf.remat import MEGATRON_MODULES


def _positions(v: TrainingView) -> list[Arg]:
    m = v.model
    if m.positions == "alibi":
        raise refuse(
            "megatron",
            "ALiBi position biases",
            "Megatron-LM's GPT model has learned, rotary and no positions; the model uses ALiBi (BLOOM).",
            "Train BLOOM-style models with Megatron-DeepSpeed (the BigScience fork), or plan a rotary model.",
        )
    a: list[Arg] = [("--max-position-embeddings", max(v.seq_len, m.max_seq_len))]
    if m.positions == "learned":
        return [*a, ("--position-embedding-type", "learned_absolute")]
    a += [("--position-embedding-type", "rope"), ("--rotary-base", round(m.rope_theta))]
    if m.rope_scaling_factor:  # Llama 3.1
        a += [("--use-rope-scaling", None), ("--rope-scaling-factor", f"{m.rope_scaling_factor:g}")]
    return a


def _attention(v: TrainingView) -> list[Arg]:
    m = v.model
    for what, count in (("attention heads", m.heads), ("key-value heads", m.kv_heads)):
        if count % v.tp:
            raise refuse(
                "megatron",
                f"tp {v.tp} over {count} {what}",
                "Megatron-LM core_v0.13.0 gives each tensor-parallel rank whole heads and query groups "
                "(TransformerConfig: num_attention_heads and num_query_groups multiples of tp).",
                f"Plan with parallel.tp dividing {count}.",
            )
    if m.kv_lora_rank:  # multi-head latent attention (DeepSeek-V2/V3)
        a: list[Arg] = [("--multi-latent-attention", None), ("--kv-lora-rank", m.kv_lora_rank)]
        a += [("--qk-head-dim", m.head_dim)]
        a += [("--q-lora-rank", m.q_lora_rank)] if m.q_lora_rank else []
        a += [("--qk-pos-emb-head-dim", m.qk_rope_head_dim)] if m.qk_rope_head_dim else []
        return a + [("--v-head-dim", m.v_head_dim or m.head_dim)]
    a = [("--kv-channels", m.head_dim)] if m.head_dim * m.heads != m.hidden else []
    if m.kv_heads != m.heads:
        a += [("--group-query-attention", None), ("--num-query-groups", m.kv_heads)]
    return a


def _moe(v: TrainingView, r: Recipe) -> list[Arg]:
    m = v.model
    if not m.experts or r.router is None:
        return []
    ro = r.router
    a: list[Arg] = [("--num-experts", m.experts), ("--moe-router-topk", m.experts_per_token)]
    if m.expert_ffn_hidden:
        a.append(("--moe-ffn-hidden-size", m.expert_ffn_hidden))
        if m.shared_experts:
            a.append(("--moe-shared-expert-intermediate-size", m.shared_experts * m.expert_ffn_hidden))
    if m.dense_layers:
        a.append(("--moe-layer-freq", f"([0]*{m.dense_layers}+[1]*{m.layers - m.dense_layers})"))
    a += [
        ("--moe-router-score-function", ro.score),
        ("--moe-router-load-balancing-type", ro.balance),
        ("--moe-aux-loss-coeff", f"{ro.aux_loss:g}"),
    ]
    if ro.groups:
        a += [("--moe-router-num-groups", ro.groups), ("--moe-router-group-topk", ro.group_topk or 1)]
    if ro.scaling:
        a.append(("--moe-router-topk-scaling-factor", f"{ro.scaling:g}"))
    if ro.expert_bias:
        a += [("--moe-router-enable-expert-bias", None), ("--moe-router-bias-update-rate", "1e-3")]
    return a + [("--moe-router-dtype", "fp32"), ("--moe-grouped-gemm", None),
                ("--moe-token-dispatcher-type", "alltoall")]  # fmt: skip


def model_args(v: TrainingView, r: Recipe) -> list[Arg]:
    """The model as the spec describes it (see the module docstring)."""
    m = v.model
    a: list[Arg] = [
        ("--num-layers", m.layers),
        ("--hidden-size", m.hidden),
        ("--ffn-hidden-size", m.ffn_hidden),
        ("--num-attention-heads", m.heads),
        ("--seq-length", v.seq_len),
        *_positions(v),
        ("--normalization", "RMSNorm" if m.norm == "rmsnorm" else "LayerNorm"),
    ]
    a += [("--swiglu", None)] if m.mlp == "swiglu" else []
    a += [] if m.tied_embeddings else [("--untie-embeddings-and-output-weights", None)]
    a += [("--disable-bias-linear", None)] if m.norm == "rmsnorm" else []
    a += [("--tokenizer-type", "HuggingFaceTokenizer"), ("--tokenizer-model", TOKENIZER)]
    return a + _attention(v) + _moe(v, r)


def microbatch_group(v: TrainingView) -> int | None:
    """The interleaved schedule's micro-batch group size when pp (the default) is not valid;
    None when the default is. Refuses a plan the schedule cannot run."""
    if v.vpp <= 1:
        return None
    micro = v.global_batch // (v.micro_batch * v.dp)
    if v.pp < 2 or micro < v.pp:
        raise refuse(
            "megatron",
            f"interleaved pipeline (vpp {v.vpp}) with pp {v.pp} and {micro} micro-batches per step",
            "Megatron's interleaved schedule needs pp >= 2 and at least pp micro-batches per step "
            "(megatron/core/pipeline_parallel/schedules.py, core_v0.13.0).",
            "Plan with a larger global batch or parallel.vpp: 1.",
        )
    group = next(n for n in range(v.pp, micro + 1) if micro % n == 0 or micro % n >= v.pp)
    return None if group == v.pp else group


def moe_needs_sequence_parallel(v: TrainingView) -> bool:
    """core_v0.13.0's TransformerConfig: experts split over ep ranks with tp > 1 need sequence
    parallelism (the token dispatcher works on sequence-split activations)."""
    return bool(v.model.experts) and v.ep > 1 and v.tp > 1 and not v.sequence_parallel


def sequence_parallel(v: TrainingView) -> bool:
    return v.tp > 1 and (v.sequence_parallel or moe_needs_sequence_parallel(v))


def parallel_args(v: TrainingView) -> list[Arg]:
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
    group = microbatch_group(v)
    a += [("--microbatch-group-size-per-virtual-pipeline-stage", group)] if group else []
    if sequence_parallel(v):
        a.append(("--sequence-parallel", None))
    a += [("--micro-batch-size", v.micro_batch), ("--global-batch-size", v.global_batch)]
    if v.recompute == "selective":
        a.append(("--recompute-granularity", "selective"))
    elif v.recompute == "full":
        a += [("--recompute-granularity", "full"), ("--recompute-method", "uniform"),
              ("--recompute-num-layers", 1)]  # fmt: skip
    elif v.recompute in MEGATRON_MODULES:  # module recompute (perf.remat)
        a += [("--recompute-granularity", "selective"),
              ("--recompute-modules", " ".join(MEGATRON_MODULES[v.recompute]))]  # fmt: skip
    if v.zero_stage in (1, 2):
        a += [("--use-distributed-optimizer", None), ("--overlap-grad-reduce", None),
              ("--overlap-param-gather", None)]  # fmt: skip
    elif v.zero_stage == 3:
        a += [("--use-distributed-optimizer", None), ("--use-custom-fsdp", None),
              ("--data-parallel-sharding-strategy", "optim_grads_params"),
              ("--no-gradient-accumulation-fusion", None)]  # fmt: skip
    return a


def schedule_args(v: TrainingView, r: Recipe) -> list[Arg]:
    """Learning rate and optimizer as the model's published recipe states them."""
    a: list[Arg] = [
        ("--lr", f"{r.lr:g}"),
        ("--min-lr", f"{r.min_lr:g}"),
        ("--lr-warmup-iters", r.warmup_steps),
        ("--lr-decay-iters", r.decay_steps),
        ("--lr-decay-style", r.style),
    ]
    if r.wsd_decay_steps:
        a += [("--lr-wsd-decay-style", "cosine"), ("--lr-wsd-decay-iters", r.wsd_decay_steps)]
    return a + [
        ("--weight-decay", "0.1"),
        ("--adam-beta1", "0.9"),
        ("--adam-beta2", "0.95"),
        ("--adam-eps", f"{r.adam_eps:g}"),
        ("--clip-grad", "1.0"),
    ]


def megatron_env(v: TrainingView) -> tuple[tuple[str, str | None, str], ...]:
    """CUDA_DEVICE_MAX_CONNECTIONS as core_v0.13.0's validate_args wants it: unset under its
    FSDP (it asserts the value is not 1), 1 with tensor or context parallelism (it asserts 1
    before Blackwell: the TP/SP overlap orders kernels on one connection)."""
    if v.hw.vendor != "nvidia":
        return ()
    if v.zero_stage == 3:
        return (("CUDA_DEVICE_MAX_CONNECTIONS", None, "Megatron's FSDP needs several CUDA connections"),)
    if v.tp > 1 or v.cp > 1:
        return (("CUDA_DEVICE_MAX_CONNECTIONS", "1", "Megatron's TP/CP communication overlap needs it"),)
    return ()


def megatron(v: TrainingView) -> Launch:
    r = recipe_for(v)
    a = model_args(v, r) + parallel_args(v)
    a += [("--bf16", None)] if v.precision in ("bf16", "fp8") else [("--fp16", None)]
    a += [("--fp8-format", "hybrid")] if v.precision == "fp8" else []
    a += schedule_args(v, r) + [
        ("--attention-backend", "flash"),
        ("--train-iters", v.steps),
        ("--save-interval", save_interval_steps(v)),
        ("--save", ShellExpr("$CKPT_DIR")),
        ("--load", ShellExpr("$CKPT_DIR")),
        ("--data-path", DATA),
        ("--log-interval", 10),
        ("--distributed-timeout-minutes", 30),
        ("--exit-signal-handler", None),  # SIGTERM (preemption, requeue): save a checkpoint, then exit
    ]
    # The plan's asynchronous save (perf.checkpoint): Megatron-Core's dist-ckpt async save, which
    # runs in the torch_dist format only (the release's parser help; torch_dist is its default).
    a += [("--ckpt-format", "torch_dist"), ("--async-save", None)] if v.checkpoint_async else []
    notes = [container_note(v, "megatron"), f"Learning-rate schedule and optimizer: {r.source}."]
    if moe_needs_sequence_parallel(v):
        notes.append(
            f"Sequence parallelism on (the plan has it off): Megatron core_v0.13.0 requires it for experts over "
            f"ep {v.ep} with tp {v.tp}; it only splits activations further."
        )
    group = microbatch_group(v)
    if group:
        micro = v.global_batch // (v.micro_batch * v.dp)
        notes.append(
            f"Interleaved schedule: {micro} micro-batches per step is not a multiple of pp {v.pp}, so "
            f"micro-batches run in groups of {group} (Megatron core_v0.13.0 needs M mod N = 0 or >= pp)."
        )
    entry = '"$MEGATRON_DIR/pretrain_gpt.py"'
    return Launch(
        "megatron", FRAMEWORKS["megatron"], entry, tuple(a), {}, True, tuple(notes), megatron_env(v)
    )


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
