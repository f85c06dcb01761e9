"""Bottleneck rules: what the step (or the decode) waits on."""

from __future__ import annotations

from rightsize.advise.findings.base import COMM_KEYS, Finding, _nic_gbps, _num, _step_by_nic
from rightsize.advise.findings.thresholds import (
    BUBBLE_MAX_SHARE,
    CHECKPOINT_MAX_SHARE,
    COMPUTE_BOUND_SHARE,
    EXPOSED_COMM_MAX_SHARE,
    INFO_IMPACT,
    INPUT_WAIT_MAX_SHARE,
    MEMORY_BOUND_LAYERS_MAX_SHARE,
    MEMORY_BOUND_TPOT_RATIO,
    OPTIMIZER_MAX_SHARE,
)
from rightsize.advise.view import PlanView


def compute_bound(v: PlanView) -> Finding | None:
    st = v.step
    if st is None:
        return None
    share = st.compute_s / st.total_s
    if share < COMPUTE_BOUND_SHARE:
        return None
    b = v.best
    mfu = getattr(b, "mfu", None)
    fix = (
        "This is where a training job should be. Further gains come from the math: FP8 GEMMs "
        "(training.precision: fp8) on Hopper or Blackwell, or a faster accelerator; more GPUs "
        "scale nearly linearly while communication stays hidden."
        if v.kind == "training"
        else "This is where a training job should be. Further gains come from the kernels (a lower "
        "precision, fused or channels-last kernels) or a faster accelerator; more GPUs scale nearly "
        "linearly while communication stays hidden."
    )
    return Finding(
        "compute_bound",
        "bottleneck",
        INFO_IMPACT,
        f"Compute-bound: {share:.0%} of the step is compute"
        + (f" (MFU {mfu:.0%})" if mfu is not None else ""),
        {
            "compute_s": st.compute_s,
            "step_time_s": st.total_s,
            "compute_share_fraction": share,
            "mfu_fraction": mfu,
        },
        fix,
    )


def _comm_fix(v: PlanView, worst: str) -> str:
    if worst == "all_to_all_s":
        return (
            "Keep the embedding all-to-all on fewer nodes (more HBM per GPU, so fewer tables are sharded "
            "across the fabric), cache hot rows locally, or provision a faster scale-out fabric"
        )
    if worst == "dp_comm_exposed_s" and v.kind != "training":
        return (
            "Hide more of the gradient reduction: larger DDP buckets, a larger batch per GPU (a longer "
            "backward to hide under), gradient compression, or a faster scale-out fabric"
        )
    p = v.best.parallel
    scaleup = v.acc.scaleup_domain_gpus if v.acc else 8
    fixes = {
        "dp_comm_exposed_s": "Hide more of the gradient reduction: ZeRO-1/2 rather than ZeRO-3, a larger "
        "micro-batch (a longer backward to hide under), or a faster scale-out fabric",
        "tp_comm_exposed_s": (
            f"Lower tp ({p['tp']}) and trade it for pp, or overlap tensor-parallel communication with the "
            "GEMMs (Megatron's tp-comm-overlap); keep sequence parallelism on"
            if p["tp"] <= scaleup
            else f"Keep tensor parallelism inside the {scaleup}-GPU scale-up domain (tp {p['tp']} crosses nodes)"
        ),
        "pp_comm_exposed_s": "Use fewer pipeline stages, or place consecutive stages on the same node",
        "cp_comm_exposed_s": "Lower the context-parallel degree or keep it inside the scale-up domain",
        "ep_comm_exposed_s": "Keep expert-parallel all-to-all inside the scale-up domain (smaller ep)",
    }
    return fixes[worst]


def network_bound(v: PlanView) -> Finding | None:
    st = v.step
    if st is None or not st.exposed_comm_s:
        return None
    parts = st.exposed_comm_s
    exposed = st.exposed_comm_total_s
    share = exposed / st.total_s
    if share < EXPOSED_COMM_MAX_SHARE:
        return None
    worst = max(parts, key=lambda k: parts[k])
    fix = _comm_fix(v, worst)
    by_nic = _step_by_nic(v)
    now = _nic_gbps(v)
    if (
        by_nic
        and now
        and worst in ("dp_comm_exposed_s", "pp_comm_exposed_s", "ep_comm_exposed_s", "all_to_all_s")
    ):
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
            "step_time_s": st.total_s,
            "exposed_comm_fraction": share,
            worst: parts[worst],
        },
        fix + ".",
    )


def pipeline_bubble(v: PlanView) -> Finding | None:
    st = v.step
    if st is None:
        return None
    share = st.bubble_s / st.total_s
    if share < BUBBLE_MAX_SHARE:
        return None
    p = v.best.parallel
    return Finding(
        "pipeline_bubble",
        "bottleneck",
        share,
        f"Pipeline bubble: {share:.0%} of the step waits for the pipeline to fill and drain",
        {
            "bubble_s": st.bubble_s,
            "step_time_s": st.total_s,
            "bubble_fraction": share,
            "pp": p["pp"],
            "vpp": p["vpp"],
        },
        f"Interleave more virtual stages (vpp {p['vpp']} -> {p['vpp'] * 2}), use more micro-batches per step "
        "(a larger global batch or a smaller micro-batch), or fewer pipeline stages.",
    )


def memory_bandwidth_bound(v: PlanView) -> Finding | None:
    b = v.best
    if v.step is not None and v.step.memory_bound_s / v.step.total_s >= MEMORY_BOUND_LAYERS_MAX_SHARE:
        st = v.step
        share = st.memory_bound_s / st.total_s
        return Finding(
            "memory_bandwidth_bound",
            "bottleneck",
            share * 0.5,
            f"Memory-bandwidth-bound layers: normalisation, activations and pooling take {share:.0%} of the step",
            {"memory_bound_s": st.memory_bound_s, "step_time_s": st.total_s, "memory_bound_fraction": share},
            "Fuse the elementwise layers into the convolutions or GEMMs (torch.compile, channels-last, "
            "CUDA graphs), train in a lower precision, or choose an accelerator with more HBM bandwidth "
            "per FLOP; more math throughput alone will not help.",
        )
    if v.step is not None:
        st = v.step
        share = st.optimizer_s / st.total_s
        if share < OPTIMIZER_MAX_SHARE:
            return None
        return Finding(
            "memory_bandwidth_bound",
            "bottleneck",
            share,
            f"Memory-bandwidth-bound optimizer: the update takes {share:.0%} of the step",
            {"optimizer_s": st.optimizer_s, "step_time_s": st.total_s, "optimizer_fraction": share},
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
    """The GPUs wait for their input: the data pipeline (decode and augmentation) or the
    video decoders are slower than the accelerator, or storage reads fall short."""
    waiting = _pipeline_bound(v)
    if waiting is not None:
        return waiting
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


def _pipeline_bound(v: PlanView) -> Finding | None:
    b = v.best
    if v.step is not None and v.step.input_wait_s > 0.0:
        share = v.step.input_wait_s / v.step.total_s
        if share < INPUT_WAIT_MAX_SHARE:
            return None
        return Finding(
            "input_bound",
            "bottleneck",
            share,
            f"Input-bound: the GPUs wait {share:.0%} of each step for decoded, augmented images",
            {
                "input_wait_s": v.step.input_wait_s,
                "step_time_s": v.step.total_s,
                "input_wait_fraction": share,
                "cpu_cores_per_gpu": getattr(b, "cpu_cores_per_gpu", None),
            },
            "Decode on the GPU (train.decode: dali), use nodes with more CPU cores per GPU, or pre-decode "
            "and store resized images.",
        )
    if v.kind == "vision" and not v.is_job and getattr(b, "input_bound", False):
        st = b.step
        compute_rate = b.batch_per_gpu / st["step_s"]
        util = float((getattr(v.plan, "targets", None) or {}).get("utilisation_target") or 1.0)
        decode_rate = b.images_per_s_per_gpu / util  # the decoders' rate at full load
        share = max(0.0, 1.0 - decode_rate / max(compute_rate, 1e-12))
        return Finding(
            "input_bound",
            "bottleneck",
            share,
            f"Decode-bound: each GPU decodes fewer frames than it could classify ({share:.0%} of its compute idle)",
            {
                "decode_images_per_s_per_gpu": decode_rate,
                "compute_images_per_s_per_gpu": compute_rate,
                "idle_compute_fraction": share,
            },
            "Use an accelerator with more hardware video decoders (NVDEC), decode on more CPU cores, or lower "
            "the stream resolution; the accelerator's math is not the limit.",
        )
    return None
