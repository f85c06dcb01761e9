"""Timing a serving step operation by operation from a measured kernel table.

A decode step of a dense decoder-only transformer on one tensor-parallel rank runs, per
layer, the QKV projection, attention over the cached context, the output projection, the
MLP's gate/up and down projections, two all-reduces of the activations and the memory-bound
element-wise kernels (norms, activation); once per step the input embedding (with its
all-reduce under tensor parallelism) and the logits GEMM, the op list of AIConfigurator's own
Llama model. A prefill runs the same GEMMs over every prompt token with causal attention over
the prompt (a prompt up to twice the longest measured one extended by the table's own trend). Each operation is timed from the table when its shape lies
inside the measured range, otherwise from the replica's analytic model; the returned
`OpReport` says which, per operation, with the reason for every fallback.

The table is one engine's kernels, so what the engine adds around them (scheduling,
sampling, launch gaps between CUDA graphs) stays in the analytic per-step overhead.
Mixture-of-experts and latent-attention models have no measured op list here; they are
timed analytically as a whole (the report says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rightsize.perf.kernels.grid import Grid
from rightsize.perf.kernels.table import KernelTable
from rightsize.perf.params import mlp_matrices

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.perf.inference import Replica

ACT_BYTES = 2.0  # all-reduced activations are 16 bit
# The LM head stays in 16 bit when the layers are quantized: NVIDIA ModelOpt (which makes
# TensorRT-LLM's FP8/FP4 checkpoints) disables it in every config it ships
# (`modelopt/torch/quantization/config.py`, `_default_disabled_quantizer_cfg`:
# `"*lm_head*": {"enable": False}`, read 2026-11), and AIConfigurator 0.12.0's Llama op list
# (`aiconfigurator_core/sdk/models/llama.py`) times `logits_gemm` in bf16 for any GEMM quant.
LOGITS_DTYPE = "bf16"

# Beyond the measured range a large batch of attention (or a GEMM wider than any measured n)
# is timed as k equal parts run back to back: once a part fills the GPU, latency is linear in
# the work (each sequence's KV, each output column, is independent). The kernel's fixed cost
# (launch, prologue, tail: the intercept of its latency over the two smallest measured sizes)
# is paid once, not k times. Checked on the AIConfigurator 0.12.0 TensorRT-LLM tables
# themselves, predicting each measured cell from its measured half or quarter (so no
# validation row is involved): generation attention (15,443 cells, H100/H200/L40S/A100/B200)
# median error +0.5% (k whole parts: +11.8%), GEMMs split on n (86,126 cells) -2.3% (+20.7%).
# Parts must stay at least this large (sequences or columns) to be sure to fill the GPU.
MAX_SPLIT = 8
MIN_PART = {"batch": 64.0, "n": 4096.0}
# Decode attention fills the GPU with fewer, longer sequences too: TensorRT-LLM's generation
# kernels split one sequence's context over several thread blocks (multi-block mode, docs
# "Multi-Head, Multi-Query, and Group-Query Attention"), so a part is large enough once it
# streams as many cached tokens as MIN_PART["batch"] sequences of 2,048 do.
MIN_ATTENTION_PART_TOKENS = 64.0 * 2048.0
# A prompt longer than the longest measured one (AIConfigurator's context-attention tables stop
# at 16,384 tokens) is timed by the power law of the last measured segment, as the grid
# interpolates between points: causal attention grows between s and s^2 with the prompt, its
# exponent rising towards 2 as the kernel saturates. Checked on the AIConfigurator 0.12.0
# TensorRT-LLM tables (H100, H200, B200, GB200, L40S, A100), predicting each measured cell at
# s >= 4,096 from the two measured lengths below it: median -2.3% (P10 -9.5%, P90 +5.5%);
# s^2 from the last point: +7.1%; four times the half-length prompt: +19.8%; AIConfigurator's own
# linear extension: -8.4%. Only up to twice the longest measured prompt; beyond, analytic.
MAX_SEQ_EXTENSION = 2.0


@dataclass
class OpReport:
    """Which source timed each operation: measured share of query points, and fallback reasons."""

    table: str
    measured: dict[str, float] = field(default_factory=dict)  # op -> share of points from the table
    reasons: dict[str, str] = field(default_factory=dict)  # op -> why the analytic model timed it
    # op -> its seconds in the step (every layer's share summed), the breakdown of the total
    seconds: dict[str, np.ndarray] = field(default_factory=dict)

    def note(self, op: str, ok: np.ndarray, reason: str) -> None:
        share = float(np.mean(ok)) if np.size(ok) else 0.0
        self.measured[op] = share
        if share < 1.0:
            self.reasons[op] = reason

    @property
    def source(self) -> str:
        """'measured kernels', 'analytic' or 'mixed' over all ops."""
        shares = list(self.measured.values())
        if shares and min(shares) >= 1.0:
            return "measured kernels"
        if not shares or max(shares) <= 0.0:
            return "analytic"
        return "mixed"


def split_lookup(
    lookup: Callable[[np.ndarray], np.ndarray],
    size: np.ndarray,
    axis: str,
    min_part: np.ndarray | float | None = None,
    floor_sizes: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """lookup(size), or k x (lookup(size / k) - fixed) + fixed for the smallest k (2, 4, 8)
    that is measured with parts no smaller than `min_part` (default MIN_PART[axis]), where
    `fixed` is the kernel's fixed cost: the intercept of the line through its latencies at the
    two smallest measured sizes `floor_sizes` (0 when not given or not measured); returns
    (latency, parts used, 1 = whole)."""
    smallest = MIN_PART[axis] if min_part is None else min_part
    size = np.asarray(size, dtype=np.float64)
    out = np.asarray(lookup(size), dtype=np.float64)
    parts = np.where(np.isfinite(out), 1.0, np.nan)
    fixed = np.zeros(size.shape)
    if floor_sizes is not None and not np.isfinite(out).all():
        x0, x1 = floor_sizes
        t0 = np.asarray(lookup(np.full(size.shape, x0)), dtype=np.float64)
        t1 = np.asarray(lookup(np.full(size.shape, x1)), dtype=np.float64)
        intercept = np.clip(t0 - x0 * (t1 - t0) / (x1 - x0), 0.0, t0)
        fixed = np.where(np.isfinite(intercept), intercept, 0.0)
    k = 2
    while k <= MAX_SPLIT and not np.isfinite(out).all():
        allowed = size / k >= smallest
        part = lookup(np.where(allowed, size / k, size))
        trial = np.where(allowed, k * np.maximum(part - fixed, 0.0) + fixed, np.nan)
        fill = ~np.isfinite(out) & np.isfinite(trial)
        out = np.where(fill, trial, out)
        parts = np.where(fill, float(k), parts)
        k *= 2
    return out, parts


def _smallest(g: Grid, axis: int) -> tuple[float, float] | None:
    """The two smallest measured sizes on one axis of a grid (None with fewer than two)."""
    pts = g.points[axis]
    return (float(pts[0]), float(pts[1])) if len(pts) >= 2 else None


def _beyond_longest(g: Grid, heads: float, seq: np.ndarray, batch: np.ndarray) -> np.ndarray:
    """Context attention at (heads, seq, batch) from the grid, and for a prompt longer than the
    longest measured one (up to MAX_SEQ_EXTENSION times it) the longest measured latency scaled
    by the power law of the last measured segment, its exponent held to [1, 2]."""
    out = np.asarray(g(heads, seq, batch), dtype=np.float64)
    lens = g.points[1]
    longest = float(lens[-1])
    over = (seq > longest) & (seq <= MAX_SEQ_EXTENSION * longest)
    if len(lens) < 2 or not over.any():
        return out
    last = np.asarray(g(heads, longest, batch), dtype=np.float64)
    before = np.asarray(g(heads, float(lens[-2]), batch), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.clip(np.log(last / before) / np.log(longest / float(lens[-2])), 1.0, 2.0)
        extended = last * (seq / longest) ** power
    return np.where(np.isfinite(out), out, np.where(over, extended, np.nan))


def _pick(
    report: OpReport, op: str, measured: np.ndarray, analytic: Callable[[], np.ndarray], reason: str
) -> np.ndarray:
    ok = np.isfinite(measured)
    report.note(op, ok, reason)
    if ok.all():
        return measured
    return np.where(ok, measured, analytic())


def _range(table: KernelTable, op: str, *key: object) -> str:
    g = table.grid(op, *key)
    if g is None:
        return f"no {op} measured for {', '.join(str(k) for k in key)}"
    spans = ", ".join(f"{a} {lo:g}-{hi:g}" for a, (lo, hi) in g.bounds().items())
    return f"shape outside the measured range ({spans}) or a cell not measured"


def _gemm(
    rep: Replica,
    table: KernelTable,
    report: OpReport,
    op: str,
    m: np.ndarray,
    n: float,
    k: float,
    dtype: str | None = None,
) -> np.ndarray:
    dtype = dtype or rep.weight_precision
    g = table.grid("gemm", dtype)
    if g is None:
        measured = np.full(np.shape(m), np.nan)
    else:
        mm = np.asarray(m, dtype=np.float64)
        measured, _ = split_lookup(
            lambda nn: g(mm, nn, k), np.full(mm.shape, float(n)), "n", floor_sizes=_smallest(g, 1)
        )
    return _pick(report, op, measured, lambda: rep.analytic_gemm_s(m, n, k), _range(table, "gemm", dtype))


def _all_reduce(rep: Replica, table: KernelTable, report: OpReport, tokens: np.ndarray) -> np.ndarray:
    if rep.tp == 1:
        return np.zeros(np.shape(tokens))
    nbytes = tokens * rep.arch.hidden * ACT_BYTES
    g = table.grid("all_reduce", "bf16", rep.tp)
    measured = g(nbytes) if g is not None else np.full(np.shape(nbytes), np.nan)
    reason = _range(table, "all_reduce", "bf16", rep.tp)
    return _pick(
        report, "all_reduce", measured, lambda: rep.tp_comm_s(tokens) / (2 * rep.arch.layers), reason
    )


def _heads(rep: Replica) -> tuple[float, int, int]:
    a = rep.arch
    return a.heads / rep.tp, max(1, a.kv_heads // rep.tp), a.head_dim


def _linear_ops(rep: Replica, table: KernelTable, report: OpReport, m: np.ndarray) -> dict[str, np.ndarray]:
    """One layer's four projection GEMMs over m tokens (per TP rank), by op."""
    a, tp = rep.arch, float(rep.tp)
    h, d, f = float(a.hidden), float(a.head_dim), float(a.ffn_hidden)
    mats = 3 if a.mlp == "swiglu" else 2
    qkv = _gemm(rep, table, report, "gemm_qkv", m, (a.heads + 2 * a.kv_heads) * d / tp, h)
    out = _gemm(rep, table, report, "gemm_out", m, h, a.heads * d / tp)
    up = _gemm(rep, table, report, "gemm_up", m, (mats - 1) * f / tp, h)
    down = _gemm(rep, table, report, "gemm_down", m, h, f / tp)
    return {"gemm_qkv": qkv, "gemm_out": out, "gemm_up": up, "gemm_down": down}


def _step(
    rep: Replica, report: OpReport, per_layer: dict[str, np.ndarray], once: dict[str, np.ndarray]
) -> np.ndarray:
    """The step's total from its per-layer and once-per-step ops, each recorded in the report."""
    report.seconds = {op: rep.arch.layers * t for op, t in per_layer.items()} | dict(once)
    return sum(report.seconds.values(), np.zeros(()))


# What AIConfigurator composes around the same tables (read in aiconfigurator 0.12.0,
# aiconfigurator_core/sdk/backends/*.py and models/llama.py, and upstream ai-dynamo/aiconfigurator
# aic-core/rust/aiconfigurator-core/src/engine/runtime.rs at 095f58a5, 2026-11-26), and where rightsize
# differs (tests/test_aic_mechanisms.py checks the first three on one shape):
# - A TensorRT-LLM step is the plain sum of its ops: no per-iteration engine, host or CUDA-graph term,
#   no batch rounding to graph sizes. rightsize adds sampling and the engine's host time where the
#   release exposes it (`Replica.step_overhead_s`, engines.yaml `host_overlap`): TensorRT-LLM 1.0's
#   overlap scheduler hides it behind any step longer than itself, so on its rows both add no host cost;
#   the GptSession of v0.6-v0.8 (serving_public.csv) pays it every step.
# - Element-wise ops move the same bytes as here (2 x (in + out) 16-bit elements per token), timed at
#   0.8 x peak bandwidth plus a fixed 3 us each (systems/*.yaml `mem_bw_empirical_scaling_factor`,
#   `mem_empirical_constant_latency`, both marked 'nonofficial correction based on observations').
#   rightsize uses the accelerator's streaming fraction and no fixed cost: inference.csv's 2
#   TensorRT-LLM 1.0 rows already under-predict (-2.8% / -1.1%, 2026-11-26), and a fixed cost slows
#   every step further.
# - Decode attention past the measured batch x context staircase holds the boundary utilisation
#   (latency linear in the KV bytes, fixed cost included); here equal parts share one fixed cost
#   (split_lookup, checked on the tables themselves), which reads shorter at large batches.
# - Static batches: decode integrated over the output in strides of 32 steps, the batch's prompts
#   prefilled as one. Aggregated serving (its own mode, not in the static comparison): a mixed step is
#   one pass of the GEMMs over prefill + decode tokens, prefill attention at the prompt shape, decode
#   attention at the mean context; TensorRT-LLM's TPOT discounts 3 mixed steps ('empirical'); vLLM adds
#   0.8 ms per layer to TTFT and a log2(batch)/8 queueing factor ('calibrated to the silicon corpus').
#   These shape its aggregated mode only, not the static estimate benchmarks/compare_aiconfigurator.py asks.
# - KV memory: TensorRT-LLM reserves 1.5% of the KV pool; AIConfigurator's non-KV memory is a flat
#   3.5 GB other_mem + nccl_mem by TP + 2 x tokens x hidden x a per-family coefficient. rightsize's is
#   perf.engine_memory (engines.yaml tensorrt-llm.memory), derived from NVIDIA's measured capacities
#   (tests/data/trtllm_kv_capacity.csv); GB300/B300 at their nvidia-smi capacities.
# Not in AIConfigurator but documented for the perf-overview rows (TensorRT-LLM perf-overview.md at
# 00f37686, llm_options.yml): decode batches padded to CUDA-graph sizes (1-256, 384, 512, 1024, ...,
# enable_padding) and each ISL/OSL run with a fixed request count ($num_requests), so the batch drains
# at the end. Both slow the two inference.csv rows (padding: -2.8% / -1.1% -> -3.3% / -5.1%), so
# neither is modelled yet.
def _elementwise_s(rep: Replica, tokens: np.ndarray) -> np.ndarray:
    """One layer's memory-bound element-wise kernels over `tokens` rows, which kernel tables do
    not measure: two residual-add + RMSNorm passes (each reads the residual and the hidden
    state and writes both: 4 x hidden elements) and the MLP activation (SwiGLU reads the
    gate and up halves and writes one: 3 x ffn / tp; GELU reads and writes: 2 x ffn / tp), in
    16 bit at the accelerator's plain streaming bandwidth (a copy-like kernel, not a decode
    GEMV). The same op list as AIConfigurator's own Llama model (its `add_norm` and
    `act_gate` ElementWise ops)."""
    a = rep.arch
    ffn = float(a.ffn_hidden) / rep.tp
    per_token = 8.0 * a.hidden + (3.0 if mlp_matrices(a) == 3 else 2.0) * ffn
    stream = rep.hw.hbm_bytes_per_s * rep.hw.memory_bw_fraction
    return np.asarray(tokens, dtype=np.float64) * per_token * ACT_BYTES / stream


def _embedding_s(rep: Replica, table: KernelTable, report: OpReport, tokens: np.ndarray) -> np.ndarray:
    """Once per step: the input embedding's lookup (each token's 16-bit row read and written, a
    kernel's fixed cost) and, with the vocabulary split over the tensor-parallel ranks, the
    all-reduce that assembles the rows (AIConfigurator's `embedding` op and `embedding_ar`
    CustomAllReduce in its Llama op list)."""
    t = np.asarray(tokens, dtype=np.float64)
    stream = rep.hw.hbm_bytes_per_s * rep.hw.memory_bw_fraction
    lookup = 2.0 * t * rep.arch.hidden * ACT_BYTES / stream + rep.hw.kernel_overhead_s
    return lookup + _all_reduce(rep, table, report, t)


def supported(rep: Replica) -> str | None:
    """None when the op list covers the model, else why it does not."""
    if rep.arch.is_moe:
        return "mixture-of-experts layers have no measured op list"
    if rep.arch.is_mla:
        return "latent attention (MLA) has no measured op list"
    return None


def decode_step_s(
    rep: Replica, table: KernelTable, batch: np.ndarray, context_tokens: np.ndarray
) -> tuple[np.ndarray, OpReport]:
    """Kernel time of one decode step (without the per-step engine overhead)."""
    report = OpReport(table.label)
    b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
    ctx = np.asarray(context_tokens, dtype=np.float64)
    b, ctx = np.broadcast_arrays(b, ctx)
    per_seq = np.maximum(ctx / b, 1.0)
    heads, kv, d = _heads(rep)
    g = table.grid("generation_attention", rep.kv_precision, kv, d)
    if g is None:
        measured = np.full(b.shape, np.nan)
    else:
        part = np.clip(MIN_ATTENTION_PART_TOKENS / per_seq, 1.0, MIN_PART["batch"])
        measured, _ = split_lookup(
            lambda bb: g(heads, bb, per_seq), b, "batch", part, floor_sizes=_smallest(g, 1)
        )
    attn = _pick(
        report,
        "generation_attention",
        measured + rep.release_decode_attention_extra_s(ctx),  # an older release's K/V re-reads
        lambda: rep.analytic_decode_attention_s(b, ctx),
        _range(table, "generation_attention", rep.kv_precision, kv, d),
    )
    return _model_step(rep, table, report, attn, rows=b, last_tokens=b), report


def _model_step(
    rep: Replica,
    table: KernelTable,
    report: OpReport,
    attn: np.ndarray,
    rows: np.ndarray,
    last_tokens: np.ndarray,
) -> np.ndarray:
    """A step of the whole model around its attention: each layer's linear ops, two all-reduces
    and element-wise passes over `rows` tokens, then once per step the logits GEMM over the
    `last_tokens` (one per sequence) and the embedding of the `rows` tokens."""
    layer = _linear_ops(rep, table, report, rows) | {
        "attention": attn,
        "all_reduce": 2.0 * _all_reduce(rep, table, report, rows),
        "elementwise": _elementwise_s(rep, rows),
    }
    logits = _gemm(
        rep,
        table,
        report,
        "gemm_logits",
        last_tokens,
        rep.arch.vocab / rep.tp,
        float(rep.arch.hidden),
        LOGITS_DTYPE,
    )
    once = {"gemm_logits": logits, "embedding": _embedding_s(rep, table, report, rows)}
    return _step(rep, report, layer, once)


def prefill_s(
    rep: Replica, table: KernelTable, tokens: np.ndarray, sequences: np.ndarray
) -> tuple[np.ndarray, OpReport]:
    """Kernel time to prefill `sequences` prompts of `tokens` tokens each (no cached prefix)."""
    report = OpReport(table.label)
    t = np.maximum(np.asarray(tokens, dtype=np.float64), 1.0)
    s = np.maximum(np.asarray(sequences, dtype=np.float64), 1.0)
    t, s = np.broadcast_arrays(t, s)
    m = t * s
    heads, kv, d = _heads(rep)
    g = table.grid(
        "context_attention", rep.weight_precision if rep.weight_precision == "fp8" else "bf16", kv, d
    )
    key = (rep.weight_precision if rep.weight_precision == "fp8" else "bf16", kv, d)
    if g is None:
        measured = np.full(t.shape, np.nan)
    else:  # more prompts than measured: equal parts back to back, as decode attention does
        part = np.clip(MIN_ATTENTION_PART_TOKENS / t, 1.0, MIN_PART["batch"])
        measured, _ = split_lookup(
            lambda ss: _beyond_longest(g, heads, t, ss), s, "batch", part, floor_sizes=_smallest(g, 2)
        )
    attn = _pick(
        report,
        "context_attention",
        measured,
        lambda: rep.analytic_prefill_attention_s(t, s),
        _range(table, "context_attention", *key),
    )
    return _model_step(rep, table, report, attn, rows=m, last_tokens=s), report
