"""The fields `calibrate` reads from a profile, checked where they are read.

A profile is a file: it may be hand-edited, truncated or hostile. `check_profile` looks at the header
and at every successful measurement of the kinds the fit uses (train, gemm, membw, comms) and
refuses, with a BadInput naming the file, the record and the field, any field of the wrong type or
outside the range a measurement can have. The fit then meets only numbers it can use. Values are
never quoted from the file beyond numbers; keys are shortened and made printable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.safe_read import clean_key

_UNSET: Any = object()
_FIX = "Pass an unmodified profile written by `rightsize profile` (or profile again)."
_PHASES = ("forward", "backward", "optimizer")
# field -> (lowest, highest) a measurement can have; the upper ends are far above any machine
_TIME_S = (1e-12, 1e7)
_COUNT = (1, 2**31)
_BYTES = (1, 2**60)
_RATE = (1e-3, 1e21)  # flop/s or byte/s


def check_profile(records: list[dict[str, Any]], path: Path) -> None:
    """BadInput at the first field `calibrate` would read that is missing, mistyped or out of range."""
    for rec in records:
        if rec.get("type") == "header":
            _check_header(rec, path)
        elif rec.get("type") == "result" and rec.get("status") == "ok":
            check = _RESULTS.get(str(rec.get("kind")))
            if check is not None:
                check(_Record(rec, path))


class _Record:
    """One record with checked lookups that name the file, the record and the field."""

    def __init__(self, rec: Mapping[str, Any], path: Path) -> None:
        self.rec, self.path = rec, path
        key = rec.get("key")
        self.name = (
            f"result {clean_key(key)!r}" if isinstance(key, str) else f"a {clean_key(rec.get('kind'))} result"
        )

    def bad(self, field: str, why: str) -> BadInput:
        return BadInput(f"The profile {self.path}: {self.name} has a bad `{field}`.", why, _FIX)

    def number(
        self, field: str, lo_hi: tuple[float, float], value: Any = _UNSET, whole: bool = False
    ) -> float:
        value = self.rec.get(field) if value is _UNSET else value
        lo, hi = lo_hi
        if isinstance(value, bool) or not isinstance(value, int | float):
            got = "missing" if value is None else f"a {type(value).__name__}"
            return _raise(self.bad(field, f"It is {got}; expected a number from {lo:g} to {hi:g}."))
        if not (math.isfinite(value) and lo <= value <= hi) or (whole and value != int(value)):
            kind = "a whole number" if whole else "a number"
            return _raise(self.bad(field, f"It is {value:g}; expected {kind} from {lo:g} to {hi:g}."))
        return float(value)

    def mapping(self, field: str, value: Any = _UNSET) -> Mapping[str, Any]:
        value = self.rec.get(field) if value is _UNSET else value
        if not isinstance(value, Mapping):
            got = "missing" if value is None else f"a {type(value).__name__}"
            return _raise(self.bad(field, f"It is {got}; expected a mapping."))
        return value

    def text(self, field: str, required: bool = True) -> None:
        value = self.rec.get(field)
        if (value is not None or required) and not isinstance(value, str):
            got = "missing" if value is None else f"a {type(value).__name__}"
            _raise(self.bad(field, f"It is {got}; expected text."))

    def times(self, field: str, value: Any) -> None:
        """A mapping of statistic (median, min, ...) -> seconds."""
        stats = self.mapping(field, value)
        if "median" not in stats:
            _raise(self.bad(field, "It has no `median`."))
        for stat, seconds in stats.items():
            if stat in ("median", "min", "max", "mean", "p10", "p90"):
                self.number(f"{field}.{clean_key(stat)}", _TIME_S, seconds)


def _raise(err: BadInput) -> Any:
    raise err


def _check_train(r: _Record) -> None:
    r.number("batch", _COUNT, whole=True)
    r.number("seq_len", _COUNT, whole=True)
    if r.rec.get("world_size") is not None:
        r.number("world_size", _COUNT, whole=True)
    phases = r.mapping("time_s")
    for phase in _PHASES:
        r.times(f"time_s.{phase}", phases.get(phase))


def _check_gemm(r: _Record) -> None:
    r.number("flops_per_s", _RATE)
    for dim in ("m", "n", "k"):
        r.number(dim, _COUNT, whole=True)
    r.times("time_s", r.rec.get("time_s"))


def _check_membw(r: _Record) -> None:
    r.number("bytes_per_s", _RATE)


def _check_comms(r: _Record) -> None:
    r.text("op")
    r.text("tier", required=False)
    r.number("bytes", _BYTES)
    r.number("world_size", _COUNT, whole=True)
    r.times("time_s", r.rec.get("time_s"))


_RESULTS: dict[str, Callable[[_Record], None]] = {
    "train": _check_train,
    "gemm": _check_gemm,
    "membw": _check_membw,
    "comms": _check_comms,
}


def _check_header(rec: Mapping[str, Any], path: Path) -> None:
    r = _Record({**rec, "key": "header"}, path)
    r.name = "the header"
    for field in ("environment", "config"):
        if rec.get(field) is not None:
            r.mapping(field)
    env, config = rec.get("environment") or {}, rec.get("config") or {}
    sub = _Record(env, path)
    sub.name = "the header's environment"
    for field in ("cpu_count_physical", "cpu_count_logical"):
        if env.get(field):
            sub.number(field, _COUNT, whole=True)
    if env.get("host_memory_bytes"):
        sub.number("host_memory_bytes", _BYTES)
    if env.get("gpu_name") is not None:
        sub.text("gpu_name")
    cfg = _Record(config, path)
    cfg.name = "the header's config"
    for field in ("dtype", "device"):
        cfg.text(field, required=False)
    if config.get("arch") is not None:
        _check_arch(cfg, cfg.mapping("arch"))


def _check_arch(cfg: _Record, arch: Mapping[str, Any]) -> None:
    from pydantic import ValidationError

    from rightsize.spec.model import ModelArch

    try:
        ModelArch.model_validate(dict(arch))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(clean_key(part) for part in first["loc"])
        _raise(
            cfg.bad(
                f"arch.{where}" if where else "arch", str(first["msg"]).removeprefix("Value error, ") + "."
            )
        )
