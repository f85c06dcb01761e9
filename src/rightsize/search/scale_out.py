"""How far a training search scales out on one accelerator: the knee of the scaling curve (when
a run length is given but neither a deadline nor a GPU count) and, for every vendor alike, the
floor of diminishing returns under `objective: time`. Options are (Candidate, evaluation, index)
tuples, as the search ranks them."""

from __future__ import annotations

from typing import Any, TypeVar

Opt = TypeVar("Opt", bound=tuple[Any, ...])

# When a run length is given but neither a deadline nor a GPU count, scale out as
# far as each GPU keeps at least this share of the best per-GPU throughput (the knee
# of the scaling curve): the policy's default utilisation target, 80%.
UTILISATION_TARGET = 0.8
# Under `objective: time` the search still stops scaling out where an accelerator falls below
# half of its best per-accelerator throughput: the 50% parallel-efficiency line strong-scaling
# studies conventionally draw (past it, the time bought costs over twice the accelerator-hours per
# token). A policy choice, not a measured figure.
SCALING_EFFICIENCY_FLOOR = 0.5


def knee(options: list[Opt]) -> list[Opt]:
    """Per accelerator, the fastest count whose per-GPU throughput stays within the
    utilisation target of that accelerator's best."""
    picked = []
    for acc in dict.fromkeys(o[0].accelerator for o in options):
        mine = [o for o in options if o[0].accelerator == acc]
        # At the risk-aware quantile (Candidate.risk_factor), as every ranking in the search.
        best_tps = max(o[0].tokens_per_s_per_gpu / o[0].risk_factor for o in mine)
        efficient = [
            o for o in mine if o[0].tokens_per_s_per_gpu / o[0].risk_factor >= UTILISATION_TARGET * best_tps
        ]
        picked.append(
            min(efficient, key=lambda o: (o[0].time_to_train_s or o[0].step_time_s) * o[0].risk_factor)
        )
    return picked


def efficient(options: list[Opt]) -> list[Opt]:
    """Diminishing returns, for every accelerator alike: the options whose per-GPU throughput
    (at the risk-aware quantile) keeps `SCALING_EFFICIENCY_FLOOR` of that accelerator's best.
    Past it, each GPU added buys time at more than twice the GPU-hours per token, so the
    fastest layout is no longer the one to take (llama3-70b on Trainium2 within 200 days:
    65,536 chips at 23% MFU against 47% at 4,096)."""
    kept = []
    for acc in dict.fromkeys(o[0].accelerator for o in options):
        mine = [o for o in options if o[0].accelerator == acc]
        best_tps = max(o[0].tokens_per_s_per_gpu / o[0].risk_factor for o in mine)
        floor = SCALING_EFFICIENCY_FLOOR * best_tps
        kept += [o for o in mine if o[0].tokens_per_s_per_gpu / o[0].risk_factor >= floor]
    return kept
