"""The training spec: which model, what workload, what the user wants, and what they fixed.

`TrainingSpec` is what `rightsize plan` reads from YAML. Every field carries a description (it
becomes CLI help and the JSON Schema editors use). Building a spec computes nothing; the checks
here are only those that make a spec self-contradictory (tp must divide heads, the parallel
degrees must multiply to the GPU count, ...), each naming the values that clash.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from rightsize.spec.checked import CheckedSpec
from rightsize.spec.infrastructure import Infrastructure
from rightsize.spec.model import ModelArch
from rightsize.spec.prices import ProviderList, UserPrices, providers_field
from rightsize.spec.shared import (
    ACCELERATORS_SCHEMA_EXTRA,
    MAX_ACCELERATORS,
    all_means_every,
    resolve_model_field,
)
from rightsize.spec.shared import POSITIVE as _POSITIVE
from rightsize.spec.units import Count, CountInt, DurationS, TokenLength, refuse_bare_durations

# The training search's default cluster-size cap (targets.max_gpus) and the largest allowed.
DEFAULT_MAX_GPUS = 32768
MAX_GPUS_LIMIT = 1_048_576


class ParallelSettings(BaseModel):
    """Parallelism the user fixes; every field left out (null) is chosen by the search."""

    tp: int | None = Field(
        default=None, ge=1, description="Tensor-parallel degree (Megatron column/row split)."
    )
    pp: int | None = Field(default=None, ge=1, description="Pipeline-parallel degree (stages).")
    dp: int | None = Field(default=None, ge=1, description="Data-parallel degree (model replicas).")
    cp: int | None = Field(
        default=None, ge=1, description="Context-parallel degree (the sequence split across GPUs)."
    )
    ep: int | None = Field(
        default=None,
        ge=1,
        description="Expert-parallel degree for MoE models; it lives inside the data-parallel group.",
    )
    vpp: int | None = Field(
        default=None, ge=1, description="Virtual pipeline stages per GPU (interleaved 1F1B schedule)."
    )
    micro_batch: int | None = Field(default=None, ge=1, description="Sequences per micro-batch on each GPU.")
    recompute: (
        Literal[
            "none",
            "selective",
            "full",
            "minimal",
            "save_dot_except_mlpwi",
            "save_dot_except_mlp",
            "save_qkv_proj",
            "save_out_proj",
            "qkv_proj_offloaded",
            "minimal_offloaded",
            "minimal_flash",
            "selective_op",
            "input_qkv_offloaded",
            "input_qkv_out_offloaded",
            "moe_act",
            "mla_up_proj_moe_act",
            "layer_offload_1of8",
            "layer_offload_2of8",
            "layer_offload_3of8",
            "layer_offload_4of8",
            "layer_offload_5of8",
            "layer_offload_6of8",
            "layer_offload_7of8",
            "input_offloaded",
            "save_qkv_context",
        ]
        | None
    ) = Field(
        default=None,
        description=(
            "Activation recomputation (remat) policy: 'none', 'selective' (attention core only, Megatron) or "
            "'full' (whole layers), or a MaxText remat_policy name: 'minimal', 'minimal_flash', "
            "'save_dot_except_mlpwi', 'save_dot_except_mlp', 'save_qkv_proj', 'save_out_proj', and the "
            "host-offloading 'qkv_proj_offloaded' and 'minimal_offloaded' (saved tensors go to pinned host "
            "memory over the host link), MaxText's custom policies that also offload each layer's input "
            "('input_qkv_offloaded', 'input_qkv_out_offloaded': remat_policy custom with decoder_layer_input, "
            "query/key/value_proj and out_proj offloaded; 'input_offloaded': only decoder_layer_input offloaded, "
            "everything else rebuilt; 'save_qkv_context': decoder_layer_input, query/key/value_proj and context "
            "kept on device, as the Ironwood recipes set them), or torchtitan's op-level 'selective_op' (saves every "
            "other matmul output and the attention output), or Megatron-Core's layer offload "
            "'layer_offload_<n>of8' (cpu_offloading: n eighths of the layers move their activations to host "
            "memory, nothing recomputed, pipeline parallelism 1). The search tries none, selective and full "
            "(MaxText's names on Cloud TPU), and layer offload where the host link is NVLink-C2C."
        ),
    )
    sequence_parallel: bool | None = Field(
        default=None,
        description="Megatron sequence parallelism (shards LayerNorm/dropout activations over tp).",
    )
    zero_stage: Literal[0, 1, 2, 3] | None = Field(
        default=None,
        description="ZeRO / distributed-optimizer stage: 1 shards optimizer states, 2 also gradients, 3 also weights.",
    )


LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]
ALL_LINEAR_TARGETS: tuple[str, ...] = ("q", "k", "v", "o", "gate", "up", "down")
ATTENTION_TARGETS: tuple[str, ...] = ("q", "k", "v", "o")
_TARGET_GROUPS = {"all_linear": ALL_LINEAR_TARGETS, "attention": ATTENTION_TARGETS}
# What a spec may write (a group name, or a list of matrices and groups), not the expanded tuple.
_LORA_TARGETS_SCHEMA = {
    "anyOf": [
        {"enum": list(_TARGET_GROUPS)},
        {"type": "array", "minItems": 1, "items": {"enum": [*ALL_LINEAR_TARGETS, *_TARGET_GROUPS]}},
    ]
}


class LoraSettings(BaseModel):
    """Low-rank adapters (Hu et al. 2021, LoRA): W x + (alpha / r) B A x with A [r, d_in], B [d_out, r]."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    rank: int = Field(default=16, gt=0, description="Adapter rank r (inner width of A and B).")
    alpha: float = Field(
        default=32.0,
        gt=0,
        description="Adapter scale numerator (alpha / r); changes no cost, kept for records.",
    )
    targets: Annotated[tuple[LoraTarget, ...], WithJsonSchema(_LORA_TARGETS_SCHEMA)] = Field(
        default=ALL_LINEAR_TARGETS,  # type: ignore[arg-type]
        min_length=1,
        description=(
            "Linear layers that get adapters: a list of q, k, v, o, gate, up, down, or 'all_linear' "
            "(all seven; gate is skipped for GELU MLPs) or 'attention' (q, k, v, o). MoE experts' "
            "gate/up/down each get their own adapters."
        ),
    )

    @field_validator("targets", mode="before")
    @classmethod
    def _expand_groups(cls, value: Any) -> Any:
        """'all_linear' / 'attention' (alone or in a list) expand to the matrices they name; duplicates drop."""
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            return value
        out: list[Any] = []
        for item in items:
            expanded = _TARGET_GROUPS.get(item, (item,)) if isinstance(item, str) else (item,)
            out.extend(x for x in expanded if x not in out)
        return tuple(out)


class TrainingPhase(BaseModel):
    """A stretch of the run at other settings than the main ones: a batch-size or sequence-length
    ramp at the start, a context-extension or annealing stage at the end. Its tokens are part of
    training.train_tokens; the rest of the run trains at the main seq_len and batch."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    name: str = Field(description="What the phase is ('batch ramp', 'context 32k', 'annealing').")
    tokens: Annotated[Count, _POSITIVE] = Field(description="Tokens trained in this phase (e.g. '252M').")
    seq_len: TokenLength | None = Field(
        default=None, description="Tokens per sequence in this phase; the main seq_len when absent."
    )
    global_batch_tokens: Annotated[CountInt, _POSITIVE] | None = Field(
        default=None,
        description="Tokens per optimizer step in this phase (e.g. '4Mi'); the main batch when absent.",
    )


class TrainingWorkload(BaseModel):
    """What one training run does: sequence length, batch, length of the run, numerics."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    seq_len: TokenLength = Field(
        description=(
            "Tokens per sequence (context length during training); k is 1,024 here, as frameworks "
            "count lengths ('8k' = 8,192, '128k' = 131,072), and the plan notes how it read it."
        )
    )
    global_batch: Annotated[CountInt, _POSITIVE] | None = Field(
        default=None, description="Sequences per optimizer step; give this or global_batch_tokens."
    )
    global_batch_tokens: Annotated[CountInt, _POSITIVE] | None = Field(
        default=None,
        description="Tokens per optimizer step (e.g. '16Mi' = 2048 x 8192); give this or global_batch.",
    )
    train_tokens: Annotated[Count, _POSITIVE] | None = Field(
        default=None, description="Tokens of the whole run (e.g. '15T'); needed when a deadline is set."
    )
    precision: Literal["fp16", "bf16", "fp8", "nvfp4"] = Field(
        default="bf16",
        description=(
            "Compute precision of the matrix multiplies (mixed precision); 'nvfp4' is NVIDIA's 4-bit "
            "training recipe on Blackwell (16-element blocks with E4M3 scales)."
        ),
    )
    method: Literal["full", "lora", "qlora"] = Field(
        default="full",
        description=(
            "What is trained: 'full' (every weight: pre-training or full fine-tuning), 'lora' (frozen base "
            "weights in the compute precision plus low-rank adapters) or 'qlora' (LoRA over a base "
            "quantised to 4-bit NF4 with double-quantised constants, dequantised to 16 bit for every GEMM)."
        ),
    )
    lora: LoraSettings | None = Field(
        default=None,
        description="Adapter rank, alpha and target layers for method lora/qlora (defaults: r 16, alpha 32, all linear).",
    )
    moe_capacity_factor: float = Field(
        default=1.0,
        ge=1.0,
        le=8.0,
        description=(
            "Mixture-of-experts only: tokens the busiest expert processes, as a multiple of the even share "
            "(tokens x top-k / experts). It sizes expert GEMMs, the all-to-all and MoE activations, since "
            "the busiest expert sets the step. 1.0: dropless routing with load balancing (Megatron-Core's "
            "default, MegaBlocks/Mixtral, DeepSeek-V3); 1.25: token-dropping training padded to capacity "
            "(Switch Transformer, GShard)."
        ),
    )
    optimizer: Literal["adamw", "adam", "sgd"] = Field(
        default="adamw", description="Optimizer; sets the optimizer-state bytes per parameter."
    )
    flash_attention: bool = Field(
        default=True, description="Fused attention that never stores the seq x seq score matrix."
    )
    attention_kernel: Literal["auto", "flash1", "flash2", "cudnn", "flash3"] = Field(
        default="auto",
        description=(
            "Which fused attention kernel the training stack runs: 'flash1' (FlashAttention-1, or xformers' "
            "memory-efficient attention with FlashAttention's backward, as 2022-2023 stacks such as LLaMA's ran), "
            "'flash2' (FlashAttention-2, PyTorch SDPA's "
            "flash backend, Transformer Engine's context parallelism before cuDNN support), 'cudnn' "
            "(Transformer Engine / cuDNN fused attention), 'flash3' (FlashAttention-3 on Hopper); 'auto' "
            "takes the accelerator's usual stack from the catalog. It names the stack, not a demand: where "
            "the kernel cannot train the model's head width (catalog attention_kernels.yaml: FlashAttention-1 "
            "up to 128, FlashAttention-2 and SDPA's flash backend up to 256), the plan prices the backend the "
            "stack falls back to (SDPA's memory-efficient kernel, Transformer Engine's next backend, or unfused "
            "attention with the s x s scores in memory) and says so in its assumptions."
        ),
    )
    cp_comm: Literal["p2p", "all_gather", "a2a", "torch_allgather"] = Field(
        default="p2p",
        description=(
            "Context parallelism's attention exchange: 'p2p' (ring attention, K/V blocks passed around the "
            "ring under each block's attention), 'all_gather' (K/V gathered before the attention, exposed: "
            "Transformer Engine's all_gather variant, Llama 3), 'a2a' (DeepSpeed-Ulysses all-to-alls from "
            "a sequence split to a head split and back) or 'torch_allgather' (PyTorch's context_parallel as "
            "torchtitan runs it: head-expanded K/V all-gathered behind the first block, one SDPA per ring "
            "step merged in fp32, dK/dV rotated in fp32)."
        ),
    )
    cp_load_balance: bool = Field(
        default=True,
        description=(
            "Context parallelism with causal masks: zig-zag chunks (each rank holds chunks i and 2cp-1-i) give "
            "every rank equal attention work; false: contiguous chunks, the last rank does 2cp/(cp+1) of the average."
        ),
    )
    tp_comm_overlap: bool | None = Field(
        default=None,
        description=(
            "Whether the training stack overlaps tensor-parallel collectives with the GEMMs around them "
            "(Transformer Engine userbuffers in Megatron-Core / NeMo, torchtitan's async TP): false for a "
            "stack that runs them in line (torchtitan's vanilla TP); null: the accelerator's usual stack "
            "(catalog efficiency tp_comm_overlap)."
        ),
    )
    grad_reduce_in_fp32: bool | None = Field(
        default=None,
        description=(
            "Whether gradient buffers are kept and reduced over data parallelism in fp32 (Megatron-Core "
            "DistributedDataParallelConfig.grad_reduce_in_fp32): false keeps them in 16 bit, half the "
            "gradient memory and reduction bytes (Megatron-Bridge's performance recipes); null: the stack's "
            "default (fp32 for bf16 and fp8 training)."
        ),
    )
    optimizer_offload: bool = Field(
        default=False,
        description=(
            "Keep optimizer states (fp32 master weights and moments) in host memory and stream them over "
            "the host link for each update (MaxText optimizer_memory_host_offload, DeepSpeed ZeRO-Offload)."
        ),
    )
    fp8_recipe: Literal["auto", "tensorwise", "rowwise", "delayed", "mxfp8"] = Field(
        default="auto",
        description=(
            "precision fp8 only: how the linear layers are scaled. 'tensorwise' and 'rowwise' are torchao "
            "float8 (torchtitan: transformer-block linears only, casts fused by torch.compile, rowwise keeps "
            "one scale per row); 'delayed' is Transformer Engine's amax-history recipe; 'mxfp8' is Transformer "
            "Engine's MXFP8 block scaling on Blackwell (one E8M0 scale per 32 values, NeMo FP8-MX); 'auto' is "
            "Transformer Engine's current scaling (NeMo FP8-CS)."
        ),
    )
    moe_dispatch_dtype: Literal["bf16", "fp8"] = Field(
        default="bf16",
        description=(
            "precision fp8, mixture of experts only: the wire dtype of the expert-parallel dispatch. 'bf16' "
            "(Megatron-Core's default, moe_dispatch_fwd_dtype): the routed copies travel in 16 bit and each "
            "expert GEMM quantises the copies it receives; 'fp8': each token is quantised once before the "
            "dispatch and travels in fp8 (DeepSeek-V3's own stack, report sec. 3.3)."
        ),
    )
    checkpoint_save: Literal["auto", "async", "sync"] = Field(
        default="auto",
        description="How checkpoints are saved: 'async' copies the state to host memory and writes it "
        "behind later steps (Megatron-Core --async-save, NeMo, torchtitan async_mode, MaxText/Orbax); "
        "'sync' blocks for the whole write; 'auto' (default): async where the exported stack runs it "
        "(NVIDIA, AMD, TPU), sync elsewhere. The export writes the same setting.",
    )
    moe_dispatcher: Literal["auto", "alltoall", "deepep", "hybridep"] = Field(
        default="auto",
        description=(
            "mixture of experts only: Megatron-Core's token dispatcher. 'alltoall' (NCCL all-to-all) sorts "
            "the received tokens by local expert and back (sort_chunks_by_idxs), 'deepep' permutes them after "
            "the dispatch and back before the combine, 'hybridep' gathers them in expert order inside its "
            "communication kernel (no permutation pass at all); 'auto': one permutation before the dispatch "
            "and one after the combine."
        ),
    )
    cuda_graph_scope: Literal[
        "auto", "none", "moe_router+moe_preprocess", "attn+moe_router+moe_preprocess", "full_iteration"
    ] = Field(
        default="auto",
        description=(
            "What the stack captures in CUDA graphs (Megatron-Core cuda_graph_impl / cuda_graph_scope): "
            "'none' runs every layer eagerly, each kernel launched by the host, so a host<->device "
            "synchronisation (the MoE token counts) exposes the host time after it; "
            "'moe_router+moe_preprocess' or 'attn+moe_router+moe_preprocess' (Transformer Engine graphs "
            "over those modules) launch them as one graph each; 'full_iteration' captures the whole "
            "step. 'auto' (default): host launch time taken as hidden (a fused, graph-captured stack)."
        ),
    )
    eval_interval_steps: Annotated[CountInt, _POSITIVE] | None = Field(
        default=None,
        description="Optimizer steps between evaluations; the catalog's default (Megatron-LM's 1,000) when absent.",
    )
    eval_batches: CountInt | None = Field(
        default=None,
        ge=0,
        description="Forward-only batches per evaluation (0: no evaluation); the catalog's default (10) when absent.",
    )
    phases: tuple[TrainingPhase, ...] = Field(
        default=(),
        description=(
            "Optional stages at other settings (batch and sequence-length ramps, context extension, "
            "annealing), each with its tokens; the plan's whole-run time prices each on the chosen layout."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _default_lora(cls, data: Any) -> Any:
        """method lora/qlora without a lora section gets the default adapters."""
        if isinstance(data, dict) and data.get("method") in ("lora", "qlora") and data.get("lora") is None:
            data = {**data, "lora": {}}
        return data

    @model_validator(mode="after")
    def _check_method(self) -> TrainingWorkload:
        if self.method == "full" and self.lora is not None:
            raise ValueError(
                "training.lora only applies to method 'lora' or 'qlora'; set training.method: lora "
                "or remove the lora section"
            )
        if self.method == "qlora" and self.precision in ("fp8", "nvfp4"):
            raise ValueError(
                "training.method qlora dequantises its 4-bit NF4 base to 16 bit for every matrix multiply, "
                f"so precision {self.precision} does not apply; use precision: bf16 (or method: lora with fp8)"
            )
        return self

    @model_validator(mode="after")
    def _check_batch(self) -> TrainingWorkload:
        if (self.global_batch is None) == (self.global_batch_tokens is None):
            raise ValueError("give exactly one of global_batch (sequences) and global_batch_tokens (tokens)")
        if self.global_batch_tokens is not None and self.global_batch_tokens % self.seq_len:
            seqs = self.global_batch_tokens // self.seq_len
            choices = f"{seqs} ({seqs * self.seq_len} tokens) or {seqs + 1}" if seqs else "1 (one sequence)"
            raise ValueError(
                f"global_batch_tokens ({self.global_batch_tokens}) is not a multiple of seq_len ({self.seq_len}); "
                f"use global_batch: {choices}, or a power-of-two token count such as '16Mi'"
            )
        return self

    @model_validator(mode="after")
    def _check_phases(self) -> TrainingWorkload:
        if not self.phases:
            return self
        total = sum(p.tokens for p in self.phases)
        if self.train_tokens is None:
            raise ValueError("training.phases need training.train_tokens (the phases are part of the run)")
        if total > self.train_tokens:
            raise ValueError(
                f"training.phases hold {total:.4g} tokens, more than training.train_tokens "
                f"({self.train_tokens:.4g}); the phases are part of the run, so lower their tokens"
            )
        return self

    @property
    def global_batch_seqs(self) -> int:
        """Sequences per optimizer step, whichever way the batch was given."""
        if self.global_batch is not None:
            return self.global_batch
        assert self.global_batch_tokens is not None  # guaranteed by _check_batch
        return self.global_batch_tokens // self.seq_len


class Targets(BaseModel):
    """What the plan must achieve and which hardware it may use."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
    )

    deadline_s: Annotated[DurationS, _POSITIVE] | None = Field(
        default=None,
        validation_alias=AliasChoices("deadline", "deadline_s"),
        description="Wall-clock time the run must finish within (e.g. '60d'); needs training.train_tokens.",
    )
    gpus: Annotated[CountInt, _POSITIVE] | None = Field(
        default=None, description="A fixed accelerator count; null lets the search choose."
    )
    max_gpus: Annotated[CountInt, _POSITIVE] = Field(
        default=DEFAULT_MAX_GPUS,
        le=MAX_GPUS_LIMIT,
        description=(
            "Largest cluster the search considers when targets.gpus is not fixed (default 32,768 keeps plans "
            "fast; up to 1,048,576). A fixed targets.gpus may exceed it."
        ),
    )
    accelerators: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ACCELERATORS,
        json_schema_extra=ACCELERATORS_SCHEMA_EXTRA,
        description="Catalog ids of the accelerators allowed (see `rightsize catalog`); 'all' or null for every one.",
    )
    node: str | None = Field(
        default=None, min_length=1, description="Catalog id of a node type to use instead of the default."
    )
    providers: ProviderList = providers_field()
    objective: Literal["time", "gpu_hours", "cost"] = Field(
        default="gpu_hours", description="What the search minimises among plans that meet the targets."
    )

    @model_validator(mode="before")
    @classmethod
    def _deadline_has_unit(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("deadline",))

    @field_validator("accelerators", mode="before")
    @classmethod
    def _all_means_every(cls, value: Any) -> Any:
        """'all' (alone or as the only list item) means no restriction; a single id becomes a list."""
        return all_means_every(value)


class TrainingSpec(CheckedSpec):
    """A training job to size: the model, the workload, the targets and any fixed parallelism."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    kind: Literal["training"] = Field(
        default="training", description="Spec kind; 'training' for pre-training and fine-tuning runs."
    )
    name: str | None = Field(
        default=None, max_length=200, description="A name for this plan, shown in reports."
    )
    model: ModelArch = Field(
        description=(
            "The model: a preset name (`rightsize models`), a path to a Hugging Face config.json "
            "(relative to the spec file), a full inline architecture, or {preset: NAME, ...overrides}."
        )
    )
    training: TrainingWorkload = Field(
        description="The training workload: sequence length, batch, run length."
    )
    targets: Targets = Field(
        default_factory=Targets, description="Deadline, accelerator choices and objective."
    )
    parallel: ParallelSettings = Field(
        default_factory=ParallelSettings, description="Parallelism fixed by the user; the rest is searched."
    )
    infrastructure: Infrastructure = Field(
        default_factory=Infrastructure,
        description="Facility, fabric, storage, cost, margins, growth and schedule around the accelerators.",
    )
    _notes: tuple[str, ...] = PrivateAttr(default=())  # how unit-less figures were read (spec.load)
    prices: UserPrices = Field(
        default_factory=UserPrices,
        description=(
            "Negotiated prices merged over the catalog, keyed by accelerator or node id, e.g. "
            "{h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}, hgx-h100: {capex_usd: 250000}, power_usd_per_kwh: 0.07}."
        ),
    )

    @field_validator("model", mode="before")
    @classmethod
    def _resolve(cls, value: Any, info: ValidationInfo) -> Any:
        return resolve_model_field(value, info)

    @model_validator(mode="after")
    def _check_consistency(self) -> TrainingSpec:
        problems = _parallel_problems(self.model, self.training, self.targets, self.parallel)
        if self.targets.deadline_s is not None and self.training.train_tokens is None:
            problems.append("targets.deadline needs training.train_tokens (the tokens the run must process)")
        batch_tokens = self.training.global_batch_seqs * self.training.seq_len
        tokens = self.training.train_tokens
        if tokens is not None and batch_tokens > tokens:
            problems.append(
                f"training.train_tokens ({tokens:.4g}) is less than one optimizer step of "
                f"global batch x seq_len = {batch_tokens:,} tokens; the run would not finish a step. "
                "Raise train_tokens or lower the global batch"
            )
        if problems:
            raise ValueError("\n".join(problems))
        return self


def _parallel_problems(
    model: ModelArch, workload: TrainingWorkload, targets: Targets, par: ParallelSettings
) -> list[str]:
    """Every way the fixed parallel settings contradict the model, the workload or the GPU count."""
    problems: list[str] = []
    if par.tp is not None and model.heads % par.tp:
        problems.append(f"parallel.tp ({par.tp}) must divide the model's attention heads ({model.heads})")
    if par.pp is not None and par.pp > model.layers:
        problems.append(f"parallel.pp ({par.pp}) cannot exceed the model's layers ({model.layers})")
    degrees = {"tp": par.tp, "pp": par.pp, "dp": par.dp, "cp": par.cp}
    fixed = {key: degree for key, degree in degrees.items() if degree is not None}
    product = 1
    for degree in fixed.values():
        product *= degree
    shown = " * ".join(f"{key} {degree}" for key, degree in fixed.items())
    if targets.gpus is not None and fixed:
        if len(fixed) == len(degrees) and product != targets.gpus:
            problems.append(f"{shown} = {product} GPUs, but targets.gpus is {targets.gpus}")
        elif targets.gpus % product:
            problems.append(f"{shown} = {product} does not divide targets.gpus ({targets.gpus})")
    if par.ep is not None and par.ep > 1:
        if not model.is_moe:
            problems.append(f"parallel.ep ({par.ep}) needs a mixture-of-experts model; {model.name} is dense")
        elif model.experts % par.ep:
            problems.append(f"parallel.ep ({par.ep}) must divide the model's experts ({model.experts})")
        if par.dp is not None and (par.dp * (par.cp or 1)) % par.ep:
            problems.append(f"parallel.ep ({par.ep}) must divide dp * cp ({par.dp * (par.cp or 1)})")
    if par.cp is not None and workload.seq_len % par.cp:
        problems.append(f"parallel.cp ({par.cp}) must divide training.seq_len ({workload.seq_len})")
    batch = workload.global_batch_seqs
    if par.micro_batch is not None and batch % par.micro_batch:
        problems.append(
            f"parallel.micro_batch ({par.micro_batch}) must divide the global batch ({batch} sequences)"
        )
    if par.dp is not None and batch % (par.dp * (par.micro_batch or 1)):
        problems.append(
            f"the global batch ({batch} sequences) must split evenly over dp ({par.dp}) "
            f"micro-batches of {par.micro_batch or 1}"
        )
    if par.vpp is not None and par.vpp > 1 and par.pp is not None:
        if par.pp == 1:
            problems.append(f"parallel.vpp ({par.vpp}) needs pipeline parallelism (pp > 1)")
        elif model.layers + 2 < par.pp * par.vpp:
            # Uneven chunks are allowed (Megatron's first/last-stage layer counts, Llama 3's
            # adjusted schedule); each chunk needs at least one layer, or the embedding or the
            # loss (Megatron-Core's account_for_embedding/loss_in_pipeline_split: 126 layers as
            # PP16 x VP8).
            problems.append(
                f"layers ({model.layers}) plus the embedding and loss chunks must fill pp * vpp = "
                f"{par.pp * par.vpp} chunks with one layer each"
            )
    if par.sequence_parallel and par.tp == 1:
        problems.append("parallel.sequence_parallel needs tensor parallelism (tp > 1)")
    return problems
