"""Typed, range-checked reads of a plan dict for `export.plan_view`.

A plan given to `export` may be hand-edited JSON: any key missing, of the wrong type, NaN,
infinite, negative or absurdly large. `Fields(d, where)` reads one dict of it and raises
BadInput naming the key (`best.parallel.tp`), what it must be and the allowed range, never a
traceback and never the file's content beyond the offending key.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.errors import BadInput

REQUIRED: Any = object()  # marker: the key must be present
INT_MAX = 10**9
MAX_PARALLEL = 1 << 16  # a parallel degree (TP, PP, EP ...) beyond any real plan
MAX_GPUS = 10**7
FLOAT_MAX = 1e18
TEXT_MAX = 1000  # characters in a name


def _fix() -> str:
    return "Export a plan written by `rightsize plan SPEC --format json` (or pass the spec itself)."


def _bad(where: str, key: str, must: str) -> BadInput:
    path = f"{where}.{key}" if where else key
    return BadInput(
        f"The plan's `{path}` {must}.",
        "Export reads the chosen configuration, its sizing and the spec it was planned from.",
        _fix(),
    )


class Fields:
    """One dict of the plan, `where` its dotted path (`` for the plan itself)."""

    def __init__(self, d: Any, where: str = "") -> None:
        if not isinstance(d, dict):
            raise BadInput(
                f"The plan{f' `{where}`' if where else ''} is not a JSON object.",
                "A plan is the JSON object `rightsize plan --format json` writes.",
                _fix(),
            )
        self.d, self.where = d, where

    def _path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def has(self, key: str) -> bool:
        return self.d.get(key) is not None

    def raw(self, key: str) -> Any:
        return self.d.get(key)

    def sub(self, key: str, required: bool = True) -> Fields:
        """The nested object `key`; an empty one when absent and not required."""
        val = self.d.get(key)
        if val is None:
            if required:
                raise _bad(self.where, key, "is missing")
            val = {}
        return Fields(val, self._path(key))

    def _present(self, key: str, default: Any) -> Any:
        val = self.d.get(key)
        if val is None and default is REQUIRED:
            raise _bad(self.where, key, "is missing")
        return val

    def num(self, key: str, lo: float = 0.0, hi: float = FLOAT_MAX, default: Any = REQUIRED) -> float:
        """A finite number in [lo, hi]; `default` (a number) when absent or null."""
        val = self._present(key, default)
        if val is None:
            return float(default)
        return check_num(val, self.where, key, lo, hi)

    def integer(self, key: str, lo: int = 0, hi: int = INT_MAX, default: Any = REQUIRED) -> Any:
        """A whole number in [lo, hi]; `default` (None allowed) when absent or null."""
        val = self._present(key, default)
        if val is None:
            return default
        return check_int(val, self.where, key, lo, hi)

    def text(self, key: str, default: Any = REQUIRED, max_len: int = TEXT_MAX) -> str:
        """A string of Unicode text (no lone surrogates) of at most `max_len` characters."""
        val = self._present(key, default)
        if val is None:
            return default
        return check_text(val, self.where, key, max_len)

    def flag(self, key: str, default: bool = False) -> bool:
        val = self.d.get(key)
        if val is None:
            return default
        if not isinstance(val, bool):
            raise _bad(self.where, key, "must be true or false")
        return val

    def items(self, key: str, required: bool = True) -> list[Any]:
        """The list `key` (empty when absent and not required)."""
        val = self.d.get(key)
        if val is None and not required:
            return []
        if not isinstance(val, list):
            raise _bad(self.where, key, "must be a list" if val is not None else "is missing")
        return val


def check_num(val: Any, where: str, key: str, lo: float, hi: float) -> float:
    if isinstance(val, bool) or not isinstance(val, int | float):
        raise _bad(where, key, f"must be a number from {lo:g} to {hi:g}")
    try:
        f = float(val)
    except OverflowError:
        f = math.inf
    if not (math.isfinite(f) and lo <= f <= hi):
        raise _bad(where, key, f"must be a finite number from {lo:g} to {hi:g}")
    return f


def check_int(val: Any, where: str, key: str, lo: int, hi: int) -> int:
    if isinstance(val, float) and math.isfinite(val) and val.is_integer():
        val = int(val)
    if isinstance(val, bool) or not isinstance(val, int) or not lo <= val <= hi:
        raise _bad(where, key, f"must be a whole number from {lo} to {hi}")
    return val


def check_text(val: Any, where: str, key: str, max_len: int = TEXT_MAX) -> str:
    if not isinstance(val, str):
        raise _bad(where, key, "must be a string")
    if len(val) > max_len:
        raise _bad(where, key, f"is longer than {max_len} characters")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in val):
        raise _bad(where, key, "holds a lone surrogate (not Unicode text)")
    if "\x00" in val:
        raise _bad(where, key, "holds a NUL character (no file name, argument or label can carry it)")
    return val
