"""Unit parsing: every suffix, bits vs bytes, GB vs GiB, and the errors a user sees."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel, ValidationError

from rightsize.constants import DAY_S, GB, HOUR_S, TB, GiB, MiB, TiB
from rightsize.errors import BadInput
from rightsize.spec.units import (
    Bytes,
    BytesPerS,
    Count,
    CountInt,
    DurationS,
    PowerW,
    parse_bytes,
    parse_bytes_per_s,
    parse_count,
    parse_count_int,
    parse_duration_s,
    parse_flops_per_s,
    parse_power_w,
)

Parser = Callable[[object], float]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (3600, 3600.0),  # a bare number is seconds
        (1.5, 1.5),
        ("45", 45.0),
        ("45s", 45.0),
        ("90m", 5400.0),  # m is minutes, not months
        ("90 min", 5400.0),
        ("12h", 12 * HOUR_S),
        ("12 hours", 12 * HOUR_S),
        ("30d", 30 * DAY_S),
        ("1.5d", 1.5 * DAY_S),
        ("30D", 30 * DAY_S),
        ("2w", 14 * DAY_S),
        ("1y", 365 * DAY_S),  # y = 365 days
        ("0d", 0.0),
        # latencies (SLOs): ms and us; "m" alone stays minutes
        ("500ms", 0.5),
        ("500 ms", 0.5),
        ("2.5ms", 2.5e-3),
        ("1 millisecond", 1e-3),
        ("200us", 200e-6),
        ("200\u00b5s", 200e-6),  # micro sign
        ("200\u03bcs", 200e-6),  # Greek mu
        ("50 usec", 50e-6),
    ],
)
def test_parse_duration(text: object, seconds: float) -> None:
    assert parse_duration_s(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "count"),
    [
        (1024, 1024.0),
        ("2k", 2e3),
        ("2K", 2e3),
        ("16M", 16e6),
        ("1.5B", 1.5e9),
        ("1.5G", 1.5e9),  # G is a synonym of B for counts
        ("15T", 15e12),
        ("15t", 15e12),
        ("2P", 2e15),
        ("15e12", 15e12),
        ("1_000", 1000.0),
        ("1,000", 1000.0),
        ("1,000,000", 1e6),
        ("16Mi", 16 * MiB),  # binary prefixes: 2048 x 8192 tokens
        ("  300B  ", 300e9),
    ],
)
def test_parse_count(text: object, count: float) -> None:
    assert parse_count(text) == pytest.approx(count)


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        (1e9, 1e9),
        ("512", 512.0),
        ("80GB", 80 * GB),  # decimal
        ("80 GiB", 80 * GiB),  # binary: 7.4% more than GB
        ("2.3 TB", 2.3 * TB),
        ("1TiB", TiB),
        ("512MiB", 512 * MiB),
        ("512 MB", 512e6),
        ("4 kB", 4e3),
        ("4 KiB", 4096.0),
        ("7 B", 7.0),
    ],
)
def test_parse_bytes(text: object, nbytes: float) -> None:
    assert parse_bytes(text) == pytest.approx(nbytes)


def test_gib_and_gb_differ() -> None:
    assert parse_bytes("80 GiB") / parse_bytes("80 GB") == pytest.approx(2**30 / 1e9)


@pytest.mark.parametrize(
    ("text", "bytes_per_s"),
    [
        ("2.5 TB/s", 2.5e12),
        ("900 GB/s", 900e9),
        ("900GBps", 900e9),
        ("400 Gb/s", 50e9),  # lower-case b: bits, / 8
        ("400Gbps", 50e9),
        ("100 Gbit/s", 12.5e9),
        ("25 GiB/s", 25 * GiB),
        ("3.35e12", 3.35e12),
        (3.35e12, 3.35e12),
    ],
)
def test_parse_bytes_per_s(text: object, bytes_per_s: float) -> None:
    assert parse_bytes_per_s(text) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize(
    ("text", "flops"),
    [
        ("989 TFLOP/s", 989e12),
        ("989 TFLOPS", 989e12),
        ("989 tflops", 989e12),
        ("2.5 PFLOP/s", 2.5e15),
        ("312 GFLOPS", 312e9),
        ("15e12", 15e12),
        (15e12, 15e12),
    ],
)
def test_parse_flops_per_s(text: object, flops: float) -> None:
    assert parse_flops_per_s(text) == pytest.approx(flops)


@pytest.mark.parametrize(
    ("text", "watts"),
    [
        ("700 W", 700.0),
        ("700", 700.0),
        (700, 700.0),
        ("10.2 kW", 10200.0),
        ("10.2kw", 10200.0),
        ("1.5 MW", 1.5e6),
    ],
)
def test_parse_power(text: object, watts: float) -> None:
    assert parse_power_w(text) == pytest.approx(watts)


@pytest.mark.parametrize(
    ("parse", "text", "fragment"),
    [
        (parse_duration_s, "-5d", "positive"),
        (parse_duration_s, -5, "positive"),
        (parse_duration_s, "5M", "ambiguous"),  # months or minutes?
        (parse_duration_s, "5 fortnights", "Unknown unit 'fortnights'"),
        (parse_duration_s, "5 ns", "Unknown unit 'ns'"),
        (parse_duration_s, "", "Expected"),
        (parse_duration_s, "   ", "Expected"),
        (parse_duration_s, "d", "Expected"),
        (parse_duration_s, True, "bool"),
        (parse_duration_s, None, "NoneType"),
        (parse_count, "nan", "Expected"),
        (parse_count, float("nan"), "finite"),
        (parse_count, float("inf"), "finite"),
        (parse_count, "1e999", "finite"),
        (parse_count, "16X", "Unknown unit 'X'"),
        (parse_count, "1,00", "Commas"),
        (parse_count, "-3", "positive"),
        (parse_bytes, "80Gb", "bits"),  # b is a bit; memory is in bytes
        (parse_bytes, "80 GiBs", "Unknown unit"),
        (parse_bytes, "80 iB", "Unknown unit"),
        (parse_bytes, "80 mB", "Unknown unit"),
        (parse_bytes_per_s, "400 Gb", "Unknown unit"),  # a rate needs /s
        (parse_bytes_per_s, "fast", "Expected"),
        (parse_flops_per_s, "989 TB/s", "Unknown unit"),
        (parse_power_w, "10 mW", "Unknown unit"),
        (parse_power_w, "10 kWh", "Unknown unit"),
    ],
)
def test_parse_errors(parse: Parser, text: object, fragment: str) -> None:
    with pytest.raises(BadInput) as info:
        parse(text)
    message = info.value.message()
    assert fragment in message
    assert repr(text) in message  # the offending input is named
    assert "Write it like" in message  # and an example is given


def test_count_int() -> None:
    assert parse_count_int("16Mi") == 16 * 2**20
    assert parse_count_int("1.5k") == 1500
    assert isinstance(parse_count_int(2048.0), int)
    with pytest.raises(BadInput, match="whole number"):
        parse_count_int("1.5")


class _Fields(BaseModel):
    duration: DurationS
    count: Count
    count_int: CountInt
    size: Bytes
    rate: BytesPerS
    power: PowerW


_GOOD = {
    "duration": "2h",
    "count": "1.5B",
    "count_int": "2k",
    "size": "1 GiB",
    "rate": "8 Gb/s",
    "power": "1 kW",
}


def test_annotated_types_parse_strings() -> None:
    fields = _Fields.model_validate(_GOOD)
    assert (fields.duration, fields.count, fields.count_int) == (7200.0, 1.5e9, 2000)
    assert isinstance(fields.count_int, int)
    assert (fields.size, fields.rate, fields.power) == (GiB, 1e9, 1000.0)


@pytest.mark.parametrize("field", list(_GOOD))
def test_annotated_types_report_field_errors(field: str) -> None:
    with pytest.raises(ValidationError) as info:
        _Fields.model_validate({**_GOOD, field: "-1"})
    (error,) = info.value.errors()
    assert error["loc"] == (field,)
    assert "positive" in error["msg"]


@pytest.mark.parametrize("field", list(_GOOD))
def test_annotated_types_json_schema_accepts_number_and_string(field: str) -> None:
    prop = _Fields.model_json_schema()["properties"][field]
    types = {option["type"] for option in prop["anyOf"]}
    assert types in ({"number", "string"}, {"integer", "string"})
    assert prop["examples"]
