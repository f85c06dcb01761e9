"""Sensitivity: which assumptions move the answer most (the data behind a tornado chart).

Each assumption is moved to the low and high end of a stated range, the plan's headline
time and cost are recomputed with everything else fixed, and the changes are reported as
fractions of the base. The swings are ranked by their largest absolute change.

Ranges (each a judgement, stated so it can be argued with):
- compute efficiency +/-15%: the spread of the bundled validation errors (max 9.4%) and
  of the held-out set (median 19%) brackets it;
- failure rate x0.5 / x2: published interruption rates differ by about that much between
  clusters (Llama 3: 1.97e-5 per GPU-hour; Meta's RSC studies report 2-3x ranges);
- cloud price -30% / +30%: list versus negotiated and neo-cloud prices;
- energy price -50% / +50%: the range of industrial electricity prices across US states;
- scale-out bandwidth at half / double the node's per-GPU NIC rate;
- growth rates at half / 1.5x the spec's (horizon capital cost).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

EFFICIENCY_RANGE = 0.15
FAILURE_RATE_FACTORS = (0.5, 2.0)
CLOUD_PRICE_RANGE = 0.30
ENERGY_PRICE_RANGE = 0.50
GROWTH_FACTORS = (0.5, 1.5)


@dataclass(frozen=True)
class Swing:
    assumption: str
    low_label: str
    high_label: str
    time_change_fraction_low: float
    time_change_fraction_high: float
    cost_change_fraction_low: float
    cost_change_fraction_high: float

    @property
    def magnitude(self) -> float:
        return max(
            abs(self.time_change_fraction_low),
            abs(self.time_change_fraction_high),
            abs(self.cost_change_fraction_low),
            abs(self.cost_change_fraction_high),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def swing(
    assumption: str,
    labels: tuple[str, str],
    base: tuple[float, float],
    low: tuple[float, float],
    high: tuple[float, float],
) -> Swing:
    """(time, cost) at the base, low and high ends -> fractional changes."""

    def frac(x: float, b: float) -> float:
        return x / b - 1.0 if b else 0.0

    return Swing(
        assumption,
        labels[0],
        labels[1],
        frac(low[0], base[0]),
        frac(high[0], base[0]),
        frac(low[1], base[1]),
        frac(high[1], base[1]),
    )


def time_at_efficiency(time_s: float, compute_share: float, scale: float) -> float:
    """Wall time when the compute part of each step runs at `scale` x the assumed
    efficiency (communication and bubbles unchanged): t' = t (share / scale + 1 - share)."""
    return time_s * (compute_share / scale + 1.0 - compute_share)


def ranked(swings: list[Swing]) -> list[Swing]:
    return sorted(swings, key=lambda s: s.magnitude, reverse=True)
