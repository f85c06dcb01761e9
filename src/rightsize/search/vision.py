"""The vision planner: CNNs and vision transformers, training on an image dataset (data parallel,
GPU count chosen against a deadline) or analysing video streams in real time (batch chosen against
a p99 latency, GPU count against the frame rate). Enumerate accelerators x counts (or batches),
cost each from perf.vision and perf.datapipe, keep the feasible, rank by the objective.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Literal

import numpy as np

from rightsize.catalog import Accelerator, NodeType, get_accelerator, node_for
from rightsize.errors import Infeasible
from rightsize.perf import datapipe
from rightsize.perf.collectives import all_reduce_s, group_link
from rightsize.perf.hardware import Hardware
from rightsize.perf.vision import (
    DTYPE_BYTES,
    GRAD_BYTES_PER_PARAM,
    OPTIMIZER_STATE_BYTES_PER_PARAM,
    VisionCounts,
    VisionMemory,
    VisionStepTime,
    batched_latency_s,
    count_model,
    gradient_allreduce_exposed_s,
    inference_memory,
    step_time,
    train_memory,
)
from rightsize.search.calibrated import power_limit_of
from rightsize.search.constraints import (
    margins_of,
    training_extra,
)
from rightsize.search.demand import Demand
from rightsize.search.job_common import (
    allowed_hardware,
    batch_notes,
    capped_batches,
    gpu_counts,
    meets_latency,
    rank_serving,
    rank_training,
    run_figures,
    serve_batches,
)
from rightsize.search.job_demand import KindFacts, nic_sweep, serving_demand, training_demand
from rightsize.search.serving_costs import billed_cost_usd_per_hour
from rightsize.search.vision_plan import VisionOption, VisionPlan, explain
from rightsize.spec.vision import VisionModel, VisionSpec

BATCHES = (256, 128, 64, 32, 16, 8, 4, 2, 1)
# Inference engines batch further (MLPerf ResNet-50 engines run thousands of images per batch).
SERVE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
# Largest global batch the epoch count still holds for: ResNet-50 reaches its accuracy in ~90
# epochs up to ~8k images with SGD (Goyal et al. 2017) and to ~32-64k with LARS (You et al. 2017);
# beyond that more epochs are needed, which this planner does not model.
MAX_GLOBAL_BATCH = 65536
# Engine contexts an inference server runs at once on one GPU, each with its own batch on its own
# CUDA stream (TensorRT IExecutionContext; MLPerf's harness setting `gpu_inference_streams`): the
# MLPerf Inference v4.0 submissions run 1 to 4 (Dell, closed/Dell/configs/resnet50: R760xa_L40Sx4
# Offline 4 x batch 32, Server 2 x 72; XR8620_L4x1 Offline 2 x 32; XE8640_H100 Offline 3 x 2048;
# XE9680_H100 1 x 2048; https://github.com/mlcommons/inference_results_v4.0, 2024-03). The planner
# picks the count as it picks the batch.
ENGINE_CONTEXTS = (1, 2, 4)
MAX_GPUS = 4096
# Frame preprocessing on the GPU: read the decoded NV12 frame (1.5 B/pixel), write the resized
# 224x224x3 16-bit input.
NV12_BYTES_PER_PIXEL = 1.5
PIXELS_1080P = 1920 * 1080
SERVING_CPU_CORES_PER_GPU = 1.0  # the inference server process itself
Calibration = dict[str, dict[str, float]]


# ------------------------------------------------------------------------------------ common


def plan_vision(spec: VisionSpec, calibration: Calibration | None = None) -> VisionPlan:
    """Plan a vision workload: training or real-time inference, per `spec.mode`."""
    if spec.mode == "inference":
        return _plan_inference(spec, calibration)
    return _plan_training(spec, calibration)


# ---------------------------------------------------------------------------------- training


def _train_option(
    arch: VisionModel,
    counts: VisionCounts,
    acc: Accelerator,
    node: NodeType,
    hw: Hardware,
    batch: int,
    gpus: int,
    spec: VisionSpec,
    image_bytes: float,
    optimizer: str,
    loader_scale: float = 1.0,
) -> VisionOption:
    t = spec.train
    assert t is not None
    st = step_time(arch, hw, batch, training=True, act_bytes=2.0, optimizer=optimizer, kernels=t.kernels)
    grad_bytes = counts.params * GRAD_BYTES_PER_PARAM
    bw, lat = group_link(np.array([float(gpus)]), np.array([1.0]), hw)
    ar = float(all_reduce_s(np.array(grad_bytes), np.array(float(gpus)), bw, lat)[0])
    backward_s = (st.gemm_s + st.attention_s + st.memory_bound_s) * 2.0 / 3.0
    exposed = gradient_allreduce_exposed_s(ar, backward_s, grad_bytes)
    step_s = st.compute_s + exposed
    ips = batch / step_s
    cores_needed = datapipe.image_cpu_cores_per_gpu(ips, t.decode) / loader_scale
    cores_have = datapipe.loader_cores_per_gpu(node.cpu_cores, node.gpus_per_node)
    input_bound = t.decode == "cpu" and cores_needed > cores_have
    if input_bound:
        ips = cores_have * datapipe.images_per_s_per_core() * loader_scale
        cores_needed = cores_have
    total_ips = ips * gpus
    ckpt = counts.params * (4.0 + OPTIMIZER_STATE_BYTES_PER_PARAM[optimizer])
    run = run_figures(acc.id, node, gpus, t.images * t.epochs, total_ips, ckpt)
    mem = train_memory(arch, hw, batch, 2.0, optimizer)
    return VisionOption(
        accelerator=acc.id,
        node=node.id,
        gpus=gpus,
        batch_per_gpu=batch,
        images_per_s_per_gpu=ips,
        images_per_s=total_ips,
        step={
            "step_s": batch / ips,
            "gemm_s": st.gemm_s,
            "attention_s": st.attention_s,
            "memory_bound_s": st.memory_bound_s,
            "optimizer_s": st.optimizer_s,
            "overhead_s": st.overhead_s,
            "allreduce_exposed_s": exposed,
            "input_wait_s": batch / ips - step_s if input_bound else 0.0,
        },
        memory=mem.as_dict(),
        mfu=3.0 * counts.flops_per_image * ips / hw.peak_flops_per_s,
        cpu_cores_per_gpu=cores_needed,
        input_bound=input_bound,
        **asdict(run),
    )


def _pick_batch(arch: VisionModel, hw: Hardware, fixed: int | None, optimizer: str) -> int | None:
    for b in (fixed,) if fixed else BATCHES:
        if train_memory(arch, hw, b, 2.0, optimizer).fits:
            return b
    return None


def _training_demand(
    spec: VisionSpec,
    best: VisionOption,
    counts: Any,
    data: tuple[float, str],
    calibration: Calibration | None,
) -> Demand:
    """What the chosen training cluster asks of the infrastructure (`data`: mean image bytes,
    optimizer), with the step time at each NIC speed of the sweep."""
    t = spec.train
    assert t is not None
    arch = spec.arch
    image_bytes, optimizer = data
    acc = get_accelerator(best.accelerator)
    node = node_for(acc.id)
    sweep = nic_sweep(
        acc,
        node,
        t.precision,
        calibration,
        lambda hw: _train_option(
            arch, counts, acc, node, hw, best.batch_per_gpu, best.gpus, spec, image_bytes, optimizer
        ).step["step_s"],
        power_limit_of(spec, acc.id),
    )
    compute = best.step["step_s"] - best.step["allreduce_exposed_s"] - best.step["input_wait_s"]
    facts = KindFacts(
        unit="image",
        unit_bytes=image_bytes,
        params=counts.params,
        weights_bytes=counts.params * 2.0,
        checkpoint_bytes=counts.params * (4.0 + OPTIMIZER_STATE_BYTES_PER_PARAM[optimizer]),
        host_memory_bytes_per_gpu=datapipe.dataloader_host_bytes(best.cpu_cores_per_gpu),
        cpu_cores_per_gpu=best.cpu_cores_per_gpu,
        compute_utilisation=best.mfu,
        compute_share_of_step=compute / best.step["step_s"],
    )
    units = (best.images_per_s, t.images * t.epochs, t.images * image_bytes)
    return training_demand(spec.name or arch.title, best, facts, units, sweep)


def _training_options(
    spec: VisionSpec, counts: Any, data: tuple[float, str], calibration: Calibration | None
) -> tuple[list[VisionOption], list[tuple[str, str]]]:
    """Every (accelerator, GPU count) option at the largest batch per GPU that fits, and the
    accelerators that cannot train the model, with why (`data`: mean image bytes, optimizer)."""
    t = spec.train
    assert t is not None
    arch, tgt = spec.arch, spec.targets
    image_bytes, optimizer = data
    options: list[VisionOption] = []
    rejected: list[tuple[str, str]] = []
    for acc, node, hw in allowed_hardware(spec, t.precision, calibration, rejected):
        batch = _pick_batch(arch, hw, t.batch_per_gpu, optimizer)
        if batch is None:
            rejected.append((acc.id, f"batch {t.batch_per_gpu or 1} per GPU does not fit in memory"))
            continue
        counts_g = (
            [tgt.gpus]
            if tgt.gpus
            else [g for g in gpu_counts(node, MAX_GPUS) if g * batch <= MAX_GLOBAL_BATCH]
        )
        for g in counts_g:
            options.append(_train_option(arch, counts, acc, node, hw, batch, g, spec, image_bytes, optimizer))
    return options, rejected


def _training_assumptions(spec: VisionSpec, counts: Any, image_bytes: float) -> list[str]:
    """What a vision training plan assumes: data parallelism, fixed epochs, the input pipeline."""
    t = spec.train
    assert t is not None
    return [
        f"Data parallel: every GPU holds the whole model; gradients ({counts.params * GRAD_BYTES_PER_PARAM / 1e6:.0f} MB "
        "fp32) are all-reduced in 25 MB DDP buckets overlapping the backward pass.",
        f"Epochs fixed at {t.epochs:g} for every global batch up to {MAX_GLOBAL_BATCH:,} images (LARS beyond ~8k).",
        f"Mean image {image_bytes / 1e3:.0f} KB; decode + augmentation on the {t.decode.upper()}"
        + (
            f" at {datapipe.images_per_s_per_core():.0f} images/s per core (decode "
            f"{datapipe.figures().value('images.dataloader_decode_images_per_s_per_core'):.0f}/s in a DataLoader, augmentation "
            f"{datapipe.figures().value('images.augment_images_per_s_per_core'):.0f}/s, in series)."
            if t.decode == "cpu"
            else " (DALI; hardware/nvJPEG decode assumed not to slow the step)."
        ),
    ]


def _plan_training(spec: VisionSpec, calibration: Calibration | None) -> VisionPlan:
    t = spec.train
    assert t is not None
    arch = spec.arch
    counts = count_model(arch)
    optimizer = t.optimizer or arch.optimizer
    image_bytes = t.mean_image_bytes or datapipe.mean_image_bytes()
    tgt = spec.targets
    objective = "gpu_hours" if tgt.objective == "gpus" else tgt.objective
    assumptions = _training_assumptions(spec, counts, image_bytes)
    if optimizer not in OPTIMIZER_STATE_BYTES_PER_PARAM:
        optimizer = "sgd"
    options, rejected = _training_options(spec, counts, (image_bytes, optimizer), calibration)
    if not options:
        raise Infeasible(
            f"No accelerator can train {arch.title}.",
            "; ".join(f"{a}: {r}" for a, r in rejected) or "No accelerator allowed.",
            "Allow more accelerators or lower train.batch_per_gpu.",
        )
    bare, margin = tgt.deadline_s, margins_of(spec).safety_margin
    ranked = rank_training(
        options,
        spec,
        objective,
        rejected,
        assumptions,
        lambda o: f"{o.gpus} x {o.accelerator}, global batch {o.gpus * o.batch_per_gpu:,}",
        "train fewer epochs",
        explain,
    )
    best, deadline = ranked.best, ranked.deadline_s
    node = node_for(best.accelerator)
    pipeline = {
        "mean_image_bytes": image_bytes,
        "images_per_s_per_core": datapipe.images_per_s_per_core(),
        "cpu_cores_per_gpu": best.cpu_cores_per_gpu,
        "cpu_cores_per_gpu_available": datapipe.loader_cores_per_gpu(node.cpu_cores, node.gpus_per_node),
        "read_bytes_per_s": best.images_per_s * image_bytes,
        "dataset_bytes": t.images * image_bytes,
    }
    demand = _training_demand(spec, best, counts, (image_bytes, optimizer), calibration)
    return VisionPlan(
        name=spec.name or arch.title,
        model=arch.name,
        mode="training",
        objective=objective,
        best=best,
        alternatives=ranked.alternatives,
        rejected=rejected,
        assumptions=assumptions,
        counts=counts,
        pipeline=pipeline,
        targets={"deadline_s": deadline, "gpus": tgt.gpus, "images": t.images, "epochs": t.epochs},
        demand=demand,
        extra=training_extra(ranked.options, best, bare, margin),
    )


# --------------------------------------------------------------------------------- inference


def _inference_on(
    spec: VisionSpec,
    acc: Accelerator,
    node: NodeType,
    hw: Hardware,
    sizing: tuple[float, float, str],
    assumptions: list[str],
) -> tuple[VisionOption | None, float | None]:
    """The best batch on one accelerator under the latency target (by the objective, then
    latency), and the lowest latency any batch reached there; `sizing` is (design frames/s,
    utilisation target, objective)."""
    inf = spec.inference
    assert inf is not None
    arch = spec.arch
    counts = count_model(arch)
    design_fps, util, objective = sizing
    pixels = inf.resolution_vs_1080p
    decode, decode_fps, decode_latency, prep_s = _frame_costs(spec, acc.id, hw, assumptions)
    chosen: VisionOption | None = None
    lowest: float | None = None
    for b, c in _serve_grid(inf.batch):
        point = _serve_point(spec, hw, b, decode_latency, prep_s, c)
        if point is None:
            continue
        st, mem, service, latency = point
        if lowest is None or latency < lowest:
            lowest = latency
        if not meets_latency(latency, inf.latency_p99_s, inf.batch):
            continue
        per_gpu = util * min(b / service, decode_fps)
        gpus = max(1, math.ceil(design_fps / per_gpu))
        opt = VisionOption(
            accelerator=acc.id,
            node=node.id,
            gpus=gpus,
            batch_per_gpu=b,
            images_per_s_per_gpu=per_gpu,
            images_per_s=per_gpu * gpus,
            step={
                "step_s": service,
                "gemm_s": st.gemm_s,
                "attention_s": st.attention_s,
                "memory_bound_s": st.memory_bound_s,
                "overhead_s": st.overhead_s,
                "preprocess_s": b * prep_s,
                "decode_latency_s": decode_latency,
                "engine_contexts": float(c),
            },
            memory=mem.as_dict(),
            mfu=counts.flops_per_image * (b / service) / hw.peak_flops_per_s,
            cpu_cores_per_gpu=SERVING_CPU_CORES_PER_GPU
            + datapipe.video_cpu_cores(design_fps / gpus, "cpu" if decode == "cpu" else "nvdec", pixels),
            input_bound=decode_fps < b / service,
            cost_usd=billed_cost_usd_per_hour(acc.id, gpus, node.gpus_per_node, 1),  # 1-GPU replicas
            latency_p99_s=latency,
        )
        key = (opt.objective(objective), latency)
        if chosen is None or key < (chosen.objective(objective), chosen.latency_p99_s or 0.0):
            chosen = opt
    return chosen, lowest


def _serve_point(
    spec: VisionSpec, hw: Hardware, batch: int, decode_latency: float, prep_s: float, contexts: int = 1
) -> tuple[VisionStepTime, VisionMemory, float, float] | None:
    """One batch on one GPU with `contexts` engine contexts in flight: its step breakdown,
    memory, service time (GPU time per batch: the GPU completes a batch every service seconds)
    and p99 latency (a batch shares the GPU with the other contexts, so it takes `contexts`
    service times); None when the batches do not fit in memory."""
    inf = spec.inference
    assert inf is not None
    mem = inference_memory(spec.arch, hw, batch, DTYPE_BYTES[inf.precision], contexts)
    if not mem.fits:
        return None
    st = step_time(
        spec.arch, hw, batch, training=False, act_bytes=DTYPE_BYTES[inf.precision], contexts=contexts
    )
    service = st.compute_s + batch * prep_s
    return st, mem, service, batched_latency_s(contexts * service, decode_latency)


def _serve_grid(fixed_batch: int | None, max_batch: int | None = None) -> list[tuple[int, int]]:
    """(batch, engine contexts) pairs an engine may run: every batch with each context count."""
    return [
        (b, c)
        for b in capped_batches(serve_batches(fixed_batch, SERVE_BATCHES), max_batch)
        for c in ENGINE_CONTEXTS
    ]


def serving_capacity(
    spec: VisionSpec, acc_id: str, hw: Hardware, decode_scale: float = 1.0, max_batch: int | None = None
) -> tuple[int, float, float] | None:
    """(batch, images/s one GPU serves at full load, p99 latency) at the batch that serves most
    within the spec's bound (or at its fixed batch), among batches up to `max_batch` (an engine
    built for that largest batch); None when no batch fits and meets it. `decode_scale` scales
    the decoders' rate (for the uncertainty of a decode-bound service)."""
    inf = spec.inference
    assert inf is not None
    _, decode_fps, decode_latency, prep_s = _frame_costs(spec, acc_id, hw, [])
    best: tuple[int, float, float] | None = None
    for b, c in _serve_grid(inf.batch, max_batch):
        point = _serve_point(spec, hw, b, decode_latency, prep_s, c)
        if point is None or not meets_latency(point[3], inf.latency_p99_s, inf.batch):
            continue
        rate = min(b / point[2], decode_fps * decode_scale)
        if best is None or rate > best[1]:
            best = (b, rate, point[3])
    return best


def _frame_costs(
    spec: VisionSpec, acc_id: str, hw: Hardware, assumptions: list[str]
) -> tuple[str, float, float, float]:
    """(where frames are decoded, frames/s the GPU's decoders deliver, decode latency of one
    frame, GPU preprocessing seconds per frame) for the spec's decode: NVDEC, CPU, or none
    (frames arrive as tensors)."""
    inf = spec.inference
    assert inf is not None
    if inf.decode == "none":
        return "none", math.inf, 0.0, 0.0
    pixels = inf.resolution_vs_1080p
    decode: Literal["nvdec", "cpu"] = inf.decode
    if decode == "nvdec" and datapipe.nvdec_engines(acc_id) == 0:
        decode = "cpu"
        assumptions.append(f"{acc_id}: no NVDEC figure in the catalog; frames decoded on CPU cores.")
    decode_fps = datapipe.video_decode_fps_per_gpu(acc_id, decode, pixels)
    per_s = "video.nvdec_fps_per_engine_1080p" if decode == "nvdec" else "video.cpu_decode_fps_per_core_1080p"
    decode_latency = pixels / datapipe.figures().value(per_s)
    prep_s = (NV12_BYTES_PER_PIXEL * PIXELS_1080P * pixels + 3 * spec.arch.image_size**2 * 2.0) / (
        hw.hbm_bytes_per_s * hw.memory_bw_fraction
    )
    return decode, decode_fps, decode_latency, prep_s


def _no_latency_option(
    spec: VisionSpec, rejected: list[tuple[str, str]], best_latency: tuple[float, str] | None
) -> Infeasible:
    """No accelerator meets the latency target: each one's reason and the lowest latency seen."""
    inf = spec.inference
    assert inf is not None
    got = f" The lowest found is {best_latency[0] * 1e3:.1f} ms on {best_latency[1]}." if best_latency else ""
    return Infeasible(
        f"No accelerator meets the {inf.latency_p99_s * 1e3:.0f} ms p99 latency for {spec.arch.title}.",
        ("; ".join(f"{a}: {r}" for a, r in rejected) + "." + got).strip(),
        "Relax inference.latency_p99, use a smaller model or a lower precision, or allow faster accelerators.",
    )


def _inference_demand(
    spec: VisionSpec,
    best: VisionOption,
    counts: Any,
    rates: tuple[float, float, float],
    stream_bytes_per_s: float,
) -> Demand:
    """What the chosen inference fleet asks of the infrastructure; `rates` is (frames/s,
    design frames/s, load: the share of the fleet's capacity the base rate uses)."""
    inf = spec.inference
    assert inf is not None
    arch = spec.arch
    facts = KindFacts(
        unit="image",
        unit_bytes=stream_bytes_per_s / inf.fps,
        params=counts.params,
        weights_bytes=counts.params * DTYPE_BYTES[inf.precision],
        checkpoint_bytes=0.0,
        host_memory_bytes_per_gpu=datapipe.dataloader_host_bytes(best.cpu_cores_per_gpu),
        cpu_cores_per_gpu=best.cpu_cores_per_gpu,
        compute_utilisation=best.mfu,
        compute_share_of_step=1.0,
    )
    return serving_demand(spec.name or arch.title, best, facts, rates, (best.gpus, 1))


def _plan_inference(spec: VisionSpec, calibration: Calibration | None) -> VisionPlan:
    inf = spec.inference
    assert inf is not None
    arch = spec.arch
    counts = count_model(arch)
    base_fps = inf.streams * inf.fps
    margins = margins_of(spec)
    design_fps = base_fps * (1.0 + margins.headroom)
    util = margins.utilisation_target
    objective = "cost" if spec.targets.objective == "cost" else "gpus"
    stream_bytes_per_s = inf.stream_bitrate or datapipe.default_stream_bytes_per_s()
    assumptions = [
        "Latency = decode of one frame + two batch service times (the batch in flight, then its own): "
        "dynamic batching below saturation; queueing jitter beyond that is not modelled.",
        "Inference engine fuses BatchNorm into convolutions and ReLU, residual adds and GELU into GEMM "
        "epilogues (TensorRT-style); pooling and LayerNorm stay memory-bound.",
        f"Capacity sized for {base_fps:,.0f} frames/s x (1 + headroom {margins.headroom:.0%}) at "
        f"{util:.0%} utilisation of compute and decoders.",
    ]
    options: list[VisionOption] = []
    rejected: list[tuple[str, str]] = []
    best_latency: tuple[float, str] | None = None
    for acc, node, hw in allowed_hardware(spec, inf.precision, calibration, rejected):
        chosen, lowest = _inference_on(spec, acc, node, hw, (design_fps, util, objective), assumptions)
        if lowest is not None and (best_latency is None or lowest < best_latency[0]):
            best_latency = (lowest, acc.id)
        if chosen is None:
            rejected.append((acc.id, f"no batch meets the {inf.latency_p99_s * 1e3:.0f} ms p99 latency"))
        else:
            options.append(chosen)
    if not options:
        raise _no_latency_option(spec, rejected, best_latency)
    best, alternatives = rank_serving(options, spec, objective, assumptions, rejected, explain)
    assumptions += batch_notes(inf.batch, best.latency_p99_s, inf.latency_p99_s)
    contexts = int(best.step["engine_contexts"])
    if contexts > 1:
        assumptions.append(
            f"Each GPU runs {contexts} engine contexts at once (TensorRT execution contexts on their own "
            f"streams, as MLPerf's gpu_inference_streams), each with its own batch of {best.batch_per_gpu}: "
            "they fill each other's idle SMs and launch gaps and share the L2; a batch's latency is "
            f"{contexts} batch times."
        )
    load = base_fps / (best.gpus * best.batch_per_gpu / best.step["step_s"])
    pipeline = {
        "decode": inf.decode,
        "nvdec_engines_per_gpu": float(datapipe.nvdec_engines(best.accelerator)),
        "frames_per_s": base_fps,
        "design_frames_per_s": design_fps,
        "cpu_cores_per_gpu": best.cpu_cores_per_gpu,
        "read_bytes_per_s": inf.streams * stream_bytes_per_s,
        "stream_bytes_per_s": stream_bytes_per_s,
    }
    demand = _inference_demand(spec, best, counts, (base_fps, design_fps, load), stream_bytes_per_s)
    return VisionPlan(
        name=spec.name or arch.title,
        model=arch.name,
        mode="inference",
        objective=objective,
        best=best,
        alternatives=alternatives,
        rejected=rejected,
        assumptions=assumptions,
        counts=counts,
        pipeline=pipeline,
        targets={
            "streams": inf.streams,
            "fps": inf.fps,
            "latency_p99_s": inf.latency_p99_s,
            "utilisation_target": util,
            "headroom": margins.headroom,
        },
        demand=demand,
        # One GPU is one replica; its capacity at full load (the plan keeps it at `util`).
        extra={"replica_capacity_rps": best.images_per_s_per_gpu / util, "safety_margin": margins.headroom},
    )
