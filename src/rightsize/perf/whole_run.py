"""The physics of a whole training run beyond its steady-state steps (pure functions).

A run of T steady-state seconds also pays for:

- phases at other settings (batch and sequence ramps, context extension): each phase's
  tokens at its own step rate, priced on the chosen layout by the step model;
- evaluation: every `interval` steps, `iters` forward-only batches of about a third of a
  training step's FLOPs (forward 2N of 6N per token), a fraction iters x share / interval;
- stragglers: already in every step (`perf.step`, the slowest of n GPUs); not repeated;
- failures, restarts, lost work and checkpoint stalls: the goodput model
  (`perf.reliability`, Daly's complete model in `sizing.reliability`), split into its two
  first-order shares: checkpoint writes d / tau and failures (tau / 2 + R) / M.
"""

from __future__ import annotations


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
