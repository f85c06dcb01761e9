"""The physics of a whole training run beyond its steady-state steps (pure functions).

A run of T steady-state seconds also pays for:

- phases at other settings (batch and sequence ramps, context extension): each phase's
  tokens at its own step rate, priced on the chosen layout by the step model;
- evaluation: every `interval` steps, `iters` forward-only batches of about a third of a
  training step's FLOPs (forward 2N of 6N per token), a fraction iters x share / interval;
- stragglers: a synchronous step waits for the slowest of n nodes; with each node's step
  time spread by a relative standard deviation s, the expected maximum of n normal draws
  is about s sqrt(2 ln n) above the mean (the Gumbel limit; exact for n -> infinity,
  within ~20% of the exact order statistic from n = 16 up);
- failures, restarts, lost work and checkpoint stalls: the goodput model
  (`perf.reliability`, Daly's complete model in `sizing.reliability`), split into its two
  first-order shares: checkpoint writes d / tau and failures (tau / 2 + R) / M.
"""

from __future__ import annotations

import math


def straggler_slowdown(nodes: int, jitter_fraction: float) -> float:
    """Fractional slowdown of a synchronous step over `nodes` nodes: s sqrt(2 ln n)."""
    if nodes <= 1 or jitter_fraction <= 0:
        return 0.0
    return jitter_fraction * math.sqrt(2.0 * math.log(nodes))


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
