"""Issue #24: `rightsize monitor` against a hostile Prometheus on 127.0.0.1 (tests/misbehaving_server.py).

One row per misbehaviour: the exit code, a phrase of the message, and a wall-clock bound. Nothing may
hang past its deadline, print a traceback or report a nonsense figure with exit 0."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from misbehaving_server import PROM_ANSWER, PROM_TRANSPORT, HostilePrometheus, start_prometheus

from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.monitor import fetch
from rightsize.monitor.prom import PrometheusSource, Window
from rightsize.monitor.run import choose_window, response_cap_bytes

SPEC = Path(__file__).parent / "data" / "monitor" / "serving.yaml"
TIMEOUT = "400ms"  # per try: 3 tries and 1.5 s of backoff fit in 3 s


@pytest.fixture(scope="module")
def prom() -> Iterator[HostilePrometheus]:
    srv = start_prometheus()
    yield srv
    srv.shutdown()


@pytest.fixture(scope="module")
def plan_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    assert main(["plan", str(SPEC), "--format", "json", "-o", str(out)]) == 0
    return out


# mode -> (exit code, phrase in the message, most seconds, extra options)
ROWS: dict[str, tuple[int, str, float, list[str]]] = {
    "drip": (2, "did not answer", 5.0, []),
    "drip_headers": (2, "did not answer", 5.0, []),
    "stall": (2, "did not answer", 5.0, []),
    "rate_limited": (2, "rate limiting rightsize (HTTP 429", 4.0, []),
    "rate_limited_long": (2, "would pass the deadline", 1.5, []),
    "rate_limited_once": (0, "", 4.0, ["--timeout", "3s"]),
    "busy_date_once": (0, "", 5.0, ["--timeout", "4s"]),
    "redirect_loop": (2, "more than 5 redirects", 2.0, []),
    "redirect_ftp": (2, "non-http(s)", 2.0, []),
    "false_gzip": (2, "claims Content-Encoding gzip", 2.0, []),
    "gzip_bomb": (2, "larger than 1 MiB", 3.0, ["--max-response-mib", "1"]),
    "html": (2, "did not answer Prometheus JSON", 2.0, []),
    "huge": (2, "larger than 1 MiB", 3.0, ["--max-response-mib", "1"]),
    "deep_json": (2, "did not answer Prometheus JSON", 2.0, []),
    "big_int": (2, "did not answer Prometheus JSON", 2.0, []),
    "http_401": (2, "answered HTTP 401", 2.0, []),
    "ok": (0, "", 3.0, []),
    "data_missing": (2, "not a Prometheus range-query reply", 2.0, []),
    "data_list": (2, "not a Prometheus range-query reply", 2.0, []),
    "result_not_list": (2, "not a Prometheus range-query reply", 2.0, []),
    "series_not_object": (2, "a series is not an object", 2.0, []),
    "labels_not_strings": (2, "labels are not a map of strings", 2.0, []),
    "values_not_numbers": (2, "not [time, number] pairs", 2.0, []),
    "values_not_pairs": (2, "not [time, number] pairs", 2.0, []),
    "nan": (1, "no samples", 2.0, []),
    "inf": (2, "as inf req/s, which it cannot be", 2.0, []),
    "negative": (2, "as -50 req/s, which it cannot be", 2.0, []),
    "unordered": (2, "not finite and increasing", 2.0, []),
    "error_status": (2, "rejected the query", 2.0, []),
}


def test_every_mode_has_a_row() -> None:
    assert set(ROWS) == set(PROM_TRANSPORT) | set(PROM_ANSWER)


@pytest.mark.parametrize("mode", sorted(ROWS))
def test_hostile_prometheus(
    prom: HostilePrometheus, plan_json: Path, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, phrase, most_s, extra = ROWS[mode]
    options = ["--timeout", TIMEOUT, *extra] if "--timeout" not in extra else extra
    started = time.monotonic()
    got = main(["monitor", str(plan_json), "--prometheus", prom.url(mode), "--window", "1h", *options])
    took = time.monotonic() - started
    out, err = capsys.readouterr()
    assert got == code, (mode, err[-2000:])
    assert phrase in err, (mode, err[-2000:])
    assert "Traceback" not in err and "internal error" not in err
    assert took < most_s, f"{mode} took {took:.1f} s"
    assert len(err) < 3000  # a 50 kB server reason is not echoed whole
    if code == 0:
        assert "nan" not in out.lower() and "inf" not in out.lower()


def test_rate_limited_is_retried_three_times_then_named(prom: HostilePrometheus, plan_json: Path) -> None:
    before = prom.count("rate_limited")
    main(["monitor", str(plan_json), "--prometheus", prom.url("rate_limited"), "--window", "1h"])
    assert prom.count("rate_limited") - before == 3  # the first try and two retries


def test_retry_after_is_honoured(prom: HostilePrometheus) -> None:
    """Retry-After: 1 on the first answer: the second try comes a second later, not at once."""
    src = PrometheusSource(prom.url("rate_limited_once-2"), timeout_s=3.0)  # a fresh mode counter
    started = time.monotonic()
    names = src.metric_names()
    assert names == {"vllm:request_success_total"}
    assert 0.95 < time.monotonic() - started < 2.5


def test_the_command_deadline_bounds_every_try(prom: HostilePrometheus) -> None:
    """A per-try timeout of 30 s does not let a dripping server hold a command with 1 s in all."""
    src = PrometheusSource(prom.url("drip"), timeout_s=30.0, deadline_s=1.0)
    w = Window(1.7e9, 1.7e9 + 3600, 60)
    started = time.monotonic()
    with pytest.raises(BadInput, match="did not answer") as info:
        src.query_range("up", w)
    assert time.monotonic() - started < 1.6
    assert "the whole command 1 s" in info.value.message()


def test_retry_after_values() -> None:
    assert fetch.retry_after_s("3") == 3.0
    assert fetch.retry_after_s("-3") == 0.0
    assert fetch.retry_after_s("nan") is None and fetch.retry_after_s("inf") is None
    assert fetch.retry_after_s("soon") is None and fetch.retry_after_s(None) is None
    assert fetch.retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)
    assert fetch.retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: now


@pytest.mark.parametrize(
    ("options", "phrase"),
    [
        (["--end", "inf"], "--end inf is not a time"),
        (["--end", "nan"], "--end nan is not a time"),
        (["--end=-1e300"], "is not a time"),
        (["--end", "1e300"], "is not a time"),
        (["--step", "1ms"], "3,600 s / 0.001 s per step = 3.6e+06 points per series"),
        (["--max-response-mib", "-1"], "--max-response-mib -1 MiB is out of range"),
        (["--timeout", "1e9s"], "--timeout 1e+09 seconds is out of range"),
    ],
)
def test_bad_window_and_limits(
    prom: HostilePrometheus,
    plan_json: Path,
    options: list[str],
    phrase: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    got = main(["monitor", str(plan_json), "--prometheus", prom.url("ok"), "--window", "1h", *options])
    err = capsys.readouterr().err
    assert got == 2 and phrase in err, err


@pytest.mark.parametrize("mib", [math.nan, math.inf, -math.inf, 0.0, -1.0, 1e30])
def test_response_cap_must_be_finite_and_positive(mib: float) -> None:
    with pytest.raises(BadInput, match="--max-response-mib"):
        response_cap_bytes(mib)
    assert response_cap_bytes(2.0) == 2 << 20 and response_cap_bytes(None) is None


def test_window_arithmetic() -> None:
    with pytest.raises(BadInput, match="points per series"):
        choose_window(86400.0, 1.7e9, 1e-6)
    with pytest.raises(BadInput, match="step must be a positive"):
        choose_window(3600.0, 1.7e9, 0.0)
    with pytest.raises(BadInput, match="not all finite"):
        choose_window(3600.0, 1.7e9, math.nan)


def _capture(tmp_path: Path, start: Any, end: Any, step: Any) -> Path:
    path = tmp_path / "capture.json"
    doc = {
        "kind": "rightsize-prometheus-capture",
        "version": 1,
        "start_s": start,
        "end_s": end,
        "step_s": step,
        "selectors": {},
        "queries": {},
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("start", "end", "step", "phrase"),
    [
        (1.7e9, 1.7e9 + 3600, 0, "step is 0 s"),
        (1.7e9, 1.7e9 + 3600, -60, "step is -60 s"),
        (1.7e9, 1.7e9 + 3600, math.nan, "finite number of seconds"),
        (1.7e9, 1.7e9 + 3600, math.inf, "finite number of seconds"),
        (1.7e9 + 3600, 1.7e9, 60, "ends (1.7e+09) before it starts"),
        # 1e10 s at a microsecond step: 1e16 points a series, 72,760 TiB: refused with the arithmetic
        (0, 1e10, 1e-6, "1e+10 s / 1e-06 s per step = 1e+16 points per series"),
        (0, 10**400, 60, "more than 24 digits"),  # refused by the capped reader
    ],
)
def test_capture_windows(
    plan_json: Path,
    tmp_path: Path,
    start: Any,
    end: Any,
    step: Any,
    phrase: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    got = main(["monitor", str(plan_json), "--from", str(_capture(tmp_path, start, end, step))])
    err = capsys.readouterr().err
    assert got == 2 and phrase in err, err
    assert time.monotonic() - started < 2.0


def test_recommendation_is_ordered_whatever_the_rates() -> None:
    """Even rates no reader lets through (negative, all equal) give 0 <= lower <= target <= upper."""
    from rightsize.monitor.queries import Observed
    from rightsize.monitor.replan import recommend

    w = Window(0.0, 300.0 * 99, 300.0)
    for rate in (np.full(100, -16.0), np.full(100, 5.0), np.linspace(-10, 10, 100)):
        rec = recommend(Observed(window=w, grid=w.grid(), serving={"request_success": rate}))
        assert rec is not None
        assert 0.0 <= rec.lower_rps <= rec.target_rps <= rec.upper_rps, rec


def test_a_negative_measurement_is_never_within_plan() -> None:
    from rightsize.monitor.result import _row

    for measured in (-0.16, math.nan, math.inf):
        assert _row("replica utilisation", measured, 0.8, "ratio", "above")["status"] == "n/a"
    assert _row("replica utilisation", 0.5, 0.8, "ratio", "above")["status"] == "within plan"
