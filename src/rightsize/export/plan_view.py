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

READ_SCHEMA_VERSIONS = (1, 2)  # plan JSON versions this adapter understands (2: typed plan, #12)
EXPORTABLE = ("training_plan", "serving_plan")


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

    @property
    def gpus_per_replica(self) -> int:
        return self.tp

    @property
    def nodes_per_replica(self) -> int:
        return max(1, math.ceil(self.tp / self.hw.gpus_per_node))


def _need(d: dict[str, Any], *path: str) -> Any:
    cur: Any = d
    for key in path:
        if not isinstance(cur, dict) or cur.get(key) is None:
            raise BadInput(
                f"The plan has no `{'.'.join(path)}`.",
                "Export reads the chosen configuration, its sizing and the spec it was planned from.",
                "Export a plan written by `rightsize plan SPEC --format json` (or pass the spec itself).",
            )
        cur = cur[key]
    return cur


def _get(d: dict[str, Any], *path: str, default: Any = None) -> Any:
    cur: Any = d
    for key in path:
        if not isinstance(cur, dict) or cur.get(key) is None:
            return default
        cur = cur[key]
    return cur


def _today() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def header(plan: dict[str, Any]) -> Header:
    version = plan.get("schema_version")
    if version not in READ_SCHEMA_VERSIONS:
        raise BadInput(
            f"The plan's schema_version is {version!r}; this rightsize reads {READ_SCHEMA_VERSIONS}.",
            "The plan JSON changed shape between versions.",
            "Re-plan the spec with this rightsize (`rightsize export SPEC.yaml ...`).",
        )
    now = _today()
    return Header(
        name=str(plan.get("name") or "plan"),
        kind=str(plan.get("kind")),
        schema_version=int(version),
        model=str(plan.get("model") or ""),
        planned=str(plan.get("created") or now),
        exported=now,
    )


def _model(spec: dict[str, Any]) -> ModelView:
    m = _need(spec, "model")
    return ModelView(
        name=str(m.get("name") or "model"),
        layers=int(m["layers"]),
        hidden=int(m["hidden"]),
        heads=int(m["heads"]),
        kv_heads=int(m.get("kv_heads") or m["heads"]),
        ffn_hidden=int(m.get("ffn_hidden") or 4 * m["hidden"]),
        vocab=int(m["vocab"]),
        experts=int(m.get("experts") or 0),
        experts_per_token=int(m.get("experts_per_token") or 0),
        max_seq_len=int(m.get("max_seq_len") or 4096),
        hf_id=_hf_id(str(m.get("source") or "")),
        head_dim=int(m.get("head_dim") or m["hidden"] // m["heads"]),
        expert_ffn_hidden=_int_or_none(m.get("expert_ffn_hidden")),
        shared_experts=int(m.get("shared_experts") or 0),
        dense_layers=int(m.get("dense_layers") or 0),
        kv_lora_rank=_int_or_none(m.get("kv_lora_rank")),
        q_lora_rank=_int_or_none(m.get("q_lora_rank")),
        qk_rope_head_dim=_int_or_none(m.get("qk_rope_head_dim")),
        v_head_dim=_int_or_none(m.get("v_head_dim")),
    )


def _int_or_none(x: Any) -> int | None:
    return int(x) if x else None


def _hf_id(source: str) -> str | None:
    found = re.search(r"\b([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)\s+config\.json", source)
    return found.group(1) if found else None


def _hardware(accelerator: str, node: str) -> HardwareView:
    acc, nd = get_accelerator(accelerator), get_node(node)
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
    if kind not in EXPORTABLE and kind != "fleet_plan":
        raise BadInput(
            f"Plans of kind {kind!r} cannot be exported yet.",
            f"Export writes job files for {', '.join(EXPORTABLE)} (LLM training, fine-tuning and serving).",
            "Export a training, fine-tuning or serving plan.",
        )
    return kind


def training_view(plan: dict[str, Any]) -> TrainingView:
    spec, best, sizing = _need(plan, "spec"), _need(plan, "best"), _need(plan, "sizing")
    par, tr = _need(best, "parallel"), _need(spec, "training")
    seq = int(tr["seq_len"])
    gb = tr.get("global_batch") or max(1, int(_need(tr, "global_batch_tokens")) // seq)
    lora = tr.get("lora") or {}
    fabric = _get(sizing, "fabric", default={})
    rel = _get(sizing, "reliability", default={})
    nodes = _need(sizing, "nodes")
    power = _get(sizing, "power", default={})
    return TrainingView(
        header=header(plan),
        model=_model(spec),
        hw=_hardware(str(best["accelerator"]), str(best["node"])),
        gpus=int(best["gpus"]),
        nodes=int(nodes["nodes"]),
        tp=int(par["tp"]),
        pp=int(par["pp"]),
        vpp=int(par.get("vpp") or 1),
        dp=int(par["dp"]),
        cp=int(par.get("cp") or 1),
        ep=int(par.get("ep") or 1),
        micro_batch=int(par["micro_batch"]),
        recompute=str(par.get("recompute") or "none"),
        sequence_parallel=bool(par.get("sequence_parallel")),
        zero_stage=int(par.get("zero_stage") or 0),
        seq_len=seq,
        global_batch=int(gb),
        precision=str(tr.get("precision") or "bf16"),
        method=str(tr.get("method") or "full"),
        lora_rank=int(lora["rank"]) if lora.get("rank") else None,
        lora_alpha=float(lora["alpha"]) if lora.get("alpha") else None,
        train_tokens=float(tr["train_tokens"]) if tr.get("train_tokens") else None,
        step_time_s=float(_need(best, "step", "step_time_s")),
        run_s=float(_get(sizing, "run", "run_s", default=None) or best.get("time_to_train_s") or 0.0),
        safety_margin=float(_get(spec, "infrastructure", "margins", "safety_margin", default=0.2)),
        checkpoint_interval_s=float(
            rel.get("checkpoint_interval_s") or _get(best, "reliability", "checkpoint_interval_s") or 3600.0
        ),
        mtbf_s=float(rel["cluster_mtbf_s"]) if rel.get("cluster_mtbf_s") else None,
        fabric_kind=str(fabric["kind"]) if fabric.get("needed") else None,
        nic_gbps_per_gpu=float(fabric["nic_gbps_per_gpu"]) if fabric.get("needed") else None,
        rails=int(fabric["rails"]) if fabric.get("needed") and fabric.get("rails") else None,
        memory_per_gpu_bytes=float(_need(best, "memory_per_gpu", "total_bytes")),
        cpu_cores_need_per_gpu=float(nodes.get("cpu_cores_need_per_gpu") or 2.0),
        host_memory_need_bytes_per_gpu=float(nodes.get("host_memory_need_bytes_per_gpu") or 32 * 2**30),
        gpu_power_typical_w=float(power.get("gpu_typical_w") or power.get("gpu_tdp_w") or 0.0),
        gpu_activity_fraction=float(power.get("gpu_activity_fraction") or 1.0),
        utilisation_target=float(_get(spec, "infrastructure", "margins", "utilisation_target", default=0.8)),
        mfu=float(best.get("mfu") or 0.0),
    )


def _mean_length(dist: dict[str, Any]) -> float:
    if dist.get("mean"):
        return float(dist["mean"])
    values = dist.get("values") or []
    if values:
        return float(sum(values) / len(values))
    return float(dist.get("min") or 1)


def _max_length(dist: dict[str, Any]) -> float:
    if dist.get("max"):
        return float(dist["max"])
    if dist.get("values"):
        return float(max(dist["values"]))
    mean, std = _mean_length(dist), float(dist.get("std") or 0.0)
    return mean + 4.0 * std  # the simulator's sampled lengths stay under mean + 4 sigma


def serving_view(plan: dict[str, Any]) -> ServingView:
    spec, best, sizing = _need(plan, "spec"), _need(plan, "best"), _need(plan, "sizing")
    slo, traffic = spec.get("slo") or {}, _need(spec, "traffic")
    pct = float(slo.get("percentile") or 95.0)
    lat = best.get("latency_s") or {}
    # planned latency at the SLO percentile: the nearest reported percentile at or above it
    key = next((p for p in (50, 90, 95, 99) if p >= pct), 99)
    model = _model(spec)
    prompt, output = _need(traffic, "prompt_tokens"), _need(traffic, "output_tokens")
    mem = best.get("memory") or {}
    nodes, power = _get(sizing, "nodes", default={}), _get(sizing, "power", default={})
    rate = traffic.get("rate_per_s") or traffic.get("peak_rate_per_s") or best["design_rate_rps"]
    return ServingView(
        header=header(plan),
        model=model,
        hw=_hardware(str(best["accelerator"]), str(best["node"])),
        tp=int(best["tp"]),
        replicas=int(best["replicas"]),
        weight_precision=str(best.get("weight_precision") or "bf16"),
        kv_precision=str(best.get("kv_precision") or "bf16"),
        replica_capacity_rps=float(_need(best, "replica_capacity_rps")),
        design_rate_rps=float(_need(best, "design_rate_rps")),
        mean_rate_rps=float(rate),
        ttft_slo_s=float(slo["ttft_s"]) if slo.get("ttft_s") else None,
        tpot_slo_s=float(slo["tpot_s"]) if slo.get("tpot_s") else None,
        slo_percentile=pct,
        ttft_planned_s=float(lat.get(f"ttft_p{key}_s") or 0.0),
        tpot_planned_s=float(lat.get(f"tpot_p{key}_s") or 0.0),
        e2e_p50_s=float(lat.get("e2e_p50_s") or 0.0),
        mean_prompt_tokens=_mean_length(prompt),
        mean_output_tokens=_mean_length(output),
        max_model_len=int(min(model.max_seq_len, math.ceil(_max_length(prompt) + _max_length(output)))),
        kv_capacity_tokens=float(mem.get("kv_capacity_tokens") or 0.0),
        kv_bytes_per_token=float(mem.get("kv_bytes_per_token") or 0.0),
        weights_bytes_per_gpu=float(mem.get("weights_bytes_per_gpu") or 0.0),
        max_batch=int(_get(spec, "engine", "max_batch")) if _get(spec, "engine", "max_batch") else None,
        block_tokens=int(_get(spec, "engine", "block_tokens", default=16)),
        headroom=float(_get(spec, "policy", "headroom", default=0.2)),
        utilisation_target=float(_get(spec, "policy", "utilisation_target", default=0.8)),
        spare_replicas=int(_get(sizing, "reliability", "spare_replicas_recommended", default=0)),
        gpu_power_typical_w=float(power.get("gpu_typical_w") or power.get("gpu_tdp_w") or 0.0),
        gpu_activity_fraction=float(power.get("gpu_activity_fraction") or 1.0),
        cpu_cores_need_per_gpu=float(nodes.get("cpu_cores_need_per_gpu") or 2.0),
        host_memory_need_bytes_per_gpu=float(nodes.get("host_memory_need_bytes_per_gpu") or 32 * 2**30),
    )


def fleet_quotas(plan: dict[str, Any]) -> dict[str, Any]:
    """The Kueue quotas a fleet plan computed (`quotas` in its JSON): flavors, the cohort and
    one ClusterQueue per workload group with nominal, borrowing and lending limits."""
    q = plan.get("quotas")
    if not isinstance(q, dict) or not q.get("cluster_queues") or not q.get("resource_flavors"):
        raise BadInput(
            "The fleet plan carries no Kueue quotas.",
            "A fleet plan's `quotas` section (resource_flavors, cluster_queues) is what export writes.",
            "Re-plan the fleet with this rightsize (`rightsize plan FLEET.yaml --format json`).",
        )
    return q
