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


def _phase_layout(cfg: ParallelConfigs, main_seq: int, seq: int, batch_seqs: int) -> ParallelConfigs | None:
    """The chosen layout (one row) re-split for a phase, or None when the count does not split."""
    tp, pp, cp, dp = (int(getattr(cfg, k)[0]) for k in ("tp", "pp", "cp", "dp"))
    gpus = tp * pp * cp * dp
    cp2 = max(1, cp * seq // main_seq)
    if gpus % (tp * pp * cp2):
        return None
    dp2 = gpus // (tp * pp * cp2)
    if dp2 < 1 or batch_seqs % dp2:
        return None
    per_replica = batch_seqs // dp2
    mb = int(cfg.micro_batch[0])
    mb2 = mb if per_replica % mb == 0 else 1
    out = cfg.take(0)
    out.cp[:] = cp2
    out.dp[:] = dp2
    out.micro_batch[:] = mb2
    out.__dict__.pop("gpus", None)  # the cached count is recomputed (the same)
    return out


def price_phases(
    phases: tuple[Any, ...],
    w: TrainWorkload,
    cfg: ParallelConfigs,
    hw: Hardware,
    main_step_s: float,
    dci: DciLink | None = None,
) -> list[PhaseTime]:
    """Each phase of the spec (`TrainingPhase`) on the chosen layout (`cfg`, one row)."""
    main_tokens_per_step = w.seq_len * w.global_batch
    main_rate_s_per_token = main_step_s / main_tokens_per_step
    out: list[PhaseTime] = []
    for p in phases:
        seq = int(p.seq_len or w.seq_len)
        batch_tokens = int(p.global_batch_tokens or main_tokens_per_step)
        batch_seqs = max(1, batch_tokens // seq)
        layout = _phase_layout(cfg, w.seq_len, seq, batch_seqs)
        note = ""
        if layout is None:
            step_s = main_rate_s_per_token * batch_seqs * seq
            layout = cfg.take(0)
            note = (
                f"the chosen layout does not split over {batch_seqs:,} sequences of {seq:,} tokens: "
                "priced at the main step's rate per token"
            )
        else:
            st = train_step(replace(w, seq_len=seq, global_batch=batch_seqs), layout, hw, dci=dci)
            step_s = float(st.step_time[0])
            if not bool(np.asarray(st.memory.fits)[0]):
                note = "does not fit in memory on this layout as re-split: the run needs more recompute or offload here"
        tokens = float(p.tokens)
        run_s = phase_seconds(tokens, batch_seqs * seq, step_s)
        out.append(
            PhaseTime(
                name=p.name,
                tokens=tokens,
                seq_len=seq,
                global_batch_tokens=batch_seqs * seq,
                step_s=step_s,
                run_s=run_s,
                at_main_rate_s=tokens * main_rate_s_per_token,
                parallel={k: int(getattr(layout, k)[0]) for k in ("tp", "pp", "cp", "dp", "micro_batch")},
                note=note,
            )
        )
    return out
