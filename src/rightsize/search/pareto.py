"""Pareto front of candidates over (time to train, GPU-hours)."""

from __future__ import annotations

from rightsize.search.candidates import Candidate


def pareto_front(cands: list[Candidate]) -> list[Candidate]:
    """Candidates no other beats on both time and GPU-hours (falling back to step
    time and 1/throughput when there is no run length), sorted by time."""

    def point(c: Candidate) -> tuple[float, float]:
        t = c.time_to_train_s if c.time_to_train_s is not None else c.step_time_s
        g = c.gpu_hours if c.gpu_hours is not None else 1.0 / c.tokens_per_s_per_gpu
        return t, g

    ordered = sorted(cands, key=point)
    front: list[Candidate] = []
    best_g = float("inf")
    for c in ordered:
        _, g = point(c)
        if g < best_g:
            front.append(c)
            best_g = g
    return front
