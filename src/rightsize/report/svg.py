"""Charts as self-contained inline SVG: no JavaScript, no fonts or styles fetched, nothing
from the network. Every chart is one <svg> element with `data-chart="NAME"` and real marks
(rect, circle, path), so a browser test can find and measure it.

Charts are responsive: a viewBox and `width="100%"` with no fixed height, so a chart fills
the box it is put in and keeps its proportions. Each carries a <title> and a <desc> (the
numbers it shows, in words) that screen readers announce through aria-labelledby.

Each function takes plain numbers and labels and returns the SVG text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 720
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
CHOSEN = "#d62728"
GRID = "#e3e3e3"
AXIS = "#555"
BAD = "#e15759"
BAD_TEXT = "#b3261e"  # red text on white at 6:1 contrast (the mark colour BAD is 3.6:1)
GOOD = "#59a14f"
DESC_CHARS = 600  # a <desc> says the numbers, up to about this length

Fmt = Callable[[float], str]


def _t(x: float, y: float, text: str, anchor: str = "start", size: int = 12, extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{extra}>{escape(text)}</text>'


def _desc(items: Sequence[str]) -> str:
    text = "; ".join(items)
    return text if len(text) <= DESC_CHARS else text[: DESC_CHARS - 3].rsplit("; ", 1)[0] + "; ..."


def _open(name: str, title: str, height: float, desc: str = "") -> list[str]:
    tid, did = f"chart-{name}-title", f"chart-{name}-desc"
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" data-chart="{escape(name)}" viewBox="0 0 {WIDTH} {height:.0f}" '
        f'width="100%" role="img" aria-labelledby="{tid} {did}" '
        'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" class="chart">',
        f'<title id="{tid}">{escape(title)}</title>',
        f'<desc id="{did}">{escape(desc or title)}</desc>',
        f'<rect x="0" y="0" width="{WIDTH}" height="{height:.0f}" fill="#fff"/>',
        _t(12, 20, title, size=14, extra=' font-weight="600"'),
    ]


def _close(parts: list[str]) -> str:
    return "\n".join([*parts, "</svg>"])


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if not math.isfinite(lo) or not math.isfinite(hi):
        return [0.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.floor(lo / step + 1e-9) * step
    stop = math.ceil(hi / step - 1e-9) * step
    count = round((stop - start) / step)
    return [round(start + i * step, 12) for i in range(count + 1)]


def _log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = []
    for e in range(a, b + 1):
        for m in (1, 2, 5):
            v = m * 10.0**e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks or [lo, hi]


@dataclass
class _Axis:
    lo: float
    hi: float
    start: float  # pixel of lo
    end: float  # pixel of hi
    log: bool = False
    data_lo: float = math.nan  # the data the axis was fitted to (the browser test checks the
    data_hi: float = math.nan  # axis ends within one tick of it: no axis passes its data)
    tick_values: tuple[float, ...] = ()  # the ticks the axis was fitted with (its ends are two of them)

    @classmethod
    def fit(
        cls, values: Sequence[float], start: float, end: float, log: bool = False, zero: bool = False
    ) -> _Axis:
        vals = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
        if not vals:
            vals = [1.0]
        lo, hi = min(vals), max(vals)
        if log:
            if hi / lo < 3:  # too narrow for a log axis to help
                log = False
            else:
                return cls(lo / 1.25, hi * 1.25, start, end, True, lo, hi)
        data_lo, data_hi = lo, hi
        if zero:
            lo = min(lo, 0.0)
        if hi == lo:  # one value: a little room either side
            lo, hi = (lo - (abs(lo) or 1.0) * 0.1, hi + (abs(hi) or 1.0) * 0.1)
        # the axis ends at the first tick at or past the data, never a padded step beyond it
        ticks = _nice_ticks(lo, hi)
        return cls(ticks[0], ticks[-1], start, end, False, data_lo, data_hi, tuple(ticks))

    def marker(self, name: str) -> str:
        """An empty element the browser test reads: the axis's ends, its data's ends, its tick step."""
        ticks = self.ticks()
        step = (ticks[1] - ticks[0]) if len(ticks) > 1 and not self.log else 0.0
        return (
            f'<g data-axis="{name}" data-axis-lo="{self.lo:.6g}" data-axis-hi="{self.hi:.6g}" '
            f'data-data-lo="{self.data_lo:.6g}" data-data-hi="{self.data_hi:.6g}" data-step="{step:.6g}" '
            f'data-log="{int(self.log)}"></g>'
        )

    def __call__(self, v: float) -> float:
        if self.log:
            f = (math.log(max(v, 1e-300)) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        else:
            f = (v - self.lo) / ((self.hi - self.lo) or 1.0)
        return self.start + f * (self.end - self.start)

    def ticks(self) -> list[float]:
        if self.log:
            return _log_ticks(self.lo, self.hi)
        if self.tick_values:
            return list(self.tick_values)
        return [t for t in _nice_ticks(self.lo, self.hi) if self.lo - 1e-12 <= t <= self.hi + 1e-12]


def _axes(
    x: _Axis, y: _Axis, xlabel: str, ylabel: str, xfmt: Fmt, yfmt: Fmt, top: float, bottom: float
) -> list[str]:
    out = []
    for v in y.ticks():
        py = y(v)
        if top - 1 <= py <= bottom + 1:
            out.append(
                f'<line x1="{x.start:.1f}" y1="{py:.1f}" x2="{x.end:.1f}" y2="{py:.1f}" stroke="{GRID}"/>'
            )
            out.append(_t(x.start - 6, py + 4, yfmt(v), "end", 11, f' fill="{AXIS}"'))
    for v in x.ticks():
        px = x(v)
        if x.start - 1 <= px <= x.end + 1:
            out.append(
                f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{bottom:.1f}" stroke="{GRID}"/>'
            )
            out.append(_t(px, bottom + 16, xfmt(v), "middle", 11, f' fill="{AXIS}"'))
    out.append(f'<path d="M{x.start:.1f},{top:.1f} V{bottom:.1f} H{x.end:.1f}" fill="none" stroke="{AXIS}"/>')
    out += [x.marker("x"), y.marker("y")]
    out.append(_t((x.start + x.end) / 2, bottom + 34, xlabel, "middle", 12))
    lx, my = x.start - 66, (top + bottom) / 2
    out.append(
        f'<text x="{lx:.1f}" y="{my:.1f}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 {lx:.1f} {my:.1f})">{escape(ylabel)}</text>'
    )
    return out


def _legend(
    items: Sequence[tuple[str, str]],
    x: float,
    y: float,
    width: float = WIDTH - 24,
    strokes: Sequence[LineStyle | None] = (),
) -> tuple[list[str], float]:
    """Swatches and labels, wrapped to `width`; a series with a LineStyle gets a line sample
    (its colour, width and dashes) instead of a square."""
    out, cx, cy = ['<g class="legend">'], x, y
    for i, (lab, color) in enumerate(items):
        st = strokes[i] if i < len(strokes) else None
        w = 18 + 7 * len(lab) + 14 + (10 if st else 0)
        if cx + w > x + width:
            cx, cy = x, cy + 18
        if st:
            dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
            out.append(
                f'<line x1="{cx:.1f}" y1="{cy - 3:.1f}" x2="{cx + 22:.1f}" y2="{cy - 3:.1f}" '
                f'stroke="{st.color or color}" stroke-width="{st.width:g}"{dash}/>'
            )
            out.append(_t(cx + 26, cy + 1, lab, size=11))
        else:
            out.append(f'<rect x="{cx:.1f}" y="{cy - 9:.1f}" width="12" height="12" fill="{color}"/>')
            out.append(_t(cx + 16, cy + 1, lab, size=11))
        cx += w
    out.append("</g>")
    return out, cy + 18


@dataclass(frozen=True)
class LineStyle:
    """How one line series is drawn: its colour (the palette's when empty), width and
    dashes; series with a style are drawn after (on top of) those without."""

    color: str = ""
    width: float = 2.0
    dash: str = ""
    on_top: bool = False


def hbars(
    name: str, title: str, rows: Sequence[tuple[str, float]], fmt: Fmt, total: float | None = None
) -> str:
    """One horizontal bar per row, with its value (and its share of `total`)."""
    rows = [(lab, v) for lab, v in rows if v is not None]
    h = 40 + 26 * max(len(rows), 1) + 10
    parts = _open(name, title, h, _desc([f"{lab}: {fmt(v)}" for lab, v in rows]))
    left, right = 250, WIDTH - 150
    vmax = max([v for _, v in rows] + [1e-300])
    for i, (lab, v) in enumerate(rows):
        y = 36 + 26 * i
        w = max(1.0, (right - left) * max(v, 0.0) / vmax)
        parts.append(_t(left - 8, y + 14, lab, "end"))
        parts.append(
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="18" fill="{_color(i)}"><title>{escape(lab)}: {escape(fmt(v))}</title></rect>'
        )
        share = f"  {v / total:.1%}" if total else ""
        parts.append(_t(left + w + 6, y + 14, fmt(v) + share, size=11))
    return _close(parts)


def stacked_hbars(
    name: str,
    title: str,
    rows: Sequence[tuple[str, Sequence[tuple[str, float]], float | None]],
    fmt: Fmt,
) -> str:
    """Rows of stacked segments (label, [(segment, value)], capacity): each row's capacity is
    drawn as a dashed line, so what overflows it shows."""
    seg_names = list(dict.fromkeys(s for _, segs, _ in rows for s, _ in segs))
    colors = {s: _color(i) for i, s in enumerate(seg_names)}
    n = max(len(rows), 1)
    legend, ly = _legend([(s, colors[s]) for s in seg_names], 12, 40)
    top = ly + 4
    h = top + 34 * n + 16
    desc = _desc(
        [
            f"{lab}: {fmt(sum(v for _, v in segs))}" + (f" of {fmt(cap)}" if cap else "")
            for lab, segs, cap in rows
        ]
    )
    parts = _open(name, title, h, desc) + legend
    left, right = 180, WIDTH - 110
    vmax = max([sum(v for _, v in segs) for _, segs, _ in rows] + [c or 0.0 for _, _, c in rows] + [1e-300])
    for i, (lab, segs, cap) in enumerate(rows):
        y = top + 34 * i
        parts.append(_t(left - 8, y + 15, lab, "end"))
        x = float(left)
        for s, v in segs:
            w = (right - left) * max(v, 0.0) / vmax
            if w <= 0:
                continue
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="20" fill="{colors[s]}"><title>{escape(s)}: {escape(fmt(v))}</title></rect>'
            )
            x += w
        total = sum(v for _, v in segs)
        if cap:
            cx = left + (right - left) * cap / vmax
            parts.append(
                f'<line x1="{cx:.1f}" y1="{y - 4}" x2="{cx:.1f}" y2="{y + 24}" stroke="#222" stroke-width="2" stroke-dasharray="4 3"/>'
            )
            parts.append(_t(right + 6, y + 15, f"{fmt(total)} / {fmt(cap)}", size=11))
        else:
            parts.append(_t(right + 6, y + 15, fmt(total), size=11))
    return _close(parts)


@dataclass
class Point:
    x: float
    y: float
    label: str
    group: str = ""
    chosen: bool = False
    on_front: bool = False


def scatter(
    name: str,
    title: str,
    points: Sequence[Point],
    xlabel: str,
    ylabel: str,
    xfmt: Fmt,
    yfmt: Fmt,
    logx: bool = True,
    logy: bool = False,
    vlines: Sequence[tuple[float, str]] = (),
) -> str:
    """Points coloured by group; the front (points with on_front) joined by a line; the
    chosen point ringed and labelled; `vlines` are dashed limits (a deadline, an SLO)."""
    groups = list(dict.fromkeys(p.group for p in points))
    colors = {g: _color(i) for i, g in enumerate(groups)}
    legend, ly = _legend([(g or "candidates", colors[g]) for g in groups] + [("chosen", CHOSEN)], 60, 40)
    top, bottom = ly + 6, ly + 6 + 260
    h = bottom + 44
    x = _Axis.fit([p.x for p in points] + [v for v, _ in vlines], 80, WIDTH - 30, logx)
    y = _Axis.fit([p.y for p in points], bottom, top, logy)
    desc = _desc(
        [f"x: {xlabel}, y: {ylabel}"]
        + [f"{'chosen ' if p.chosen else ''}{p.label}: {xfmt(p.x)}, {yfmt(p.y)}" for p in points]
    )
    parts = _open(name, title, h, desc) + legend + _axes(x, y, xlabel, ylabel, xfmt, yfmt, top, bottom)
    for v, lab in vlines:
        px = x(v)
        parts.append(
            f'<line x1="{px:.1f}" y1="{top:.1f}" x2="{px:.1f}" y2="{bottom:.1f}" stroke="{BAD}" stroke-width="1.5" stroke-dasharray="6 4"/>'
        )
        parts.append(_t(px + 4, top + 12, lab, "start", 11, f' fill="{BAD_TEXT}"'))
    front = sorted((p for p in points if p.on_front), key=lambda p: p.x)
    if len(front) > 1:
        d = " ".join(f"{'M' if i == 0 else 'L'}{x(p.x):.1f},{y(p.y):.1f}" for i, p in enumerate(front))
        parts.append(f'<path d="{d}" fill="none" stroke="#888" stroke-width="1.5" stroke-dasharray="5 3"/>')
    for p in points:
        parts.append(
            f'<circle cx="{x(p.x):.1f}" cy="{y(p.y):.1f}" r="5" fill="{colors[p.group]}" fill-opacity="0.85">'
            f"<title>{escape(p.label)}: {escape(xfmt(p.x))}, {escape(yfmt(p.y))}</title></circle>"
        )
    for p in points:
        if p.chosen:
            px, py = x(p.x), y(p.y)
            parts.append(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="10" fill="none" stroke="{CHOSEN}" stroke-width="2.5"/>'
            )
            anchor = "end" if px > WIDTH * 0.7 else "start"
            dx = -14 if anchor == "end" else 14
            parts.append(
                _t(px + dx, py - 10, f"chosen: {p.label}", anchor, 12, f' fill="{CHOSEN}" font-weight="600"')
            )
    return _close(parts)


Series = tuple[str, Sequence[float], Sequence[float]]


def _series_paths(
    series: Sequence[Series], x: _Axis, y: _Axis, styles: dict[str, LineStyle], offset: int = 0
) -> list[str]:
    """The series as paths with markers, styled ones (a demand line) drawn last, on top."""
    out: list[str] = []
    order = sorted(range(len(series)), key=lambda i: styles.get(series[i][0], LineStyle()).on_top)
    for i in order:
        lab, sx, sy = series[i]
        st = styles.get(lab, LineStyle())
        color = st.color or _color(i + offset)
        pts = [(x(a), y(b)) for a, b in zip(sx, sy, strict=False) if math.isfinite(a) and math.isfinite(b)]
        if not pts:
            continue
        d = " ".join(f"{'M' if j == 0 else 'L'}{px:.1f},{py:.1f}" for j, (px, py) in enumerate(pts))
        dash = f' stroke-dasharray="{st.dash}"' if st.dash else ""
        out.append(
            f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{st.width:g}"{dash} '
            f'data-series="{escape(lab)}"><title>{escape(lab)}</title></path>'
        )
        if len(pts) <= 60:
            r = 3 + (st.width - 2) / 2 if st.width > 2 else 3
            for px, py in pts:
                out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{r:g}" fill="{color}"/>')
    return out


def _series_desc(series: Sequence[Series], xfmt: Fmt, yfmt: Fmt) -> list[str]:
    out = []
    for lab, sx, sy in series:
        vals = [(a, b) for a, b in zip(sx, sy, strict=False) if math.isfinite(b)]
        if vals:
            hi = max(vals, key=lambda t: t[1])
            out.append(
                f"{lab}: {yfmt(vals[0][1])} at {xfmt(vals[0][0])} to {yfmt(vals[-1][1])} at {xfmt(vals[-1][0])}, peak {yfmt(hi[1])} at {xfmt(hi[0])}"
            )
    return out


def lines(
    name: str,
    title: str,
    series: Sequence[Series],
    xlabel: str,
    ylabel: str,
    xfmt: Fmt,
    yfmt: Fmt,
    hlines: Sequence[tuple[float, str]] = (),
    logx: bool = False,
    zero: bool = True,
    styles: dict[str, LineStyle] | None = None,
) -> str:
    """Line series with markers; `hlines` are dashed reference levels (a capacity, a limit);
    `styles` draws named series apart (thicker, dashed, on top) and the legend shows it."""
    styles = styles or {}
    legend, ly = _legend(
        [(s, styles.get(s, LineStyle()).color or _color(i)) for i, (s, _, _) in enumerate(series)],
        60,
        40,
        strokes=[styles.get(s, LineStyle()) for s, _, _ in series],
    )
    top, bottom = ly + 6, ly + 6 + 240
    h = bottom + 44
    xs = [v for _, sx, _ in series for v in sx]
    ys = [v for _, _, sy in series for v in sy] + [v for v, _ in hlines]
    x = _Axis.fit(xs, 80, WIDTH - 30, logx)
    y = _Axis.fit(ys, bottom, top, False, zero=zero)
    desc = _desc([f"x: {xlabel}, y: {ylabel}"] + _series_desc(series, xfmt, yfmt))
    parts = _open(name, title, h, desc) + legend + _axes(x, y, xlabel, ylabel, xfmt, yfmt, top, bottom)
    for v, lab in hlines:
        py = y(v)
        parts.append(
            f'<line x1="{x.start:.1f}" y1="{py:.1f}" x2="{x.end:.1f}" y2="{py:.1f}" stroke="{BAD}" stroke-width="1.5" stroke-dasharray="6 4"/>'
        )
        parts.append(_t(x.end - 4, py - 5, lab, "end", 11, f' fill="{BAD_TEXT}"'))
    parts += _series_paths(series, x, y, styles)
    return _close(parts)


@dataclass
class Panel:
    """One small chart of a row of panels: its own series, y label, y scale and formatter."""

    title: str
    series: Sequence[Series]
    ylabel: str
    yfmt: Fmt
    zero: bool = True


def panels(name: str, title: str, row: Sequence[Panel], xlabel: str, xfmt: Fmt) -> str:
    """Panels side by side sharing an x quantity, each with its own y axis and scale: two
    quantities of different size (TTFT in hundreds of ms, TPOT in tens) each read in full,
    never one flattened against the other's axis."""
    n = max(len(row), 1)
    top, bottom = 62, 62 + 220
    h = bottom + 44
    slot = (WIDTH - 10) / n
    descs = []
    for pn in row:
        descs += [f"{pn.title} ({pn.ylabel})", *_series_desc(pn.series, xfmt, pn.yfmt)]
    parts = _open(name, title, h, _desc(descs))
    for k, pn in enumerate(row):
        x0 = 10 + slot * k + 76
        x1 = 10 + slot * (k + 1) - 24
        xs = [v for _, sx, _ in pn.series for v in sx]
        ys = [v for _, _, sy in pn.series for v in sy]
        x = _Axis.fit(xs, x0, x1, False)
        y = _Axis.fit(ys, bottom, top, False, zero=pn.zero)
        parts.append(f'<g data-panel="{escape(pn.title)}">')
        parts.append(_t((x0 + x1) / 2, 46, pn.title, "middle", 12, ' font-weight="600"'))
        parts += _axes(x, y, xlabel, pn.ylabel, xfmt, pn.yfmt, top, bottom)
        parts += _series_paths(pn.series, x, y, {}, offset=k)
        parts.append("</g>")
    return _close(parts)


def vbars(
    name: str,
    title: str,
    bars: Sequence[tuple[str, float, str, bool]],
    ylabel: str,
    yfmt: Fmt,
) -> str:
    """Vertical bars (label, value, annotation, ok); a bar that is not ok is drawn in red."""
    top, bottom = 60, 300
    h = bottom + 50
    n = max(len(bars), 1)
    x0, x1 = 80, WIDTH - 30
    y = _Axis.fit([v for _, v, _, _ in bars] + [0.0], bottom, top, False, zero=True)
    desc = _desc(
        [
            f"{lab}: {yfmt(v)} {ylabel} {note}".strip() + ("" if ok else " (over a limit)")
            for lab, v, note, ok in bars
        ]
    )
    parts = _open(name, title, h, desc)
    legend, _ = _legend([("within fabric and power limits", GOOD), ("over a limit", BAD)], 60, 40)
    parts += legend
    for v in y.ticks():
        py = y(v)
        parts.append(f'<line x1="{x0}" y1="{py:.1f}" x2="{x1}" y2="{py:.1f}" stroke="{GRID}"/>')
        parts.append(_t(x0 - 6, py + 4, yfmt(v), "end", 11, f' fill="{AXIS}"'))
    slot = (x1 - x0) / n
    bar_w = min(slot * 0.6, 90.0)
    # label only as many bars as their text fits (about 7 px a character at 11 px)
    widest = max([len(lab) for lab, _, _, _ in bars] + [len(note) for _, _, note, _ in bars] + [1])
    every = max(1, math.ceil(widest * 7.0 / slot))
    for i, (lab, v, note, ok) in enumerate(bars):
        shown = (n - 1 - i) % every == 0  # evenly spaced, the last (the horizon) always labelled
        cx = x0 + slot * (i + 0.5)
        bx = cx - bar_w / 2
        by = y(v)
        parts.append(
            f'<rect x="{bx:.1f}" y="{by:.1f}" width="{bar_w:.1f}" height="{max(bottom - by, 1.0):.1f}" '
            f'fill="{GOOD if ok else BAD}"><title>{escape(lab)}: {escape(yfmt(v))} {escape(note)}</title></rect>'
        )
        if shown:
            parts.append(_t(cx, by - 6, note, "middle", 11))
            parts.append(_t(cx, bottom + 16, lab, "middle", 11))
    parts.append(f'<path d="M{x0},{top} V{bottom} H{x1}" fill="none" stroke="{AXIS}"/>')
    parts.append(y.marker("y"))
    parts.append(
        f'<text x="14" y="{(top + bottom) / 2:.1f}" text-anchor="middle" font-size="12" '
        f'transform="rotate(-90 14 {(top + bottom) / 2:.1f})">{escape(ylabel)}</text>'
    )
    return _close(parts)
