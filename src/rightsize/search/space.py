"""Enumerating parallel configurations, vectorised, with divisibility rules applied as
filters and user-fixed settings honoured.

The space is built in stages (gpu count x tp x pp x cp, then ep, then micro-batch
x vpp, then recompute x ZeRO), filtering after each cross product so it never
materialises combinations that a rule already excludes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from rightsize.perf.memory import ZERO_STAGES
from rightsize.perf.remat import SEARCHED as SEARCHED_RECOMPUTE
from rightsize.perf.workload import RECOMPUTE_CODES, ParallelConfigs
from rightsize.spec.model import ModelArch
from rightsize.spec.training import ParallelSettings

TP_OPTIONS = (1, 2, 4, 8, 16, 32, 64)
CP_OPTIONS = (1, 2, 4, 8, 16, 32)
EP_OPTIONS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MICRO_BATCH_OPTIONS = (1, 2, 4, 8, 16)
VPP_OPTIONS = (1, 2, 3, 4, 6, 8)
ZERO_OPTIONS = ZERO_STAGES
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


def _cross_where(
    cols: Columns, name: str, options: np.ndarray, rule: Callable[[Columns], np.ndarray]
) -> Columns:
    """`_cross` followed by `_keep(rule)`, without materialising the rows the rule drops:
    the rule sees each column as (n, 1) and the options as (1, k), so the same expressions
    broadcast to the (n, k) mask; each row's kept children then follow it, in order."""
    opts = np.asarray(options, dtype=np.float64)
    n, k = len(next(iter(cols.values()))), opts.size
    view = {key: v[:, None] for key, v in cols.items()}
    view[name] = opts[None, :]
    mask = np.broadcast_to(rule(view), (n, k))
    counts = np.count_nonzero(mask, axis=1)
    out = {key: np.repeat(v, counts) for key, v in cols.items()}
    out[name] = np.broadcast_to(opts, (n, k))[mask]
    return out


# (rows, recompute options, ZeRO options) -> mask (rows, recompute, ZeRO) of the layouts kept.
LayoutRule = Callable[[ParallelConfigs, np.ndarray, np.ndarray], np.ndarray]


def _cross_recompute_zero(
    cols: Columns, rc: np.ndarray, zero: np.ndarray, zero_fixed: bool, layout_ok: LayoutRule | None
) -> tuple[Columns, int]:
    """`_cross` by recompute, then by ZeRO stage, keeping only stage 0 on a single replica
    (dp = 1) unless the stage is fixed, and only the layouts `layout_ok` accepts: the last
    and largest crosses, so each row's children are chosen on a (rows, recompute, ZeRO)
    mask first and every column repeated once. Returns (columns, valid layouts rejected
    by `layout_ok`, counted but not built)."""
    n = len(cols["tp"])
    every_stage = (cols["dp"] > 1) | zero_fixed
    valid = np.broadcast_to(every_stage[:, None, None] | (zero == 0)[None, None, :], (n, rc.size, zero.size))
    mask = valid
    if layout_ok is not None and n:
        rows = ParallelConfigs(
            **{k: cols[k] for k in _CONFIG_COLUMNS}, recompute=np.zeros(n), zero_stage=np.zeros(n)
        )
        mask = valid & layout_ok(rows, rc, zero)
    kept = mask.reshape(n, rc.size * zero.size)
    counts = np.count_nonzero(kept, axis=1)
    out = {k: np.repeat(v, counts) for k, v in cols.items()}
    out["recompute"] = np.broadcast_to(np.repeat(rc, zero.size), kept.shape)[kept]
    out["zero_stage"] = np.broadcast_to(np.tile(zero, rc.size), kept.shape)[kept]
    return out, int(np.count_nonzero(valid)) - int(counts.sum())


_CONFIG_COLUMNS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "sequence_parallel")


def _fixed_or(fixed: int | None, options: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.array([fixed], dtype=np.float64) if fixed is not None else np.asarray(options, dtype=np.float64)


def enumerate_configs(
    arch: ModelArch,
    seq_len: int,
    global_batch: int,
    gpu_counts: np.ndarray,
    domain_gpus: int,
    fixed: ParallelSettings,
    recompute_options: Sequence[str] = SEARCHED_RECOMPUTE,
) -> tuple[ParallelConfigs, np.ndarray]:
    """All valid configurations for the given GPU counts; returns (configs, gpus)."""
    cfg, _ = enumerate_where(
        arch, seq_len, global_batch, gpu_counts, domain_gpus, fixed, recompute_options=recompute_options
    )
    return cfg, cfg.gpus


def enumerate_where(
    arch: ModelArch,
    seq_len: int,
    global_batch: int,
    gpu_counts: np.ndarray,
    domain_gpus: int,
    fixed: ParallelSettings,
    layout_ok: LayoutRule | None = None,
    recompute_options: Sequence[str] = SEARCHED_RECOMPUTE,
) -> tuple[ParallelConfigs, int]:
    """All valid configurations that `layout_ok` accepts (all of them by default), and how
    many valid configurations it rejected (counted, not built).

    `layout_ok(rows, recompute, zero)` sees every other setting decided (`rows`, with
    recompute and ZeRO 0) and returns a (rows, recompute, ZeRO) mask. Configurations come
    grouped by GPU count, in the order of `gpu_counts`."""
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

    cols = _cross_where(
        cols,
        "micro_batch",
        _fixed_or(fixed.micro_batch, MICRO_BATCH_OPTIONS),
        lambda c: (global_batch / c["dp"]) % c["micro_batch"] == 0,
    )

    def interleaving(c: Columns) -> np.ndarray:
        # Interleaving needs a layer per chunk (or the embedding and the loss in chunks of
        # their own, as Megatron-Core's account_for_embedding/loss_in_pipeline_split lays out
        # 126 layers as PP16 x VP8: 128 chunks) and at least pp micro-batches in flight;
        # uneven chunks are allowed (the heaviest stage is charged its ceil share).
        micro_batches = global_batch / (c["dp"] * c["micro_batch"])
        ok = (c["pp"] > 1) & (c["pp"] * c["vpp"] <= arch.layers + 2) & (micro_batches >= c["pp"])
        if fixed.vpp is None:  # a planner proposes even chunks; a user may fix uneven ones
            ok &= (arch.layers % (c["pp"] * c["vpp"]) == 0) | (
                c["vpp"] * np.ceil(arch.layers / (c["pp"] * c["vpp"])) <= np.ceil(arch.layers / c["pp"]) + 1
            )
        return (c["vpp"] == 1) | ok

    cols = _cross_where(cols, "vpp", _fixed_or(fixed.vpp, VPP_OPTIONS), interleaving)

    if fixed.sequence_parallel is None:
        sp = cols["tp"] > 1  # never worse when tp > 1: same traffic, less memory and work
    else:
        sp = np.full(len(cols["tp"]), fixed.sequence_parallel) & (cols["tp"] > 1)
    cols["sequence_parallel"] = sp
    # A planner tries the policies the accelerator's stack offers (`recompute_options`: perf.remat's
    # SEARCHED, or MaxText's names on TPU); any other named one only when the spec fixes it.
    searched = [RECOMPUTE_CODES[name] for name in recompute_options]
    rc = [RECOMPUTE_CODES[fixed.recompute]] if fixed.recompute is not None else searched
    # ZeRO stages are all the same thing on a single replica.
    cols, excluded = _cross_recompute_zero(
        cols,
        np.array(rc, dtype=np.float64),
        _fixed_or(fixed.zero_stage, ZERO_OPTIONS),
        fixed.zero_stage is not None,
        layout_ok,
    )
    cfg = ParallelConfigs(**{k: cols[k] for k in (*_CONFIG_COLUMNS, "recompute", "zero_stage")})
    return cfg, excluded
