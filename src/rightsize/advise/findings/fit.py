"""Rules for hardware sized for the wrong workload, and prototypes that will not scale."""

from __future__ import annotations

import math

from rightsize.advise.findings.base import Finding, _nic_gbps, _num
from rightsize.advise.findings.thresholds import (
    BACKEND_FABRIC_COST_SHARE,
    BACKWARD_WINDOW_SHARE,
    EXPOSED_COMM_MAX_SHARE,
    GRAD_BYTES_PER_WEIGHT_BYTE,
    SCALEOUT_EFFICIENCY,
    SLOW_NIC_GBPS_PER_GPU,
    SLOW_SCALEUP_BYTES_PER_S,
    TRAINING_FABRIC_GBPS_PER_GPU,
)
from rightsize.advise.view import PlanView
from rightsize.catalog.platforms import platform_for


def training_cluster_for_serving(v: PlanView) -> Finding | None:
    b = v.best
    if v.is_job or b is None or v.node is None:
        return None
    per_replica = int(getattr(v.demand, "gpus_per_replica", None) or getattr(b, "tp", 1) or 1)
    if per_replica > v.node.gpus_per_node:
        return None
    gbps = _nic_gbps(v)
    if gbps is None or gbps < TRAINING_FABRIC_GBPS_PER_GPU:
        return None
    if not v.section("fabric").get("needed"):  # the plan buys no back-end fabric: nothing to warn of
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
            "gpus_per_replica": per_replica,
            "gpus_per_node": v.node.gpus_per_node,
            "fabric_capex_usd": capex,
        },
        "Each replica runs inside one node: serve from nodes with a 25-100 Gb/s front-end network and no "
        "back-end fabric, or share the training cluster's fabric instead of buying one.",
    )


def _crosses_scaleout(v: PlanView) -> bool:
    """Whether the job's accelerators outnumber one scale-up group of its platform (a TPU slice,
    a Trn2 UltraServer, an NVL72 rack, else a node): only then does traffic cross the scale-out
    network. A 2,048-chip TPU v5p job spans 512 hosts but one slice of ICI."""
    if v.acc is None or v.node is None:
        return v.spans_nodes
    plat = platform_for(v.acc.id, v.acc.vendor)
    group = plat.domain_max_units.get(v.acc.id, v.node.gpus_per_node)
    gpus = int(getattr(v.best, "gpus", 0) or getattr(v.demand, "gpus", 0) or 0)
    return v.spans_nodes and gpus > max(group, v.node.gpus_per_node)


def serving_cluster_for_training(v: PlanView) -> Finding | None:
    if v.step is None or v.acc is None or not _crosses_scaleout(v):
        return None
    gbps = _nic_gbps(v) or 0.0
    slow_up = v.acc.scaleup_bytes_per_s < SLOW_SCALEUP_BYTES_PER_S
    if gbps >= SLOW_NIC_GBPS_PER_GPU and not slow_up:
        return None
    exposed = v.step.exposed_comm_total_s / v.step.total_s
    plat = platform_for(v.acc.id, v.acc.vendor)
    noun = plat.unit_noun
    return Finding(
        "serving_cluster_for_training",
        "wrong-workload",
        max(exposed, BACKEND_FABRIC_COST_SHARE),
        f"An inference cluster used for training: {v.acc.id} with {gbps:,.0f} Gb/s per {noun} across "
        f"{plat.scaleup_domain}s ({plat.scaleout_name})",
        {
            "nic_gbps_per_gpu": gbps,
            "scaleup_bytes_per_s": v.acc.scaleup_bytes_per_s,
            "exposed_comm_fraction": exposed,
        },
        f"Train multi-node jobs on {noun}s that share a fast scale-up domain ({v.acc.scaleup_name} here: "
        f"keep the job inside one {plat.scaleup_domain} of {plat.domain_max_units.get(v.acc.id, v.node.gpus_per_node if v.node else 1):,}) "
        f"or on a platform with 200-400 Gb/s per {noun} of scale-out.",
    )


# --- prototypes that will not scale ---------------------------------------------------------------


def prototype_wont_scale(v: PlanView) -> Finding | None:
    """A single-node layout: all its gradient traffic rides the scale-up links today. Scaled out, data
    parallelism crosses the NICs; if the reduction no longer hides under the backward, the
    prototype's throughput per GPU will not carry over."""
    b = v.best
    st = v.step
    if v.kind != "training" or st is None or v.spans_nodes or v.node is None:
        return None
    p = b.parallel
    weight_bytes = b.memory.get("weights_bytes", 0.0) * (p["dp"] if p["zero_stage"] >= 3 else 1.0)
    grad_bytes = weight_bytes * GRAD_BYTES_PER_WEIGHT_BYTE
    nic = v.node.scaleout_bytes_per_s_per_gpu * SCALEOUT_EFFICIENCY
    reduce_s = 2.0 * grad_bytes / nic if nic > 0 else math.inf  # ring all-reduce, large dp
    window = BACKWARD_WINDOW_SHARE * st.compute_s
    exposed = max(0.0, reduce_s - window)
    share = exposed / (st.total_s + exposed)
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
            "step_time_s": st.total_s,
        },
        f"Plan the multi-node run (`rightsize plan` with train_tokens and a deadline): shard the model with "
        f"tp/pp so each GPU reduces fewer gradient bytes, a larger global batch per step, or {v.node.nics_per_node * 2} "
        "NICs per node.",
    )
