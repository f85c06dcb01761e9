"""A frozen fp8 base's weight transposes, once per micro-batch (LoRA on Transformer Engine).

Hopper's fp8 tensor cores take only the TN layout, so the input-gradient GEMM of each linear
needs its weight transposed. NVIDIA's LoRA recipe keeps the frozen base weights in fp8
(`fp8_params: ${FP8}`) and turns the transpose cache off (`disable_parameter_transpose_cache:
True`): mlcommons/training_results_v4.0, NVIDIA/benchmarks/llama2_70b_lora/implementations/nemo/
conf/megatron_gpt_peft_tuning_config.yaml (May 2024), and the same two lines in v4.1's
eos_n8_ngc24.09_nemo (Oct 2024). With the cache off, Megatron-Core passes
`is_first_microbatch=None` to every Transformer Engine linear (core_v0.7.0.beta,
megatron/core/transformer/custom_layers/transformer_engine.py: TELinear and
TELayerNormColumnParallelLinear `forward`), and Transformer Engine's backward then transposes
the fp8 weight afresh (v1.6rc2, the submission's TE_REVISION: module/linear.py and
layernorm_linear.py, `weight.transpose_2d(cache=ctx.is_first_microbatch is not None)`, which
runs `tex.fp8_transpose` when not caching): one read and one write of a byte per weight
element, every micro-batch, whatever its token count. Per-tensor fp8 on Transformer Engine
only ('auto' and 'delayed' recipes); a full-training run's weights change every step and are
cast with the step's first micro-batch (not counted here either way).

Only where fp8 GEMMs take the TN layout alone: Transformer Engine's `is_non_tn_fp8_gemm_supported`
(transformer_engine/pytorch/utils.py, since c7702309f, 2025-04-21) is true for compute
capability 10.x and 13+, so Hopper (9.0) and Ada (8.9) transpose, and data-centre Blackwell
does not. AMD's ROCm fork is not covered by that source: left out, not assumed.
"""

from __future__ import annotations

import numpy as np

from rightsize.catalog.families import family_of
from rightsize.perf.hardware import Hardware
from rightsize.perf.params import count_params
from rightsize.perf.workload import ParallelConfigs, TrainWorkload

# tex.fp8_transpose: read the fp8 weight (1 byte) and write its transpose (1 byte).
TRANSPOSE_BYTES_PER_WEIGHT = 2.0
# Transformer Engine per-tensor fp8 recipes whose primary weights are fp8 tensors.
TE_PER_TENSOR_RECIPES = ("auto", "delayed")
# Catalog families whose fp8 GEMMs are TN-only (module docstring): Hopper, Grace Hopper, and the
# Ada parts of the PCIe family (its T4 has no fp8; its RTX PRO 6000, compute capability 12.0, is
# TN-only in that same function).
TN_ONLY_FP8_FAMILIES = ("hopper", "gh200", "ada-turing-workstation")
# One kernel per linear module: the attention's fused QKV and out-projection (multi-latent
# attention: the q and kv down- and up-projections and the out-projection), and two per MLP (up,
# gate and up fused as `linear_fc1`, and down) for the dense MLP, each shared expert and each
# local routed expert.
ATTENTION_MODULES = 2.0
MLA_ATTENTION_MODULES = 5.0
MLP_MODULES = 2.0


def _applies(w: TrainWorkload, hw: Hardware) -> bool:
    if not (w.frozen_base and w.precision == "fp8" and w.fp8_recipe in TE_PER_TENSOR_RECIPES):
        return False
    # an accelerator outside the catalog's families is its own family: not sourced, not assumed
    return family_of(hw.accelerator_id) in TN_ONLY_FP8_FAMILIES


def frozen_fp8_transpose_s(w: TrainWorkload, cfg: ParallelConfigs, hw: Hardware, moe: bool) -> np.ndarray:
    """Backward seconds per layer per micro-batch to transpose this GPU's frozen fp8 weights
    (module docstring): its local share of the layer's linears, tensor- (and expert-) parallel
    split, at the accelerator's streaming bandwidth, plus a kernel launch per linear module."""
    n = len(cfg)
    if not _applies(w, hw):
        return np.zeros(n)
    c = count_params(w.arch)
    tp = cfg.tp.astype(np.float64)
    attention = MLA_ATTENTION_MODULES if w.arch.is_mla else ATTENTION_MODULES
    if moe:
        local = (c.attention_per_layer + c.shared_experts_per_layer) / tp
        local = local + c.routed_experts_per_layer / (tp * cfg.ep)
        mlps = w.arch.shared_experts + w.arch.experts / cfg.ep
    else:
        local = (c.attention_per_layer + c.dense_mlp_per_layer) / tp
        mlps = np.ones(n)
    kernels = attention + MLP_MODULES * mlps
    seconds = local * TRANSPOSE_BYTES_PER_WEIGHT / (hw.hbm_bytes_per_s * hw.memory_bw_fraction)
    return seconds + kernels * hw.kernel_overhead_s
