"""The advisor's rules. Each rule is a small function from a plan view to a `Finding` (or
None when it does not apply), with the numbers that triggered it and a concrete fix.
`advise(plan)` runs every rule and ranks the findings by impact: the share of the run's
time or cost the finding puts at stake (0..1).

Thresholds are named constants, each with the reason for its value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from rightsize.advise.bottleneck import one_bottleneck
from rightsize.advise.view import PlanView, view
from rightsize.constants import DAY_S, GiB

# --- thresholds -------------------------------------------------------------------------
# Megatron-class runs at 40-55% MFU spend 70-85% of the step in GEMMs and attention;
# above this share the accelerator's math, not the fabric, sets the pace.
COMPUTE_BOUND_SHARE = 0.70
# Well-tuned large runs hide all but ~10-15% of their communication (MegaScale, Jiang et
# al. 2024, overlaps DP/TP/PP traffic to reach 55% MFU); more than this is network-bound.
EXPOSED_COMM_MAX_SHARE = 0.15
# Interleaved 1F1B keeps the bubble (pp - 1) / (m vpp) under ~10% (Narayanan et al. 2021).
BUBBLE_MAX_SHARE = 0.10
# The optimizer update is memory-bound; past 10% of the step the HBM stream, not the math,
# is what the step waits on (sharding it with ZeRO-1 removes most of it).
OPTIMIZER_MAX_SHARE = 0.10
# Decode whose time per token is within 1.5x of reading the weights once is bound by HBM
# bandwidth: a faster GEMM would not help, fewer bytes would.
MEMORY_BOUND_TPOT_RATIO = 1.5
# Checkpoint stalls above 3% of wall time are worth an asynchronous checkpoint (Meta and
# Google report blocking checkpoint overheads of 1-3% at scale).
CHECKPOINT_MAX_SHARE = 0.03
# The plan already keeps 8% of HBM for allocator fragmentation (perf.memory); under 12%
# headroom in total, variable-length batches and NCCL buffer growth can still OOM.
MEMORY_HEADROOM_MIN = 0.12
# A serving replica whose weights fill more than 80% of HBM has little KV cache left:
# few concurrent sequences, small batches, poor throughput per GPU.
SERVING_WEIGHTS_MAX_SHARE = 0.80
# Power-capped GPUs that lose over 2% of their clocks cost more in time than the cooling
# upgrade that avoids it for a multi-week run.
THROTTLE_MAX_SLOWDOWN = 0.02
# Below a 90% chance of meeting the deadline over the efficiency spread, the plan needs
# more margin (without a spread: finishing in the last 10% of the window).
DEADLINE_MIN_PROBABILITY = 0.90
DEADLINE_MAX_SHARE = 0.90
# With under 15% latency headroom at the SLO percentile, a load spike or a slower kernel
# release breaks the SLO.
SLO_HEADROOM_MIN = 1.15
SLO_GOODPUT_MIN = 0.99
# Dense LLM pre-training reaches 38-55% MFU when well run (Llama 3: 38-43%; MegaScale 55%);
# below 35% the GPUs are paid for but idle.
MFU_TARGET = 0.35
# Replicas less than half busy at the design peak are capacity paid for and unused.
SERVING_UTILISATION_MIN = 0.50
# Finishing before 60% of the deadline means fewer GPUs would still meet it.
FASTER_THAN_NEEDED_SHARE = 0.60
# Savings under 5% are within the model's error and not worth a different purchase.
MIN_SAVING = 0.05
# RDMA back-end fabrics run 200-400 Gb/s per GPU; serving replicas inside one node need only
# a 25-100 Gb/s front-end network per node.
TRAINING_FABRIC_GBPS_PER_GPU = 200.0
# Multi-node LLM training fabrics run 200-400 Gb/s per GPU (8x400G per HGX node); below
# 100 Gb/s, or with PCIe-only scale-up (under 100 GB/s), gradient reduction dominates.
SLOW_NIC_GBPS_PER_GPU = 100.0
SLOW_SCALEUP_BYTES_PER_S = 100e9
# Per-GPU NICs, switches and optics are ~10% of an HGX cluster's capital cost (NVIDIA
# reference architectures): what an unneeded back-end fabric wastes.
BACKEND_FABRIC_COST_SHARE = 0.10
# Re-cabling a fabric or adding power and cooling mid-life costs on the order of a quarter
# of the original build (downtime, stranded switches, facility work).
REBUILD_IMPACT = 0.25
# Informational findings (the healthy class) rank below every actionable one.
INFO_IMPACT = 0.01
# NCCL reaches ~90% of NIC line rate on a well-configured rail-optimised fabric.
SCALEOUT_EFFICIENCY = 0.9
# Gradient reduction hides under ~70% of the backward (perf.step.DP_OVERLAP_FRACTION), and
# the backward is ~2/3 of forward + backward compute.
BACKWARD_WINDOW_SHARE = 0.7 * 2.0 / 3.0
# fp32 gradient buffers (Megatron's accumulate_allreduce_grads_in_fp32) against bf16 weights.
GRAD_BYTES_PER_WEIGHT_BYTE = 2.0

CATEGORIES = ("bottleneck", "under-provisioning", "over-provisioning", "wrong-workload", "scaling")
COMM_KEYS = {
    "tp_comm_exposed_s": "tensor-parallel",
    "cp_comm_exposed_s": "context-parallel",
    "ep_comm_exposed_s": "expert-parallel",
    "pp_comm_exposed_s": "pipeline",
    "dp_comm_exposed_s": "data-parallel",
}


@dataclass(frozen=True)
class Finding:
    """One piece of advice: what was found, the numbers that show it, how to fix it."""

    rule: str
    category: str  # one of CATEGORIES
    impact: float  # share of the run's time or cost at stake, 0..1; the ranking key
    title: str
    evidence: dict[str, Any] = field(default_factory=dict)  # numbers with units in their keys
    fix: str = ""

    @property
    def severity(self) -> str:
        if self.impact >= 0.15:
            return "high"
        if self.impact >= 0.05:
            return "medium"
        return "low" if self.impact > INFO_IMPACT else "info"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "severity": self.severity}


Rule = Callable[[PlanView], Finding | None]


def _num(d: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
    return None


def _step(v: PlanView) -> dict[str, float] | None:
    b = v.best
    if v.kind != "training" or b is None or not b.step.get("step_time_s"):
        return None
    return dict(b.step)


def _nic_gbps(v: PlanView) -> float | None:
    g = _num(v.section("fabric"), "nic_gbps_per_gpu")
    if g is None and v.node is not None:
        g = v.node.scaleout_bytes_per_s_per_gpu * 8.0 / 1e9
    return g


def _step_by_nic(v: PlanView) -> dict[float, float]:
    """Step time at each scale-out line rate (Gb/s per GPU), from the demand or the sizing."""
    d = getattr(v.demand, "step_s_by_nic_gbps", None) or {}
    out = {float(k): float(s) for k, s in d.items()}
    fab = v.section("fabric")
    for row in (fab.get("slowdown_by_nic_gbps") or []) + (fab.get("sensitivity") or []):
        if isinstance(row, dict) and "nic_gbps" in row and "step_s" in row:
            out.setdefault(float(row["nic_gbps"]), float(row["step_s"]))
    return out


# --- bottleneck class ---------------------------------------------------------------------


def compute_bound(v: PlanView) -> Finding | None:
    st = _step(v)
    if st is None:
        return None
    share = st["compute_s"] / st["step_time_s"]
    if share < COMPUTE_BOUND_SHARE:
        return None
    b = v.best
    return Finding(
        "compute_bound",
        "bottleneck",
        INFO_IMPACT,
        f"Compute-bound: {share:.0%} of the step is compute (MFU {b.mfu:.0%})",
        {
            "compute_s": st["compute_s"],
            "step_time_s": st["step_time_s"],
            "compute_share_fraction": share,
            "mfu_fraction": b.mfu,
        },
        "This is where a training job should be. Further gains come from the math: FP8 GEMMs "
        "(training.precision: fp8) on Hopper or Blackwell, or a faster accelerator; more GPUs "
        "scale nearly linearly while communication stays hidden.",
    )


def network_bound(v: PlanView) -> Finding | None:
    st = _step(v)
    if st is None:
        return None
    parts = {k: st.get(k, 0.0) for k in COMM_KEYS}
    exposed = sum(parts.values())
    share = exposed / st["step_time_s"]
    if share < EXPOSED_COMM_MAX_SHARE:
        return None
    worst = max(parts, key=lambda k: parts[k])
    p = v.best.parallel
    fixes = {
        "dp_comm_exposed_s": "Hide more of the gradient reduction: ZeRO-1/2 rather than ZeRO-3, a larger "
        "micro-batch (a longer backward to hide under), or a faster scale-out fabric",
        "tp_comm_exposed_s": (
            f"Lower tp ({p['tp']}) and trade it for pp, or overlap tensor-parallel communication with the "
            "GEMMs (Megatron's tp-comm-overlap); keep sequence parallelism on"
            if p["tp"] <= (v.acc.scaleup_domain_gpus if v.acc else 8)
            else f"Keep tensor parallelism inside the {v.acc.scaleup_domain_gpus if v.acc else 8}-GPU scale-up "
            f"domain (tp {p['tp']} crosses nodes)"
        ),
        "pp_comm_exposed_s": "Use fewer pipeline stages, or place consecutive stages on the same node",
        "cp_comm_exposed_s": "Lower the context-parallel degree or keep it inside the scale-up domain",
        "ep_comm_exposed_s": "Keep expert-parallel all-to-all inside the scale-up domain (smaller ep)",
    }
    fix = fixes[worst]
    by_nic = _step_by_nic(v)
    now = _nic_gbps(v)
    if by_nic and now and worst in ("dp_comm_exposed_s", "pp_comm_exposed_s", "ep_comm_exposed_s"):
        faster = [g for g in sorted(by_nic) if g > now * 1.01]
        if faster:
            g = faster[-1]
            fix += f"; at {g:,.0f} Gb/s per GPU the step would take {by_nic[g]:.3f} s"
    return Finding(
        "network_bound",
        "bottleneck",
        share,
        f"Network-bound: {share:.0%} of the step is exposed communication, mostly {COMM_KEYS[worst]}",
        {
            "exposed_comm_s": exposed,
            "step_time_s": st["step_time_s"],
            "exposed_comm_fraction": share,
            worst: parts[worst],
        },
        fix + ".",
    )


def pipeline_bubble(v: PlanView) -> Finding | None:
    st = _step(v)
    if st is None:
        return None
    share = st.get("bubble_s", 0.0) / st["step_time_s"]
    if share < BUBBLE_MAX_SHARE:
        return None
    p = v.best.parallel
    return Finding(
        "pipeline_bubble",
        "bottleneck",
        share,
        f"Pipeline bubble: {share:.0%} of the step waits for the pipeline to fill and drain",
        {
            "bubble_s": st["bubble_s"],
            "step_time_s": st["step_time_s"],
            "bubble_fraction": share,
            "pp": p["pp"],
            "vpp": p["vpp"],
        },
        f"Interleave more virtual stages (vpp {p['vpp']} -> {p['vpp'] * 2}), use more micro-batches per step "
        "(a larger global batch or a smaller micro-batch), or fewer pipeline stages.",
    )


def memory_bandwidth_bound(v: PlanView) -> Finding | None:
    b = v.best
    if v.kind == "training":
        st = _step(v)
        if st is None:
            return None
        share = st.get("optimizer_s", 0.0) / st["step_time_s"]
        if share < OPTIMIZER_MAX_SHARE:
            return None
        return Finding(
            "memory_bandwidth_bound",
            "bottleneck",
            share,
            f"Memory-bandwidth-bound optimizer: the update takes {share:.0%} of the step",
            {"optimizer_s": st["optimizer_s"], "step_time_s": st["step_time_s"], "optimizer_fraction": share},
            "Shard the optimizer state over data-parallel ranks (ZeRO-1) so each GPU updates 1/dp of it, "
            "or use a fused multi-tensor optimizer.",
        )
    if v.kind != "serving" or v.acc is None or b is None:
        return None
    tpot = (b.latency_s or {}).get("tpot_p50_s")
    weights = (b.memory or {}).get("weights_bytes_per_gpu")
    if not tpot or not weights:
        return None
    floor_s = weights / (v.acc.hbm_bytes_per_s * v.acc.efficiency.memory_bw_fraction)
    ratio = tpot / floor_s
    if ratio > MEMORY_BOUND_TPOT_RATIO:
        return None
    share = floor_s / tpot
    smaller = {"bf16": "fp8", "fp16": "fp8", "fp8": "int4 or fp4", "int8": "int4"}.get(b.weight_precision)
    fix = "Read fewer bytes per token: "
    fix += f"quantise the weights ({b.weight_precision} -> {smaller}), " if smaller else ""
    fix += "batch more sequences per step (more KV cache per replica), or use speculative decoding."
    return Finding(
        "memory_bandwidth_bound",
        "bottleneck",
        share * 0.5,
        f"Memory-bandwidth-bound decode: reading the weights takes {share:.0%} of each token's time",
        {
            "tpot_p50_s": tpot,
            "weight_read_s": floor_s,
            "weights_bytes_per_gpu": weights,
            "weight_read_fraction": share,
        },
        fix,
    )


def input_bound(v: PlanView) -> Finding | None:
    st = v.section("storage")
    needed = _num(st, "read_bytes_per_s_needed")
    if needed is None and v.demand is not None:
        needed = getattr(v.demand, "data_read_bytes_per_s", None)
    have = _num(st, "read_bytes_per_s", "read_bytes_per_s_available", "read_bytes_per_s_provided")
    if have is None:
        tiers = [t for t in st.get("tiers", []) or [] if isinstance(t, dict)]
        rates = [_num(t, "read_bytes_per_s", "read_bytes_per_s_provided") for t in tiers]
        have = sum(r for r in rates if r is not None) if any(r is not None for r in rates) else None
    if not needed or have is None or have >= needed:
        return None
    short = 1.0 - have / needed
    return Finding(
        "input_bound",
        "under-provisioning",
        short,
        f"Input-bound: storage delivers {have / 1e9:,.2f} GB/s of the {needed / 1e9:,.2f} GB/s the GPUs consume",
        {"read_bytes_per_s_needed": needed, "read_bytes_per_s_available": have, "shortfall_fraction": short},
        f"Add read bandwidth (at least {needed / 1e9:,.2f} GB/s sustained: more storage nodes, a faster "
        "tier, or stage the shards on local NVMe), or cache the tokenised dataset close to the GPUs.",
    )


def storage_bound(v: PlanView) -> Finding | None:
    rel = dict(getattr(v.best, "reliability", None) or {}) if v.kind == "training" else {}
    rel.update({k: x for k, x in v.section("reliability").items() if isinstance(x, int | float)})
    write_s, interval_s = _num(rel, "checkpoint_write_s"), _num(rel, "checkpoint_interval_s")
    if not write_s or not interval_s:
        return None
    share = write_s / interval_s
    if share < CHECKPOINT_MAX_SHARE:
        return None
    return Finding(
        "storage_bound",
        "under-provisioning",
        share,
        f"Storage-bound checkpoints: writing one blocks training for {share:.0%} of each interval",
        {
            "checkpoint_write_s": write_s,
            "checkpoint_interval_s": interval_s,
            "checkpoint_stall_fraction": share,
        },
        f"Checkpoint asynchronously (copy to host memory, write in the background), shard the write over "
        f"all nodes, or raise the storage write bandwidth about {share / 0.01:,.1f}x to bring the stall under 1%.",
    )


# --- under-provisioning ---------------------------------------------------------------------


def memory_headroom(v: PlanView) -> Finding | None:
    b = v.best
    if b is None:
        return None
    if v.kind == "training":
        total, cap = b.memory.get("total_bytes"), b.memory.get("capacity_bytes")
        if not total or not cap:
            return None
        headroom = 1.0 - total / cap
        if headroom >= MEMORY_HEADROOM_MIN:
            return None
        return Finding(
            "memory_headroom",
            "under-provisioning",
            MEMORY_HEADROOM_MIN - headroom,
            f"Thin memory headroom: {headroom:.0%} of HBM left ({total / GiB:,.1f} of {cap / GiB:,.1f} GiB)",
            {"total_bytes": total, "capacity_bytes": cap, "headroom_fraction": headroom},
            "Leave room for fragmentation and spikes: selective recomputation, one more pipeline stage, "
            "a smaller micro-batch, or ZeRO-1/2 to shard optimizer state and gradients.",
        )
    if v.kind == "serving" and v.acc is not None:
        weights = (b.memory or {}).get("weights_bytes_per_gpu")
        if not weights:
            return None
        share = weights / v.acc.hbm_bytes
        if share <= SERVING_WEIGHTS_MAX_SHARE:
            return None
        return Finding(
            "memory_headroom",
            "under-provisioning",
            share - SERVING_WEIGHTS_MAX_SHARE,
            f"Weights fill {share:.0%} of each GPU's memory: little room for the KV cache",
            {
                "weights_bytes_per_gpu": weights,
                "hbm_bytes": v.acc.hbm_bytes,
                "kv_capacity_tokens": (b.memory or {}).get("kv_capacity_tokens", 0.0),
            },
            f"Use tp {b.tp * 2} per replica or quantise the weights further, so the KV cache holds more "
            "concurrent sequences.",
        )
    return None


def fabric_too_slow(v: PlanView) -> Finding | None:
    if v.kind != "training":
        return None
    by_nic, now = _step_by_nic(v), _nic_gbps(v)
    if not by_nic or not now:
        return None
    cur = min(by_nic, key=lambda g: abs(g - now))
    faster = [g for g in by_nic if g > cur]
    if not faster:
        return None
    g = min(faster, key=lambda x: by_nic[x])
    gain = 1.0 - by_nic[g] / by_nic[cur]
    if gain < MIN_SAVING:
        return None
    return Finding(
        "fabric_too_slow",
        "under-provisioning",
        gain,
        f"The fabric is under-provisioned: {g:,.0f} Gb/s per GPU would cut the step by {gain:.0%}",
        {
            "nic_gbps_per_gpu": cur,
            "step_s": by_nic[cur],
            "faster_nic_gbps_per_gpu": g,
            "faster_step_s": by_nic[g],
        },
        f"Provision {g:,.0f} Gb/s per GPU (or more NICs per node), or change the layout to move less over the fabric.",
    )


def thermal_limit(v: PlanView) -> Finding | None:
    pw = v.section("power")
    throttle = _num(pw, "throttle_slowdown", "throttle_slowdown_fraction")
    kw = _num(pw, "kw_per_rack")
    limit = _num(pw, "cooling_max_rack_kw", "rack_limit_kw", "max_kw_per_rack", "rack_power_limit_kw")
    over = kw is not None and limit is not None and kw > limit
    if not over and (throttle is None or throttle < THROTTLE_MAX_SLOWDOWN):
        return None
    ev: dict[str, Any] = {"throttle_slowdown_fraction": throttle or 0.0}
    if kw is not None:
        ev["kw_per_rack"] = kw
    if limit is not None:
        ev["rack_limit_kw"] = limit
    title = (
        f"Thermal limit: racks draw {kw:,.1f} kW against a {limit:,.1f} kW limit"
        if over and kw is not None and limit is not None
        else f"Thermal limit: power capping slows the GPUs by {throttle:.0%}"
    )
    return Finding(
        "thermal_limit",
        "under-provisioning",
        max(throttle or 0.0, 1.0 - limit / kw if over and kw and limit else 0.0),
        title,
        ev,
        "Spread the nodes over more racks, move to liquid cooling, or raise the rack power budget.",
    )


def deadline_risk(v: PlanView) -> Finding | None:
    b = v.best
    deadline = getattr(v.plan, "deadline_s", None)
    if v.kind != "training" or not deadline or b is None or b.time_to_train_s is None:
        return None
    d = (v.uncertainty or {}).get("deadline") or {}
    p = d.get("probability_met")
    share = b.time_to_train_s / deadline
    if p is not None:
        if p >= DEADLINE_MIN_PROBABILITY:
            return None
        impact, title = (
            1.0 - p,
            f"Deadline at risk: a {p:.0%} chance of finishing in {deadline / DAY_S:.0f} days",
        )
    else:
        if share <= DEADLINE_MAX_SHARE:
            return None
        impact, title = (
            share - DEADLINE_MAX_SHARE,
            f"Deadline at risk: the run uses {share:.0%} of the window",
        )
    return Finding(
        "deadline_risk",
        "under-provisioning",
        impact,
        title,
        {
            "time_to_train_s": b.time_to_train_s,
            "deadline_s": deadline,
            "deadline_used_fraction": share,
            "probability_met_fraction": p,
        },
        "Add GPUs (the next step on the Pareto front), or extend the deadline; measure the step on one node "
        "before committing (`rightsize profile`).",
    )


def slo_headroom(v: PlanView) -> Finding | None:
    b = v.best
    if v.kind != "serving" or b is None or not b.slo_headroom:
        return None
    worst = min(b.slo_headroom, key=lambda k: b.slo_headroom[k])
    h = b.slo_headroom[worst]
    low_goodput = b.goodput is not None and b.goodput < SLO_GOODPUT_MIN
    if h >= SLO_HEADROOM_MIN and not low_goodput:
        return None
    return Finding(
        "slo_headroom",
        "under-provisioning",
        max(SLO_HEADROOM_MIN - h, (SLO_GOODPUT_MIN - (b.goodput or 1.0))),
        f"Thin SLO headroom: {worst.removesuffix('_s')} is within {h:.2f}x of its limit",
        {f"{worst.removesuffix('_s')}_headroom": h, "goodput_fraction": b.goodput},
        f"Add a replica ({b.replicas} -> {b.replicas + 1}) or lower policy.utilisation_target so each replica runs further from its SLO capacity.",
    )


def growth_limits(v: PlanView) -> Finding | None:
    stages = [s for s in (v.section("growth").get("stages") or []) if isinstance(s, dict)]
    bad = [s for s in stages if s.get("fabric_ok") is False or s.get("power_ok") is False]
    if not bad:
        return None
    s = bad[0]
    year = s.get("year", s.get("needed_at_years"))
    what = " and ".join(
        w for w, k in (("the fabric", "fabric_ok"), ("the power budget", "power_ok")) if s.get(k) is False
    )
    return Finding(
        "growth_limits",
        "under-provisioning",
        REBUILD_IMPACT,
        f"Growth outruns {what} "
        + (
            "with the first purchase, due now"
            if isinstance(year, int | float) and year < 0.05
            else f"with the purchase due in year {year:g}"
            if isinstance(year, int | float)
            else f"in year {year}"
        )
        + f" ({s.get('gpus'):,} GPUs)",
        {"year": year, "gpus": s.get("gpus"), "stages_over_limit": len(bad)},
        "Build the day-one fabric for the final stage (spine ports, an extra tier) and reserve facility power "
        "for it now: adding them later means re-cabling and downtime.",
    )


# --- over-provisioning ------------------------------------------------------------------------


def low_utilisation(v: PlanView) -> Finding | None:
    b = v.best
    if b is None:
        return None
    if v.kind == "training":
        if b.mfu >= MFU_TARGET:
            return None
        return Finding(
            "low_utilisation",
            "over-provisioning",
            1.0 - b.mfu / MFU_TARGET,
            f"Low utilisation: MFU {b.mfu:.0%} is below the {MFU_TARGET:.0%} a well-run job reaches",
            {"mfu_fraction": b.mfu, "target_mfu_fraction": MFU_TARGET},
            "Fewer, busier GPUs: a layout with less exposed communication, a larger micro-batch, or a smaller "
            "GPU count at the same deadline (see the Pareto front).",
        )
    if v.kind == "serving" and b.design_rate_rps > 0 and b.replica_capacity_rps > 0:
        util = b.design_rate_rps / (b.replicas * b.replica_capacity_rps)
        if util >= SERVING_UTILISATION_MIN:
            return None
        need = max(1, math.ceil(b.design_rate_rps / (b.replica_capacity_rps * 0.8)))
        return Finding(
            "low_utilisation",
            "over-provisioning",
            1.0 - util / SERVING_UTILISATION_MIN,
            f"Over-provisioned: replicas run at {util:.0%} of their SLO capacity at the design peak",
            {
                "replicas": b.replicas,
                "design_rate_rps": b.design_rate_rps,
                "replica_capacity_rps": b.replica_capacity_rps,
                "utilisation_fraction": util,
            },
            f"{need} replica{'' if need == 1 else 's'} carry the design peak at 80% of capacity; scale down, or autoscale on load.",
        )
    return None


def faster_than_needed(v: PlanView) -> Finding | None:
    b = v.best
    deadline = getattr(v.plan, "deadline_s", None)
    if v.kind != "training" or not deadline or b is None or not b.time_to_train_s or not b.gpu_hours:
        return None
    if b.time_to_train_s > FASTER_THAN_NEEDED_SHARE * deadline:
        return None
    ok = [
        c
        for c in v.plan.pareto
        if c.gpus < b.gpus
        and c.time_to_train_s
        and c.gpu_hours
        and c.time_to_train_s <= DEADLINE_MAX_SHARE * deadline
    ]
    if not ok:
        return None
    alt = min(ok, key=lambda c: c.gpus)
    saving = 1.0 - alt.gpu_hours / b.gpu_hours
    if saving < MIN_SAVING and alt.gpus > b.gpus / 2:
        return None
    return Finding(
        "faster_than_needed",
        "over-provisioning",
        max(saving, 1.0 - alt.gpus / b.gpus) * 0.5,
        f"More GPUs than the deadline needs: {b.gpus} finish in {b.time_to_train_s / DAY_S:.0f} of {deadline / DAY_S:.0f} days",
        {
            "gpus": b.gpus,
            "time_to_train_s": b.time_to_train_s,
            "deadline_s": deadline,
            "smaller_gpus": alt.gpus,
            "smaller_time_to_train_s": alt.time_to_train_s,
        },
        f"{alt.gpus} x {alt.accelerator} still finish in {alt.time_to_train_s / DAY_S:.0f} days "
        f"({saving:+.0%} GPU-hours saved) and free {b.gpus - alt.gpus} GPUs for other work.",
    )


def unplanned_spare_gpus(v: PlanView) -> Finding | None:
    b = v.best
    nodes = v.section("nodes")
    bought = _num(nodes, "gpus")
    if b is None or bought is None:
        return None
    need = float(b.gpus)
    gpn = _num(nodes, "gpus_per_node") or (v.node.gpus_per_node if v.node else 8.0)
    stages = [s for s in (v.section("growth").get("stages") or []) if isinstance(s, dict)]
    future = max([float(s.get("gpus", 0) or 0) for s in stages] + [0.0])
    spare = bought - need
    if spare < gpn or future >= bought:
        return None
    return Finding(
        "unplanned_spare_gpus",
        "over-provisioning",
        spare / bought,
        f"{spare:,.0f} GPUs bought beyond the {need:,.0f} the plan uses, for a future not in the growth plan",
        {"gpus_bought": bought, "gpus_used": need, "growth_max_gpus": future},
        "Buy what the plan uses and add the rest as a dated growth stage (infrastructure.growth), or "
        "keep them as rented burst capacity.",
    )


def cheaper_per_unit(v: PlanView) -> Finding | None:
    """A faster (or chosen) accelerator that costs more per useful token than an alternative
    that also meets the targets."""
    b = v.best
    if b is None:
        return None
    if v.kind == "training":
        deadline = getattr(v.plan, "deadline_s", None)
        if b.cost_usd is None:
            return None
        alts = [
            c
            for c, _ in v.plan.alternatives
            if c.cost_usd is not None
            and c.time_to_train_s
            and (not deadline or c.time_to_train_s <= deadline)
        ]
        if not alts:
            return None
        alt = min(alts, key=lambda c: c.cost_usd or math.inf)
        assert alt.cost_usd is not None
        saving = 1.0 - alt.cost_usd / b.cost_usd
        unit, mine, theirs = "run", b.cost_usd, alt.cost_usd
    elif v.kind == "serving":
        if b.cost_usd_per_m_output_tokens is None:
            return None
        alts = [c for c, _ in v.plan.alternatives if c.cost_usd_per_m_output_tokens is not None]
        if not alts:
            return None
        alt = min(alts, key=lambda c: c.cost_usd_per_m_output_tokens or math.inf)
        assert alt.cost_usd_per_m_output_tokens is not None
        saving = 1.0 - alt.cost_usd_per_m_output_tokens / b.cost_usd_per_m_output_tokens
        unit, mine, theirs = (
            "1M output tokens",
            b.cost_usd_per_m_output_tokens,
            alt.cost_usd_per_m_output_tokens,
        )
    else:
        return None
    if saving < MIN_SAVING:
        return None
    return Finding(
        "cheaper_per_unit",
        "over-provisioning",
        saving,
        f"{alt.accelerator} costs {saving:.0%} less per {unit} than {b.accelerator} and also meets the targets",
        {
            "chosen_usd": mine,
            "alternative_usd": theirs,
            "saving_fraction": saving,
            "objective": v.plan.objective,
        },
        f"If cost matters more than the '{v.plan.objective}' objective, choose {alt.gpus} x {alt.accelerator} "
        "(targets.objective: cost).",
    )


# --- sizing for the wrong workload -----------------------------------------------------------


def training_cluster_for_serving(v: PlanView) -> Finding | None:
    b = v.best
    if v.kind != "serving" or b is None or v.node is None or b.tp > v.node.gpus_per_node:
        return None
    if not v.section("fabric").get("needed"):  # the plan buys no back-end fabric: nothing to warn of
        return None
    gbps = _nic_gbps(v)
    if gbps is None or gbps < TRAINING_FABRIC_GBPS_PER_GPU:
        return None
    fab, cost = v.section("fabric"), v.section("cost")
    capex = _num(fab, "capex_usd")
    total = _num(cost, "capex_usd", "onprem_capex_usd")
    impact = capex / total if capex and total else BACKEND_FABRIC_COST_SHARE
    return Finding(
        "training_cluster_for_serving",
        "wrong-workload",
        impact,
        f"A training cluster used for serving: {gbps:,.0f} Gb/s per GPU of RDMA fabric for replicas that fit in one node",
        {
            "nic_gbps_per_gpu": gbps,
            "gpus_per_replica": b.tp,
            "gpus_per_node": v.node.gpus_per_node,
            "fabric_capex_usd": capex,
        },
        "Each replica runs inside one node: serve from nodes with a 25-100 Gb/s front-end network and no "
        "back-end fabric, or share the training cluster's fabric instead of buying one.",
    )


def serving_cluster_for_training(v: PlanView) -> Finding | None:
    if v.kind != "training" or not v.spans_nodes or v.acc is None:
        return None
    gbps = _nic_gbps(v) or 0.0
    slow_up = v.acc.scaleup_bytes_per_s < SLOW_SCALEUP_BYTES_PER_S
    if gbps >= SLOW_NIC_GBPS_PER_GPU and not slow_up:
        return None
    st = _step(v) or {}
    exposed = sum(st.get(k, 0.0) for k in COMM_KEYS) / st["step_time_s"] if st else 0.0
    return Finding(
        "serving_cluster_for_training",
        "wrong-workload",
        max(exposed, BACKEND_FABRIC_COST_SHARE),
        f"An inference cluster used for training: {v.acc.id} with {gbps:,.0f} Gb/s per GPU across nodes",
        {
            "nic_gbps_per_gpu": gbps,
            "scaleup_bytes_per_s": v.acc.scaleup_bytes_per_s,
            "exposed_comm_fraction": exposed,
        },
        "Train multi-node jobs on nodes whose GPUs share a fast scale-up domain (NVIDIA NVLink, AMD Infinity "
        "Fabric: an HGX or MI300X platform) with 200-400 Gb/s per GPU of scale-out, or keep the job inside one node.",
    )


# --- prototypes that will not scale ---------------------------------------------------------------


def prototype_wont_scale(v: PlanView) -> Finding | None:
    """A single-node layout: all its gradient traffic rides the scale-up links today. Scaled out, data
    parallelism crosses the NICs; if the reduction no longer hides under the backward, the
    prototype's throughput per GPU will not carry over."""
    b = v.best
    st = _step(v)
    if st is None or v.spans_nodes or v.node is None:
        return None
    p = b.parallel
    weight_bytes = b.memory.get("weights_bytes", 0.0) * (p["dp"] if p["zero_stage"] >= 3 else 1.0)
    grad_bytes = weight_bytes * GRAD_BYTES_PER_WEIGHT_BYTE
    nic = v.node.scaleout_bytes_per_s_per_gpu * SCALEOUT_EFFICIENCY
    reduce_s = 2.0 * grad_bytes / nic if nic > 0 else math.inf  # ring all-reduce, large dp
    window = BACKWARD_WINDOW_SHARE * st["compute_s"]
    exposed = max(0.0, reduce_s - window)
    share = exposed / (st["step_time_s"] + exposed)
    if share < EXPOSED_COMM_MAX_SHARE:
        return None
    return Finding(
        "prototype_wont_scale",
        "scaling",
        share,
        f"This single-node layout will not scale as is: across nodes its gradient all-reduce adds {exposed:.2f} s per step",
        {
            "gradient_bytes_per_gpu": grad_bytes,
            "allreduce_over_nic_s": reduce_s,
            "backward_window_s": window,
            "step_time_s": st["step_time_s"],
        },
        f"Plan the multi-node run (`rightsize plan` with train_tokens and a deadline): shard the model with "
        f"tp/pp so each GPU reduces fewer gradient bytes, a larger global batch per step, or {v.node.nics_per_node * 2} "
        "NICs per node.",
    )


RULES: tuple[Rule, ...] = (
    compute_bound,
    network_bound,
    pipeline_bubble,
    memory_bandwidth_bound,
    input_bound,
    storage_bound,
    memory_headroom,
    fabric_too_slow,
    thermal_limit,
    deadline_risk,
    slo_headroom,
    growth_limits,
    low_utilisation,
    faster_than_needed,
    unplanned_spare_gpus,
    cheaper_per_unit,
    training_cluster_for_serving,
    serving_cluster_for_training,
    prototype_wont_scale,
)


def advise(plan: Any) -> list[Finding]:
    """Every rule's finding for the plan, highest impact first."""
    v = plan if isinstance(plan, PlanView) else view(plan)
    found = one_bottleneck([f for rule in RULES if (f := rule(v)) is not None])
    return sorted(found, key=lambda f: (-f.impact, f.rule))
