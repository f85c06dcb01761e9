"""The inference-serving spec: which model, what traffic, which latency targets, what the user fixed.

`InferenceSpec` (`kind: inference`) is what `rightsize plan` reads for a model served to users
(scenario 'serving': requests arrive at a rate and must meet latency SLOs), for a batch job
('offline': maximum throughput) or for a fixed number of concurrent streams ('fixed_batch', e.g.
batch-1 latency). Like `TrainingSpec`, every field carries a description and building a spec computes
nothing; the checks here are only those that make a spec self-contradictory, each naming the field.

Prompt and output lengths are distributions (`LengthDist`, in `lengths.py`): a plain number means a
fixed length, otherwise normal, lognormal or empirical (one length per line of a file, read when the
spec loads).
"""

from __future__ import annotations

import re
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
from rightsize.spec.decoding import Lora, Speculative
from rightsize.spec.infrastructure import Infrastructure
from rightsize.spec.lengths import LengthDist, length_json_schema
from rightsize.spec.model import ModelArch
from rightsize.spec.prices import ProviderList, UserPrices, providers_field
from rightsize.spec.shared import (
    ACCELERATORS_SCHEMA_EXTRA,
    MAX_ACCELERATORS,
    POSITIVE,
    all_means_every,
    resolve_model_field,
)
from rightsize.spec.units import Count, CountInt, DurationS, Utilisation, refuse_bare_durations

__all__ = [
    "SLO",
    "Engine",
    "InferenceSpec",
    "InferenceTargets",
    "InferenceWorkload",
    "KVPrecision",
    "LengthDist",
    "Lora",
    "Policy",
    "Precision",
    "Speculative",
    "Traffic",
]

Precision = Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"]
"""Numeric format of the weights (int4/fp4: weight-only or block-scaled quantisation)."""
KVPrecision = Literal["bf16", "fp16", "fp8", "int8", "int4"]
"""Numeric format of the KV cache."""

_PERCENTILE_RE = re.compile(r"^\s*[pP]?\s*(\d+(?:\.\d*)?|\.\d+)\s*%?\s*$")


# ------------------------------------------------------------------------------------------ traffic


class Traffic(BaseModel):
    """The requests: how fast they arrive and how long their prompts and answers are."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
    )

    rate_per_s: Annotated[Count, POSITIVE] | None = Field(
        default=None,
        validation_alias=AliasChoices("rate", "rate_per_s"),
        examples=[10, 2.5],
        description=(
            "Average requests per second; needed for scenario 'serving'. Defaults to peak_rate when only "
            "the peak is given."
        ),
    )
    peak_rate_per_s: Annotated[Count, POSITIVE] | None = Field(
        default=None,
        validation_alias=AliasChoices("peak_rate", "peak_rate_per_s"),
        examples=[50],
        description="Requests per second in the busiest period; capacity is sized for it. Defaults to rate.",
    )
    arrival: Literal["poisson", "bursty"] = Field(
        default="poisson",
        description=(
            "Arrival process: 'poisson' (independent users) or 'bursty' (inter-arrival times with the "
            "coefficient of variation burst_cv)."
        ),
    )
    burst_cv: float = Field(
        default=1.0,
        gt=0,
        description=(
            "Coefficient of variation of inter-arrival times for 'bursty' arrivals: 1 is Poisson, "
            "above 1 burstier (e.g. 2-4 for agentic or batch-submitted traffic)."
        ),
    )
    prompt_tokens: LengthDist = Field(
        json_schema_extra=length_json_schema,
        description="Prompt (input) length per request in tokens: a number for fixed, or a distribution.",
    )
    output_tokens: LengthDist = Field(
        json_schema_extra=length_json_schema,
        description="Generated (output) length per request in tokens: a number for fixed, or a distribution.",
    )
    prefix_cache_hit_rate: float = Field(
        default=0.0,
        ge=0,
        lt=1,
        description=(
            "Fraction of prompt tokens served from a prefix cache (shared system prompts, multi-turn "
            "history), from 0 up to but excluding 1."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _rates_default_to_each_other(cls, data: Any) -> Any:
        """Given one of rate and peak_rate, the other defaults to it (the model is frozen, so fill here)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        rate_key = next((key for key in ("rate", "rate_per_s") if data.get(key) is not None), None)
        peak_key = next((key for key in ("peak_rate", "peak_rate_per_s") if data.get(key) is not None), None)
        if rate_key and not peak_key:
            data["peak_rate"] = data[rate_key]
        elif peak_key and not rate_key:
            data["rate"] = data[peak_key]
        return data

    @field_validator("peak_rate_per_s")
    @classmethod
    def _peak_at_least_rate(cls, value: float | None, info: ValidationInfo) -> float | None:
        rate = info.data.get("rate_per_s")
        if value is not None and rate is not None and value < rate:
            raise ValueError(f"must be at least the average rate ({rate:g} requests/s)")
        return value

    @field_validator("burst_cv")
    @classmethod
    def _cv_needs_bursty(cls, value: float, info: ValidationInfo) -> float:
        if value != 1.0 and info.data.get("arrival") == "poisson":
            raise ValueError(
                "applies only to arrival: bursty (Poisson arrivals have a CV of 1); set arrival: bursty"
            )
        return value


# ---------------------------------------------------------------------------------------------- SLO


def _parse_percentile(value: Any) -> Any:
    """95, "95", "p95", "P99.9" or "95%" -> a float; anything else is left for the type check."""
    if isinstance(value, str):
        match = _PERCENTILE_RE.match(value)
        if match is None:
            raise ValueError("write a percentile such as 95, 'p95' or 'p99.9'")
        return float(match[1])
    return value


def _percentile_in_range(value: float) -> float:
    if not 50 <= value <= 99.99:
        hint = " (a percentile, not a fraction: 0.95 is written 95)" if 0 < value < 1 else ""
        raise ValueError(f"must be between 50 and 99.99{hint}")
    return value


class SLO(BaseModel):
    """Latency targets, each judged at `percentile`; a target left out is not checked."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
    )

    ttft_s: Annotated[DurationS, POSITIVE] | None = Field(
        default=None,
        validation_alias=AliasChoices("ttft", "ttft_s"),
        description="Time to first token, queueing included (e.g. '500ms').",
    )
    tpot_s: Annotated[DurationS, POSITIVE] | None = Field(
        default=None,
        validation_alias=AliasChoices("tpot", "tpot_s"),
        description="Time per output token after the first (inter-token latency, e.g. '50ms').",
    )
    e2e_s: Annotated[DurationS, POSITIVE] | None = Field(
        default=None,
        validation_alias=AliasChoices("e2e", "e2e_s"),
        description="End-to-end request latency, from arrival to the last token (e.g. '20s').",
    )
    percentile: Annotated[
        float,
        WithJsonSchema(
            {
                "anyOf": [
                    {"type": "number", "minimum": 50, "maximum": 99.99},
                    {"type": "string", "pattern": r"^[pP]?\d+(\.\d*)?%?$"},
                ],
                "examples": [95, "p99"],
            }
        ),
    ] = Field(
        default=95.0,
        description="The percentile every SLO is judged at, 50 to 99.99 (95, 'p95' or 'p99.9').",
    )
    goodput: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Fraction of requests that must meet every SLO at once (0 < goodput <= 1); null: not checked.",
    )

    @field_validator("percentile", mode="before")
    @classmethod
    def _percentile_text(cls, value: Any) -> Any:
        return _parse_percentile(value)

    @field_validator("percentile")
    @classmethod
    def _percentile_range(cls, value: float) -> float:
        return _percentile_in_range(value)

    @field_validator("e2e_s")
    @classmethod
    def _e2e_after_first_token(cls, value: float | None, info: ValidationInfo) -> float | None:
        ttft = info.data.get("ttft_s")
        if value is not None and ttft is not None and value < ttft:
            raise ValueError(f"cannot be shorter than slo.ttft ({ttft:g} s)")
        return value

    # ------------------------------------------------------------------------------------------- engine

    @model_validator(mode="before")
    @classmethod
    def _latencies_have_units(cls, data: Any) -> Any:
        return refuse_bare_durations(data, ("ttft", "tpot", "e2e"))


class Engine(BaseModel):
    """How the serving engine (vLLM, SGLang, TensorRT-LLM) batches and caches."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    name: str | None = Field(
        default=None,
        min_length=1,
        examples=["vllm", "tensorrt-llm", "sglang"],
        description=(
            "Serving engine (vllm, tensorrt-llm, sglang, gpt-fast): its defaults for KV-cache memory, "
            "running-sequence limit and block size apply (catalog engines.yaml); null: vLLM's conventions."
        ),
    )
    version: str | None = Field(
        default=None,
        min_length=1,
        examples=["0.10.0", "1.0.0"],
        description=(
            "Engine version, recorded with the plan: picks measured kernels of that version and the "
            "release's own behaviour where it differs (catalog engines.yaml releases; e.g. vLLM before 0.8.0 runs V0)."
        ),
    )
    continuous_batching: bool = Field(
        default=True,
        description="Admit and retire requests every iteration (Orca-style) instead of per batch.",
    )
    chunked_prefill: bool = Field(
        default=True, description="Split long prefills into chunks mixed with decode steps (Sarathi-style)."
    )
    chunk_tokens: Annotated[CountInt, POSITIVE] = Field(
        default=2048, description="Prefill token budget per iteration when chunked_prefill is on."
    )
    block_tokens: Annotated[CountInt, POSITIVE] = Field(
        default=16,
        description="Tokens per paged KV-cache block (PagedAttention); caps memory waste per sequence.",
    )
    max_batch: Annotated[CountInt, POSITIVE] | None = Field(
        default=None,
        description="Most concurrent sequences per replica; null: as many as KV-cache memory allows.",
    )
    speculative: Speculative | None = Field(
        default=None, description="Speculative decoding settings; null: plain autoregressive decoding."
    )
    lora: Lora | None = Field(
        default=None,
        description="Multi-LoRA serving (adapter count, rank, GPU slots, targeted modules); null: the base model only.",
    )


# ---------------------------------------------------------------------------------- workload, targets


class InferenceWorkload(BaseModel):
    """What the deployment does: the scenario and the numerics of weights and KV cache."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    weight_precision: Precision = Field(
        default="bf16",
        description="Numeric format of the weights: bf16, fp16, fp8, int8, int4 or fp4 (quantised).",
    )
    kv_precision: KVPrecision = Field(
        default="bf16", description="Numeric format of the KV cache: bf16, fp16, fp8, int8 or int4."
    )
    scenario: Literal["serving", "offline", "fixed_batch"] = Field(
        default="serving",
        description=(
            "'serving': requests arrive at traffic.rate and must meet the SLOs; 'offline': a batch job "
            "run for maximum throughput; 'fixed_batch': exactly `batch` concurrent streams (e.g. batch-1 latency)."
        ),
    )
    batch: Annotated[CountInt, POSITIVE] | None = Field(
        default=None, description="Concurrent request streams for scenario 'fixed_batch'."
    )
    expert_parallel: Annotated[CountInt, POSITIVE] | None = Field(
        default=None,
        description=(
            "Wide expert parallelism for a mixture-of-experts model (DeepSeek-V3/R1 style): GPUs per replica, "
            "attention data-parallel on each, routed experts split over all of them, tokens moved by all-to-all "
            "over NVLink and the RDMA NICs; null: experts stay inside the tensor-parallel group."
        ),
    )
    expert_imbalance: float = Field(
        default=1.0,
        ge=1.0,
        le=8.0,
        description=(
            "Busiest GPU's routed-token load over the mean under expert parallelism (1 = balanced, what EPLB's "
            "redundant experts aim for); measure it with your engine's expert statistics."
        ),
    )
    disaggregation: Literal["never", "auto", "always"] = Field(
        default="never",
        description=(
            "Disaggregated prefill and decode (separate pools, KV cache moved over the fabric, as NVIDIA Dynamo, "
            "llm-d, SGLang and vLLM's KV connectors run it): 'auto' sizes both pools, simulates them and keeps "
            "whichever of aggregated and disaggregated wins the objective, stating both; 'always' uses it when "
            "its pools meet the SLOs; 'never' (default) plans aggregated replicas only. Scenario 'serving' only."
        ),
    )


class InferenceTargets(BaseModel):
    """Which hardware the deployment may use, what is fixed, and what the search minimises."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

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
    tp: Annotated[CountInt, POSITIVE] | None = Field(
        default=None,
        description="A fixed tensor-parallel degree (GPUs per replica); null lets the search choose.",
    )
    replicas: Annotated[CountInt, POSITIVE] | None = Field(
        default=None, description="A fixed number of model replicas; null lets the search choose."
    )
    pp: Annotated[CountInt, POSITIVE] | None = Field(
        default=None,
        description=(
            "A fixed pipeline-parallel degree per replica (stages, usually one node each, tp GPUs per stage); "
            "null: the search splits a replica over nodes only when the model does not fit one node."
        ),
    )
    max_nodes_per_replica: Annotated[CountInt, POSITIVE] = Field(
        default=4,
        le=64,
        description=(
            "Most nodes one replica may span (tensor parallelism inside a node, pipeline or tensor parallelism "
            "across nodes over the scale-out NICs); 1 keeps every replica inside one node."
        ),
    )
    weight_precisions: list[Precision] | None = Field(
        default=None,
        description=(
            "Weight precisions (quantisations) the search may choose from, e.g. [bf16, fp8, int4]; "
            "accuracy is the user's call, so the default is only serving.weight_precision."
        ),
    )
    providers: ProviderList = providers_field()
    objective: Literal["cost", "gpus", "latency"] = Field(
        default="cost",
        description="What the search minimises among deployments that meet the SLOs: cost, GPU count or latency.",
    )

    @field_validator("accelerators", mode="before")
    @classmethod
    def _all_means_every(cls, value: Any) -> Any:
        """'all' (alone or as the only list item) means no restriction; a single id becomes a list."""
        return all_means_every(value)


class Policy(BaseModel):
    """Safety margins the sizing keeps on top of the requested traffic."""

    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True, populate_by_name=True
    )

    headroom: float = Field(
        default=0.2,
        ge=0,
        lt=1,
        description="Margin on the peak rate: capacity is sized for peak_rate * (1 + headroom); 0.15-0.25 is typical.",
    )
    utilisation_target: Utilisation = Field(
        default=0.8,
        validation_alias=AliasChoices("utilisation_target", "utilization_target"),
        description="Busiest a replica may be at peak, 0.05 to 1; lower keeps queueing delay down.",
    )


# --------------------------------------------------------------------------------------------- spec


class InferenceSpec(CheckedSpec):
    """A model deployment to size: the model, the serving scenario, the traffic, the SLOs and the engine."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    kind: Literal["inference"] = Field(description="Spec kind; 'inference' for serving a model.")
    name: str | None = Field(
        default=None, max_length=200, description="A name for this plan, shown in reports."
    )
    model: ModelArch = Field(
        description=(
            "The model: a preset name (`rightsize models`), a path to a Hugging Face config.json "
            "(relative to the spec file), a full inline architecture, or {preset: NAME, ...overrides}."
        )
    )
    serving: InferenceWorkload = Field(
        default_factory=InferenceWorkload,
        description="The scenario (serving, offline, fixed_batch) and the precision of weights and KV cache.",
    )
    traffic: Traffic = Field(
        description="Request rate, arrival process and prompt/output lengths (lengths are needed in every scenario)."
    )
    slo: SLO = Field(
        default_factory=SLO, description="Latency targets and the percentile they are judged at."
    )
    engine: Engine = Field(
        default_factory=Engine, description="Serving-engine behaviour: batching, chunked prefill, KV blocks."
    )
    targets: InferenceTargets = Field(
        default_factory=InferenceTargets,
        description="Accelerator choices, fixed tensor parallelism or replica count, and the objective.",
    )
    policy: Policy = Field(default_factory=Policy, description="Headroom and utilisation margins.")
    infrastructure: Infrastructure = Field(
        default_factory=Infrastructure,
        description="Facility, fabric, storage, cost, growth around the replicas (margins come from `policy`).",
    )
    _notes: tuple[str, ...] = PrivateAttr(default=())  # how unit-less figures were read (spec.load)
    prices: UserPrices = Field(
        default_factory=UserPrices,
        description=(
            "Negotiated prices merged over the catalog, keyed by accelerator or node id, e.g. "
            "{h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}, hgx-h100: {capex_usd: 250000}, power_usd_per_kwh: 0.07}."
        ),
    )
    seed: int = Field(
        default=0,
        ge=0,
        le=2**63 - 1,
        description="Seed of the request simulation (0 to 2^63-1), for reproducible results.",
    )

    @field_validator("model", mode="before")
    @classmethod
    def _resolve(cls, value: Any, info: ValidationInfo) -> Any:
        return resolve_model_field(value, info)

    @model_validator(mode="after")
    def _check_consistency(self) -> InferenceSpec:
        problems = _inference_problems(self)
        if problems:
            raise ValueError("\n".join(problems))
        return self


def _inference_problems(spec: InferenceSpec) -> list[str]:
    """Every way the sections contradict each other (the scenario, the traffic, the model, the targets)."""
    problems: list[str] = []
    scenario, traffic, workload = spec.serving.scenario, spec.traffic, spec.serving
    if scenario == "serving" and traffic.rate_per_s is None:
        problems.append(
            "traffic.rate is required for serving.scenario 'serving': the average requests per second "
            "(e.g. rate: 10; add peak_rate for the busiest period)"
        )
    if scenario != "serving" and traffic.rate_per_s is not None:
        problems.append(
            f"traffic.rate and traffic.peak_rate apply only to serving.scenario 'serving', not '{scenario}'; "
            "remove them or set scenario: serving"
        )
    if scenario != "serving" and workload.disaggregation != "never":
        problems.append(
            f"serving.disaggregation ({workload.disaggregation!r}) applies only to scenario 'serving', not "
            f"'{scenario}'; remove it or set scenario: serving"
        )
    if workload.expert_parallel is not None and not spec.model.is_moe:
        problems.append(
            f"serving.expert_parallel ({workload.expert_parallel}) needs a mixture-of-experts model; "
            f"{spec.model.name} is dense: remove it (tensor parallelism is set by targets.tp)"
        )
    if (
        workload.expert_parallel is not None
        and spec.model.is_moe
        and workload.expert_parallel > spec.model.experts
    ):
        problems.append(
            f"serving.expert_parallel ({workload.expert_parallel}) exceeds the model's {spec.model.experts} routed "
            "experts: each GPU must hold at least one"
        )
    if scenario == "fixed_batch" and workload.batch is None:
        problems.append(
            "serving.batch is required for serving.scenario 'fixed_batch': the number of concurrent streams"
        )
    if scenario != "fixed_batch" and workload.batch is not None:
        problems.append(
            f"serving.batch ({workload.batch}) applies only to scenario 'fixed_batch', not '{scenario}'; "
            "to cap concurrency use engine.max_batch"
        )
    max_batch = spec.engine.max_batch
    if workload.batch is not None and max_batch is not None and max_batch < workload.batch:
        problems.append(f"engine.max_batch ({max_batch}) is smaller than serving.batch ({workload.batch})")
    tp = spec.targets.tp
    if tp is not None and spec.model.heads % tp:
        problems.append(f"targets.tp ({tp}) must divide the model's attention heads ({spec.model.heads})")
    context = spec.model.max_seq_len
    prompt, output = traffic.prompt_tokens.mean_tokens, traffic.output_tokens.mean_tokens
    if context is not None and prompt + output > context:
        problems.append(
            f"the mean request (prompt {prompt:g} + output {output:g} = {prompt + output:g} tokens) does not "
            f"fit the model's context ({context} tokens, model.max_seq_len); shorten traffic.prompt_tokens "
            "or traffic.output_tokens, or raise model.max_seq_len"
        )
    return problems
