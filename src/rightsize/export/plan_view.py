"""The one place `export` reads a plan: a versioned plan dict (`--format json`) becomes
typed, read-only views that the Slurm, Kubernetes and Prometheus writers use.

Every exporter reads these views only, never the plan dict, so a change to the plan's
JSON shape (a new `schema_version`) is adapted here and nowhere else. A plan planned from
a spec goes through the same path (`report.render.result_dict`), so a saved JSON plan
and a freshly planned spec export identically.

Figures the plan does not carry but the catalog does (GPUs per node, HBM, vendor) are
looked up by the plan's accelerator and node ids.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass
from typing import Any

from rightsize.catalog import get_accelerator, get_node
from rightsize.errors import BadInput
from rightsize.export.disagg_view import DisaggView, disagg_view
from rightsize.export.names import choice, one_line
from rightsize.export.plan_fields import INT_MAX, MAX_GPUS, MAX_PARALLEL, Fields, check_num
from rightsize.perf import remat

READ_SCHEMA_VERSIONS = (1, 2)  # plan JSON versions this adapter understands (2: typed plan, #12)
EXPORTABLE = ("training_plan", "serving_plan")
KIND_EXPORTS = ("vision_plan", "recommendation_plan")  # export.kind_exports

# Ranges a plan's figures must fall in (far beyond any real plan; they keep a hand-edited
# plan from overflowing arithmetic or writing absurd files).
MAX_LAYERS = 100_000
MAX_WIDTH = 10**8
MAX_TOKENS = 1e18
MAX_TOKENS_INT = 10**12
MAX_SECONDS = 1e12  # about 31,700 years
MAX_BYTES = 1e18
MAX_RATE = 1e9
RECOMPUTE = remat.NAMES  # Megatron's three, MaxText's named and custom policies, torchtitan's selective_op
PRECISIONS = ("bf16", "fp16", "fp8", "nvfp4")
METHODS = ("full", "lora", "qlora")
SERVE_PRECISIONS = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")
FABRICS = ("infiniband", "roce")
MLPS = ("gelu", "swiglu")
NORMS = ("layernorm", "rmsnorm")
POSITIONS = ("rope", "learned", "alibi")
PREEMPTION = ("Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any")


@dataclass(frozen=True)
class Header:
    """What every artefact names: the plan it came from."""

    name: str
    kind: str
    schema_version: int
    model: str
    planned: str  # date the plan was made (or read), ISO 8601
    exported: str  # date of this export, ISO 8601


@dataclass(frozen=True)
class ModelView:
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    experts: int
    experts_per_token: int
    max_seq_len: int
    hf_id: str | None
    head_dim: int
    expert_ffn_hidden: int | None
    shared_experts: int
    dense_layers: int  # leading dense (non-MoE) layers
    kv_lora_rank: int | None  # multi-head latent attention (MLA) when set
    q_lora_rank: int | None
    qk_rope_head_dim: int | None
    v_head_dim: int | None  # Hugging Face repository named in the preset's source, when there is one
    mlp: str  # gelu / swiglu
    norm: str  # layernorm / rmsnorm
    tied_embeddings: bool
    positions: str  # rope / learned / alibi
    rope_theta: float
    rope_scaling_factor: float | None  # Llama 3.1's rotary scaling


@dataclass(frozen=True)
class HardwareView:
    accelerator: str
    vendor: str  # nvidia / amd / ...
    node: str
    gpus_per_node: int
    hbm_bytes: float
    tdp_w: float
    cpu_cores_per_node: int
    host_memory_bytes_per_node: float


@dataclass(frozen=True)
class TrainingView:
    header: Header
    model: ModelView
    hw: HardwareView
    gpus: int
    nodes: int
    tp: int
    pp: int
    vpp: int
    dp: int
    cp: int
    ep: int
    micro_batch: int
    recompute: str
    sequence_parallel: bool
    zero_stage: int
    seq_len: int
    global_batch: int
    precision: str
    method: str
    lora_rank: int | None
    lora_alpha: float | None
    train_tokens: float | None
    step_time_s: float
    run_s: float  # planned wall time, failures and restarts included
    safety_margin: float
    checkpoint_interval_s: float
    mtbf_s: float | None
    fabric_kind: str | None  # infiniband / roce; None when the job fits in one node
    nic_gbps_per_gpu: float | None
    rails: int | None
    memory_per_gpu_bytes: float
    cpu_cores_need_per_gpu: float
    host_memory_need_bytes_per_gpu: float
    gpu_power_typical_w: float
    gpu_activity_fraction: float  # planned engine activity (the power model's)
    utilisation_target: float
    mfu: float
    priced_instance: tuple[str, str] | None = None  # (provider, instance type) the cloud cost priced
    checkpoints_bytes: float = 0.0  # the retained checkpoints (sizing.storage)
    dataset_bytes: float = 0.0  # the preprocessed training data (sizing.storage)
    moe_dispatch_dtype: str = "bf16"  # the MoE token dispatch on the wire the plan timed
    # The plan's checkpoint saves are asynchronous (perf.checkpoint; sizing.reliability
    # checkpoint_mode): each framework writer turns its own async save on exactly then.
    checkpoint_async: bool = False

    @property
    def steps(self) -> int:
        """Optimizer steps of the whole run (tokens / tokens per step), at least 1."""
        if not self.train_tokens:
            return max(1, int(self.run_s / self.step_time_s))
        return max(1, math.ceil(self.train_tokens / (self.global_batch * self.seq_len)))


@dataclass(frozen=True)
class ServingView:
    header: Header
    model: ModelView
    hw: HardwareView
    tp: int
    replicas: int
    weight_precision: str
    kv_precision: str
    replica_capacity_rps: float
    design_rate_rps: float
    mean_rate_rps: float
    ttft_slo_s: float | None
    tpot_slo_s: float | None
    slo_percentile: float
    ttft_planned_s: float  # at the SLO percentile, planned load
    tpot_planned_s: float
    e2e_p50_s: float
    mean_prompt_tokens: float
    mean_output_tokens: float
    max_model_len: int
    kv_capacity_tokens: float  # per replica
    kv_bytes_per_token: float
    weights_bytes_per_gpu: float
    max_batch: int | None  # engine.max_batch from the spec
    block_tokens: int
    headroom: float
    utilisation_target: float
    spare_replicas: int
    gpu_power_typical_w: float
    gpu_activity_fraction: float
    cpu_cores_need_per_gpu: float
    host_memory_need_bytes_per_gpu: float
    scenario: str = "serving"  # serving (requests with SLOs) / offline / fixed_batch
    stream_batch: int | None = None  # serving.batch: concurrent streams of a fixed_batch plan
    priced_instance: tuple[str, str] | None = None  # (provider, instance type) the cloud cost priced
    # Optional plan fields (absent in older plans; safe defaults): best.pp, best.ep,
    # best.nodes_per_replica, best.disaggregated, spec.engine.name.
    pp: int = 1  # pipeline-parallel stages per replica
    ep: int = 1  # expert-parallel degree (MoE); 1: experts follow TP
    planned_nodes_per_replica: int | None = None  # the planner's figure when it gives one
    disaggregated: DisaggView | None = None  # separate prefill / decode pools
    engine: str | None = None  # spec.engine.name: the engine the plan was sized for

    @property
    def attention_dp(self) -> int:
        """Attention data-parallel ranks per replica: wide expert parallelism (serving.
        expert_parallel) splits experts over `ep` GPUs, each holding its own attention
        (TP within a rank); 1 when experts stay inside the tensor-parallel group."""
        return max(1, self.ep // (self.tp * self.pp)) if self.ep > self.tp * self.pp else 1

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp * self.attention_dp

    @property
    def nodes_per_replica(self) -> int:
        if self.planned_nodes_per_replica:
            return self.planned_nodes_per_replica
        return max(1, math.ceil(self.gpus_per_replica / self.hw.gpus_per_node))

    @property
    def gpus_per_node_used(self) -> int:
        """GPUs one pod (node) of a replica takes."""
        return math.ceil(self.gpus_per_replica / self.nodes_per_replica)


def _today() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def header(plan: dict[str, Any]) -> Header:
    p = Fields(plan)
    version = plan.get("schema_version")
    if version not in READ_SCHEMA_VERSIONS or isinstance(version, bool):
        raise BadInput(
            f"The plan's schema_version is {one_line(repr(version))[:40]}; this rightsize reads {READ_SCHEMA_VERSIONS}.",
            "The plan JSON changed shape between versions.",
            "Re-plan the spec with this rightsize (`rightsize export SPEC.yaml ...`).",
        )
    now = _today()
    return Header(
        name=p.text("name", default="") or "plan",
        kind=p.text("kind", default="", max_len=40),
        schema_version=int(version),
        model=p.text("model", default=""),
        planned=p.text("created", default=now, max_len=40),
        exported=now,
    )


def _model(spec: Fields) -> ModelView:
    m = spec.sub("model")
    layers, hidden = m.integer("layers", 1, MAX_LAYERS), m.integer("hidden", 1, MAX_WIDTH)
    heads = m.integer("heads", 1, MAX_WIDTH)
    return ModelView(
        name=m.text("name", default="") or "model",
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=m.integer("kv_heads", 1, heads, default=heads),
        ffn_hidden=m.integer("ffn_hidden", 1, MAX_WIDTH, default=4 * hidden),
        vocab=m.integer("vocab", 1, MAX_WIDTH),
        experts=m.integer("experts", 0, MAX_WIDTH, default=0),
        experts_per_token=m.integer("experts_per_token", 0, MAX_WIDTH, default=0),
        max_seq_len=m.integer("max_seq_len", 0, INT_MAX, default=0) or 4096,
        hf_id=_hf_id(m.text("source", default="", max_len=10_000)),
        head_dim=m.integer("head_dim", 0, MAX_WIDTH, default=0) or max(1, hidden // heads),
        expert_ffn_hidden=m.integer("expert_ffn_hidden", 0, MAX_WIDTH, default=0) or None,
        shared_experts=m.integer("shared_experts", 0, MAX_WIDTH, default=0),
        dense_layers=m.integer("dense_layers", 0, layers, default=0),
        kv_lora_rank=m.integer("kv_lora_rank", 0, MAX_WIDTH, default=0) or None,
        q_lora_rank=m.integer("q_lora_rank", 0, MAX_WIDTH, default=0) or None,
        qk_rope_head_dim=m.integer("qk_rope_head_dim", 0, MAX_WIDTH, default=0) or None,
        v_head_dim=m.integer("v_head_dim", 0, MAX_WIDTH, default=0) or None,
        mlp=choice(m.text("mlp", default="swiglu", max_len=40), MLPS, "model mlp"),
        norm=choice(m.text("norm", default="layernorm", max_len=40), NORMS, "model norm"),
        tied_embeddings=m.flag("tied_embeddings"),
        positions=choice(m.text("positions", default="rope", max_len=40), POSITIONS, "model positions"),
        rope_theta=m.num("rope_theta", 1.0, 1e12, default=10000.0),
        rope_scaling_factor=m.num("rope_scaling_factor", 0.0, 1e6, default=0.0) or None,
    )


def _hf_id(source: str) -> str | None:
    found = re.search(r"\b([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)\s+config\.json", source)
    return found.group(1) if found else None


def _hardware(best: Fields) -> HardwareView:
    acc = get_accelerator(best.text("accelerator", max_len=100))
    nd = get_node(best.text("node", max_len=100))
    return HardwareView(
        accelerator=acc.id,
        vendor=acc.vendor.lower(),
        node=nd.id,
        gpus_per_node=nd.gpus_per_node,
        hbm_bytes=acc.hbm_bytes,
        tdp_w=acc.tdp_w,
        cpu_cores_per_node=nd.cpu_cores,
        host_memory_bytes_per_node=nd.host_memory_bytes,
    )


def plan_kind(plan: dict[str, Any]) -> str:
    header(plan)  # a plan of another schema version is refused before anything is read
    kind = str(plan.get("kind"))
    if kind in KIND_EXPORTS:  # vision and recommendation: their own module says what it writes
        return kind
    if kind not in EXPORTABLE and kind != "fleet_plan":
        raise BadInput(
            f"Plans of kind {one_line(kind)[:40]!r} cannot be exported yet.",
            f"Export writes job files for {', '.join(EXPORTABLE)} (LLM training, fine-tuning and serving).",
            "Export a training, fine-tuning or serving plan.",
        )
    return kind


def _parallel(v_best: Fields, layers: int) -> dict[str, Any]:
    par = v_best.sub("parallel")
    out: dict[str, Any] = {k: par.integer(k, 1, MAX_PARALLEL) for k in ("tp", "pp", "micro_batch")}
    out["dp"] = par.integer("dp", 1, MAX_GPUS)
    out |= {k: par.integer(k, 1, MAX_PARALLEL, default=1) for k in ("vpp", "cp", "ep")}
    # The embedding and the loss may take a virtual stage of their own (Megatron-Core's
    # account_for_embedding/loss_in_pipeline_split; the planner's `search.space`): layers + 2.
    if out["pp"] * out["vpp"] > layers + 2:
        raise BadInput(
            f"The plan's pipeline (`best.parallel.pp` x `vpp` = {out['pp'] * out['vpp']}) has more stages "
            f"than the model has layers ({layers}) plus the embedding and the loss.",
            "Each pipeline stage holds at least one layer, the embedding or the loss.",
            "Export a plan written by `rightsize plan SPEC --format json` (or pass the spec itself).",
        )
    out["recompute"] = choice(par.text("recompute", default="none", max_len=40), RECOMPUTE, "recompute")
    out["sequence_parallel"] = par.flag("sequence_parallel")
    out["zero_stage"] = par.integer("zero_stage", 0, 3, default=0)
    return out


def _training_run(spec: Fields, best: Fields, sizing: Fields, seq: int) -> dict[str, Any]:
    tr, rel, run = spec.sub("training"), sizing.sub("reliability", False), sizing.sub("run", False)
    gb = tr.integer("global_batch", 0, INT_MAX, default=0)
    gb = gb or max(1, tr.integer("global_batch_tokens", 1, MAX_TOKENS_INT) // seq)
    lora = tr.sub("lora", False)
    step = best.sub("step").num("step_time_s", 1e-9, MAX_SECONDS)
    margins = spec.sub("infrastructure", False).sub("margins", False)
    return {
        "global_batch": gb,
        "precision": choice(
            tr.text("precision", default="bf16", max_len=40), PRECISIONS, "training precision"
        ),
        "method": choice(tr.text("method", default="full", max_len=40), METHODS, "training method"),
        "lora_rank": lora.integer("rank", 0, MAX_WIDTH, default=0) or None,
        "lora_alpha": lora.num("alpha", 0.0, 1e6, default=0.0) or None,
        "train_tokens": tr.num("train_tokens", 0.0, MAX_TOKENS, default=0.0) or None,
        "step_time_s": step,
        "run_s": run.num("run_s", 0.0, MAX_SECONDS, default=0.0)
        or best.num("time_to_train_s", 0.0, MAX_SECONDS, default=0.0),
        "safety_margin": margins.num("safety_margin", 0.0, 10.0, default=0.2),
        "checkpoint_interval_s": rel.num("checkpoint_interval_s", 0.0, MAX_SECONDS, default=0.0)
        or best.sub("reliability", False).num("checkpoint_interval_s", 0.0, MAX_SECONDS, default=0.0)
        or 3600.0,
        "mtbf_s": rel.num("cluster_mtbf_s", 0.0, MAX_SECONDS, default=0.0) or None,
        "checkpoint_async": choice(
            rel.text("checkpoint_mode", default="sync", max_len=8), ("sync", "async"), "checkpoint mode"
        )
        == "async",  # fmt: skip
        "utilisation_target": margins.num("utilisation_target", 1e-3, 1.0, default=0.8),
    }


def _fabric(sizing: Fields) -> dict[str, Any]:
    fabric = sizing.sub("fabric", False)
    if not fabric.flag("needed"):
        return {"fabric_kind": None, "nic_gbps_per_gpu": None, "rails": None}
    return {
        "fabric_kind": choice(fabric.text("kind", max_len=40), FABRICS, "fabric kind"),
        "nic_gbps_per_gpu": fabric.num("nic_gbps_per_gpu", 0.0, 1e6),
        "rails": fabric.integer("rails", 0, MAX_PARALLEL, default=0) or None,
    }


def _host_needs(sizing: Fields) -> dict[str, Any]:
    nodes = sizing.sub("nodes", False)
    return {
        "cpu_cores_need_per_gpu": nodes.num("cpu_cores_need_per_gpu", 0.0, 1e4, default=0.0) or 2.0,
        "host_memory_need_bytes_per_gpu": nodes.num(
            "host_memory_need_bytes_per_gpu", 0.0, MAX_BYTES, default=0.0
        )
        or 32 * 2**30,
    }


def _power(sizing: Fields) -> dict[str, Any]:
    power = sizing.sub("power", False)
    typical = power.num("gpu_typical_w", 0.0, 1e5, default=0.0) or power.num(
        "gpu_tdp_w", 0.0, 1e5, default=0.0
    )
    return {
        "gpu_power_typical_w": typical,
        "gpu_activity_fraction": power.num("gpu_activity_fraction", 0.0, 1.0, default=0.0) or 1.0,
    }


_PRICED = re.compile(r"([a-z][a-z0-9-]{0,30}) ([A-Za-z0-9][A-Za-z0-9._-]{0,62}) \(")
SCENARIOS = ("serving", "offline", "fixed_batch")


def _priced_instance(sizing: Fields) -> tuple[str, str] | None:
    """(provider, instance type) from `sizing.cost.priced_instance` ("aws p5.48xlarge (8 GPUs)
    in us-east-1"); None when no instance was priced or the text is not that shape."""
    text = sizing.sub("cost", False).text("priced_instance", default="", max_len=300)
    found = _PRICED.match(text)
    return (found.group(1), found.group(2)) if found else None


def job_start_s(best: Fields) -> float:
    """The plan's own start-up line (`best.whole_run.parts`, "job start": scheduling, container
    and distributed init), 0 when the plan has none (plans before it was modelled)."""
    for part in best.sub("whole_run", False).items("parts", False):
        if isinstance(part, dict) and part.get("part") == "job start":
            return check_num(part.get("time_s"), "best.whole_run.parts", "time_s", 0.0, MAX_SECONDS)
    return 0.0


def _storage(sizing: Fields) -> dict[str, Any]:
    cap = sizing.sub("storage", False).sub("capacity", False)
    return {
        "checkpoints_bytes": cap.num("checkpoints_bytes", 0.0, MAX_BYTES, default=0.0),
        "dataset_bytes": cap.num("preprocessed_bytes", 0.0, MAX_BYTES, default=0.0),
    }


def training_view(plan: dict[str, Any]) -> TrainingView:
    p = Fields(plan)
    spec, best, sizing = p.sub("spec"), p.sub("best"), p.sub("sizing")
    model = _model(spec)
    seq = spec.sub("training").integer("seq_len", 1, MAX_TOKENS_INT)
    return TrainingView(
        header=header(plan),
        model=model,
        hw=_hardware(best),
        gpus=best.integer("gpus", 1, MAX_GPUS),
        nodes=sizing.sub("nodes").integer("nodes", 1, MAX_GPUS),
        seq_len=seq,
        **_parallel(best, model.layers),
        **_training_run(spec, best, sizing, seq),
        **_fabric(sizing),
        memory_per_gpu_bytes=best.sub("memory_per_gpu").num("total_bytes", 0.0, MAX_BYTES),
        **_host_needs(sizing),
        **_power(sizing),
        mfu=best.num("mfu", 0.0, 1.0, default=0.0),
        priced_instance=_priced_instance(sizing),
        **_storage(sizing),
        moe_dispatch_dtype=choice(
            spec.sub("training").text("moe_dispatch_dtype", default="bf16"),
            ("bf16", "fp8"),
            "training.moe_dispatch_dtype",
        ),
    )


def _length(traffic: Fields, key: str) -> tuple[float, float]:
    """(mean, max) of a length distribution; the max is mean + 4 sigma when not given (the
    simulator's sampled lengths stay under it)."""
    dist = traffic.sub(key)
    values = [check_num(x, dist.where, "values", 0.0, MAX_TOKENS) for x in dist.items("values", False)]
    mean = dist.num("mean", 0.0, MAX_TOKENS, default=0.0)
    mean = mean or (sum(values) / len(values) if values else dist.num("min", 0.0, MAX_TOKENS, default=1.0))
    top = dist.num("max", 0.0, MAX_TOKENS, default=0.0) or (max(values) if values else 0.0)
    return mean, top or mean + 4.0 * dist.num("std", 0.0, MAX_TOKENS, default=0.0)


def _latency(best: Fields, pct: float) -> dict[str, Any]:
    lat = best.sub("latency_s", False)
    # planned latency at the SLO percentile: the nearest reported percentile at or above it
    key = next((p for p in (50, 90, 95, 99) if p >= pct), 99)
    return {
        "ttft_planned_s": lat.num(f"ttft_p{key}_s", 0.0, MAX_SECONDS, default=0.0),
        "tpot_planned_s": lat.num(f"tpot_p{key}_s", 0.0, MAX_SECONDS, default=0.0),
        "e2e_p50_s": lat.num("e2e_p50_s", 0.0, MAX_SECONDS, default=0.0),
    }


def _serving_limits(spec: Fields, best: Fields, sizing: Fields) -> dict[str, Any]:
    mem, engine, policy = best.sub("memory", False), spec.sub("engine", False), spec.sub("policy", False)
    return {
        "kv_capacity_tokens": mem.num("kv_capacity_tokens", 0.0, MAX_TOKENS, default=0.0),
        "kv_bytes_per_token": mem.num("kv_bytes_per_token", 0.0, MAX_BYTES, default=0.0),
        "weights_bytes_per_gpu": mem.num("weights_bytes_per_gpu", 0.0, MAX_BYTES, default=0.0),
        "max_batch": engine.integer("max_batch", 0, MAX_TOKENS_INT, default=0) or None,
        "block_tokens": engine.integer("block_tokens", 1, 1 << 20, default=16),
        "headroom": policy.num("headroom", 0.0, 100.0, default=0.2),
        "utilisation_target": policy.num("utilisation_target", 1e-3, 1.0, default=0.8),
        "spare_replicas": sizing.sub("reliability", False).integer(
            "spare_replicas_recommended", 0, MAX_GPUS, default=0
        ),
    }


def serving_view(plan: dict[str, Any]) -> ServingView:
    p = Fields(plan)
    spec, best, sizing = p.sub("spec"), p.sub("best"), p.sub("sizing")
    slo, traffic = spec.sub("slo", False), spec.sub("traffic")
    pct = slo.num("percentile", 1e-6, 100.0, default=95.0)
    model = _model(spec)
    (prompt_mean, prompt_max), (out_mean, out_max) = (
        _length(traffic, "prompt_tokens"),
        _length(traffic, "output_tokens"),
    )
    design = best.num("design_rate_rps", 0.0, MAX_RATE)
    rate = traffic.num("rate_per_s", 0.0, MAX_RATE, default=0.0) or traffic.num(
        "peak_rate_per_s", 0.0, MAX_RATE, default=0.0
    )
    return ServingView(
        header=header(plan),
        model=model,
        hw=_hardware(best),
        tp=best.integer("tp", 1, MAX_PARALLEL),
        replicas=best.integer("replicas", 1, MAX_GPUS),
        weight_precision=choice(
            best.text("weight_precision", default="bf16", max_len=40), SERVE_PRECISIONS, "weight precision"
        ),
        kv_precision=choice(
            best.text("kv_precision", default="bf16", max_len=40), SERVE_PRECISIONS, "KV precision"
        ),
        replica_capacity_rps=best.num("replica_capacity_rps", 1e-12, MAX_RATE),
        design_rate_rps=design,
        mean_rate_rps=rate or design,
        ttft_slo_s=slo.num("ttft_s", 0.0, MAX_SECONDS, default=0.0) or None,
        tpot_slo_s=slo.num("tpot_s", 0.0, MAX_SECONDS, default=0.0) or None,
        slo_percentile=pct,
        **_latency(best, pct),
        mean_prompt_tokens=prompt_mean,
        mean_output_tokens=out_mean,
        max_model_len=max(1, int(min(model.max_seq_len, math.ceil(prompt_max + out_max)))),
        **_serving_limits(spec, best, sizing),
        **_power(sizing),
        **_host_needs(sizing),
        scenario=choice(
            spec.sub("serving", False).text("scenario", default="serving", max_len=40), SCENARIOS, "scenario"
        ),
        priced_instance=_priced_instance(sizing),
        stream_batch=spec.sub("serving", False).integer("batch", 1, MAX_TOKENS_INT, default=None),
        **_serving_layout(spec, best),
    )


def _serving_layout(spec: Fields, best: Fields) -> dict[str, Any]:
    """The optional layout fields (multi-node replicas, MoE, disaggregation, engine); every
    one defaults to what a plan without it means. The planner writes the replica's `layout`
    record (tp, pp, ep, nodes) and, when it chose separate pools, `disaggregation` (chosen,
    prefill and decode with their replicas and layouts); `disaggregated` is the short form."""
    lay = best.sub("layout", False)
    disagg = disagg_view(best)
    engine = spec.sub("engine", False).text("name", default="", max_len=40) or None
    return {
        "pp": best.integer("pp", 1, MAX_PARALLEL, default=None)
        or lay.integer("pp", 1, MAX_PARALLEL, default=1),
        "ep": best.integer("ep", 1, MAX_GPUS, default=None) or lay.integer("ep", 1, MAX_GPUS, default=1),
        "planned_nodes_per_replica": best.integer("nodes_per_replica", 1, MAX_GPUS, default=0)
        or lay.integer("nodes", 1, MAX_GPUS, default=0)
        or None,
        "disaggregated": disagg,
        "engine": engine,
    }
