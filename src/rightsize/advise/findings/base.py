"""What every advisor rule shares: the `Finding` it returns and the helpers that read numbers
out of a plan view."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from rightsize.advise.findings.thresholds import INFO_IMPACT
from rightsize.advise.view import COMM_KEYS, PlanView

__all__ = ["CATEGORIES", "COMM_KEYS", "Finding", "Rule"]

CATEGORIES = ("bottleneck", "under-provisioning", "over-provisioning", "wrong-workload", "scaling")


@dataclass(frozen=True)
class Finding:
    """One piece of advice: what was found, the numbers that show it, how to fix it."""

    rule: str
    category: str  # one of CATEGORIES
    impact: float  # share of the run's time or cost at stake, 0..1; the ranking key
    title: str
    evidence: dict[str, Any] = field(default_factory=dict)  # numbers with units in their keys
    fix: str = ""

    @property
    def severity(self) -> str:
        if self.impact >= 0.15:
            return "high"
        if self.impact >= 0.05:
            return "medium"
        return "low" if self.impact > INFO_IMPACT else "info"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "severity": self.severity}


Rule = Callable[[PlanView], Finding | None]


def _num(d: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
    return None


def _deadline(v: PlanView) -> float | None:
    """The deadline a job was planned against (with the safety margin), if any."""
    d = getattr(v.plan, "deadline_s", None)
    if d is None:
        d = (getattr(v.plan, "targets", None) or {}).get("deadline_s")
    return float(d) if d else None


def _nic_gbps(v: PlanView) -> float | None:
    g = _num(v.section("fabric"), "nic_gbps_per_gpu")
    if g is None and v.node is not None:
        g = v.node.scaleout_bytes_per_s_per_gpu * 8.0 / 1e9
    return g


def _step_by_nic(v: PlanView) -> dict[float, float]:
    """Step time at each scale-out line rate (Gb/s per GPU), from the demand or the sizing."""
    d = getattr(v.demand, "step_s_by_nic_gbps", None) or {}
    out = {float(k): float(s) for k, s in d.items()}
    fab = v.section("fabric")
    for row in (fab.get("slowdown_by_nic_gbps") or []) + (fab.get("sensitivity") or []):
        if isinstance(row, dict) and "nic_gbps" in row and "step_s" in row:
            out.setdefault(float(row["nic_gbps"]), float(row["step_s"]))
    return out
