"""Why no parallel layout exists for a GPU count, named by its real cause, with the fix.

A training layout splits the GPUs as tp x pp x cp x dp, and the global batch must split
evenly over the data-parallel replicas (dp x micro-batch divides it). When the search finds
no layout at all, the cause is one of these rules, never memory: this module says which one
and the nearest GPU counts (or batch sizes) that do split.
"""

from __future__ import annotations

import math

from rightsize.search.space import CP_OPTIONS, MIN_TOKENS_PER_CP_RANK, TP_OPTIONS, pp_options
from rightsize.spec.model import ModelArch
from rightsize.spec.training import ParallelSettings


class LayoutRejection(str):
    """A rejection whose cause is a divisibility rule (the planner turns it into the error)."""

    __slots__ = ()


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small) | {n // d for d in small})


def _model_parallel_options(
    arch: ModelArch, seq_len: int, domain_gpus: int, fixed: ParallelSettings
) -> tuple[list[int], list[int], list[int]]:
    tp = [fixed.tp] if fixed.tp else [t for t in TP_OPTIONS if t <= domain_gpus and arch.heads % t == 0]
    pp = [fixed.pp] if fixed.pp else [int(p) for p in pp_options(arch.layers)]
    cp = (
        [fixed.cp]
        if fixed.cp
        else [c for c in CP_OPTIONS if seq_len % (2 * c) == 0 and seq_len / c >= MIN_TOKENS_PER_CP_RANK]
        or [1]
    )
    return tp, pp, cp


def splittable_counts(
    arch: ModelArch, seq_len: int, global_batch: int, domain_gpus: int, fixed: ParallelSettings
) -> list[int]:
    """Every GPU count tp x pp x cp x dp that the divisibility rules allow, ascending."""
    tp, pp, cp = _model_parallel_options(arch, seq_len, domain_gpus, fixed)
    micro = fixed.micro_batch or 1
    dps = [fixed.dp] if fixed.dp else [d for d in _divisors(global_batch) if (global_batch // d) % micro == 0]
    dps = [d for d in dps if global_batch % d == 0 and (global_batch // d) % micro == 0]
    return sorted({t * p * c * d for t in tp for p in pp for c in cp for d in dps})


def no_layout_reason(
    arch: ModelArch,
    seq_len: int,
    global_batch: int,
    gpus: int | None,
    domain_gpus: int,
    fixed: ParallelSettings,
) -> tuple[str, str, str]:
    """(what, why, fix) when no layout satisfies the divisibility rules."""
    tp, pp, cp = _model_parallel_options(arch, seq_len, domain_gpus, fixed)
    micro = fixed.micro_batch or 1
    rules = (
        (
            f"tp = {fixed.tp} (fixed)"
            if fixed.tp
            else f"tp in {tp} (divides the {arch.heads} heads, within the {domain_gpus}-GPU scale-up domain)"
        )
        + (
            f", pp = {fixed.pp} (fixed)"
            if fixed.pp
            else f", pp in {pp[0]}..{pp[-1]} (up to the {arch.layers} layers)"
        )
        + (f", cp = {fixed.cp} (fixed)" if fixed.cp else f", cp in {cp}")
        + (f", dp = {fixed.dp} (fixed)" if fixed.dp else "")
        + f", and dp dividing the global batch of {global_batch:,} sequences"
        + (f" in micro-batches of {micro}" if micro > 1 else "")
    )
    counts = splittable_counts(arch, seq_len, global_batch, domain_gpus, fixed)
    if gpus is None:
        return (
            "No GPU count splits into a parallel layout.",
            f"A layout is tp x pp x cp x dp with {rules}.",
            "Make training.global_batch a power of two (or a multiple of 64), or relax the fixed `parallel:` "
            "settings.",
        )
    mp = {t * p * c for t in tp for p in pp for c in cp}
    dps_for_gpus = sorted({gpus // m for m in mp if gpus % m == 0})
    below = max((c for c in counts if c < gpus), default=None)
    above = min((c for c in counts if c > gpus), default=None)
    nearest = " or ".join(f"{c:,}" for c in (below, above) if c is not None)
    if counts and gpus > counts[-1]:
        return (
            f"{gpus:,} GPUs are more than {arch.name} with a global batch of {global_batch:,} can use.",
            f"The most GPUs this model and batch can use is {counts[-1]:,}: {rules}, each at its largest.",
            f"Set targets.gpus to at most {counts[-1]:,}, or raise training.global_batch (a bigger batch "
            "allows more data-parallel replicas).",
        )
    if dps_for_gpus and fixed.dp is None:
        good_batch = math.lcm(dps_for_gpus[0] * micro, 1)
        multiple = math.ceil(global_batch / good_batch) * good_batch
        why = (
            f"{gpus:,} GPUs leave a data-parallel size of {', '.join(f'{d:,}' for d in dps_for_gpus[:6])}"
            f"{' ...' if len(dps_for_gpus) > 6 else ''}, and none divides the global batch of "
            f"{global_batch:,} sequences{f' in micro-batches of {micro}' if micro > 1 else ''}: each data-parallel "
            "replica must take a whole share of every step. "
            f"The rules: {rules}."
        )
        fix = (
            f"Set targets.gpus to {nearest} (GPU counts that split), or training.global_batch to a multiple of "
            f"{good_batch:,} (e.g. {multiple:,})."
            if nearest
            else f"Set training.global_batch to a multiple of {good_batch:,} (e.g. {multiple:,})."
        )
        return (f"The global batch of {global_batch:,} cannot be split over {gpus:,} GPUs.", why, fix)
    why = f"{gpus:,} is not a product tp x pp x cp x dp with {rules}."
    fix = (f"Set targets.gpus to {nearest}" if nearest else "Choose another targets.gpus") + (
        ", raise training.global_batch, or relax the fixed `parallel:` settings."
    )
    return (f"{gpus:,} GPUs cannot be split into a parallel layout for {arch.name}.", why, fix)
