"""The hardware figures one evaluation needs, flattened from the catalog.

The performance model works on plain floats so it can be vectorised and so a
calibration can override any efficiency without touching catalog data.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.catalog import Accelerator, NodeType


# Catalog GEMM fractions are best-shape microbenchmarks (mamf-finder: the fastest of
# many shapes, short bursts). Inside a training step, GEMMs run at sustained clocks
# under the board's power limit, with the shapes the model has and the kernels the
# library's heuristics pick. Fitted once on the A100 Megatron-LM/Korthikanti rows
# (0.78 of peak there against a best-shape 0.869) and applied to every accelerator
# as a mechanism, not per row: 0.78 / 0.869 = 0.90.
SUSTAINED_GEMM_REALISATION = 0.90

# Device memory a training process cannot use for tensors, by software stack. CUDA / ROCm
# stacks (PyTorch): the context, library workspaces and NCCL buffers (2.5 GiB, perf.memory's
# FRAMEWORK_BYTES), and the caching allocator's fragmentation (8% kept aside). XLA on Cloud
# TPU assigns every buffer of the compiled step statically (no caching allocator to fragment)
# and runs no CUDA context or NCCL: estimate, a 0.5 GiB runtime reserve and 3% slack for the
# compiler's buffer packing (not measured; JAX reports the per-chip limit in
# `device.memory_stats()["bytes_limit"]`).
GiB = 2.0**30
RUNTIME_RESERVE_BY_VENDOR = {"google": (0.5 * GiB, 0.97)}
CUDA_RUNTIME_RESERVE = (2.5 * GiB, 0.92)


@dataclass(frozen=True)
class Hardware:
    """One accelerator type in one node type, for one compute dtype."""

    accelerator_id: str
    dtype: str
    peak_flops_per_s: float  # dense peak for `dtype`
    gemm_fraction: float  # achieved / peak for large, well-shaped GEMMs
    attention_fraction: float  # flash-attention throughput / dense 16-bit peak
    sm_count: int
    tile_m: int
    tile_n: int
    hbm_bytes: float
    hbm_bytes_per_s: float
    memory_bw_fraction: float
    scaleup_bytes_per_s: float  # per GPU, per direction
    scaleup_bw_fraction: float
    scaleup_latency_s: float
    domain_gpus: int  # GPUs in one scale-up (NVLink / Infinity Fabric) domain
    scaleout_bytes_per_s_per_gpu: float  # NIC line rate per GPU
    scaleout_bw_fraction: float
    scaleout_latency_s: float
    gpus_per_node: int
    kernel_overhead_s: float
    tdp_w: float = 0.0
    peak_16bit_flops_per_s: float = 0.0  # for attention kernels, which run in 16 bit
    attention_seq_half_tokens: float = 256.0  # keys per query block at half the plateau
    tp_comm_overlap: float = 0.0  # share of hideable TP traffic the stack overlaps
    param_gather_overlap: float = 0.0  # share of the ZeRO-1/2 parameter all-gather overlapped
    torus_dims: int = 0  # axes of a torus scale-up domain (TPU ICI, Trainium NeuronLink); 0 = switched
    # point-to-point full mesh (Infinity Fabric, Gaudi's on-chip RoCE): scaleup_bytes_per_s is the
    # sum over a chip's links to its domain_gpus - 1 peers, of which a smaller group uses its own
    mesh_scaleup: bool = False
    # bus bandwidth fraction of a serving stack's decode-sized TP all-reduces; 0 = scaleup_bw_fraction
    decode_allreduce_bw_fraction: float = 0.0
    host_link_bytes_per_s: float = 32e9  # accelerator <-> host, per direction (offload traffic)
    decode_kv_bw_ratio: float = 0.0  # decode KV streaming over the weight stream (0: the same)
    serving_step_overhead_s: float = 0.0  # the platform runtime's fixed cost per serving iteration
    host_bytes_per_gpu: float = 0.0  # the node's host memory over its accelerators (0: unknown, unbounded)
    gemm_fraction_16bit: float = (
        0.0  # the 16-bit GEMM fraction (for GEMMs a low-precision step keeps in bf16)
    )
    framework_bytes: float = CUDA_RUNTIME_RESERVE[0]  # runtime's own device memory (see above)
    usable_fraction: float = CUDA_RUNTIME_RESERVE[1]  # of device memory that tensors may fill
    # Named attention kernels' fwd+bwd fractions over `attention_fraction` (1: not measured).
    attention_ratio_flash1: float = 1.0
    attention_ratio_flash2: float = 1.0
    attention_ratio_cudnn: float = 1.0
    attention_ratio_flash3: float = 1.0
    attention_ratio_auto: float = (
        1.0  # the usual training stack's kernel (catalog attention_fraction_training)
    )
    # Compute units an overlapped collective holds (NCCL channels on GPUs; 0 on TPU, where
    # ICI DMA engines and SparseCores run collectives): catalog collective_compute_units.
    collective_compute_units: float = 16.0
    sfu_exp_per_s: float = 0.0  # special-function-unit exponentials per second (0: not catalogued)

    def attention_fraction_for(self, kernel: str) -> float | np.ndarray:
        """The training attention fraction of a named kernel ('auto': the accelerator's usual
        training stack). Each is a ratio over `attention_fraction`, so a calibration or a
        sensitivity that moves attention_fraction moves them all."""
        return self.attention_fraction * getattr(self, f"attention_ratio_{kernel}")

    @classmethod
    def from_catalog(cls, acc: Accelerator, node: NodeType, dtype: str) -> Hardware:
        eff = acc.efficiency
        peak = acc.peak_flops_per_s(dtype)
        peak16 = acc.peak_flops_per_s("bf16") if acc.supports("bf16") else acc.peak_flops_per_s("fp16")
        return cls(
            accelerator_id=acc.id,
            dtype=dtype,
            peak_flops_per_s=peak,
            gemm_fraction=eff.gemm_fraction(dtype) * SUSTAINED_GEMM_REALISATION,
            attention_fraction=eff.attention_fraction,
            sm_count=acc.sm_count,
            tile_m=eff.gemm_tile_m,
            tile_n=eff.gemm_tile_n,
            hbm_bytes=acc.hbm_bytes,
            hbm_bytes_per_s=acc.hbm_bytes_per_s,
            memory_bw_fraction=eff.memory_bw_fraction,
            scaleup_bytes_per_s=acc.scaleup_bytes_per_s,
            scaleup_bw_fraction=eff.scaleup_bw_fraction,
            scaleup_latency_s=eff.scaleup_latency_s,
            domain_gpus=acc.scaleup_domain_gpus,
            scaleout_bytes_per_s_per_gpu=node.scaleout_bytes_per_s_per_gpu,
            scaleout_bw_fraction=eff.scaleout_bw_fraction,
            scaleout_latency_s=eff.scaleout_latency_s,
            gpus_per_node=node.gpus_per_node,
            kernel_overhead_s=eff.kernel_overhead_s,
            tdp_w=acc.tdp_w,
            peak_16bit_flops_per_s=peak16,
            attention_seq_half_tokens=eff.attention_seq_half_tokens,
            tp_comm_overlap=eff.tp_comm_overlap,
            param_gather_overlap=eff.param_gather_overlap,
            torus_dims=acc.torus_dims,
            mesh_scaleup=acc.scaleup_topology == "mesh",
            decode_allreduce_bw_fraction=eff.decode_allreduce_bw_fraction,
            host_link_bytes_per_s=eff.host_link_bytes_per_s,
            decode_kv_bw_ratio=eff.decode_kv_bw_ratio,
            serving_step_overhead_s=eff.serving_step_overhead_s,
            host_bytes_per_gpu=node.host_memory_bytes / max(node.gpus_per_node, 1),
            gemm_fraction_16bit=eff.gemm_fraction("bf16" if acc.supports("bf16") else "fp16")
            * SUSTAINED_GEMM_REALISATION,
            framework_bytes=RUNTIME_RESERVE_BY_VENDOR.get(acc.vendor, CUDA_RUNTIME_RESERVE)[0],
            usable_fraction=RUNTIME_RESERVE_BY_VENDOR.get(acc.vendor, CUDA_RUNTIME_RESERVE)[1],
            attention_ratio_flash1=eff.attention_fraction_of("flash1") / eff.attention_fraction,
            attention_ratio_flash2=eff.attention_fraction_of("flash2") / eff.attention_fraction,
            attention_ratio_cudnn=eff.attention_fraction_of("cudnn") / eff.attention_fraction,
            attention_ratio_flash3=eff.attention_fraction_of("flash3") / eff.attention_fraction,
            attention_ratio_auto=eff.attention_fraction_of("auto") / eff.attention_fraction,
            collective_compute_units=eff.collective_compute_units,
            sfu_exp_per_s=eff.sfu_exp_per_s,
        )

    def sixteen_bit(self) -> Hardware:
        """The same accelerator running 16-bit GEMMs (what an fp8 step keeps in bf16). The GEMM
        fraction follows any override of the low-precision one in proportion."""
        if self.peak_flops_per_s == self.peak_16bit_flops_per_s or not self.gemm_fraction_16bit:
            return self
        return replace(
            self, peak_flops_per_s=self.peak_16bit_flops_per_s, gemm_fraction=self.gemm_fraction_16bit
        )

    def with_overrides(self, **fields: float | np.ndarray) -> Hardware:
        """A copy with some figures replaced (calibration, sensitivity, property tests).
        An efficiency may be an array aligned with the configurations evaluated, one value
        per configuration (`perf.step.step_time_variants`)."""
        return replace(self, **fields)  # type: ignore[arg-type]

    def take(self, index: np.ndarray | slice) -> Hardware:
        """The figures of the configurations at `index`: array-valued figures indexed,
        scalars kept (the counterpart of `ParallelConfigs.take`)."""
        picked = {
            f.name: v[index] for f in fields(self) if isinstance(v := getattr(self, f.name), np.ndarray)
        }
        return replace(self, **picked) if picked else self  # type: ignore[arg-type]


def power_capped(hw: Hardware, limit_w: float | None) -> Hardware:
    """`hw` on a board whose power limit is `limit_w` (`nvidia-smi -pl`), None or the TDP: as is.

    The firmware holds a lower limit by lowering the SM clock; the HBM clock stays. So the
    achieved compute fractions (GEMM, 16-bit GEMM, attention; the datasheet peaks stay) scale by
    (limit / TDP) ** compute_exponent and the HBM bandwidth by the smaller
    (limit / TDP) ** memory_exponent (catalog/data/power_limit.yaml, sourced there); `tdp_w`
    becomes the limit, the most a GPU draws in the power model. A limit above the TDP, below
    the part's minimum or on a part with no sourced minimum is refused (BadInput)."""
    if limit_w is None or limit_w == hw.tdp_w:
        return hw
    from rightsize.catalog.power_limit import power_limit_figures
    from rightsize.errors import BadInput

    figures = power_limit_figures()
    field = "infrastructure.facility.gpu_power_limit_w"
    if limit_w > hw.tdp_w:
        raise BadInput(
            f"{field} is {limit_w:g} W, above {hw.accelerator_id}'s {hw.tdp_w:g} W TDP.",
            "A board power limit can only lower the default limit (nvidia-smi -pl refuses more).",
            f"Give at most {hw.tdp_w:g} W for it (one value per accelerator id, e.g. "
            f"{{{hw.accelerator_id}: {hw.tdp_w:g} W}}, where several parts are allowed), or remove {field}.",
        )
    minimum = figures.minimum_limit_w.get(hw.accelerator_id)
    if minimum is None:
        raise BadInput(
            f"{field} is set, but {hw.accelerator_id} has no sourced minimum power limit.",
            "rightsize models a cap only on parts whose lowest accepted limit is catalogued "
            f"({', '.join(sorted(figures.minimum_limit_w))}).",
            f"Set {field} per accelerator id for the capped parts only, or add the part's 'Min Power "
            "Limit' (nvidia-smi -q) with its source to catalog/data/power_limit.yaml.",
        )
    if limit_w < minimum:
        raise BadInput(
            f"{field} is {limit_w:g} W, below {hw.accelerator_id}'s {minimum:g} W minimum.",
            "The driver refuses a power limit under the board's 'Min Power Limit'.",
            f"Give between {minimum:g} and {hw.tdp_w:g} W.",
        )
    compute = capped_compute_factor(limit_w, hw.tdp_w)
    return replace(
        hw,
        gemm_fraction=hw.gemm_fraction * compute,
        gemm_fraction_16bit=hw.gemm_fraction_16bit * compute,
        attention_fraction=hw.attention_fraction * compute,
        hbm_bytes_per_s=hw.hbm_bytes_per_s * (limit_w / hw.tdp_w) ** figures.memory_exponent,
        tdp_w=limit_w,
    )


def capped_compute_factor(limit_w: float | None, tdp_w: float) -> float:
    """The share of its sustained compute rate a part keeps under a board power limit:
    (limit / TDP) ** compute_exponent (catalog/data/power_limit.yaml); 1 without a limit. The
    peaks stay the datasheet's, so MFU keeps its usual meaning; the achieved fractions fall."""
    if limit_w is None or limit_w >= tdp_w or tdp_w <= 0:
        return 1.0
    from rightsize.catalog.power_limit import power_limit_figures

    return float((limit_w / tdp_w) ** power_limit_figures().compute_exponent)
