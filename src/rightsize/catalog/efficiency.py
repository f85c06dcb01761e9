"""Mechanism efficiencies per accelerator (``data/efficiency.yaml``): how close real kernels get to peak.

The performance model multiplies peak rates by these fractions: GEMMs by
`gemm_fraction(dtype)`, memory-bound kernels by `memory_bw_fraction`, collectives by
the scale-up / scale-out fractions. Each figure keeps its `Sourced` provenance in
`Efficiency.sources` (published measurement, estimate by analogy, or placeholder).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rightsize.catalog.dtypes import DTYPES, normalize_dtype
from rightsize.catalog.loader import (
    CatalogDataError,
    Sourced,
    check_keys,
    check_schema,
    require_mapping,
    sourced,
)

# FP8 GEMMs reach a lower fraction of their (2x) peak than BF16 ones: measured MAMF on
# H100 SXM is 0.709 (FP8) vs 0.803 (BF16), ratio 0.88 (Stas Bekman, ML Engineering).
# Used only when an accelerator has no FP8 fraction of its own; 0.85 is a rounded-down estimate.
FP8_FROM_BF16 = 0.85

SCALAR_FIELDS = (
    "gemm_tile_m",
    "gemm_tile_n",
    "attention_fraction",
    "memory_bw_fraction",
    "scaleup_bw_fraction",
    "scaleout_bw_fraction",
    "scaleup_latency_s",
    "scaleout_latency_s",
    "kernel_overhead_s",
    "attention_seq_half_tokens",
    "tp_comm_overlap",
    "param_gather_overlap",
    "decode_allreduce_bw_fraction",
    "host_link_bytes_per_s",
    "decode_kv_bw_ratio",
    "serving_step_overhead_s",
    "attention_fraction_flash1",
    "attention_fraction_flash2",
    "attention_fraction_cudnn",
    "attention_fraction_flash3",
    "attention_fraction_training",
    "collective_compute_units",
    "sfu_exp_per_s",
)
# Attention kernels a training spec may name (training.attention_kernel), each with its own
# measured fraction where the catalog has one (0: not measured, use attention_fraction).
ATTENTION_KERNELS = ("flash1", "flash2", "cudnn", "flash3")
INTEGER_FIELDS = frozenset({"gemm_tile_m", "gemm_tile_n"})
# tp_comm_overlap, param_gather_overlap: 0 = the stack does not overlap;
# decode_allreduce_bw_fraction: 0 = decode all-reduces reach scaleup_bw_fraction like large ones;
# attention_fraction_*: 0 = not measured, attention_fraction is used
ZERO_ALLOWED_FIELDS = frozenset(
    {
        "tp_comm_overlap",
        "param_gather_overlap",
        "decode_allreduce_bw_fraction",
        "decode_kv_bw_ratio",
        "serving_step_overhead_s",
        "attention_fraction_training",
        "collective_compute_units",
        "sfu_exp_per_s",
        *(f"attention_fraction_{k}" for k in ATTENTION_KERNELS),
    }
)
# Fields a catalog (a user's own, or an older one) may leave out entirely: the shipped
# default's figures, with their sources (data/efficiency.yaml, `default`).
OPTIONAL_FIELDS = {
    "attention_seq_half_tokens": Sourced(
        256.0,
        "estimate from FlashAttention-2 (arXiv 2307.08691, Fig. 4-5): causal fwd+bwd ~ s / (s + 256)",
        "2024-07",
    ),
    "tp_comm_overlap": Sourced(
        0.0, "estimate: no tensor-parallel overlap unless the catalog says so", "2026-11"
    ),
    "param_gather_overlap": Sourced(
        0.0, "estimate: ZeRO-1/2 parameter all-gather after the optimizer step, not overlapped", "2026-11"
    ),
    "decode_allreduce_bw_fraction": Sourced(
        0.0,
        "estimate: the serving stack's decode-sized tensor-parallel all-reduces (16 KB-4 MB) reach the same "
        "bus bandwidth fraction as large ones (custom one-/two-shot all-reduce kernels in vLLM and TensorRT-LLM)",
        "2026-11",
    ),
    "decode_kv_bw_ratio": Sourced(
        0.0,
        "estimate: decode attention streams the KV cache as fast as the GEMMs stream the weights "
        "(paged/flash-decoding kernels on CUDA and ROCm); 0 = the same bandwidth",
        "2026-11",
    ),
    "serving_step_overhead_s": Sourced(
        0.0,
        "estimate: no per-iteration cost of the platform's serving runtime beyond the engine's own "
        "(engines.yaml iteration_overhead_s)",
        "2026-11",
    ),
    "host_link_bytes_per_s": Sourced(
        32e9,
        "estimate: PCIe Gen4 x16 between an accelerator and its host, 32 GB/s per direction nominal",
        "2026-11",
    ),
    **{
        f"attention_fraction_{k}": Sourced(
            0.0, "placeholder: not measured here; the accelerator's attention_fraction is used", "2026-11"
        )
        for k in ATTENTION_KERNELS
    },
    "attention_fraction_training": Sourced(
        0.0,
        "placeholder: the usual training stack's kernel is not named here; attention_fraction is used",
        "2026-11",
    ),
    "collective_compute_units": Sourced(
        16.0,
        "estimate: NCCL runs each channel as one thread block on one SM, and data-parallel rings across "
        "nodes run 16 or more channels (2 per NIC and ring/tree pattern, up to 32), so an overlapped "
        "collective holds ~16 SMs",
        "2026-11",
    ),
    "sfu_exp_per_s": Sourced(
        0.0,
        "placeholder: the special-function units' exponential rate is not catalogued for this "
        "accelerator; flash attention keeps the FlashAttention-2-on-A100 head-dimension curve",
        "2026-11",
    ),
}
_ALLOWED_KEYS = frozenset({"gemm_peak_fraction", *SCALAR_FIELDS})

# Sanity bounds per field: (minimum, maximum). Fractions of a peak cannot exceed 1; bus
# bandwidth fractions may (NVLink SHARP reduces in the switch); times are seconds, so a
# value above a millisecond means someone wrote microseconds.
_BOUNDS: dict[str, tuple[float, float]] = {
    "gemm_peak_fraction": (0.01, 1.0),
    "gemm_tile_m": (16, 1024),
    "gemm_tile_n": (16, 1024),
    "attention_fraction": (0.01, 1.0),
    "memory_bw_fraction": (0.01, 1.0),
    "scaleup_bw_fraction": (0.01, 2.0),
    "scaleout_bw_fraction": (0.01, 2.0),
    "scaleup_latency_s": (1e-8, 1e-3),
    "scaleout_latency_s": (1e-8, 1e-3),
    "kernel_overhead_s": (1e-8, 1e-3),
    "attention_seq_half_tokens": (1.0, 65536.0),
    "tp_comm_overlap": (0.0, 1.0),
    "param_gather_overlap": (0.0, 1.0),
    "decode_allreduce_bw_fraction": (0.0, 2.0),
    "host_link_bytes_per_s": (1e9, 1e13),
    "decode_kv_bw_ratio": (0.0, 1.0),
    "serving_step_overhead_s": (0.0, 0.1),
    **{f"attention_fraction_{k}": (0.0, 1.0) for k in (*ATTENTION_KERNELS, "training")},
    "collective_compute_units": (0.0, 1024.0),
    "sfu_exp_per_s": (0.0, 1e15),
}


@dataclass(frozen=True)
class Efficiency:
    """Achievable fractions of peak and fixed costs, per mechanism, for one accelerator."""

    gemm_peak_fraction: dict[str, float]
    gemm_tile_m: int
    gemm_tile_n: int
    attention_fraction: float
    memory_bw_fraction: float
    scaleup_bw_fraction: float
    scaleout_bw_fraction: float
    scaleup_latency_s: float
    scaleout_latency_s: float
    kernel_overhead_s: float
    sources: dict[str, Sourced]  # "gemm_peak_fraction.bf16", "memory_bw_fraction", ... -> figure
    # Causal flash attention reaches half its long-sequence throughput at this many keys
    # per query block (tiles along the diagonal are half empty, fewer tiles fill the SMs).
    attention_seq_half_tokens: float = 256.0
    # Share of the hideable tensor-parallel traffic the usual training stack on this
    # accelerator overlaps with GEMMs (Megatron-Core / Transformer Engine userbuffers).
    tp_comm_overlap: float = 0.0
    # Share of the ZeRO-1/2 parameter all-gather (after the optimizer step) the usual stack
    # overlaps with the next step's forward (Megatron-Core overlap_param_gather).
    param_gather_overlap: float = 0.0
    # Bus bandwidth fraction of the serving stack's decode-sized TP all-reduces (16 KB-4 MB per
    # message); 0: the same as scaleup_bw_fraction.
    decode_allreduce_bw_fraction: float = 0.0
    # Accelerator <-> host bandwidth per direction (PCIe, NVLink-C2C): what activation and
    # optimizer-state offload move over.
    host_link_bytes_per_s: float = 32e9
    # Decode attention's KV-cache streaming over the weight stream's bandwidth (0: the same);
    # below 1 where the platform's paged-attention kernel reads the cache slower (TPU Pallas).
    decode_kv_bw_ratio: float = 0.0
    # Fixed cost per serving iteration of the platform's runtime (JAX dispatch, on-device
    # sampling, ragged-batch metadata on TPU), on top of the engine's host overhead.
    serving_step_overhead_s: float = 0.0
    # Flash-attention fwd+bwd fraction of 16-bit peak per named kernel (0: not measured).
    attention_fraction_flash1: float = 0.0
    attention_fraction_flash2: float = 0.0
    attention_fraction_cudnn: float = 0.0
    attention_fraction_flash3: float = 0.0
    # The kernel the usual *training* stack runs on this accelerator (0: attention_fraction,
    # which serving engines' own kernels use).
    attention_fraction_training: float = 0.0
    # Compute units (SMs, CUs, TensorCores) an overlapped collective holds while it runs, so
    # that the compute it overlaps slows by units / sm_count of the hidden time: NCCL's channels
    # on GPUs; 0 where collectives run on engines of their own (TPU ICI DMA and SparseCores).
    collective_compute_units: float = 16.0
    # Exponentials per second of the special-function units (MUFU.EX2), which compute the softmax
    # in flash attention (0: not catalogued).
    sfu_exp_per_s: float = 0.0

    def attention_fraction_of(self, kernel: str) -> float:
        """The fwd+bwd attention fraction of a named kernel ('auto': the usual training stack's)."""
        name = "training" if kernel == "auto" else kernel
        return getattr(self, f"attention_fraction_{name}", 0.0) or self.attention_fraction

    def gemm_fraction(self, dtype: str) -> float:
        """Achieved / dense peak for large, well-shaped GEMMs in ``dtype``.

        Fallbacks when the accelerator has no figure for ``dtype``:
        bf16 <-> fp16 (same tensor-core rate); fp8 = bf16's fraction x 0.85 (estimate,
        see `FP8_FROM_BF16`); fp6/fp4 use fp8's (own or derived); anything else
        (tf32, int8, fp32) uses bf16's.
        """
        name = normalize_dtype(dtype)
        table = self.gemm_peak_fraction
        if name in table:
            return table[name]
        sixteen = table.get("bf16", table.get("fp16"))
        if sixteen is None:  # pragma: no cover - validation requires bf16 or fp16
            raise ValueError("efficiency has no bf16/fp16 GEMM fraction")
        if name in ("fp8", "fp6", "fp4"):
            if "fp8" in table:
                return table["fp8"]
            return sixteen * FP8_FROM_BF16
        return sixteen

    def __hash__(self) -> int:
        return hash(
            (tuple(sorted(self.gemm_peak_fraction.items())), *(getattr(self, f) for f in SCALAR_FIELDS))
        )


def parse_efficiency(raw: Any, file: str, key: str, default: Efficiency | None = None) -> Efficiency:
    """One efficiency block. Fields it leaves out come from ``default`` (with the default's sources)."""
    if not isinstance(raw, Mapping):
        raise CatalogDataError(file, key, f"expected a mapping, got {type(raw).__name__}")
    check_keys(raw, _ALLOWED_KEYS, file, key)
    sources: dict[str, Sourced] = {}

    if "gemm_peak_fraction" in raw:
        table = require_mapping(raw, "gemm_peak_fraction", file, key)
        if not table:
            raise CatalogDataError(file, f"{key}.gemm_peak_fraction", "must list at least bf16 or fp16")
        gemm: dict[str, float] = {}
        lo, hi = _BOUNDS["gemm_peak_fraction"]
        for dtype, fig in table.items():
            name = normalize_dtype(str(dtype))
            if name != dtype or name not in DTYPES:
                raise CatalogDataError(
                    file,
                    f"{key}.gemm_peak_fraction.{dtype}",
                    f"unknown dtype; use one of {', '.join(DTYPES)}",
                )
            s = sourced(fig, file, f"{key}.gemm_peak_fraction.{dtype}", minimum=lo, maximum=hi)
            gemm[name] = s.value
            sources[f"gemm_peak_fraction.{name}"] = s
        if "bf16" not in gemm and "fp16" not in gemm:
            raise CatalogDataError(file, f"{key}.gemm_peak_fraction", "must include bf16 or fp16")
    elif default is not None:
        gemm = dict(default.gemm_peak_fraction)
        sources.update({k: v for k, v in default.sources.items() if k.startswith("gemm_peak_fraction.")})
    else:
        raise CatalogDataError(file, key, "missing 'gemm_peak_fraction'")

    values: dict[str, float] = {}
    for field in SCALAR_FIELDS:
        if field in raw:
            lo, hi = _BOUNDS[field]
            s = sourced(
                raw[field],
                file,
                f"{key}.{field}",
                integer=field in INTEGER_FIELDS,
                minimum=lo,
                maximum=hi,
                allow_zero=field in ZERO_ALLOWED_FIELDS,
            )
            values[field] = s.value
            sources[field] = s
        elif default is not None:
            values[field] = getattr(default, field)
            sources[field] = default.sources[field]
        elif field in OPTIONAL_FIELDS:
            values[field] = OPTIONAL_FIELDS[field].value
            sources[field] = OPTIONAL_FIELDS[field]
        else:
            raise CatalogDataError(file, key, f"missing '{field}'")

    return _make(gemm, values, sources)


def parse_efficiencies(raw: Mapping[str, Any], file: str) -> tuple[Efficiency, dict[str, Efficiency]]:
    """The ``default`` block and the per-accelerator blocks of an efficiency document."""
    check_schema(raw, file)
    check_keys(raw, frozenset({"schema_version", "refs", "default", "accelerators"}), file, "<document>")
    default = parse_efficiency(raw.get("default"), file, "default")
    per_acc: dict[str, Efficiency] = {}
    blocks = raw.get("accelerators") or {}
    if not isinstance(blocks, Mapping):
        raise CatalogDataError(file, "accelerators", "expected a mapping of accelerator id -> efficiencies")
    for acc_id, block in blocks.items():
        per_acc[str(acc_id)] = parse_efficiency(block, file, f"accelerators.{acc_id}", default)
    return default, per_acc


def replace_efficiency(
    eff: Efficiency, overrides: Mapping[str, float], source: str, as_of: str
) -> Efficiency:
    """A copy of ``eff`` with some figures replaced; keys are field names or ``gemm_peak_fraction_<dtype>``.

    Raises ``KeyError`` naming the key for an unknown field and ``ValueError`` for a bad value;
    `rightsize.catalog.accelerators.with_efficiency` turns these into user-facing errors.
    """
    gemm = dict(eff.gemm_peak_fraction)
    sources = dict(eff.sources)
    values: dict[str, float] = {f: getattr(eff, f) for f in SCALAR_FIELDS}
    for name, value in overrides.items():
        number = float(value)
        if name.startswith("gemm_peak_fraction_"):
            dtype = normalize_dtype(name.removeprefix("gemm_peak_fraction_"))
            lo, hi = _BOUNDS["gemm_peak_fraction"]
            field_key = f"gemm_peak_fraction.{dtype}"
        elif name in SCALAR_FIELDS:
            lo, hi = _BOUNDS[name]
            field_key = name
        else:
            raise KeyError(name)
        if not lo <= number <= hi:
            raise ValueError(f"{name}={number!r} is outside [{lo}, {hi}]")
        if name in INTEGER_FIELDS and not number.is_integer():
            raise ValueError(f"{name}={number!r} must be a whole number")
        if field_key.startswith("gemm_peak_fraction."):
            gemm[field_key.split(".", 1)[1]] = number
        else:
            values[name] = number
        sources[field_key] = Sourced(value=number, source=source, as_of=as_of)
    return _make(gemm, values, sources)


def _make(gemm: dict[str, float], values: Mapping[str, float], sources: dict[str, Sourced]) -> Efficiency:
    return Efficiency(
        gemm_peak_fraction=gemm,
        gemm_tile_m=int(values["gemm_tile_m"]),
        gemm_tile_n=int(values["gemm_tile_n"]),
        attention_fraction=values["attention_fraction"],
        memory_bw_fraction=values["memory_bw_fraction"],
        scaleup_bw_fraction=values["scaleup_bw_fraction"],
        scaleout_bw_fraction=values["scaleout_bw_fraction"],
        scaleup_latency_s=values["scaleup_latency_s"],
        scaleout_latency_s=values["scaleout_latency_s"],
        kernel_overhead_s=values["kernel_overhead_s"],
        attention_seq_half_tokens=values["attention_seq_half_tokens"],
        tp_comm_overlap=values["tp_comm_overlap"],
        param_gather_overlap=values["param_gather_overlap"],
        decode_allreduce_bw_fraction=values["decode_allreduce_bw_fraction"],
        host_link_bytes_per_s=values["host_link_bytes_per_s"],
        decode_kv_bw_ratio=values["decode_kv_bw_ratio"],
        serving_step_overhead_s=values["serving_step_overhead_s"],
        attention_fraction_flash1=values["attention_fraction_flash1"],
        attention_fraction_flash2=values["attention_fraction_flash2"],
        attention_fraction_cudnn=values["attention_fraction_cudnn"],
        attention_fraction_flash3=values["attention_fraction_flash3"],
        attention_fraction_training=values["attention_fraction_training"],
        collective_compute_units=values["collective_compute_units"],
        sfu_exp_per_s=values["sfu_exp_per_s"],
        sources=sources,
    )
