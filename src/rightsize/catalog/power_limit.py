"""Board power limits (``data/power_limit.yaml``): the lowest limit each part accepts and
the exponents by which compute and memory rates follow a cap, each sourced.

`rightsize.perf.hardware.power_capped` applies them; the formula is written there, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from rightsize.catalog.loader import Sourced, check_schema, read_data_file, require_mapping, sourced

POWER_LIMIT_FILE = "power_limit.yaml"


@dataclass(frozen=True)
class PowerLimitFigures:
    """The cap-to-rate exponents and each part's minimum limit, with their sources."""

    compute_exponent: float
    memory_exponent: float
    minimum_limit_w: dict[str, float]
    sources: dict[str, Sourced]


@cache
def power_limit_figures() -> PowerLimitFigures:
    raw = read_data_file(POWER_LIMIT_FILE)
    check_schema(raw, POWER_LIMIT_FILE)
    exps = require_mapping(raw, "exponents", POWER_LIMIT_FILE, "exponents")
    sources: dict[str, Sourced] = {}
    for name in ("compute", "memory"):
        sources[f"exponents.{name}"] = sourced(
            exps.get(name), POWER_LIMIT_FILE, f"exponents.{name}", minimum=0.01, maximum=1.5
        )
    mins = require_mapping(raw, "minimum_limit_w", POWER_LIMIT_FILE, "minimum_limit_w")
    minimum: dict[str, float] = {}
    for acc_id, entry in mins.items():
        s = sourced(entry, POWER_LIMIT_FILE, f"minimum_limit_w.{acc_id}", minimum=10, maximum=5000)
        sources[f"minimum_limit_w.{acc_id}"] = s
        minimum[str(acc_id)] = s.value
    return PowerLimitFigures(
        compute_exponent=sources["exponents.compute"].value,
        memory_exponent=sources["exponents.memory"].value,
        minimum_limit_w=minimum,
        sources=sources,
    )
