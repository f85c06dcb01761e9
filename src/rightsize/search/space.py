"""Enumerating parallel configurations, vectorised, with divisibility rules applied as
filters and user-fixed settings honoured.

The space is built in stages (gpu count x tp x pp x cp, then ep, then micro-batch
x vpp, then recompute x ZeRO), filtering after each cross product so it never
materialises combinations that a rule already excludes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rightsize.perf.workload import RECOMPUTE_CODES, ParallelConfigs
from rightsize.spec.model import ModelArch
from rightsize.spec.training import ParallelSettings

TP_OPTIONS = (1, 2, 4, 8, 16, 32, 64)
CP_OPTIONS = (1, 2, 4, 8, 16, 32)
EP_OPTIONS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MICRO_BATCH_OPTIONS = (1, 2, 4, 8, 16)
VPP_OPTIONS = (1, 2, 3, 4, 6, 8)
ZERO_OPTIONS = (0, 1, 2, 3)
# Context parallelism only pays off when each rank still holds a long chunk.
MIN_TOKENS_PER_CP_RANK = 2048
MAX_PP = 128

Columns = dict[str, np.ndarray]


def pp_options(layers: int) -> np.ndarray:
    """Divisors of the layer count and powers of two (uneven stages are allowed)."""
    divisors = {d for d in range(1, min(layers, MAX_PP) + 1) if layers % d == 0}
    powers = {2**i for i in range(0, 8) if 2**i <= min(layers, MAX_PP)}
    return np.array(sorted(divisors | powers), dtype=np.float64)


def gpu_count_candidates(gpus_per_node: int, max_gpus: int, slice_gpus: int = 0) -> np.ndarray:
    """Counts a buyer would consider: powers of two below a node, then whole nodes in
    powers of two and 1.5x powers of two (8, 12, 16, 24, 32, 48 ... nodes). Batches are
    usually powers of two, so counts with other prime factors rarely divide them.

    `slice_gpus` > 0 is the largest slice of a torus (Cloud TPU, Trainium): beyond it a job
    runs as several equal slices joined over the data-centre network (TPU Multislice), so
    larger counts must be whole multiples of the slice."""
    counts = {g for g in (1, 2, 4) if g < gpus_per_node}
    nodes = 1
    while nodes * gpus_per_node <= max_gpus:
        counts.add(nodes * gpus_per_node)
        if nodes >= 2 and nodes * 3 // 2 * gpus_per_node <= max_gpus:
            counts.add(nodes * 3 // 2 * gpus_per_node)
        nodes *= 2
    if slice_gpus > 0:
        counts = {c for c in counts if c <= slice_gpus or c % slice_gpus == 0}
    return np.array(sorted(counts), dtype=np.float64)


def _cross(cols: Columns, name: str, options: np.ndarray) -> Columns:
    n, k = len(next(iter(cols.values()))), len(options)
    out = {key: np.repeat(v, k) for key, v in cols.items()}
    out[name] = np.tile(np.asarray(options, dtype=np.float64), n)
    return out


def _keep(cols: Columns, mask: np.ndarray) -> Columns:
    return {k: v[mask] for k, v in cols.items()}


def _fixed_or(fixed: int | None, options: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.array([fixed], dtype=np.float64) if fixed is not None else np.asarray(options, dtype=np.float64)


def enumerate_configs(
    arch: ModelArch,
    seq_len: int,
    global_batch: int,
    gpu_counts: np.ndarray,
    domain_gpus: int,
    fixed: ParallelSettings,
) -> tuple[ParallelConfigs, np.ndarray]:
    """All valid configurations for the given GPU counts; returns (configs, gpus)."""
    cols: Columns = {"gpus": np.asarray(gpu_counts, dtype=np.float64)}
    tp_opts = [t for t in TP_OPTIONS if t <= domain_gpus and arch.heads % t == 0]
    cols = _cross(cols, "tp", _fixed_or(fixed.tp, tp_opts))
    cols = _cross(cols, "pp", _fixed_or(fixed.pp, pp_options(arch.layers)))
    cp_opts = [c for c in CP_OPTIONS if seq_len % (2 * c) == 0 and seq_len / c >= MIN_TOKENS_PER_CP_RANK]
    cols = _cross(cols, "cp", _fixed_or(fixed.cp, cp_opts or (1,)))
    model_par = cols["tp"] * cols["pp"] * cols["cp"]
    cols = _keep(cols, (cols["gpus"] % model_par == 0) & (cols["pp"] <= arch.layers))
    cols["dp"] = cols["gpus"] / (cols["tp"] * cols["pp"] * cols["cp"])
    if fixed.dp is not None:
        cols = _keep(cols, cols["dp"] == fixed.dp)

    ep_opts = [e for e in EP_OPTIONS if arch.is_moe and arch.experts % e == 0] or [1]
    cols = _cross(cols, "ep", _fixed_or(fixed.ep, ep_opts))
    cols = _keep(cols, (cols["ep"] <= cols["dp"]) & (cols["dp"] % cols["ep"] == 0))

    cols = _cross(cols, "micro_batch", _fixed_or(fixed.micro_batch, MICRO_BATCH_OPTIONS))
    per_replica = global_batch / cols["dp"]
    cols = _keep(cols, per_replica % cols["micro_batch"] == 0)
    cols = _cross(cols, "vpp", _fixed_or(fixed.vpp, VPP_OPTIONS))
    micro_batches = global_batch / (cols["dp"] * cols["micro_batch"])
    # Interleaving needs a layer per chunk and at least pp micro-batches in flight;
    # uneven chunks are allowed (the heaviest stage is charged its ceil share).
    interleaved_ok = (
        (cols["pp"] > 1) & (cols["pp"] * cols["vpp"] <= arch.layers) & (micro_batches >= cols["pp"])
    )
    if fixed.vpp is None:  # a planner proposes even chunks; a user may fix uneven ones
        interleaved_ok &= (arch.layers % (cols["pp"] * cols["vpp"]) == 0) | (
            cols["vpp"] * np.ceil(arch.layers / (cols["pp"] * cols["vpp"]))
            <= np.ceil(arch.layers / cols["pp"]) + 1
        )
    cols = _keep(cols, (cols["vpp"] == 1) | interleaved_ok)

    rc = [RECOMPUTE_CODES[fixed.recompute]] if fixed.recompute is not None else list(RECOMPUTE_CODES.values())
    cols = _cross(cols, "recompute", np.array(rc))
    cols = _cross(cols, "zero_stage", _fixed_or(fixed.zero_stage, ZERO_OPTIONS))
    # ZeRO stages are all the same thing on a single replica.
    cols = _keep(cols, (cols["dp"] > 1) | (cols["zero_stage"] == 0) | (fixed.zero_stage is not None))
    if fixed.sequence_parallel is None:
        sp = cols["tp"] > 1  # never worse when tp > 1: same traffic, less memory and work
    else:
        sp = np.full(len(cols["tp"]), fixed.sequence_parallel) & (cols["tp"] > 1)
    cfg = ParallelConfigs(
        tp=cols["tp"],
        pp=cols["pp"],
        dp=cols["dp"],
        cp=cols["cp"],
        ep=cols["ep"],
        vpp=cols["vpp"],
        micro_batch=cols["micro_batch"],
        recompute=cols["recompute"],
        sequence_parallel=sp,
        zero_stage=cols["zero_stage"],
    )
    return cfg, cols["gpus"]
