"""A job's whole-run time by part, on top of its steady-state steps.

    steady-state steps      tokens outside the named phases at the search's step rate
    phase: <name>           each phase the spec names, on the chosen layout (search.whole_run_phases)
    evaluation              forward-only eval batches every N steps (catalog whole_run.yaml)
    checkpoint stalls       } the goodput model (Daly's complete model, perf.reliability),
    failures and restarts   } split into its checkpoint and failure shares
    planned maintenance     planned stops per GPU-hour (catalog whole_run.yaml): a checkpoint
                            and a restart each (the failure rate counts unexpected stops only)
    unplanned losses        the median of published runs' losses beyond every line above
                            (rollbacks, manual restarts, degraded nodes, fail-slows; whole_run.yaml)
    -- the lines above are the search's; the sizing adds the ones it alone can know:
    data-loader stalls      reads the storage as provisioned cannot keep up with
    storage-limited         the goodput lost when the storage as provisioned writes checkpoints
      checkpoints           slower than the nodes' client rate the search assumed
    thermal throttling      the power sizing's slowdown

The search's lines are `perf.whole_run.run_parts`, computed once per option: the figure the
search checked against the deadline and ranked by. The sizing reads the chosen option's parts
(`extra["whole_run"]`), never recomputes them, and appends its own. Those are zero when the
storage and cooling are provisioned for the need; otherwise they are added as such, without the
failure and unplanned shares they would also carry (second order), and a plan whose sized run
then passes the planned deadline says so (`sizing.margins.deadline_warning`).

Stragglers are in the step time already (the step model's slowest-GPU term, `perf.step`):
they are not added again here; their spread is in the plan's range
(`search.uncertainty_whole_run`), as is the spread of the unplanned losses. Each line is
seconds of wall time; the lines add up to the run time every report, the cost and the energy
read (`RunTime.run_s`).
"""

from __future__ import annotations

from typing import Any

from rightsize.catalog.whole_run import WholeRunFactors, whole_run_factors
from rightsize.constants import HOUR_S
from rightsize.perf.checkpoint import describe
from rightsize.perf.reliability import Goodput
from rightsize.perf.whole_run import UNPLANNED, RunPart, reliability_parts, run_parts
from rightsize.search.demand import Demand
from rightsize.sizing.results import WholeRun, WholeRunLine
from rightsize.sizing.storage import StoragePlan

__all__ = ["UNPLANNED", "before_throttling", "with_throttling"]
LOADER = "data-loader stalls"
STORAGE_CKPT = "storage-limited checkpoints"


def _provided_read_bytes_per_s(st: StoragePlan) -> float | None:
    for tier in (st.parallel_file_system, st.cloud_file_system):
        v = tier.get("read_bytes_per_s") or tier.get("throughput_bytes_per_s") if tier else None
        if v:
            return float(v)
    return None


def _parts_of(searched: dict[str, Any]) -> tuple[list[RunPart], tuple[str, ...]]:
    parts = [
        RunPart(str(p["part"]), float(p["time_s"]), str(p["basis"])) for p in searched.get("parts") or ()
    ]
    return parts, tuple(searched.get("notes") or ())


USEFUL = ("steady-state", "phase: ", "evaluation")


def _storage_checkpoints(
    parts: list[RunPart], searched_goodput: float | None, gp: Goodput | None, gpus: int, f: WholeRunFactors
) -> RunPart:
    """What the run loses beyond the search's figure when the storage as provisioned writes
    checkpoints slower than the nodes' client rate the search assumed (`perf.reliability`): a
    longer write, a longer interval, more work lost per failure, and the planned stops and
    unplanned losses on that time. The reliability lines priced at the sizing's goodput, less
    the search's; zero when the storage keeps up."""
    useful = [p for p in parts if p.part.startswith(USEFUL)]
    searched = sum(p.time_s for p in parts if not p.part.startswith(USEFUL))
    sized = sum(p.time_s for p in reliability_parts(useful, gpus, gp, f))
    if gp is None or not searched_goodput:
        return RunPart(STORAGE_CKPT, 0.0, "no checkpoints")
    return RunPart(
        STORAGE_CKPT,
        max(0.0, sized - searched),
        f"goodput {gp.goodput:.1%} with the storage as provisioned ({describe(gp)}), against "
        f"{searched_goodput:.1%} at the nodes' client rate the search ranked by (reliability model; planned "
        "stops and unplanned losses on the difference)",
    )


def before_throttling(
    demand: Demand,
    gp: Goodput | None,
    st: StoragePlan,
    searched: dict[str, Any] | None = None,
    factors: WholeRunFactors | None = None,
) -> WholeRun:
    """Every line but thermal throttling (the power sizing needs this time to find it): the
    search's parts (`searched`, `RunParts.as_dict`) with the data-loader stalls of the storage
    as provisioned after evaluation. A job planned without them (vision, recommendation) has its
    parts computed here by the same function (`run_parts`) from its steady run and `gp`."""
    storage: RunPart | None = None
    if searched and searched.get("parts"):
        parts, notes = _parts_of(searched)
        f = factors or whole_run_factors()
        storage = _storage_checkpoints(parts, searched.get("goodput"), gp, demand.gpus, f)
    else:
        rp = run_parts(demand.run_s or 0.0, demand.gpus, gp, factors or whole_run_factors())
        parts, notes = list(rp.parts), rp.notes
    compute_s = sum(p.time_s for p in parts if p.part.startswith(("steady-state", "phase: ")))
    need = demand.data_read_bytes_per_s
    provided = _provided_read_bytes_per_s(st)
    loader = RunPart(
        LOADER,
        compute_s * max(0.0, need / provided - 1.0) if provided and need else 0.0,
        "reads needed vs the storage as provisioned"
        + (f" ({need / 1e9:.3g} of {provided / 1e9:.3g} GB/s)" if provided else " (no file system sized)"),
    )
    # What the sizing adds after the search's parts (the unplanned losses are a share of those).
    parts.append(loader)
    if storage is not None:
        parts.append(storage)
    lines = tuple(WholeRunLine(p.part, p.time_s, demand.gpus * p.time_s / HOUR_S, p.basis) for p in parts)
    return WholeRun(lines, demand.gpus, notes)


def with_throttling(run: WholeRun, throttle_fraction: float) -> WholeRun:
    """The whole run with the power sizing's thermal slowdown as its last line."""
    t = run.total_s * throttle_fraction
    line = WholeRunLine(
        "thermal throttling",
        t,
        run.gpus * t / HOUR_S,
        f"{throttle_fraction:.1%} slowdown where cooling cannot carry the full draw (power sizing)",
    )
    return WholeRun((*run.lines, line), run.gpus, run.notes)
