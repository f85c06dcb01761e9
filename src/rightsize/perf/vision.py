"""Vision models from their layer lists: FLOPs, parameters, activations, and the time of a
training step or an inference batch on one accelerator.

Counting (per image; MACs = multiply-accumulates, FLOPs = 2 x MACs):
- conv: out_hw^2 x cout x cin x k^2 MACs; cin x cout x k^2 weights (+ cout bias, + 2 cout BatchNorm);
- linear: tokens x din x dout MACs; din x dout weights (+ dout bias);
- attention: QK^T and AV, 2 x tokens^2 x dim MACs; no weights;
- norm: 2 x channels weights (LayerNorm scale and shift); params: free parameters.
This reproduces the published ResNet-50 (4.09e9 MACs, 25.56M parameters) and ViT-B/16
(17.56e9 MACs, 86.57M) figures exactly (tests hold it).

Time (Principle 1: FLOPs / rate, bytes / bandwidth):
- a conv is an implicit GEMM with M = batch x out_hw^2, N = cout, K = cin x k^2, and a linear a
  GEMM with M = batch x tokens (perf.gemm: wave quantisation, K fill, roofline, launch overhead);
  training adds the data- and weight-gradient GEMMs;
- attention runs as a fused (flash) kernel at the accelerator's attention fraction of 16-bit peak;
  its backward does 2.5x the forward's FLOPs (FlashAttention-2: five matmuls against two);
- BatchNorm, ReLU, residual adds, pooling, LayerNorm and GELU are memory-bound: elements x
  passes x bytes / (HBM bandwidth x memory_bw_fraction). How many passes depends on the kernels
  the framework runs (`kernels`): 'fused' (cuDNN's fused BN+add+ReLU kernels, as MXNet and the
  MLPerf submissions use) counts a BN+ReLU as 3 passes forward (statistics, normalise: read x
  twice, write y) and 5 backward and folds the ReLU after a residual add into the add; 'eager'
  (PyTorch eager mode: BatchNorm, ReLU and add are separate kernels) adds a ReLU of its own after
  each BN+ReLU and each add, 2 passes forward (read, write) and 3 backward (read the gradient and
  the mask, write). Inference folds BN into the conv and fuses ReLU, residual adds and GELU into
  GEMM epilogues (TensorRT-style), so only pooling and LayerNorm remain, and each fused residual
  add's read of its shortcut tensor (one pass; none when shortcut and sum fit in the L2; nor
  for a pool or LayerNorm whose input and output fit there, `inference_pass_s`);
- an inference engine may run several contexts at once, each its own batch on its own stream
  (MLPerf's gpu_inference_streams): their kernels fill each other's last waves and launch gaps
  and share the L2 (`step_time`, `concurrent_gemm_efficiency`);
- the optimizer streams its bytes per parameter once per step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from rightsize.constants import GiB
from rightsize.perf import datapipe
from rightsize.perf.gemm import (
    K_FILL,
    gemm_efficiency,
    gemm_time_s,
    train_gemm_time_s,
)
from rightsize.perf.hardware import Hardware
from rightsize.perf.memory import ALLOCATOR_USABLE_FRACTION, FRAMEWORK_BYTES
from rightsize.spec.vision import VisionLayer, VisionModel

# FlashAttention-2 backward: 5 matmuls against the forward's 2 (Dao 2023, section 3.1).
ATTENTION_BWD_OVER_FWD = 2.5
# A ReLU as its own kernel (eager frameworks): forward reads and writes; backward reads the
# gradient and the saved output (mask) and writes the input gradient.
SEPARATE_RELU_PASSES = (2.0, 3.0)
KERNELS = ("eager", "fused")

# Elementwise passes (reads + writes of the tensor) per element, (forward, backward), training.
TRAIN_PASSES: dict[str, tuple[float, float]] = {
    "bn": (3.0, 5.0),  # fused BN(+ReLU): stats read, normalise read + write; backward 2 reductions + dx
    "add": (3.0, 3.0),  # two inputs, one output (+ fused ReLU); backward: ReLU grad and branch sum
    "pool": (2.0, 3.0),
    "norm": (2.0, 4.0),  # fused LayerNorm kernel
    "act": (2.0, 3.0),
    "relu": SEPARATE_RELU_PASSES,
}
# Inference: a residual add fused into the epilogue of the GEMM that produces one operand
# still reads the other (the shortcut) once; the sum is that GEMM's own write.
FUSED_ADD_READ_PASSES = 1.0
# Optimizer bytes streamed per parameter per step (fp32 master weights, AMP): read weights,
# gradients and states, write weights and states. SGD with momentum: 5 x 4 B; LARS adds norms;
# AdamW: 7 x 4 B; LAMB adds norms.
OPTIMIZER_STREAM_BYTES_PER_PARAM = {"sgd": 20.0, "lars": 24.0, "adamw": 28.0, "lamb": 32.0}
# Optimizer state bytes per parameter kept in HBM (momentum: 4; Adam moments: 8).
OPTIMIZER_STATE_BYTES_PER_PARAM = {"sgd": 4.0, "lars": 4.0, "adamw": 8.0, "lamb": 8.0}
# fp32 master weights (4) and fp32 gradients (4) under mixed precision, before optimizer state.
WEIGHT_AND_GRAD_BYTES_PER_PARAM = 8.0
# cuDNN / cuBLAS workspace for the convolution and GEMM algorithms.
WORKSPACE_BYTES = 1.0 * GiB
# Gradients are all-reduced in fp32 (DDP over AMP's fp32 gradients).
GRAD_BYTES_PER_PARAM = 4.0
# PyTorch DDP's default bucket (bucket_cap_mb = 25): the last bucket cannot overlap backward.
DDP_BUCKET_BYTES = 25e6

DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "fp32": 4.0}


# ----------------------------------------------------------------------------------------- counts


def _positions(layer: VisionLayer) -> float:
    """Spatial positions (out_hw^2) or tokens a layer is applied at, per image."""
    return float(layer.out_hw**2) if layer.out_hw else float(layer.tokens)


def layer_macs(layer: VisionLayer) -> float:
    """Multiply-accumulates of one instance of the layer, per image."""
    if layer.op == "conv":
        return layer.out_hw**2 * layer.cout * layer.cin * layer.k**2
    if layer.op == "linear":
        return float(layer.tokens * layer.din * layer.dout)
    if layer.op == "attention":
        return 2.0 * layer.tokens**2 * layer.dim
    return 0.0


def layer_params(layer: VisionLayer) -> float:
    """Trainable parameters of one instance of the layer."""
    if layer.op == "conv":
        bias = layer.cout if layer.bias else 0
        return float(layer.cin * layer.cout * layer.k**2 + bias + (2 * layer.cout if layer.bn else 0))
    if layer.op == "linear":
        bias = layer.dout if (layer.bias is None or layer.bias) else 0
        return float(layer.din * layer.dout + bias)
    if layer.op == "norm":
        return 2.0 * layer.channels
    if layer.op == "params":
        return 1.0  # `count` free parameters
    return 0.0


def layer_output_elements(layer: VisionLayer) -> float:
    """Elements of one instance's output, per image."""
    if layer.op == "conv":
        return float(layer.cout * layer.out_hw**2)
    if layer.op == "linear":
        return float(layer.dout * layer.tokens)
    if layer.op == "attention":
        return float(layer.dim * layer.tokens)
    if layer.op in ("pool", "add", "norm", "act"):
        return layer.channels * _positions(layer)
    return 0.0


@dataclass(frozen=True)
class VisionCounts:
    """Per-image counts of a model."""

    macs_per_image: float
    flops_per_image: float  # forward, 2 x MACs
    params: float
    stored_activation_elements_per_image: float  # kept for the backward pass
    largest_output_elements_per_image: float  # inference working set
    macs_by_op: dict[str, float]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def count_model(model: VisionModel) -> VisionCounts:
    """MACs, parameters and stored activations per image, from the layer list."""
    macs_by_op: dict[str, float] = {}
    params = 0.0
    stored = 3.0 * model.image_size**2  # the input image
    largest = stored
    for layer in model.layers:
        macs = layer_macs(layer) * layer.count
        if macs:
            macs_by_op[layer.op] = macs_by_op.get(layer.op, 0.0) + macs
        params += layer_params(layer) * layer.count
        out = layer_output_elements(layer)
        # A conv followed by BatchNorm keeps its output (for BN's backward) and BN's output (the next
        # layer's input); every other layer keeps its output.
        stored += out * layer.count * (2.0 if layer.op == "conv" and layer.bn else 1.0)
        largest = max(largest, out)
    total = sum(macs_by_op.values())
    return VisionCounts(
        macs_per_image=total,
        flops_per_image=2.0 * total,
        params=params,
        stored_activation_elements_per_image=stored,
        largest_output_elements_per_image=largest,
        macs_by_op=macs_by_op,
    )


# ------------------------------------------------------------------------------------------- time


@dataclass(frozen=True)
class VisionStepTime:
    """Seconds of one step (training) or batch (inference) on one GPU, broken down."""

    batch: int
    gemm_s: float  # convolutions and linears, forward (+ backward when training)
    attention_s: float
    memory_bound_s: float  # BN, ReLU, adds, pooling, norms, activations
    optimizer_s: float
    overhead_s: float  # kernel launches and tails
    compute_s: float  # the sum of the above

    def as_dict(self) -> dict[str, float]:
        return {f"{k}": float(v) for k, v in asdict(self).items()}


def conv_time_s(
    layer: VisionLayer,
    batch: int,
    hw: Hardware,
    elem_bytes: float,
    training: bool,
    l2_bytes: float = 0.0,
    contexts: int = 1,
) -> list[float]:
    """Seconds of one conv instance's passes (forward; + data gradient and weight gradient when
    training), without launch overhead. Each pass is an implicit GEMM: its compute is a GEMM of
    (M = batch x out_hw^2, N = cout, K = cin x k^2) at perf.gemm's shape efficiency, but its operands
    are the real tensors, read once (cuDNN does not materialise the k^2-times larger im2col matrix):
    input x (batch x cin x in_hw^2; in_hw = out_hw where the layer list gives none), weights
    (cin x cout x k^2) and output (batch x cout x out_hw^2); the slower of the two sets the time.
    At inference, a layer whose input and output fit in the on-chip L2 (`l2_bytes`) keeps them
    there between kernels: only its weights come from HBM. With `contexts` engine contexts
    running at once (inference), a pass runs at `concurrent_gemm_efficiency`."""
    m = float(batch * layer.out_hw**2)
    cols, red = float(layer.cout), float(layer.cin * layer.k**2)
    x = batch * layer.cin * float((layer.in_hw or layer.out_hw) ** 2)
    y = m * layer.cout
    w = red * cols
    mem_bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    # (GEMM shape (m, n, k), elements moved): forward y = conv(x, W); dgrad dx = conv^T(dy, W);
    # wgrad dW = x^T dy (reduction over the batch and positions).
    resident = not training and (x + y) * elem_bytes <= l2_bytes
    shapes = [((m, cols, red), w if resident else x + w + y)]
    if training:
        shapes += [((m, red, cols), y + w + x), ((red, cols, m), x + y + w)]
    out = []
    for (gm, gn, gk), elements in shapes:
        if contexts > 1:
            eff = concurrent_gemm_efficiency(gm, gn, gk, hw)
        else:
            eff = float(gemm_efficiency(np.array(gm), np.array(gn), np.array(gk), hw))
        compute = 2.0 * gm * gn * gk / (hw.peak_flops_per_s * eff)
        out.append(max(compute, elements * elem_bytes / mem_bw))
    return out


def concurrent_gemm_efficiency(m: float, n: float, k: float, hw: Hardware) -> float:
    """Fraction of peak of one GEMM while other engine contexts run kernels on the same GPU
    (TensorRT execution contexts on their own CUDA streams, as MLPerf's `gpu_inference_streams`):
    the SMs a kernel's last wave leaves idle run the other contexts' tiles, so perf.gemm's wave
    quantisation (and the split-K that works around it) goes; each tile's pipeline fill
    (perf.gemm.K_FILL) stays, and the GEMM fraction. (m, n) do not matter beyond that: perf.gemm
    counts no loss to a part-filled edge tile either."""
    del m, n
    return float(hw.gemm_fraction * k / (k + K_FILL))


def inference_pass_s(
    elements: float, passes: float, act_bytes: float, l2_bytes: float, mem_bw: float
) -> float:
    """Seconds of a memory-bound inference kernel (pooling, LayerNorm) that reads and writes
    `elements` x `passes` values of `act_bytes`: from HBM/GDDR at `mem_bw`, or none when what it
    touches fits in the on-chip L2 (`l2_bytes`, already divided among the engine contexts), as a
    conv's activations and a fused add's shortcut do (`conv_time_s`; the pool after ResNet's first
    conv reads that conv's output, still in L2 when the batch's output fits there). The L2's own
    bandwidth is not modelled, as for the convs."""
    moved = elements * passes * act_bytes
    return 0.0 if moved <= l2_bytes else moved / mem_bw


def _elementwise(layer: VisionLayer, kernels: str = "fused") -> list[tuple[str, float]]:
    """(kind, elements per image) of the memory-bound work attached to one layer instance;
    'eager' kernels add a separate ReLU after a BN+ReLU and after a residual add with ReLU."""
    relu = kernels == "eager" and layer.relu
    if layer.op == "conv" and layer.bn:
        out = float(layer.cout * layer.out_hw**2)
        return [("bn", out)] + ([("relu", out)] if relu else [])
    if layer.op == "add" and relu:
        return [("add", layer.channels * _positions(layer)), ("relu", layer.channels * _positions(layer))]
    if layer.op == "pool":
        return [("pool", layer.channels * float(layer.in_hw**2 + layer.out_hw**2) / 2.0)]
    if layer.op in ("add", "norm", "act"):
        return [(layer.op, layer.channels * _positions(layer))]
    return []


def step_time(
    model: VisionModel,
    hw: Hardware,
    batch: int,
    *,
    training: bool,
    act_bytes: float,
    optimizer: str = "sgd",
    kernels: str = "fused",
    contexts: int = 1,
) -> VisionStepTime:
    """Time of one training step or inference batch of `batch` images on one GPU (no communication);
    `kernels` ('eager' or 'fused') sets the memory-bound passes of training (module docstring).

    Inference with `contexts` > 1 engine contexts in flight at once (each its own batch on its own
    stream): the time returned is the GPU time one batch takes in that steady state (a context
    finishes a batch every `contexts` x this). The contexts fill each other's idle SMs
    (`concurrent_gemm_efficiency`) and launch gaps (the per-kernel overhead is spread over them),
    and share the L2: a layer stays resident only if `contexts` working sets fit in it."""
    if training and contexts != 1:
        raise ValueError("engine contexts apply to inference only")
    gemm_s = attention_s = memory_s = 0.0
    launches = 0.0
    l2 = datapipe.l2_bytes(hw.accelerator_id) / contexts
    mem_bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction
    gemm_bytes = act_bytes
    # gemm_time_s adds a launch overhead per GEMM; it is taken out here and counted once, below.
    for layer in model.layers:
        n = layer.count
        if layer.op == "conv":
            passes = conv_time_s(layer, batch, hw, gemm_bytes, training, l2, contexts)
            gemm_s += n * sum(passes)
            launches += n * len(passes)
        elif layer.op == "linear":
            m = batch * _positions(layer)
            cols, red = float(layer.dout), float(layer.din)
            if training:
                fwd, bwd = train_gemm_time_s(m, cols, red, hw, gemm_bytes)
                gemm_s += n * (float(fwd) + float(bwd) - 3 * hw.kernel_overhead_s)
                launches += 3 * n
            elif contexts > 1:
                compute = (
                    2.0
                    * m
                    * cols
                    * red
                    / (hw.peak_flops_per_s * concurrent_gemm_efficiency(m, cols, red, hw))
                )
                gemm_s += n * max(compute, gemm_bytes * (m * red + red * cols + m * cols) / mem_bw)
                launches += n
            else:
                gemm_s += n * (float(gemm_time_s(m, cols, red, hw, gemm_bytes)) - hw.kernel_overhead_s)
                launches += n
        elif layer.op == "attention":
            flops = 2.0 * layer_macs(layer) * batch
            rate = hw.peak_16bit_flops_per_s * hw.attention_fraction
            attention_s += n * flops / rate * (1.0 + (ATTENTION_BWD_OVER_FWD if training else 0.0))
            launches += n * (2 if training else 1)
        for kind, elements in _elementwise(layer, kernels if training else "fused"):
            if training:
                fwd_p, bwd_p = TRAIN_PASSES[kind]
                memory_s += n * batch * elements * (fwd_p + bwd_p) * act_bytes / mem_bw
                launches += 2 * n
            elif kind in ("pool", "norm"):
                memory_s += n * inference_pass_s(
                    batch * elements, TRAIN_PASSES[kind][0], act_bytes, l2, mem_bw
                )
                launches += n
            elif kind == "add" and 2.0 * batch * elements * act_bytes > l2:
                # Fused into the producing GEMM's epilogue: no kernel of its own, but the
                # shortcut tensor is still read (unless it and the output stay in L2).
                memory_s += n * batch * elements * FUSED_ADD_READ_PASSES * act_bytes / mem_bw
    optimizer_s = 0.0
    if training:
        params = count_model(model).params
        optimizer_s = params * OPTIMIZER_STREAM_BYTES_PER_PARAM[optimizer] / mem_bw
        launches += 4  # multi-tensor apply launches a handful of kernels
    overhead_s = launches * hw.kernel_overhead_s / contexts
    total = gemm_s + attention_s + memory_s + optimizer_s + overhead_s
    return VisionStepTime(batch, gemm_s, attention_s, memory_s, optimizer_s, overhead_s, total)


# ----------------------------------------------------------------------------------------- memory


@dataclass(frozen=True)
class VisionMemory:
    """Bytes per GPU, broken down."""

    weights_grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    workspace_bytes: float
    framework_bytes: float
    total_bytes: float
    capacity_bytes: float

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.capacity_bytes

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def train_memory(
    model: VisionModel, hw: Hardware, batch: int, act_bytes: float, optimizer: str
) -> VisionMemory:
    """Training memory of one data-parallel replica (every GPU holds the whole model)."""
    counts = count_model(model)
    weights = counts.params * WEIGHT_AND_GRAD_BYTES_PER_PARAM
    opt = counts.params * OPTIMIZER_STATE_BYTES_PER_PARAM[optimizer]
    acts = batch * counts.stored_activation_elements_per_image * act_bytes
    total = weights + opt + acts + WORKSPACE_BYTES + FRAMEWORK_BYTES
    return VisionMemory(
        weights, opt, acts, WORKSPACE_BYTES, FRAMEWORK_BYTES, total, hw.hbm_bytes * ALLOCATOR_USABLE_FRACTION
    )


def inference_memory(
    model: VisionModel, hw: Hardware, batch: int, weight_bytes: float, contexts: int = 1
) -> VisionMemory:
    """Inference memory: weights plus two live layer outputs per image in flight (`contexts`
    engine contexts each hold a batch)."""
    counts = count_model(model)
    weights = counts.params * weight_bytes
    acts = contexts * batch * 2.0 * counts.largest_output_elements_per_image * 2.0
    total = weights + acts + WORKSPACE_BYTES + FRAMEWORK_BYTES
    return VisionMemory(
        weights, 0.0, acts, WORKSPACE_BYTES, FRAMEWORK_BYTES, total, hw.hbm_bytes * ALLOCATOR_USABLE_FRACTION
    )


# --------------------------------------------------------------------------------------- batching


def batched_latency_s(service_s: float, fixed_s: float = 0.0) -> float:
    """Worst-case latency under dynamic batching below saturation: a request waits for the batch in
    flight to finish (one service time), then rides the next batch (another), plus fixed costs
    (decode, network). Deterministic service; queueing jitter beyond that is not modelled."""
    return fixed_s + 2.0 * service_s


def gradient_allreduce_exposed_s(allreduce_s: float, backward_s: float, grad_bytes: float) -> float:
    """Exposed all-reduce time under DDP: buckets overlap the backward pass; the last bucket
    (DDP_BUCKET_BYTES of grad_bytes) cannot, nor can the part longer than the backward."""
    if allreduce_s <= 0.0:
        return 0.0
    last = allreduce_s * min(1.0, DDP_BUCKET_BYTES / max(grad_bytes, 1.0))
    return float(max(allreduce_s - backward_s, last))
