"""The replica layouts a serving search tries on one accelerator: tensor parallelism inside
a node first; when the model fits no single node (or the spec fixes `targets.pp`, or a
`targets.tp` larger than a node), replicas spanning nodes: TP inside the node with PP
across nodes, and TP across nodes, up to `targets.max_nodes_per_replica` nodes."""

from __future__ import annotations

from dataclasses import replace

from rightsize.catalog import Accelerator, NodeType, get_accelerator
from rightsize.catalog.tpu_slices import tpu_slices
from rightsize.perf.inference import Replica
from rightsize.perf.serving_lora import LoraReplica
from rightsize.perf.serving_moe_ep import ExpertParallelReplica
from rightsize.perf.serving_multinode import PP_OPTIONS, PipelinedReplica, ReplicaLayout, layout_of
from rightsize.perf.serving_specdec import SpeculativeReplica
from rightsize.search.calibrated import Calibration, power_limit_of
from rightsize.search.serving_plan import TP_OPTIONS
from rightsize.spec.inference import InferenceSpec
from rightsize.spec.model import ModelArch
from rightsize.spec.presets import get_preset


def node_tp(acc: Accelerator, node: NodeType) -> int:
    """The largest tensor-parallel group the scale-up domain holds (an 8-GPU node's NVLink,
    an NVL72 rack, a TPU slice's ICI)."""
    return acc.scaleup_domain_gpus


def slice_ok(acc: Accelerator, chips: int) -> bool:
    """Whether a serving replica of `chips` chips is deployable: any count off TPU; on TPU only
    a slice shape Google offers (a replica is one slice: 1, 4, 8 chips on one v5e/v6e host),
    multi-host slices (16-256 chips over 4-chip hosts) only on generations whose serving
    engines span hosts (catalog.tpu_slices: v6e and TPU7x, not v5e or v5p)."""
    slices = tpu_slices(acc.id)
    return slices is None or chips in slices.serving_chip_counts


def precision_ok(acc: Accelerator, prec: str) -> bool:
    """Whether the serving engine loads weights of `prec` on this accelerator: any off TPU; on
    TPU the pre-quantized formats vLLM TPU lists per generation (catalog.tpu_slices:
    int8 / int4 on v5e, v5p, v6e; fp8 / fp4 on TPU7x) besides 16-bit."""
    slices = tpu_slices(acc.id)
    return slices is None or prec in ("bf16", "fp16") or prec in slices.serving_weights


def _stage_tp(spec: InferenceSpec, acc: Accelerator) -> int | None:
    """TP of one pipeline stage: the largest degree the domain holds and the heads divide."""
    fits = [t for t in TP_OPTIONS if t <= acc.scaleup_domain_gpus and spec.model.heads % t == 0]
    return spec.targets.tp or (fits[-1] if fits else None)


def _build(
    spec: InferenceSpec,
    acc: Accelerator,
    node: NodeType,
    tp: int,
    prec: str,
    cal: Calibration,
    arch: ModelArch | None = None,
) -> Replica:
    """A replica of `arch` (None: the spec's model) as the spec's engine, release and power
    limit run it."""
    return Replica.build(
        arch or spec.model,
        acc,
        node,
        tp,
        prec,
        spec.serving.kv_precision,
        cal.get(acc.id),
        spec.engine.name,
        power_limit_w=power_limit_of(spec, acc.id),
        engine_version=spec.engine.version,  # the release's behaviour, as validation predicts it
    )


def single_node(
    spec: InferenceSpec, acc: Accelerator, node: NodeType, prec: str, cal: Calibration
) -> list[Replica]:
    """Fitting replicas of one node: every tp the heads divide, up to the node's domain."""
    tgt = spec.targets
    if tgt.pp and tgt.pp > 1:
        return []
    if tgt.tp:
        tps = [tgt.tp] if tgt.tp <= node_tp(acc, node) else []
    else:
        tps = [t for t in TP_OPTIONS if t <= node_tp(acc, node) and spec.model.heads % t == 0]
    reps = [_build(spec, acc, node, tp, prec, cal) for tp in tps if slice_ok(acc, tp)]
    return [r for r in reps if r.fits]


def multi_node(
    spec: InferenceSpec, acc: Accelerator, node: NodeType, prec: str, cal: Calibration
) -> list[Replica]:
    """Fitting replicas over several nodes: TP `node_tp` with PP across nodes, and TP across
    nodes (the heads must divide it), within targets.max_nodes_per_replica nodes."""
    tgt = spec.targets
    inner = node_tp(acc, node)
    max_gpus = tgt.max_nodes_per_replica * node.gpus_per_node
    out: list[Replica] = []
    stage_tp = _stage_tp(spec, acc)
    if stage_tp and stage_tp <= inner and spec.model.heads % stage_tp == 0:
        base = _build(spec, acc, node, stage_tp, prec, cal)
        pps = [tgt.pp] if tgt.pp else [p for p in PP_OPTIONS if p <= spec.model.layers]
        for pp in pps:
            if pp > 1 and stage_tp * pp <= max_gpus and slice_ok(acc, stage_tp * pp):
                piped = PipelinedReplica.build_pipelined(base, pp, acc, node)
                if piped.fits:
                    out.append(piped)
                    break  # the fewest stages that fit: more only add hops
    if not tgt.pp or tgt.pp == 1:
        tps = [tgt.tp] if tgt.tp else [inner * k for k in (2, 4, 8)]
        for tp in tps:
            if inner < tp <= max_gpus and spec.model.heads % tp == 0 and slice_ok(acc, tp):
                rep = _build(spec, acc, node, tp, prec, cal)
                if rep.fits:
                    out.append(rep)
                    break
    return out


def replica_options(
    spec: InferenceSpec, acc: Accelerator, node: NodeType, prec: str, cal: Calibration
) -> list[Replica]:
    """Every layout to evaluate (`_layouts`), each speculating when the engine does; none for
    weights the engine cannot load on this accelerator (`precision_ok`)."""
    if not precision_ok(acc, prec):
        return []
    reps = [speculative(spec, acc, node, prec, cal, r) for r in _layouts(spec, acc, node, prec, cal)]
    lora = spec.engine.lora
    if lora is not None:
        reps = [LoraReplica.wrap(r, lora.adapters, lora.rank, lora.slots, lora.modules) for r in reps]
    return [r for r in reps if r.fits]


def speculative(
    spec: InferenceSpec, acc: Accelerator, node: NodeType, prec: str, cal: Calibration, rep: Replica
) -> Replica:
    """`rep` decoding speculatively as engine.speculative says (unchanged without it, or with
    the fixed-cost draft of a draft_model method that names no draft model)."""
    sp = spec.engine.speculative
    if sp is None or (sp.method == "draft_model" and sp.draft_model is None):
        return rep
    draft: Replica | None = None
    if sp.method == "draft_model" and sp.draft_model is not None:
        arch = get_preset(sp.draft_model)
        tp = rep.tp if arch.heads % rep.tp == 0 else 1
        draft = _build(spec, acc, node, tp, prec, cal, arch)
    elif sp.method in ("eagle", "mtp"):  # one transformer layer and the target's LM head
        head = rep.arch.model_copy(update={"layers": 1, "dense_layers": 0})
        draft = _build(spec, acc, node, rep.tp, prec, cal, head)
    return SpeculativeReplica.wrap(rep, draft, sp.draft_tokens, sp.method)


def _layouts(
    spec: InferenceSpec, acc: Accelerator, node: NodeType, prec: str, cal: Calibration
) -> list[Replica]:
    """The layouts to evaluate: single-node ones, or multi-node ones when none fits (or the
    spec asks for them); with serving.expert_parallel, that expert-parallel replica only."""
    if spec.serving.expert_parallel:
        ep = spec.serving.expert_parallel
        base = _build(spec, acc, node, 1, prec, cal)
        crosses = ep > acc.scaleup_domain_gpus  # the all-to-all leaves the scale-up domain
        rep = ExpertParallelReplica.build_ep(base, ep, spec.serving.expert_imbalance, crosses)
        return [rep] if rep.fits and slice_ok(acc, ep) else []
    one = single_node(spec, acc, node, prec, cal)
    forced = bool(spec.targets.pp and spec.targets.pp > 1) or bool(
        spec.targets.tp and spec.targets.tp > node_tp(acc, node)
    )
    if (one and not forced) or spec.targets.max_nodes_per_replica == 1:
        return one
    return one + multi_node(spec, acc, node, prec, cal)


def layout_for(rep: Replica, acc: Accelerator, node: NodeType) -> ReplicaLayout:
    """The layout record of a replica (single-node, PP across nodes or TP across nodes)."""
    if isinstance(rep, SpeculativeReplica | LoraReplica) and rep.target is not None:
        return layout_for(rep.target, acc, node)
    if isinstance(rep, PipelinedReplica) and rep.layout is not None:
        return rep.layout
    if isinstance(rep, ExpertParallelReplica):  # attention DP x expert parallel over ep GPUs
        return layout_of(acc, node, 1, 1, rep.arch.hidden, rep.ep)
    return _tpu_hosts(layout_of(acc, node, rep.tp, 1, rep.arch.hidden), acc)


def _tpu_hosts(layout: ReplicaLayout, acc: Accelerator) -> ReplicaLayout:
    """A TPU replica on a multi-host slice occupies the slice's hosts (4 chips each on v5e and
    v6e, whose 8-chip machine types carry single-host slices only), not gpus / 8 nodes."""
    slices = tpu_slices(acc.id)
    if slices is None or layout.gpus in slices.single_host or layout.gpus not in slices.multi_host:
        return layout
    hosts = slices.hosts(layout.gpus)
    return replace(layout, nodes=hosts, gpus_per_node=layout.gpus // hosts, tp_spans_nodes=layout.tp > 1)


def tpu_slice_note(acc: Accelerator, layout: ReplicaLayout) -> str | None:
    """Why a TPU replica has the shape it has (a plan assumption); None off TPU."""
    slices = tpu_slices(acc.id)
    topo = slices.topology(layout.gpus) if slices else None
    if slices is None or topo is None:
        return None
    chips, offered = layout.gpus, ", ".join(str(n) for n in slices.serving_chip_counts)
    if chips in slices.single_host:
        where = "one host"
    else:
        where = f"{slices.hosts(chips)} hosts of {slices.chips_per_host} chips, scheduled as one LeaderWorkerSet group"
    spans = (
        "may span the hosts of a multi-host slice (vLLM TPU over Ray, sglang-jax)"
        if slices.serving_multi_host
        else "stays on one host"
    )
    skipped = [t for t in TP_OPTIONS if t < chips and t not in slices.serving_chip_counts]
    smaller = (
        f" Smaller replicas not planned: {' or '.join(str(t) for t in skipped)} chips (tensor-parallel "
        f"{', '.join(str(t) for t in skipped)}), as {acc.id} has no slice of that size to deploy one on "
        f"(GKE's slice shapes, catalog/data/kubernetes.yaml tpu.{acc.id})."
        if skipped
        else ""
    )
    return (
        f"Each {acc.id} replica is one {topo} slice of {chips} chips on {where}; its tensor-parallel "
        f"collectives stay on ICI. Only slice shapes a serving replica can be deployed on are planned "
        f"({offered} chips): on {acc.id} a replica {spans}. Why: {slices.serving_source}.{smaller}"
    )


def tpu_serving_note(acc_ids: list[str], prec: str) -> str:
    """For an infeasible plan: which allowed TPUs keep a serving replica on one host, or load no
    weights of `prec`, and why."""
    found = [s for s in (tpu_slices(a) for a in acc_ids) if s is not None]
    unloadable = [s for s in found if not precision_ok(get_accelerator(s.accelerator), prec)]
    held = [s for s in found if not s.serving_multi_host and s not in unloadable]
    parts = []
    if unloadable:
        parts.append(
            "vLLM TPU loads no "
            + prec
            + " weights on "
            + ", ".join(f"{s.accelerator} ({', '.join(s.serving_weights)} only)" for s in unloadable)
        )
    if held:
        hosts = ", ".join(f"{s.accelerator} on {max(s.single_host)} chips" for s in held)
        parts.append(f"a serving replica stays on one host: {hosts}; {held[0].serving_source}")
    return f" ({'; '.join(parts)})" if parts else ""
