"""Human units ("30d", "16M", "80 GiB", "400 Gb/s", "989 TFLOP/s", "10.2 kW"), parsed once at the edge.

Everything past this module is SI floats: seconds, plain counts, bytes, bytes per second, FLOP/s,
watts. Each parser accepts a number (returned as a float, which must be finite and not negative) or
a string with a unit, and raises `BadInput` naming the string, the format it expected and an example.

Conventions (DESIGN.md, "Units"): GB/TB are decimal (10^9, 10^12), GiB/TiB binary (2^30, 2^40);
an upper-case B is a byte and a lower-case b a bit, so "400 Gb/s" is 50e9 bytes per second.

The `Annotated` types at the bottom (`DurationS`, `Count`, `CountInt`, `Bytes`, `BytesPerS`,
`PowerW`) plug these parsers into pydantic fields, with a JSON Schema that accepts a number or a
string and shows examples.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ValidationInfo, WithJsonSchema

from rightsize.constants import (
    BITS_PER_BYTE,
    DAY_S,
    GIGA,
    HOUR_S,
    KILO,
    MEGA,
    MINUTE_S,
    PETA,
    TERA,
    WEEK_S,
    YEAR_S,
    GiB,
    KiB,
    MiB,
    TiB,
)
from rightsize.errors import BadInput, SpecNote

# A number: optional sign, digits (with "_" or "," grouping), optional fraction and exponent.
_NUMBER_RE = re.compile(r"^\s*([+-]?(?:\d[\d_,]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(.*?)\s*$")
_COMMA_GROUPED_RE = re.compile(r"^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:[eE][+-]?\d+)?$")

_DECIMAL_PREFIX = {"": 1.0, "k": KILO, "K": KILO, "M": MEGA, "G": GIGA, "T": TERA, "P": PETA}
_BINARY_PREFIX = {"K": float(KiB), "k": float(KiB), "M": float(MiB), "G": float(GiB), "T": float(TiB)}

_DURATION_UNITS: dict[str, float] = {
    "": 1.0,
    **dict.fromkeys(("us", "\u00b5s", "\u03bcs", "usec", "usecs", "microsecond", "microseconds"), 1e-6),
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds"), 1e-3),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), MINUTE_S),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), HOUR_S),
    **dict.fromkeys(("d", "day", "days"), DAY_S),
    **dict.fromkeys(("w", "wk", "wks", "week", "weeks"), WEEK_S),
    **dict.fromkeys(("y", "yr", "yrs", "year", "years"), YEAR_S),
}
_COUNT_UNITS: dict[str, float] = {
    "": 1.0,
    "k": KILO,
    "m": MEGA,
    "b": GIGA,
    "g": GIGA,
    "t": TERA,
    "p": PETA,
    "ki": float(KiB),
    "mi": float(MiB),
    "gi": float(GiB),
    "ti": float(TiB),
}
_POWER_UNITS: dict[str, float] = {"": 1.0, "w": 1.0, "kw": KILO, "mw": MEGA, "gw": GIGA}
_FLOPS_PREFIX = {"": 1.0, "k": KILO, "m": MEGA, "g": GIGA, "t": TERA, "p": PETA, "e": 1e18}

_BYTE_UNIT = r"(?:(?P<prefix>[kKMGTP])(?P<binary>i)?)?(?P<unit>B|b|bytes?|bits?)"
_BYTES_RE = re.compile(rf"^{_BYTE_UNIT}$")
_RATE_RE = re.compile(rf"^{_BYTE_UNIT}(?:/s|ps)$")
_FLOPS_RE = re.compile(r"^(?P<prefix>[kmgtpe]?)(?:flop/s|flops|flops/s|flop/sec)$")


def _fail(kind: str, value: object, expected: str, example: str, why: str = "") -> BadInput:
    return BadInput(
        f"Cannot read {kind} {value!r}.",
        why or f"Expected {expected}.",
        f"Write it like {example}.",
    )


def _split(value: object, kind: str, expected: str, example: str) -> tuple[float, str]:
    """Split a number or a '<number><unit>' string into (number, unit text); checks sign and finiteness."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _fail(
            kind, value, expected, example, f"It is a {type(value).__name__}, not a number or a string."
        )
    if isinstance(value, str):
        match = _NUMBER_RE.match(value)
        if not value.strip() or match is None:
            raise _fail(kind, value, expected, example)
        number_text, unit = match.groups()
        if "," in number_text and not _COMMA_GROUPED_RE.match(number_text):
            raise _fail(kind, value, expected, example, "Commas may only group digits in threes (1,000,000).")
        try:
            number = float(number_text.replace(",", ""))
        except ValueError:
            raise _fail(kind, value, expected, example) from None
    else:
        number, unit = float(value), ""
    if not math.isfinite(number):
        raise _fail(kind, value, expected, example, f"{kind.capitalize()} must be a finite number.")
    if number < 0:
        raise _fail(kind, value, expected, example, f"{kind.capitalize()}s must be positive or zero.")
    return number, unit


# The largest value each kind of quantity may take: far beyond any real workload, small enough that
# products of a few of them stay finite in float64 and exact in int64. The reason is in the message.
_LIMITS: dict[str, tuple[float, str]] = {
    "duration": (1000 * YEAR_S, "1000 years"),
    "count": (1e18, "10^18 (an exa-count: no run has more tokens, samples or steps)"),
    "size": (1e21, "1 ZB (10^21 bytes)"),
    "bandwidth": (1e18, "1 EB/s"),
    "compute rate": (1e24, "10^24 FLOP/s"),
    "power": (1e12, "1 TW"),
}


def _bounded(kind: str, value: object, number: float, expected: str, example: str) -> float:
    limit, shown = _LIMITS[kind]
    if number > limit:
        raise _fail(
            kind, value, expected, example, f"It is larger than any real {kind}: the limit is {shown}."
        )
    return number


def _unknown_unit(kind: str, value: object, unit: str, expected: str, example: str) -> BadInput:
    return _fail(kind, value, expected, example, f"Unknown unit {unit!r}; expected {expected}.")


def parse_duration_s(value: object) -> float:
    """Seconds from a number of seconds or a string like "30d", "12h", "90m", "45s", "2w", "1y" (y = 365 d).

    Latencies take "500ms" (milliseconds) and "200us" or "200µs" (microseconds); "m" alone is minutes.
    """
    expected = "a number of seconds or a number with us, ms, s, m, h, d, w or y"
    number, unit = _split(value, "duration", expected, "'30d', '12h' or '90m'")
    if unit == "M":
        raise _fail(
            "duration",
            value,
            expected,
            "'30d' or '90m'",
            "'M' is ambiguous (minutes or months?); use m or d.",
        )
    factor = _DURATION_UNITS.get(unit.lower())
    if factor is None:
        raise _unknown_unit("duration", value, unit, expected, "'30d', '12h' or '90m'")
    return _bounded("duration", value, number * factor, expected, "'30d', '12h' or '90m'")


def parse_count(value: object) -> float:
    """A plain count from "16M", "15T", "1.5B", "15e12", "2k", "1_000", "1,000" or a number.

    k = 10^3, M = 10^6, B or G = 10^9, T = 10^12, P = 10^15 (any case); Ki, Mi, Gi, Ti are powers of two
    ("16Mi" = 16 * 2^20, handy for token batches such as 2048 x 8192).
    """
    expected = "a number, optionally with k, M, B (or G), T, P, or Ki, Mi, Gi, Ti"
    number, unit = _split(value, "count", expected, "'16M', '1.5B' or '15T'")
    factor = _COUNT_UNITS.get(unit.lower())
    if factor is None:
        raise _unknown_unit("count", value, unit, expected, "'16M', '1.5B' or '15T'")
    return _bounded("count", value, number * factor, expected, "'16M', '1.5B' or '15T'")


def parse_count_int(value: object) -> int:
    """`parse_count`, then insist on a whole number ("1.5k" is 1500; "1.5" is an error)."""
    count = parse_count(value)
    if not count.is_integer():
        raise _fail(
            "count", value, "a whole number", "'2048' or '16Mi'", f"It is {count:g}, not a whole number."
        )
    return int(count)


# Sequence lengths count tokens in powers of two, as frameworks and model cards do ("8k" context =
# 8,192): k and M on a length are 2^10 and 2^20, and the spec says so in a note when it reads one.
_TOKEN_LENGTH_UNITS: dict[str, int] = {"": 1, "k": KiB, "ki": KiB, "m": MiB, "mi": MiB}
MAX_TOKEN_LENGTH = 2**31


def parse_token_length(value: object, field: str = "length") -> int:
    """A sequence length in tokens: 8192, "8k" or "8K" (8,192), "128k" (131,072), "1M" (1,048,576).

    k and M are powers of two on lengths (unlike counts, where k is 1,000); reading one emits a
    `SpecNote` so the plan says how it was read. Whole numbers from 1 to 2^31 only.
    """
    expected = "a whole number of tokens, optionally with k (1,024) or M (1,048,576)"
    example = "8192, '8k' or '128k'"
    number, unit = _split(value, "length", expected, example)
    factor = _TOKEN_LENGTH_UNITS.get(unit.lower())
    if factor is None:
        raise _unknown_unit("length", value, unit, expected, example)
    tokens = number * factor
    if not tokens.is_integer() or not 1 <= tokens <= MAX_TOKEN_LENGTH:
        raise _fail(
            "length",
            value,
            expected,
            example,
            f"It is {tokens:,g} tokens; a length is a whole number of tokens from 1 to 2^31.",
        )
    if unit.lower() in ("k", "m"):
        decimal = number * (1e3 if unit.lower() == "k" else 1e6)
        warnings.warn(
            SpecNote(
                f"{field}: {value!r} is read as {int(tokens):,} tokens (k = 1,024 and M = 1,048,576 on "
                f"sequence lengths, as frameworks count them); write {decimal:,.0f} for a decimal count"
            ),
            stacklevel=2,
        )
    return int(tokens)


def _bytes_factor(match: re.Match[str]) -> tuple[float, bool]:
    """(bytes or bits per unit, is_bits) from a matched byte/bit unit."""
    prefix, binary, unit = match["prefix"] or "", match["binary"], match["unit"]
    scale = _BINARY_PREFIX[prefix] if binary else _DECIMAL_PREFIX[prefix]
    return scale, unit == "b" or unit.startswith("bit")


def parse_bytes(value: object) -> float:
    """Bytes from "80GB" (10^9), "80 GiB" (2^30), "2.3 TB", "512MiB" or a number of bytes."""
    expected = (
        "a number of bytes, or a number with B, kB, MB, GB, TB, PB (decimal) or KiB, MiB, GiB, TiB (binary)"
    )
    example = "'80GB' or '80 GiB'"
    number, unit = _split(value, "size", expected, example)
    if unit == "":
        return _bounded("size", value, number, expected, example)
    match = _BYTES_RE.match(unit)
    if match is None:
        raise _unknown_unit("size", value, unit, expected, example)
    scale, is_bits = _bytes_factor(match)
    if is_bits:
        raise _fail(
            "size", value, expected, example, f"{unit!r} is in bits (lower-case b); sizes are in bytes (B)."
        )
    return _bounded("size", value, number * scale, expected, example)


def parse_bytes_per_s(value: object) -> float:
    """Bytes per second from "2.5 TB/s", "900 GB/s", "400 Gb/s" or "400Gbps" (bits, / 8) or a number."""
    expected = (
        "a number of bytes per second, or a number with B/s, GB/s, TB/s, GiB/s (bytes) or Gb/s, Gbps (bits)"
    )
    example = "'900 GB/s' or '400 Gb/s'"
    number, unit = _split(value, "bandwidth", expected, example)
    if unit == "":
        return _bounded("bandwidth", value, number, expected, example)
    match = _RATE_RE.match(unit)
    if match is None:
        raise _unknown_unit("bandwidth", value, unit, expected, example)
    scale, is_bits = _bytes_factor(match)
    rate = number * scale / (BITS_PER_BYTE if is_bits else 1)
    return _bounded("bandwidth", value, rate, expected, example)


def parse_flops_per_s(value: object) -> float:
    """FLOP/s from "989 TFLOP/s", "989 TFLOPS", "2.5 PFLOP/s" or a number ("15e12")."""
    expected = "a number of FLOP/s, or a number with FLOP/s or FLOPS and a prefix (G, T, P)"
    example = "'989 TFLOP/s' or '989 TFLOPS'"
    number, unit = _split(value, "compute rate", expected, example)
    if unit == "":
        return _bounded("compute rate", value, number, expected, example)
    match = _FLOPS_RE.match(unit.lower())
    if match is None:
        raise _unknown_unit("compute rate", value, unit, expected, example)
    return _bounded("compute rate", value, number * _FLOPS_PREFIX[match["prefix"]], expected, example)


def parse_power_w(value: object) -> float:
    """Watts from "700 W", "10.2 kW", "1.5 MW" or a number of watts ("700")."""
    expected = "a number of watts, or a number with W, kW or MW"
    number, unit = _split(value, "power", expected, "'700 W' or '10.2 kW'")
    if unit == "mW":
        raise _unknown_unit("power", value, unit, expected, "'700 W' or '10.2 kW'")
    factor = _POWER_UNITS.get(unit.lower())
    if factor is None:
        raise _unknown_unit("power", value, unit, expected, "'700 W' or '10.2 kW'")
    return _bounded("power", value, number * factor, expected, "'700 W' or '10.2 kW'")


# ----------------------------------------------------------------------------- pydantic field types


def _field_validator(parse: Callable[[object], Any]) -> BeforeValidator:
    """Wrap a parser for pydantic: it only turns ValueError into a field error, so re-raise as that."""

    def validate(value: object) -> Any:
        try:
            return parse(value)
        except BadInput as err:
            raise ValueError(" ".join(part for part in (err.what, err.why, err.fix) if part)) from None

    return BeforeValidator(validate)


def refuse_bare_durations(data: Any, keys: tuple[str, ...], seconds_key: bool = True) -> Any:
    """A model's before-check: a bare number under a duration key without a unit in its name is refused.

    `tpot: 50` could mean 50 ms or 50 s; reading it as seconds silently sized for a latency 1000 times
    too loose. The key that names its unit (`tpot_s: 0.05`) still takes a number of seconds.
    """
    if not isinstance(data, Mapping):
        return data
    for key in keys:
        value = data.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            raise ValueError(bare_duration_message(key, value, seconds_key))
    return data


def bare_duration_message(key: str, value: float, seconds_key: bool = True) -> str:
    """Why a unit-less duration is refused, and how to write what was meant."""
    shown = _short_number(value)
    if key in _LATENCY_KEYS:
        meanings, examples = "milliseconds or seconds", f"'{shown}ms' or '{shown}s'"
    else:
        meanings, examples = "seconds, hours or days", f"'{shown}s', '{shown}h' or '{shown}d'"
    also = f" (or give {key}_s: {shown} for seconds)" if seconds_key else ""
    return f"{key}: {shown} has no unit, so it could mean {meanings}; write it with its unit, e.g. {examples}{also}"


def _short_number(value: float) -> str:
    """A number for a message: a huge integer is not echoed whole."""
    if isinstance(value, int) and abs(value) >= 10**16:
        return f"a {len(str(abs(value)))}-digit number"
    return f"{value:g}"


_LATENCY_KEYS = frozenset({"ttft", "tpot", "e2e", "latency_p99", "latency"})


def _token_length_validator() -> BeforeValidator:
    """`parse_token_length` for pydantic, naming the field in its note."""

    def validate(value: object, info: ValidationInfo) -> Any:
        try:
            return parse_token_length(value, str(info.field_name or "length"))
        except BadInput as err:
            raise ValueError(" ".join(part for part in (err.what, err.why, err.fix) if part)) from None

    return BeforeValidator(validate)


def _number_or_string(unit_help: str, examples: list[Any], integer: bool = False) -> WithJsonSchema:
    """JSON Schema for a unit field: a plain number (SI) or a human string, with examples."""
    number: Mapping[str, Any] = {"type": "integer" if integer else "number", "minimum": 0}
    return WithJsonSchema(
        {
            "anyOf": [dict(number), {"type": "string", "description": unit_help}],
            "examples": examples,
        }
    )


DurationS = Annotated[
    float,
    _field_validator(parse_duration_s),
    _number_or_string(
        "a number with its unit: us, ms, s, m, h, d, w or y ('500ms', '30d'); a bare number is refused "
        "unless the key names seconds (ttft_s, deadline_s)",
        ["30d", "12h", "500ms"],
    ),
]
Count = Annotated[
    float,
    _field_validator(parse_count),
    _number_or_string("a count with k, M, B, T, P (or Ki, Mi, Gi)", ["15T", "300B", 1.5e12]),
]
CountInt = Annotated[
    int,
    _field_validator(parse_count_int),
    _number_or_string("a whole count with k, M, B, T (or Ki, Mi, Gi)", [8192, "16Mi", "2k"], integer=True),
]
Bytes = Annotated[
    float,
    _field_validator(parse_bytes),
    _number_or_string("bytes with B, GB, TB (decimal) or GiB, TiB (binary)", ["80GB", "80 GiB", 8e10]),
]
BytesPerS = Annotated[
    float,
    _field_validator(parse_bytes_per_s),
    _number_or_string("bytes/s (GB/s, TB/s) or bits/s (Gb/s, Gbps)", ["900 GB/s", "400 Gb/s", 3.35e12]),
]
PowerW = Annotated[
    float,
    _field_validator(parse_power_w),
    _number_or_string("watts, or a number with W, kW, MW", ["700 W", "10.2 kW", 700]),
]
TokenLength = Annotated[
    int,
    _token_length_validator(),
    _number_or_string(
        "tokens, with k = 1,024 and M = 1,048,576 as for context lengths ('8k' = 8,192)",
        [8192, "8k", "128k"],
        integer=True,
    ),
]
"""A sequence length in tokens; k and M are powers of two here ("8k" = 8,192), said in a note."""


MIN_UTILISATION = 0.05


def _utilisation_in_range(value: float) -> float:
    if not MIN_UTILISATION <= value <= 1:
        raise ValueError(
            f"must be from {MIN_UTILISATION:g} to 1, the share of the time a resource is busy (0.8 is 80%); "
            "under 5% the plan is idle capacity"
        )
    return value


Utilisation = Annotated[
    float,
    AfterValidator(_utilisation_in_range),
    WithJsonSchema({"type": "number", "minimum": MIN_UTILISATION, "maximum": 1}),
]
"""A utilisation target: a share of the time busy, from 0.05 to 1 (the message gives the range)."""
