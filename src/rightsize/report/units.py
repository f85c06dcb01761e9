"""Formatting quantities for people, at the edge: the unit comes from the key's suffix
(`_s`, `_bytes`, `_bytes_per_s`, `_w`, `_usd`, `_fraction`, `_gbps`, ...), as every data
key in rightsize carries its unit (DESIGN.md, Units). Decimal prefixes (GB = 10^9 bytes)
unless a function says GiB."""

from __future__ import annotations

import math
from typing import Any

from rightsize.constants import DAY_S, GiB

# Unit suffixes a label drops (the value carries the unit), longest first.
_SUFFIXES = (
    "_bytes_per_s",
    "_usd_per_hour",
    "_usd_per_month",
    "_usd_per_run",
    "_usd_per_gpu_hour",
    "_fraction",
    "_bytes",
    "_gbps",
    "_usd",
    "_rps",
    "_kw",
    "_mwh",
    "_kwh",
    "_w",
    "_s",
    "_years",
    "_days",
    "_c",
)


def seconds(v: float) -> str:
    a = abs(v)
    if a == 0:
        return "0 s"
    if a < 1e-3:
        return f"{v * 1e6:,.1f} µs"
    if a < 1.0:
        return f"{v * 1e3:,.1f} ms"
    if a < 120:
        return f"{v:,.2f} s"
    if a < 7200:
        return f"{v / 60:.3g} min"
    if a < 2 * DAY_S:
        return f"{v / 3600:.3g} h"
    return f"{v / DAY_S:,.1f} d"


def plural(n: float, word: str, many: str | None = None) -> str:
    """'1 rack', '2 racks', '1,024 GPUs': a count with its noun agreeing."""
    text = f"{n:,}" if isinstance(n, int) or float(n).is_integer() else f"{n:,.3g}"
    if isinstance(n, float) and n.is_integer():
        text = f"{int(n):,}"
    return f"{text} {word if n == 1 else (many or word + 's')}"


def duration(v: float | None) -> str:
    """A duration in the unit that reads best (ms, s, min, h, d); '-' for none. Never '0.0 d'."""
    return "-" if v is None else seconds(v)


def _scaled(v: float, units: tuple[tuple[float, str], ...], digits: int = 2) -> str:
    a = abs(v)
    for div, unit in units:
        if a >= div:
            return f"{v / div:,.{digits}f} {unit}"
    div, unit = units[-1]
    return f"{v / div:,.{digits}f} {unit}"


def nbytes(v: float) -> str:
    return _scaled(v, ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")))


def gib(v: float) -> str:
    return f"{v / GiB:,.1f} GiB"


def rate(v: float) -> str:
    return _scaled(v, ((1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s")))


def watts(v: float) -> str:
    return _scaled(v, ((1e6, "MW"), (1e3, "kW"), (1.0, "W")), 1)


def usd(v: float) -> str:
    if abs(v) < 0.005:
        v = 0.0  # never "$-0.00"
    if abs(v) >= 1e6:
        return f"${v / 1e6:,.2f}M"
    if abs(v) >= 100:
        return f"${v:,.0f}"
    return f"${v:,.2f}" if abs(v) >= 0.01 or v == 0 else f"${v:.2g}"


def pct(v: float, digits: int = 1) -> str:
    if abs(v * 100) < 0.5 * 10.0**-digits:
        v = 0.0  # a share that rounds to zero is "0%", never "-0%"
    return f"{v * 100:,.{digits}f}%"


def count(v: float) -> str:
    """A count for people: '452,760' below a million, '1.65M' and '2.3B' above (a 7-digit
    figure is read as its first three digits anyway)."""
    a = abs(v)
    if a >= 1e6:
        for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
            if a >= div:
                return f"{v / div:,.3g}{suffix}"
    return f"{v:,.0f}" if a >= 1000 or float(v).is_integer() else f"{v:,.3g}"


def number(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return count(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if abs(v) >= 1e6:
            return count(v)
        if v == int(v):
            return f"{int(v):,}"
        a = abs(v)
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 1:
            return f"{v:,.3g}" if a < 100 else f"{v:,.1f}"
        return f"{v:.3g}"
    return str(v)


def short(v: float) -> str:
    """A compact number for chart ticks: 1.5M, 250k, 0.25."""
    a = abs(v)
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{v / div:,.3g}{suffix}"
    return f"{v:,.3g}"


def value(key: str, v: Any) -> str:
    """A value formatted by its key's unit suffix."""
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, int | float):
        if isinstance(v, list):
            return ", ".join(value(key, x) for x in v)
        return number(v)
    k = key.lower()
    if k.endswith("_bytes_per_s") or "_bytes_per_s_" in k:
        return rate(v)
    if "usd" in k:
        unit = k.split("usd", 1)[1].removeprefix("_").split("_by_")[0]
        unit = unit.replace("per_m_", "per 1M ").replace("per_", "per ").replace("_", " ").strip()
        return usd(v) + (f" {unit}" if unit else "")
    if k.endswith("_fraction") or "_fraction_" in k or k in ("mfu", "hfu", "goodput") or k.endswith("_share"):
        return pct(v)
    if k.endswith("_bytes") or "_bytes_" in k or k == "bytes":
        return nbytes(v)
    if k.endswith("_gbps") or "_gbps_" in k:
        return f"{v:,.0f} Gb/s"
    if k.endswith("_rps"):
        return f"{v:,.2f} req/s"
    if k.endswith("_kw"):
        return f"{v:,.1f} kW"
    if k.endswith("_mwh"):
        return f"{v:,.1f} MWh"
    if k.endswith("_kwh"):
        return f"{number(float(v))} kWh"  # three significant figures: 0.393 kWh, not 0.4
    if k.endswith("_w") or "_w_per_" in k:
        return watts(v)
    if k.endswith("_per_s"):
        return f"{number(float(v))}/s"
    if k.endswith("_s"):
        return seconds(v)
    if k.endswith("_years"):
        return f"{v:,.1f} years"
    if k.endswith("_days"):
        return f"{v:,.1f} d"
    if k.endswith("_c"):
        return f"{v:,.0f} °C"
    return number(v)


# Units a key may carry in its middle (`read_bytes_per_s_per_node`): the label drops them.
_INFIXES = ("_bytes_per_s_", "_fraction_", "_bytes_", "_gbps_", "_w_per_")


def label(key: str) -> str:
    """A key without its unit suffix, in words: `checkpoint_interval_s` -> `checkpoint interval`,
    `read_bytes_per_s_per_node` -> `read per node`."""
    if key.endswith("_per_s") and not key.endswith("_bytes_per_s"):
        return key[: -len("_per_s")].replace("_", " ") + "/s"
    for infix in _INFIXES:
        if infix in key and not key.startswith(infix):
            key = key.replace(infix, "_per_" if infix == "_w_per_" else "_", 1)
            break
    k = key
    for suffix in _SUFFIXES:
        if k.endswith(suffix) and len(k) > len(suffix):
            k = k[: -len(suffix)]
            break
    return k.replace("_", " ")
