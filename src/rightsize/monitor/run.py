"""`monitor(...)`: read the running system, compare it with its plan, re-plan. Report only.

The window ends now (or at ``end_s``) and reaches back ``window_s``; the step defaults to
a week in about 2,000 steps (5 minutes), never under a minute. With ``capture_path`` the
answers of a live Prometheus are also written to a file that ``--from`` reads later.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

from rightsize.atomic_write import write_text_atomic
from rightsize.errors import BadInput
from rightsize.monitor.compare import compare
from rightsize.monitor.plan_view import planned
from rightsize.monitor.prom import (
    MAX_RESPONSE_MIB,
    MAX_WINDOW_S,
    FileSource,
    PrometheusSource,
    Source,
    Window,
    check_limit,
    check_window,
    new_capture,
)
from rightsize.monitor.queries import collect
from rightsize.monitor.replan import replan
from rightsize.monitor.result import MonitorResult

TARGET_STEPS = 2016  # a week at 5-minute steps
MIN_STEP_S = 60.0
MAX_END_S = 1e10  # unix seconds: the year 2286


def choose_window(window_s: float, end_s: float | None, step_s: float | None) -> Window:
    if not (isinstance(window_s, int | float) and math.isfinite(window_s) and window_s > 0):
        raise BadInput(
            f"--window {window_s!r} s is not a positive duration.", fix="Use e.g. --window 7d or 12h."
        )
    if window_s > MAX_WINDOW_S:
        raise BadInput(
            f"--window {window_s / 86400:g} d is longer than {MAX_WINDOW_S / 86400:g} d.",
            "Prometheus rarely keeps that much at full resolution, and the hour-of-day view needs no more.",
            "Use --window 30d or less.",
        )
    end = float(end_s) if end_s is not None else time.time()
    if not (math.isfinite(end) and window_s <= end <= MAX_END_S):
        raise BadInput(
            f"--end {end!r} is not a time rightsize can ask about.",
            f"It must be finite unix seconds between {window_s:g} (the window must start after 1970) and "
            f"{MAX_END_S:g} (the year 2286).",
            "Give unix seconds or a UTC time such as --end 2026-11-20T12:00:00Z, or leave --end out for now.",
        )
    if step_s is None:
        step = max(MIN_STEP_S, math.ceil(window_s / TARGET_STEPS / 60.0) * 60.0)
    else:
        step = float(step_s)
    check_window(Window(end - window_s, end, step), "--window and --step")
    end = math.floor(end / step) * step
    return Window(end - window_s, end, step)


def response_cap_bytes(mib: float | None) -> int | None:
    """`--max-response-mib` in bytes, refused unless a finite number in range (None: the default)."""
    if mib is None:
        return None
    check_limit("--max-response-mib", mib, 1 / 1024, MAX_RESPONSE_MIB, "MiB")
    return int(mib * 2**20)


def monitor(
    plan: Any,
    spec: Any,
    *,
    prometheus_url: str | None = None,
    from_file: str | None = None,
    window_s: float = 7 * 86400.0,
    end_s: float | None = None,
    step_s: float | None = None,
    selector: str | None = None,
    gpu_selector: str | None = None,
    serving_selector: str | None = None,
    timeout_s: float = 30.0,
    max_response_bytes: int | None = None,
    deadline_s: float | None = None,
    capture_path: str | None = None,
    plan_fn: Callable[..., Any] | None = None,
    force: bool = False,
) -> MonitorResult:
    """Compare the running system with ``plan`` (``spec`` too, to re-plan with ``plan_fn``).
    ``force`` lets the capture replace a read-only file."""
    p = planned(plan, spec)
    gsel = gpu_selector if gpu_selector is not None else selector
    ssel = serving_selector if serving_selector is not None else selector
    selectors = {k: v for k, v in (("gpu", gsel), ("serving", ssel)) if v}
    quantile = p.slo_percentile / 100.0
    source, window = open_source(
        prometheus_url, from_file, window_s, end_s, step_s, selectors, timeout_s, max_response_bytes,
        deadline_s, capture_path,
    )  # fmt: skip
    if isinstance(source, FileSource):
        # a capture answers only the queries it holds: use the selectors it was made with
        gsel, ssel = _captured_selectors(source, gsel, ssel)
    try:
        obs = collect(source, window, gsel, ssel, quantile)
    finally:
        _finish(source, capture_path, force)
    findings = compare(obs, p)
    rp = replan(obs, p, spec, plan_fn) if p.kind == "serving" else None
    return MonitorResult(p, obs, findings, rp, source.where, selectors)


def open_source(
    prometheus_url: str | None,
    from_file: str | None,
    window_s: float,
    end_s: float | None,
    step_s: float | None,
    selectors: dict[str, str],
    timeout_s: float = 30.0,
    max_response_bytes: int | None = None,
    deadline_s: float | None = None,
    capture_path: str | None = None,
) -> tuple[Source, Window]:
    """A live Prometheus (recording its answers when `capture_path`) or a saved capture, and the
    window to read: the capture's own, or `window_s` back from `end_s` (default now)."""
    if bool(prometheus_url) == bool(from_file):
        raise BadInput(
            "Give exactly one of --prometheus URL and --from FILE.",
            "monitor reads a live Prometheus or a capture saved from one.",
            "Use --prometheus http://prometheus:9090, or --from capture.json.",
        )
    if from_file:
        fsrc = FileSource.load(from_file)
        window = fsrc.window()
        check_window(window, f"--from {from_file}")
        return fsrc, window
    window = choose_window(window_s, end_s, step_s)
    record = new_capture(window, selectors) if capture_path else None
    kwargs: dict[str, Any] = {"timeout_s": timeout_s, "record": record, "deadline_s": deadline_s}
    if max_response_bytes is not None:
        kwargs["max_response_bytes"] = max_response_bytes
    return PrometheusSource(str(prometheus_url), **kwargs), window


def _finish(source: Source, capture_path: str | None, force: bool) -> None:
    """Close a live source; write what it answered to `capture_path` (when asked)."""
    if isinstance(source, PrometheusSource):
        source.close()
        if capture_path and source.record is not None:
            _write_capture(capture_path, source.record, force)


def monitor_fleet_run(
    fleet: Any,
    plan: Any,
    *,
    prometheus_url: str | None = None,
    from_file: str | None = None,
    window_s: float = 7 * 86400.0,
    end_s: float | None = None,
    step_s: float | None = None,
    workload_selector: str | None = None,
    timeout_s: float = 30.0,
    max_response_bytes: int | None = None,
    capture_path: str | None = None,
    plan_fn: Callable[..., Any] | None = None,
    force: bool = False,
) -> Any:
    """`monitor` on a fleet (`monitor.fleet_use`): each workload against its slot; the rest of the
    horizon re-planned from what was observed."""
    from rightsize.monitor.fleet_use import DEFAULT_TEMPLATE, monitor_fleet

    template = workload_selector or DEFAULT_TEMPLATE
    source, window = open_source(
        prometheus_url, from_file, window_s, end_s, step_s, {"workload": template}, timeout_s,
        max_response_bytes, None, capture_path,
    )  # fmt: skip
    if isinstance(source, FileSource) and workload_selector is None:
        got = source.capture.get("selectors")
        if isinstance(got, dict) and isinstance(got.get("workload"), str):
            template = got["workload"]
    try:
        return monitor_fleet(fleet, plan, source, window, template, plan_fn)
    finally:
        _finish(source, capture_path, force)


def _captured_selectors(
    fsrc: FileSource, gsel: str | None, ssel: str | None
) -> tuple[str | None, str | None]:
    got = fsrc.capture.get("selectors")
    got = got if isinstance(got, dict) else {}
    out = [got.get(k, mine) for k, mine in (("gpu", gsel), ("serving", ssel))]
    for v in out:
        if v is not None and not isinstance(v, str):
            raise BadInput(
                f"--from {fsrc.path}: the capture's selectors are not strings.",
                fix="Give a capture written by `rightsize monitor --save`.",
            )
    return out[0], out[1]


def _write_capture(path: str, record: dict[str, Any], force: bool = False) -> None:
    write_text_atomic(path, json.dumps(record), "the --save capture", force=force)
