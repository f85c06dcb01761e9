"""Bytes moved to quantise GEMM operands to a low precision, per recipe (read by `perf.layer`):
the amax and cast passes of current scaling, delayed scaling's cheaper cast, MXFP8 and NVFP4
blocks, and torchao's rowwise recipe, which casts each operand once per axis."""

from __future__ import annotations

from rightsize.perf.workload import TrainWorkload

# FP8 (Transformer Engine, current / per-tensor scaling as in NeMo's FP8-CS recipes) turns
# every GEMM operand that is not already fp8 into one: an amax pass reads the 16-bit tensor
# (2 bytes), the cast reads it again (2) and writes the fp8 copy (1) and, because Hopper's
# fp8 tensor cores take only the TN layout, a transposed fp8 copy for the other backward
# GEMM (1): 6 bytes per element (TE docs, "FP8 primer": cast_transpose; delayed scaling
# folds the amax into the previous cast, 4). These bytes are why fp8 steps are not 2x bf16.
FP8_CAST_BYTES_PER_ELEMENT = 6.0
# NVFP4 (arXiv 2509.25149): the same amax and cast passes, writing 0.5625-byte blocks and a
# transposed copy (2 + 2 + 0.5625 + 0.5625); the weight-gradient operands also go through a
# 16x16 random Hadamard transform first (read and write 2 bytes each, +4) in backward.
NVFP4_CAST_BYTES_PER_ELEMENT = 2.0 + 2.0 + 2 * (0.5 + 1.0 / 16.0)
# (forward, backward) bytes per GEMM-operand element, per low precision.
CAST_BYTES_PER_ELEMENT = {
    "fp8": (FP8_CAST_BYTES_PER_ELEMENT, FP8_CAST_BYTES_PER_ELEMENT),
    "nvfp4": (NVFP4_CAST_BYTES_PER_ELEMENT, NVFP4_CAST_BYTES_PER_ELEMENT + 4.0),
}
# Transformer Engine's delayed scaling takes each tensor's scale from the amax history of
# earlier steps, so the amax is computed inside the cast kernel: no separate read of the
# 16-bit tensor (TE docs, "Using FP8 with Transformer Engine": DelayedScaling, amax_history_len).
FP8_DELAYED_CAST_BYTES_PER_ELEMENT = FP8_CAST_BYTES_PER_ELEMENT - 2.0
# MXFP8 (Transformer Engine's MXFP8BlockScaling on Blackwell; TE docs "MXFP8"): each scale is
# local to a block of 32 consecutive values (E8M0), computed inside the cast, so no tensor-wide
# amax pass; one-dimensional blocks along each GEMM's reduction axis need a rowwise and a
# columnwise copy, written by one kernel that reads the 16-bit tensor once:
# 2 + 2 x (1 + 1/32) bytes per element.
MXFP8_CAST_BYTES_PER_ELEMENT = 2.0 + 2.0 * (1.0 + 1.0 / 32.0)
# torchao's rowwise recipe (Float8LinearConfig.from_recipe_name("rowwise"): axiswise e4m3 scales
# for input, weight and grad_output) scales each operand along its GEMM's reduction axis, so an
# operand used by two GEMMs along different axes is cast twice (torchao float8_linear.py: the
# input as `_dim0` for the output GEMM and `_dim1` for grad_weight; grad_output as `_dim0` for
# grad_input and `_dim1` for grad_weight). torchao's own roofline counts, per element
# (torchao/testing/training/roofline_utils.py, get_tensor_memory_traffic_ovhd_s, rowwise, pytorch/ao
# de5707176, Jun 2025): the dim0 cast with its row amax fused, read 2 + write 1; a bf16
# transpose, read 2 + write 2; the dim1 cast, read 2 + write 1: 3 where the first GEMM runs and 7
# more where the second does (the input's second copy waits for the backward).
ROWWISE_FIRST_CAST_BYTES_PER_ELEMENT = 2.0 + 1.0
ROWWISE_SECOND_CAST_BYTES_PER_ELEMENT = (2.0 + 2.0) + (2.0 + 1.0)
# Its backward GEMMs run without fast accumulation, where torchao calls the tensorwise cuBLAS
# kernel with unit scales and multiplies the 16-bit output by the row and column scales after
# it (float8_ops.addmm_float8_unwrapped: "The rowwise CUTLASS-based kernel is so slow without
# fast-accum that we'd rather use the tensorwise cuBLAS-based kernel and do the scaling manually
# afterwards"): read 2 + write 2 bytes per element of each grad_input.
ROWWISE_POST_SCALE_BYTES_PER_ELEMENT = 2.0 + 2.0


def cast_bytes_per_element(w: TrainWorkload) -> tuple[float, float]:
    """(forward, backward) bytes moved per GEMM-operand element to quantise it under the
    workload's precision and fp8 recipe: current / dynamic scaling (Transformer Engine's
    current scaling, torchao's tensorwise) reads the 16-bit tensor for its amax before the
    cast; delayed scaling does not; torchao's rowwise casts each operand once per axis (forward:
    the first cast; backward: an output gradient's two casts; `rowwise_backward_bytes_per_element`
    adds the forward inputs' second casts)."""
    if w.precision == "fp8" and w.fp8_recipe == "delayed":
        return FP8_DELAYED_CAST_BYTES_PER_ELEMENT, FP8_DELAYED_CAST_BYTES_PER_ELEMENT
    if w.precision == "fp8" and w.fp8_recipe == "mxfp8":
        return MXFP8_CAST_BYTES_PER_ELEMENT, MXFP8_CAST_BYTES_PER_ELEMENT
    if w.precision == "fp8" and w.fp8_recipe == "rowwise":
        both = ROWWISE_FIRST_CAST_BYTES_PER_ELEMENT + ROWWISE_SECOND_CAST_BYTES_PER_ELEMENT
        return ROWWISE_FIRST_CAST_BYTES_PER_ELEMENT, both
    return CAST_BYTES_PER_ELEMENT[w.precision]


def rowwise_backward_bytes_per_element(w: TrainWorkload) -> float:
    """Backward bytes per forward GEMM-input element beyond the output gradients' casts: under
    torchao's rowwise recipe the input's second (dim1) cast for the weight-gradient GEMM and the
    post-scaling of the grad_input GEMM's output (the same shape as the input); 0 otherwise."""
    if w.precision == "fp8" and w.fp8_recipe == "rowwise":
        return ROWWISE_SECOND_CAST_BYTES_PER_ELEMENT + ROWWISE_POST_SCALE_BYTES_PER_ELEMENT
    return 0.0


# torchtitan's tensor parallelism under torchao's tensorwise recipe (apply_tp with float8:
# torchtitan parallelisms/parallelize_llama.py at 9dec370, Dec 2024, and
# models/llama3/parallelize_llama.py at 820504e, Jun 2025, `enable_float8_tensorwise_tp`) swaps in
# torchao's Float8ColwiseParallel, Float8RowwiseParallel and PrepareFloat8ModuleInput
# (torchao/float8/float8_tensor_parallel.py at 6243040): the sequence-parallel inputs of the
# attention and the MLP are cast to float8 on their shard and all-gathered as float8, and the
# row-parallel out-projection's and MLP-down's output gradients are cast to float8
# (NoopFwToFloat8BwDynamic) before the backward's all-gather; the reduce-scatters stay 16 bit.
# Rowwise keeps 16-bit gathers (820504e: "For rowwise recipes, we use regular TP and all-gather
# happens in high precision").
FP8_BYTES = 1.0
BF16_BYTES = 2.0


def tp_gather_bytes_per_element(w: TrainWorkload) -> float:
    """Bytes per element of the tensor-parallel all-gathers of activations and output gradients
    under sequence parallelism: float8 (1) for torchao's tensorwise recipe, 16 bit (2) otherwise."""
    return FP8_BYTES if w.precision == "fp8" and w.fp8_recipe == "tensorwise" else BF16_BYTES
