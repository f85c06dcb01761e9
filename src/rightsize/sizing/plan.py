"""Sizing a chosen configuration into a full bill of materials (assembled in later commits)."""

from __future__ import annotations

from typing import Any

from rightsize.search.demand import Demand
from rightsize.spec.infrastructure import Infrastructure


def size(
    demand: Demand, infra: Infrastructure, policy: Any = None, extra: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    return None
