"""Every raw number in a spec is finite and of a real-world magnitude, checked before pydantic reads it.

YAML turns `1e999` into infinity and `10**400` into an integer no float can hold (pydantic then fails
with an OverflowError, a traceback); either would reach the planners as inf or NaN. `finite_numbers`
walks the raw input once, at the top of each spec (and of every model architecture, which also comes
from presets and config.json files), and names the key path of the first bad figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MAX_MAGNITUDE = 1e24
"""The largest number a spec may hold anywhere (10^24: FLOP/s of a whole facility); beyond it a figure
is a typo, overflows to infinity in products, or is a 400-digit integer that no float can hold."""
_MAX_WALK_DEPTH = 64


def finite_numbers(data: Any) -> Any:
    """A spec's before-check over every number it holds: finite, and at most 10^24 in magnitude.

    Runs on the raw input, so a 400-digit integer is refused before pydantic turns it into a float
    (an OverflowError) and a '.inf' before any sum. The message names the key path and the range.
    """
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, Mapping) and depth < _MAX_WALK_DEPTH:
            stack.extend((v, f"{where}.{k}" if where else str(k), depth + 1) for k, v in node.items())
        elif isinstance(node, list | tuple) and depth < _MAX_WALK_DEPTH:
            stack.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(node))
        elif isinstance(node, int | float) and not isinstance(node, bool):
            problem = _number_problem(node)
            if problem:
                raise ValueError(f"{where or 'value'}: {problem}")
    return data


def _number_problem(value: float) -> str:
    """Why a raw number cannot be in a spec ('' if it can)."""
    if isinstance(value, int):
        if abs(value) <= MAX_MAGNITUDE:
            return ""
        digits = len(str(abs(value))) if abs(value) < 10**4000 else "over 4000"
        return f"a {digits}-digit number; numbers in a spec are at most 10^24 in magnitude"
    if not math.isfinite(value):
        return f"{value} is not a finite number; write a finite figure (at most 10^24 in magnitude)"
    if abs(value) > MAX_MAGNITUDE:
        return f"{value:g} is larger than any real figure; numbers in a spec are at most 10^24 in magnitude"
    return ""
