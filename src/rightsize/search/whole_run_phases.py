"""The phases a training spec names (batch and sequence ramps, context extension, annealing),
priced on the chosen layout by the step model.

A phase keeps the chosen tensor and pipeline layout and the GPU count. A longer sequence is
split over more context-parallel ranks (cp x seq / main seq, so each rank holds as many tokens
of a sequence as in the main run, as Llama 3 did: CP 16 for 128K on the 8K layout) and the
data-parallel degree shrinks to keep the count; a smaller batch leaves each replica fewer
micro-batches (a larger pipeline bubble). When the count cannot be split that way the phase
is priced at the main step's rate per token and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rightsize.perf.collectives import DciLink
from rightsize.perf.hardware import Hardware
from rightsize.perf.step import train_step
from rightsize.perf.whole_run import phase_seconds
from rightsize.perf.workload import ParallelConfigs, TrainWorkload


@dataclass(frozen=True)
class PhaseTime:
    """One phase as priced: its settings, step time and seconds, and the seconds the same
    tokens would take at the main settings (the difference is what the phase adds)."""

    name: str
    tokens: float
    seq_len: int
    global_batch_tokens: int
    step_s: float
    run_s: float
    at_main_rate_s: float
    parallel: dict[str, int]
    note: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tokens": self.tokens,
            "seq_len": self.seq_len,
            "global_batch_tokens": self.global_batch_tokens,
            "step_s": self.step_s,
            "run_s": self.run_s,
            "at_main_rate_s": self.at_main_rate_s,
            "added_s": self.run_s - self.at_main_rate_s,
            "parallel": self.parallel,
            "note": self.note,
        }


def _phase_layouts(
    cfg: ParallelConfigs, main_seq: int, seq: int, batch_seqs: int
) -> tuple[np.ndarray, ParallelConfigs]:
    """The layouts (rows of `cfg`) re-split for a phase: which rows split, and those rows
    re-split (in order)."""
    tp, pp, cp = (np.asarray(getattr(cfg, k), dtype=np.int64) for k in ("tp", "pp", "cp"))
    gpus = np.asarray(cfg.gpus, dtype=np.int64)
    cp2 = np.maximum(1, cp * seq // main_seq)
    shard = tp * pp * cp2
    dp2 = np.where(gpus % shard == 0, gpus // shard, 0)
    ok = (dp2 >= 1) & (batch_seqs % np.maximum(dp2, 1) == 0)
    idx = np.flatnonzero(ok)
    out = cfg.take(idx)
    mb = np.asarray(out.micro_batch, dtype=np.int64)
    per_replica = batch_seqs // dp2[idx]
    out.cp[:] = cp2[idx]
    out.dp[:] = dp2[idx]
    out.micro_batch[:] = np.where(per_replica % mb == 0, mb, 1)
    out.__dict__.pop("gpus", None)  # the cached count is recomputed (the same)
    return idx, out


def price_phases_rows(
    phases: tuple[Any, ...],
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    main_step_s: np.ndarray,
    dci: DciLink | None = None,
) -> list[list[PhaseTime]]:
    """Each phase of the spec (`TrainingPhase`) on every layout of `cfg` (one list per row,
    `main_step_s` each row's main step): one vectorised step-model call per phase, so the
    search prices every option it ranks, not only the winner."""
    n = len(cfg)
    main_step_s = np.asarray(main_step_s, dtype=np.float64)
    out: list[list[PhaseTime]] = [[] for _ in range(n)]
    main_tokens_per_step = w.seq_len * w.global_batch
    for p in phases:
        seq = int(p.seq_len or w.seq_len)
        batch_tokens = int(p.global_batch_tokens or main_tokens_per_step)
        batch_seqs = max(1, batch_tokens // seq)
        tokens = float(p.tokens)
        rate = main_step_s / main_tokens_per_step  # seconds per token at the main settings
        step_s = rate * batch_seqs * seq  # where the layout does not split: the main rate
        fits = np.ones(n, dtype=bool)
        split = np.zeros(n, dtype=bool)
        idx, layouts = _phase_layouts(cfg, w.seq_len, seq, batch_seqs)
        if idx.size:
            st = train_step(replace(w, seq_len=seq, global_batch=batch_seqs), layouts, hw, dci=dci)
            step_s[idx] = np.asarray(st.step_time, dtype=np.float64)
            fits[idx] = np.asarray(st.memory.fits, dtype=bool)
            split[idx] = True
        where = {int(i): j for j, i in enumerate(idx)}
        for r in range(n):
            if split[r]:
                lay = layouts.take(where[r])
                note = (
                    ""
                    if fits[r]
                    else "does not fit in memory on this layout as re-split: the run needs more recompute or offload here"
                )
            else:
                lay = cfg.take(r)
                note = (
                    f"the chosen layout does not split over {batch_seqs:,} sequences of {seq:,} tokens: "
                    "priced at the main step's rate per token"
                )
            out[r].append(
                PhaseTime(
                    name=p.name,
                    tokens=tokens,
                    seq_len=seq,
                    global_batch_tokens=batch_seqs * seq,
                    step_s=float(step_s[r]),
                    run_s=phase_seconds(tokens, batch_seqs * seq, float(step_s[r])),
                    at_main_rate_s=tokens * float(rate[r]),
                    parallel={k: int(getattr(lay, k)[0]) for k in ("tp", "pp", "cp", "dp", "micro_batch")},
                    note=note,
                )
            )
    return out


def price_phases(
    phases: tuple[Any, ...],
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    main_step_s: float,
    dci: DciLink | None = None,
) -> list[PhaseTime]:
    """Each phase of the spec (`TrainingPhase`) on one layout (`cfg`, one row)."""
    return price_phases_rows(phases, w, cfg.take(slice(0, 1)), hw, np.array([main_step_s]), dci)[0]
