"""Range charts: the sensitivity tornado and P10-P90 intervals, drawn with `report.svg`'s
frame, axes and palette."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from rightsize.report.svg import AXIS, GRID, PALETTE, WIDTH, Fmt, _Axis, _close, _desc, _legend, _open, _t


def tornado(
    name: str,
    title: str,
    rows: Sequence[tuple[str, float, float, str, str]],
    fmt: Fmt,
) -> str:
    """Sensitivity: for each assumption (label, change at low, change at high, low label,
    high label) a bar each side of zero, the widest on top."""
    rows = sorted(rows, key=lambda r: -max(abs(r[1]), abs(r[2])))
    h = 64 + 30 * max(len(rows), 1) + 10
    desc = _desc([f"{lab}: {fmt(lo)} at {lo_l}, {fmt(hi)} at {hi_l}" for lab, lo, hi, lo_l, hi_l in rows])
    parts = _open(name, title, h, desc)
    left, right = 230, WIDTH - 90
    mid = (left + right) / 2
    span = max([abs(v) for _, lo, hi, _, _ in rows for v in (lo, hi)] + [1e-12])
    scale = (right - left) / 2 / span
    legend, _ = _legend([("low case", PALETTE[0]), ("high case", PALETTE[1])], left, 40)
    parts += legend
    for i, (lab, lo, hi, lo_lab, hi_lab) in enumerate(rows):
        y = 56 + 30 * i
        parts.append(_t(left - 8, y + 14, lab, "end"))
        if abs(lo) < 5e-4 and abs(hi) < 5e-4:
            parts.append(
                f'<rect x="{mid - 0.5:.1f}" y="{y}" width="1" height="18" fill="{AXIS}"><title>{escape(lab)}: no change</title></rect>'
            )
            parts.append(_t(mid + 6, y + 13, "no change", "start", 10, f' fill="{AXIS}"'))
            continue
        for v, color, txt in ((lo, PALETTE[0], lo_lab), (hi, PALETTE[1], hi_lab)):
            w = max(abs(v) * scale, 1.0)
            x = mid if v >= 0 else mid - w
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="18" fill="{color}"><title>{escape(txt)}: {escape(fmt(v))}</title></rect>'
            )
            tx = x + w + 4 if v >= 0 else x - 4
            parts.append(_t(tx, y + 13, f"{fmt(v)} {txt}".strip(), "start" if v >= 0 else "end", 10))
    parts.append(f'<line x1="{mid:.1f}" y1="48" x2="{mid:.1f}" y2="{h - 6:.0f}" stroke="{AXIS}"/>')
    return _close(parts)


def intervals(
    name: str,
    title: str,
    rows: Sequence[tuple[str, float, float, float]],
    fmt: Fmt,
) -> str:
    """P10-P90 ranges with the P50 marked, each relative to the plan's value (0)."""
    h = 64 + 30 * max(len(rows), 1) + 48
    desc = _desc([f"{lab}: P10 {fmt(a)}, P50 {fmt(b)}, P90 {fmt(c)}" for lab, a, b, c in rows])
    parts = _open(name, title, h, desc)
    left, right = 230, WIDTH - 40
    vals = [v for _, a, b, c in rows for v in (a, b, c)] + [0.0]
    x = _Axis.fit(vals, left, right, False)
    top, bottom = 44, 44 + 30 * max(len(rows), 1)
    for v in x.ticks():
        px = x(v)
        parts.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{bottom}" stroke="{GRID}"/>')
        parts.append(_t(px, bottom + 16, fmt(v), "middle", 11, f' fill="{AXIS}"'))
    parts.append(
        f'<line x1="{x(0):.1f}" y1="{top}" x2="{x(0):.1f}" y2="{bottom}" stroke="{AXIS}" stroke-width="1.5"/>'
    )
    parts.append(_t(x(0) + 4, top - 4, "plan", size=10))
    parts.append(_t((left + right) / 2, bottom + 34, "change from the plan", "middle", 12))
    parts.append(x.marker("x"))
    for i, (lab, p10, p50, p90) in enumerate(rows):
        y = top + 30 * i + 15
        parts.append(_t(left - 8, y + 4, lab, "end"))
        parts.append(
            f'<rect x="{x(p10):.1f}" y="{y - 6}" width="{max(x(p90) - x(p10), 2.0):.1f}" height="12" fill="{PALETTE[0]}" '
            f'fill-opacity="0.45"><title>{escape(lab)}: P10 {escape(fmt(p10))}, P90 {escape(fmt(p90))}</title></rect>'
        )
        parts.append(
            f'<circle cx="{x(p50):.1f}" cy="{y}" r="5" fill="{PALETTE[0]}"><title>P50 {escape(fmt(p50))}</title></circle>'
        )
    return _close(parts)
