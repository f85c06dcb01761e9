"""The physics of a whole training run beyond its steady-state steps (pure functions).

A run of T steady-state seconds also pays for:

- phases at other settings (batch and sequence ramps, context extension): each phase's
  tokens at its own step rate, priced on the chosen layout by the step model;
- evaluation: every `interval` steps, `iters` forward-only batches of about a third of a
  training step's FLOPs (forward 2N of 6N per token), a fraction iters x share / interval;
- stragglers: already in every step (`perf.step`, the slowest of n GPUs); not repeated;
- failures, restarts, lost work and checkpoint stalls: the goodput model
  (`perf.reliability`, Daly's complete model in `sizing.reliability`), split into its two
  first-order shares: checkpoint writes d / tau and failures (tau / 2 + R) / M;
- planned stops (a checkpoint and a restart each) and the published runs' unplanned losses.

`run_parts` adds these up for one candidate: the search calls it for every option it ranks
(its `time_to_train_s` is their total) and the sizing reads the chosen option's parts, adding
only what it alone knows (data-loader stalls against the storage as provisioned, thermal
throttling from the power sizing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rightsize.catalog.whole_run import WholeRunFactors
from rightsize.constants import DAY_S, HOUR_S
from rightsize.perf.checkpoint import describe, lost_to_completion_s
from rightsize.perf.reliability import Goodput

UNPLANNED = "unplanned losses"


def eval_fraction(interval_steps: float, eval_iters: float, forward_share: float) -> float:
    """Evaluation time as a fraction of training time."""
    if interval_steps <= 0:
        return 0.0
    return eval_iters * forward_share / interval_steps


def checkpoint_share(mtbf_s: float, write_s: float, interval_s: float, restart_s: float) -> float:
    """The share of the goodput overhead that checkpoint writes cause (the rest is failures:
    restarts and the work lost since the last checkpoint), from the first-order terms."""
    ckpt = write_s / interval_s if interval_s > 0 else 0.0
    fail = (interval_s / 2.0 + restart_s) / mtbf_s if mtbf_s > 0 else 0.0
    total = ckpt + fail
    return ckpt / total if total > 0 else 0.0


def phase_seconds(tokens: float, tokens_per_step: float, step_s: float) -> float:
    """Wall seconds to train `tokens` at `tokens_per_step` per step of `step_s`."""
    return tokens / tokens_per_step * step_s


def empirical_quantile(values: tuple[float, ...], q: float) -> float:
    """The `q` quantile of a few published values (ascending): Hazen plotting positions
    (i - 0.5) / n, linear between them, flat past the first and last (Hyndman and Fan 1996,
    definition 5)."""
    n = len(values)
    if n == 0:
        return 0.0
    pos = [(i + 0.5) / n for i in range(n)]
    if q <= pos[0]:
        return values[0]
    if q >= pos[-1]:
        return values[-1]
    j = next(i for i in range(1, n) if q <= pos[i])
    t = (q - pos[j - 1]) / (pos[j] - pos[j - 1])
    return values[j - 1] + t * (values[j] - values[j - 1])


def evidence_weight(run_s: float, shortest_run_s: float) -> float:
    """The share of the published runs' unplanned losses a run of `run_s` carries: all of them
    from the shortest published run's length up, in proportion below it."""
    if shortest_run_s <= 0:
        return 1.0
    return min(1.0, max(run_s, 0.0) / shortest_run_s)


@dataclass(frozen=True)
class RunPart:
    """One part of a whole run: its name, wall seconds and where its figure comes from."""

    part: str
    time_s: float
    basis: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunParts:
    """A candidate's whole run by part (the search's figure; `total_s` is its time to train)."""

    parts: tuple[RunPart, ...]
    notes: tuple[str, ...] = ()
    goodput: float | None = None  # the reliability model's, as the checkpoint and failure parts used it
    phases: tuple[dict[str, Any], ...] = ()  # each phase as priced (`search.whole_run_phases`)

    @property
    def total_s(self) -> float:
        return sum(p.time_s for p in self.parts)

    @property
    def steady_s(self) -> float:
        return self.parts[0].time_s if self.parts else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "total_s": self.total_s,
            "parts": [p.as_dict() for p in self.parts],
            "notes": list(self.notes),
            "goodput": self.goodput,
            "phases": list(self.phases),
        }


def run_parts(
    steady_s: float,
    gpus: int,
    gp: Goodput | None,
    f: WholeRunFactors,
    phases: Sequence[dict[str, Any]] = (),
    evaluation: dict[str, Any] | None = None,
) -> RunParts:
    """A run of `steady_s` seconds of steps at the main settings (all the tokens, at the
    option's step rate) on `gpus`, by part: steps outside the phases, each phase (`price_phases`
    dicts), evaluation, checkpoint stalls and failures (`gp`: the goodput model), planned stops,
    unplanned losses. Each block appends one part with its source, in report order."""
    parts: list[RunPart] = []
    notes: list[str] = []

    def add(part: str, seconds: float, basis: str) -> None:
        parts.append(RunPart(part, seconds, basis))

    in_phases = sum(float(p["at_main_rate_s"]) for p in phases)
    add(
        "steady-state steps",
        max(steady_s - in_phases, 0.0),
        "tokens outside the named phases / the layout's throughput (step model)",
    )
    for p in phases:
        add(
            f"phase: {p['name']}",
            float(p["run_s"]),
            f"{p['tokens']:.3g} tokens at seq {p['seq_len']:,}, batch {p['global_batch_tokens']:,} tokens, "
            f"step {p['step_s']:.3g} s on the layout re-split as {p['parallel']} (step model)",
        )
        if p.get("note"):
            notes.append(f"Phase '{p['name']}': {p['note']}.")
    compute_s = sum(x.time_s for x in parts)
    # The spec's evaluation schedule where it gives one, else the catalog's default.
    ev = evaluation or {}
    interval = float(ev.get("interval_steps") or f.eval_interval_steps)
    iters = float(f.eval_iters if ev.get("batches") is None else ev["batches"])
    given = ev.get("interval_steps") is not None or ev.get("batches") is not None
    add(
        "evaluation",
        compute_s * eval_fraction(interval, iters, f.eval_forward_share),
        f"{iters:g} forward-only batches every {interval:g} steps, each {f.eval_forward_share:.2f} of a step ("
        + ("the spec's schedule" if given else f.sources["eval_interval_steps"].source)
        + ")",
    )
    parts += reliability_parts(parts, gpus, gp, f)
    return RunParts(tuple(parts), tuple(notes), gp.goodput if gp is not None else None, tuple(phases))


def reliability_parts(
    base: Sequence[RunPart], gpus: int, gp: Goodput | None, f: WholeRunFactors
) -> list[RunPart]:
    """The parts a run of `base` parts (steps, phases, evaluation) adds by the goodput model
    `gp` and the published runs: checkpoint stalls, failures, planned stops, unplanned losses.
    Apart from `run_parts` so the sizing can price what storage as provisioned changes."""
    parts = list(base)
    n = len(parts)

    def add(part: str, seconds: float, basis: str) -> None:
        parts.append(RunPart(part, seconds, basis))

    if gp is not None and gp.goodput > 0:
        useful = sum(x.time_s for x in parts)
        overhead = useful * (1.0 / gp.goodput - 1.0)
        # The first start costs what a restart does, less the failure's detection: scheduling,
        # container start, distributed init, data-loader warm-up, loading the weights. It is
        # paid on every GPU of the job, so it weighs on short, wide runs.
        add(
            "job start",
            gp.restart_s,
            f"one start-up (scheduling, container and distributed init, loading the weights), taken as the "
            f"reliability model's {gp.restart_s:.0f} s restart",
        )
        # An asynchronous save blocks for its staging only; a failure also loses the write
        # still under way (perf.checkpoint): the failure term carries it with the restart.
        behind_s = lost_to_completion_s(gp)
        share = checkpoint_share(
            gp.mtbf_s, gp.checkpoint_write_s, gp.checkpoint_interval_s, gp.restart_s + behind_s
        )
        add("checkpoint stalls", overhead * share, f"{describe(gp)} (reliability model, perf.checkpoint)")
        add(
            "failures, restarts and lost work",
            overhead * (1.0 - share),
            f"an interruption every {gp.mtbf_s / 3600:.2f} h, {gp.restart_s:.0f} s to restart plus half an "
            + (f"interval and the {behind_s:.3g} s background write " if behind_s else "interval ")
            + "of work lost (reliability model, Daly 2006)",
        )
        # Planned stops (maintenance, configuration or data updates) at the catalog's rate per
        # GPU-hour of the run so far: each writes a checkpoint first and restarts, losing no work.
        so_far = sum(x.time_s for x in parts)
        stops = f.planned_interruptions_per_gpu_hour * gpus * so_far / HOUR_S
        # A stop waits for its checkpoint to be durable: the blocking part and any background write.
        stop_ckpt_s = gp.checkpoint_write_s + behind_s
        add(
            "planned maintenance stops",
            stops * (stop_ckpt_s + gp.restart_s),
            f"{stops:.3g} planned stops, each a {stop_ckpt_s:.3g} s checkpoint and a "
            f"{gp.restart_s:.0f} s restart, at {f.planned_interruptions_per_gpu_hour:.3g} per GPU-hour (Llama 3 405B: "
            "47 planned stops in 54 days on 16,384 GPUs; whole_run.yaml)",
        )
    # What published production runs lost beyond every line above (rollbacks, manual restarts,
    # degraded nodes and fail-slows, time at reduced scale): their median, as a share of the run;
    # a run shorter than the shortest of them carries it in proportion.
    before_s = sum(x.time_s for x in parts)
    weight = evidence_weight(before_s, f.unplanned_shortest_run_days * DAY_S)
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
    return parts[n:]
