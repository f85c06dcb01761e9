"""A job's whole-run time by part, on top of its steady-state steps.

    steady-state steps      tokens outside the named phases at the search's step rate
    phase: <name>           each phase the spec names, on the chosen layout (search.whole_run_phases)
    evaluation              forward-only eval batches every N steps (catalog whole_run.yaml)
    data-loader stalls      reads the storage as provisioned cannot keep up with
    checkpoint stalls       } the goodput model (sizing.reliability: Daly's complete model),
    failures and restarts   } split into its checkpoint and failure shares
    planned maintenance     planned stops per GPU-hour (catalog whole_run.yaml): a checkpoint
                            and a restart each (the failure rate counts unexpected stops only)
    unplanned losses        the median of published runs' losses beyond every line above
                            (rollbacks, manual restarts, degraded nodes, fail-slows; whole_run.yaml)
    thermal throttling      the power sizing's slowdown

Stragglers are in the step time already (the step model's slowest-GPU term, `perf.step`):
they are not added again here; their spread is in the plan's range
(`search.uncertainty_whole_run`), as is the spread of the unplanned losses (none for Llama 3
405B beyond failures, 1.2x the run for OPT-175B). Each line is seconds of wall time; the lines
add up to the run time every report, the cost and the energy read (`RunTime.run_s`). Nothing here re-derives performance: step
times come from the search, failures from the reliability model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rightsize.catalog.whole_run import WholeRunFactors, whole_run_factors
from rightsize.constants import DAY_S, HOUR_S
from rightsize.perf.reliability import Goodput
from rightsize.perf.whole_run import checkpoint_share, empirical_quantile, eval_fraction, evidence_weight
from rightsize.search.demand import Demand
from rightsize.sizing.results import WholeRun, WholeRunLine
from rightsize.sizing.storage import StoragePlan

UNPLANNED = "unplanned losses"


def _provided_read_bytes_per_s(st: StoragePlan) -> float | None:
    for tier in (st.parallel_file_system, st.cloud_file_system):
        v = tier.get("read_bytes_per_s") or tier.get("throughput_bytes_per_s") if tier else None
        if v:
            return float(v)
    return None


def before_throttling(
    demand: Demand,
    gp: Goodput | None,
    st: StoragePlan,
    phases: Sequence[dict[str, Any]] = (),
    factors: WholeRunFactors | None = None,
    evaluation: dict[str, Any] | None = None,
) -> WholeRun:
    """Every line but thermal throttling (the power sizing needs this time to find it).

    Longer than 80 lines for one reason: each part of the run (steady steps, each phase,
    evaluation, data-loader and checkpoint stalls, planned stops, failures) is one short block
    appending its line with its source, in the order the report lists them."""
    f = factors or whole_run_factors()
    gpus = demand.gpus
    src = f.sources
    lines: list[WholeRunLine] = []
    notes: list[str] = []

    def add(part: str, seconds: float, basis: str) -> None:
        lines.append(WholeRunLine(part, seconds, gpus * seconds / HOUR_S, basis))

    ideal = demand.run_s or 0.0
    in_phases = sum(float(p["at_main_rate_s"]) for p in phases)
    add(
        "steady-state steps",
        max(ideal - in_phases, 0.0),
        "tokens outside the named phases / the chosen layout's throughput (step model)",
    )
    for p in phases:
        add(
            f"phase: {p['name']}",
            float(p["run_s"]),
            f"{p['tokens']:.3g} tokens at seq {p['seq_len']:,}, batch {p['global_batch_tokens']:,} tokens, "
            f"step {p['step_s']:.3g} s on the chosen layout re-split as {p['parallel']} (step model)",
        )
        if p.get("note"):
            notes.append(f"Phase '{p['name']}': {p['note']}.")
    compute_s = sum(line.time_s for line in lines)
    # The spec's evaluation schedule where it gives one, else the catalog's default.
    ev = evaluation or {}
    interval = float(ev.get("interval_steps") or f.eval_interval_steps)
    iters = float(f.eval_iters if ev.get("batches") is None else ev["batches"])
    given = ev.get("interval_steps") is not None or ev.get("batches") is not None
    e = eval_fraction(interval, iters, f.eval_forward_share)
    add(
        "evaluation",
        compute_s * e,
        f"{iters:g} forward-only batches every {interval:g} steps, each {f.eval_forward_share:.2f} of a step ("
        + ("the spec's schedule" if given else src["eval_interval_steps"].source)
        + ")",
    )
    need = demand.data_read_bytes_per_s
    provided = _provided_read_bytes_per_s(st)
    loader = compute_s * max(0.0, need / provided - 1.0) if provided and need else 0.0
    add(
        "data-loader stalls",
        loader,
        "reads needed vs the storage as provisioned"
        + (f" ({need / 1e9:.3g} of {provided / 1e9:.3g} GB/s)" if provided else " (no file system sized)"),
    )
    if gp is not None and gp.goodput > 0:
        useful = sum(line.time_s for line in lines)
        overhead = useful * (1.0 / gp.goodput - 1.0)
        share = checkpoint_share(gp.mtbf_s, gp.checkpoint_write_s, gp.checkpoint_interval_s, gp.restart_s)
        add(
            "checkpoint stalls",
            overhead * share,
            f"{gp.checkpoint_write_s:.3g} s to write every {gp.checkpoint_interval_s:.0f} s (reliability model)",
        )
        add(
            "failures, restarts and lost work",
            overhead * (1.0 - share),
            f"an interruption every {gp.mtbf_s / 3600:.2f} h, {gp.restart_s:.0f} s to restart plus half an "
            "interval of work lost (reliability model, Daly 2006)",
        )
        # Planned stops (maintenance, configuration or data updates) at the catalog's rate per
        # GPU-hour of the run so far: each writes a checkpoint first and restarts, losing no work.
        so_far = sum(line.time_s for line in lines)
        stops = f.planned_interruptions_per_gpu_hour * gpus * so_far / HOUR_S
        add(
            "planned maintenance stops",
            stops * (gp.checkpoint_write_s + gp.restart_s),
            f"{stops:.3g} planned stops, each a {gp.checkpoint_write_s:.3g} s checkpoint and a "
            f"{gp.restart_s:.0f} s restart, at {f.planned_interruptions_per_gpu_hour:.3g} per GPU-hour (Llama 3 405B: "
            "47 planned stops in 54 days on 16,384 GPUs; whole_run.yaml)",
        )
    # What published production runs lost beyond every line above (rollbacks, manual restarts,
    # degraded nodes and fail-slows, time at reduced scale): their median, as a share of the run;
    # a run shorter than the shortest of them carries it in proportion.
    before_s = sum(line.time_s for line in lines)
    shortest_s = f.unplanned_shortest_run_days * DAY_S
    weight = evidence_weight(before_s, shortest_s)
    loss = empirical_quantile(f.unplanned_losses, 0.5) * weight
    runs = ", ".join(name.split(" (")[0] for name, _ in f.unplanned_sources)
    add(
        UNPLANNED,
        loss * before_s,
        f"{loss:.1%} of the run: the median of {len(f.unplanned_losses)} published runs' losses beyond these "
        f"lines ({runs}; whole_run.yaml)"
        + (
            f", x {weight:.2g} as the run is shorter than the shortest of them ({f.unplanned_shortest_run_days:g} d)"
            if weight < 1.0
            else ""
        ),
    )
    return WholeRun(tuple(lines), gpus, tuple(notes))


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
