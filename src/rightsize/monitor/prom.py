"""Reading Prometheus: the HTTP API (`/api/v1/query_range`) or a saved capture of it.

`PrometheusSource` asks a live server through `fetch`: a wall-clock limit on every try
and on the whole command, a bounded number of retries with backoff (429 and 503 honouring
Retry-After, connection errors and other 5xx; a bad query is not retried), capped
redirects, and a cap on the response size read while streaming, so neither a runaway
query nor a hostile server can fill memory or hold the command. `FileSource` answers the same queries from a capture written by
``rightsize monitor --save FILE`` (for air-gapped sites: capture where Prometheus is
reachable, analyse anywhere). Both return `Series`: labels plus aligned numpy arrays.

Every failure becomes a `BadInput` (exit 2) that says what was asked, why it failed and
what to do; nothing here lets a traceback through for a network or data problem.
"""

from __future__ import annotations

import json
import math
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rightsize.errors import BadInput
from rightsize.monitor import fetch
from rightsize.safe_read import clean_key, read_json_capped

CAPTURE_KIND = "rightsize-prometheus-capture"
CAPTURE_VERSION = 1
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 2  # attempts after the first, for 429, 5xx and connection errors only
DEFAULT_MAX_RESPONSE_BYTES = 64 * 2**20  # 64 MiB per query: ~1M samples of JSON
MAX_TIMEOUT_S = 3600.0
MAX_RESPONSE_MIB = 4096.0
DEADLINE_TIMEOUTS = 10  # the whole command may take this many --timeout
MAX_DEADLINE_S = 86400.0
MAX_WINDOW_S = 90 * 86400.0  # the longest window, live (`--window`) or captured
MAX_POINTS = 11_000  # per series: Prometheus's own limit on a range query
MAX_CAPTURE_BYTES = 256 * 2**20  # a capture of a day at 15 s steps is a few MB; a month of many series fits
# The question asked of `/api/v1/label/__name__/values`, stored in a capture like a query.
NAMES_QUERY = "__names__"


def check_limit(option: str, value: float, low: float, high: float, unit: str) -> None:
    """BadInput naming the option when a limit is not a finite number in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadInput(
            f"{option} {value!r} is not a finite number.", f"It is in {unit}.", f"Give {option} a number."
        )
    if not low <= value <= high:
        raise BadInput(
            f"{option} {value:g} {unit} is out of range.",
            f"It must lie between {low:.3g} and {high:.6g} {unit}.",
            f"Give {option} a value in that range.",
        )


@dataclass(frozen=True)
class Series:
    """One time series of a range query: its labels and values at the query's steps."""

    labels: dict[str, str]
    t_s: np.ndarray  # unix seconds
    values: np.ndarray  # float64, NaN where Prometheus returned NaN


@dataclass(frozen=True)
class Window:
    """The range asked: [start_s, end_s] every step_s, and the rate/avg range in PromQL."""

    start_s: float
    end_s: float
    step_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def range_s(self) -> int:
        """The [range] of rate()/avg_over_time(): two steps, so each window holds samples."""
        return int(max(2 * self.step_s, 60))

    def grid(self) -> np.ndarray:
        n = int(math.floor(self.duration_s / self.step_s + 1e-9)) + 1
        return self.start_s + self.step_s * np.arange(n)


def check_window(window: Window, what: str) -> None:
    """BadInput unless the window runs forward by a positive, finite step, in at most MAX_POINTS
    points and MAX_WINDOW_S: one check for a live window and a captured one."""
    start, end, step = window.start_s, window.end_s, window.step_s
    if not all(math.isfinite(x) for x in (start, end, step)):
        raise BadInput(
            f"{what}: start {start!r}, end {end!r}, step {step!r} are not all finite numbers.",
            "A window is a start, an end and a step, each in unix seconds.",
            "Give finite times and a step such as 1m or 5m.",
        )
    if step <= 0:
        raise BadInput(
            f"{what}: the step is {step:g} s.",
            "The step must be a positive number of seconds (step_s above 0).",
            "Use a step such as --step 1m or 5m.",
        )
    if end < start:
        raise BadInput(
            f"{what}: the window ends ({end:g}) before it starts ({start:g}).",
            "A window runs forward in time.",
            "Swap start and end, or capture the window again with `rightsize monitor --save`.",
        )
    points = (end - start) / step + 1
    if points > MAX_POINTS:
        raise BadInput(
            f"{what}: {end - start:,.6g} s / {step:,.6g} s per step = {points:,.6g} points per series, over "
            f"the {MAX_POINTS:,} allowed.",
            f"Each series would need {points * 8 / 2**30:,.4g} GiB at 8 bytes a point (Prometheus itself "
            f"answers at most {MAX_POINTS:,} points per series).",
            "Raise --step or shorten --window.",
        )
    if end - start > MAX_WINDOW_S:
        raise BadInput(
            f"{what}: the window is {(end - start) / 86400:,.6g} days long.",
            f"A window lasts at most {MAX_WINDOW_S / 86400:g} days (as --window allows).",
            "Capture or ask for a shorter window.",
        )


class Source(Protocol):
    """Where measurements come from: a live Prometheus or a capture file."""

    @property
    def where(self) -> str: ...

    def query_range(self, query: str, window: Window) -> list[Series]: ...

    def metric_names(self) -> set[str] | None: ...


def _clip(text: Any, n: int = 200) -> str:
    return " ".join(str(text).split())[:n]


def parse_matrix(payload: Any, query: str, where: str) -> list[Series]:
    """The series of a `query_range` JSON answer; a Prometheus error or a wrong shape becomes a BadInput."""
    if not isinstance(payload, dict):
        raise BadInput(f"{where} answered {query!r} with something that is not a Prometheus reply.")
    if payload.get("status") != "success":
        kind, err = payload.get("errorType", "error"), payload.get("error", "no reason given")
        raise BadInput(
            f"Prometheus at {where} rejected the query {query!r}.",
            f"{_clip(kind, 40)}: {_clip(err)}",
            "Check --selector (a PromQL label matcher such as '{job=\"dcgm\"}').",
        )
    data = payload.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result", []), list):
        raise _shape(where, query, "its 'data' is not an object with a 'result' list")
    if data.get("resultType") not in ("matrix", None):
        raise BadInput(
            f"{where} answered {query!r} with a {_clip(data.get('resultType'), 40)!r}, not a matrix."
        )
    return [_series(item, query, where) for item in data.get("result", [])]


def _shape(where: str, query: str, why: str) -> BadInput:
    return BadInput(
        f"{where} answered {query!r} with something that is not a Prometheus range-query reply.",
        f"{why}.",
        "Point --prometheus at a Prometheus server (or give --from a capture written by --save).",
    )


def _series(item: Any, query: str, where: str) -> Series:
    """One `{"metric": {...}, "values": [[t, "v"], ...]}`: labels strings, times finite and increasing."""
    if not isinstance(item, dict):
        raise _shape(where, query, "a series is not an object")
    labels, values = item.get("metric") or {}, item.get("values") or []
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise _shape(where, query, "a series' labels are not a map of strings")
    if not isinstance(values, list):
        raise _shape(where, query, "a series' values are not a list")
    try:
        arr = np.array([[_number(ts), _number(v)] for ts, v in values], dtype=np.float64).reshape(-1, 2)
    except (TypeError, ValueError, OverflowError):
        raise BadInput(
            f"{where} answered {query!r} with samples that are not [time, number] pairs.",
            'Prometheus writes each sample as [unix seconds, "value"] with a decimal value, NaN or +Inf.',
            "Point --prometheus at a Prometheus server (or give --from a capture written by --save).",
        ) from None
    t = arr[:, 0]
    if not np.isfinite(t).all() or (t.size > 1 and not (np.diff(t) > 0).all()):
        raise BadInput(
            f"{where} answered {query!r} with sample times that are not finite and increasing.",
            "Prometheus returns each series' samples once each, in time order.",
            "Point --prometheus at a Prometheus server (or give --from a capture written by --save).",
        )
    return Series({str(k): v for k, v in labels.items()}, t, arr[:, 1])


def _number(value: Any) -> float:
    """A sample's time or value: a number or a decimal string (NaN and +/-Inf kept for the caller)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TypeError("not a number")
    return float(value)


@dataclass
class PrometheusSource:
    """A live Prometheus server, read over its HTTP API within a time and size budget.

    ``timeout_s`` bounds each try of a request from first byte to last; ``deadline_s`` bounds
    the whole command (every query, retry and wait); ``max_response_bytes`` each answer."""

    url: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    record: dict[str, Any] | None = None  # when set, every answer is kept for --save
    deadline_s: float | None = None  # default: DEADLINE_TIMEOUTS x timeout_s
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        url = self.url.rstrip("/")
        try:
            parts = urllib.parse.urlsplit(url)
            port_ok = parts.port is None or parts.port > 0
        except ValueError:  # a port that is not a number, brackets that do not close
            parts, port_ok = urllib.parse.urlsplit(""), False
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or not port_ok
            or parts.query
            or parts.fragment
        ):
            raise BadInput(
                f"--prometheus {self.url[:200]!r} is not an http(s) base URL.",
                "rightsize reads the Prometheus HTTP API under the server's base URL.",
                "Give the server's base URL, e.g. --prometheus http://prometheus:9090",
            )
        self.url = url
        check_limit("--timeout", self.timeout_s, 1e-3, MAX_TIMEOUT_S, "seconds")
        check_limit("--max-response-mib", self.max_response_bytes / 2**20, 1 / 1024, MAX_RESPONSE_MIB, "MiB")
        total = self.deadline_s if self.deadline_s is not None else DEADLINE_TIMEOUTS * self.timeout_s
        check_limit("--deadline", total, 1e-3, MAX_DEADLINE_S, "seconds")
        self.deadline_s = total
        self._deadline = time.monotonic() + total

    @property
    def where(self) -> str:
        return self.url

    def close(self) -> None:
        """Nothing is held between requests (each opens and closes its own connection)."""

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        what = str(params.get("query", path))
        url = self.url + path + (("?" + urllib.parse.urlencode(params)) if params else "")
        limits = fetch.Limits(
            deadline=self._deadline,
            max_bytes=self.max_response_bytes,
            attempt_s=self.timeout_s,
            retries=self.retries,
        )
        try:
            status, body = fetch.get(url, limits)
        except fetch.FetchFailed as err:
            raise self._failed(err, what) from None
        if status not in (200, 400, 422):
            raise BadInput(
                f"{self.url}{path} answered HTTP {status}.",
                "That is not a Prometheus query API (or it needs authentication).",
                "Point --prometheus at the server's base URL, e.g. http://prometheus:9090",
            )
        return self._json(body, path)

    def _json(self, body: bytes, path: str) -> Any:
        try:
            return json.loads(body)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, 400-digit numbers, nested too deep
            raise BadInput(
                f"{self.url}{path} did not answer Prometheus JSON.",
                "That is not a Prometheus query API (an HTML page, a proxy's error, or a broken answer).",
                "Point --prometheus at the server's base URL, e.g. http://prometheus:9090",
            ) from None

    def _failed(self, err: fetch.FetchFailed, what: str) -> BadInput:
        """A fetch failure as the message a person can act on."""
        tries = f"{err.attempts} attempt{'s' if err.attempts != 1 else ''}"
        if err.kind == "too_large":
            return BadInput(
                f"Prometheus's answer to {what!r} is larger than {self.max_response_bytes / 2**20:.4g} MiB.",
                "Too many series or steps for one query (a selector that matches every job?).",
                "Narrow --selector, shorten --window, raise --step, or raise --max-response-mib.",
            )
        if err.kind == "rate_limited":
            return BadInput(
                f"Prometheus at {self.url} is rate limiting rightsize (HTTP 429 Too Many Requests).",
                f"{tries} failed, waiting as long as it asked (Retry-After) within the time allowed; "
                f"last: {err.detail}.",
                "Try again later, raise --timeout (more time to wait), or ask the server's operators to "
                "raise the limit for this client; --save a capture once and analyse it with --from.",
            )
        if err.kind == "deadline":
            return BadInput(
                f"Prometheus at {self.url} did not answer {what!r} in time.",
                f"{err.detail}; each try may take {self.timeout_s:g} s and the whole command "
                f"{self.deadline_s:g} s.",
                "Check that the server is healthy (curl URL/-/ready), narrow the query (--selector, "
                "--window, --step), or raise --timeout.",
            )
        if err.kind in ("encoding", "redirects"):
            return BadInput(
                f"{self.url} gave a broken answer to {what!r}: {err.detail}.",
                "That is not how a Prometheus server (or a proxy in front of one) answers.",
                "Point --prometheus at the Prometheus server itself, e.g. http://prometheus:9090",
            )
        return BadInput(
            f"Prometheus at {self.url} is unreachable.",
            f"{tries} failed; last: {err.detail}.",
            "Check the URL and that the server is up (curl URL/-/ready), or analyse a capture with --from FILE.",
        )

    def query_range(self, query: str, window: Window) -> list[Series]:
        params = {"query": query, "start": window.start_s, "end": window.end_s, "step": window.step_s}
        payload = self._get("/api/v1/query_range", params)
        if self.record is not None:
            self.record.setdefault("queries", {})[capture_key(query, window, self.record)] = payload
        return parse_matrix(payload, query, self.url)

    def metric_names(self) -> set[str] | None:
        payload = self._get("/api/v1/label/__name__/values", {})
        if self.record is not None:
            self.record.setdefault("queries", {})[NAMES_QUERY] = payload
        return names(payload)


def names(payload: Any) -> set[str] | None:
    """The metric names of a `/api/v1/label/__name__/values` answer; None when it has none to give."""
    if not isinstance(payload, dict) or payload.get("status") != "success":
        return None
    data = payload.get("data")
    if not isinstance(data, list):
        return None
    return {n for n in data if isinstance(n, str)}


def capture_key(query: str, window: Window, capture: dict[str, Any]) -> str:
    """A query's key in a capture: the query itself over the capture's window; over another window
    (a chunk of it, or one instant) the query and that window, so chunks do not overwrite each other."""
    if (window.start_s, window.end_s, window.step_s) == (
        capture.get("start_s"),
        capture.get("end_s"),
        capture.get("step_s"),
    ):
        return query
    return f"{query} @ [{window.start_s:.3f}, {window.end_s:.3f}, {window.step_s:g}]"


def new_capture(window: Window, selectors: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": CAPTURE_KIND,
        "version": CAPTURE_VERSION,
        "start_s": window.start_s,
        "end_s": window.end_s,
        "step_s": window.step_s,
        "selectors": selectors,
        "queries": {},
    }


@dataclass
class FileSource:
    """A capture written by ``rightsize monitor --save``: the same queries, answered offline."""

    path: Path
    capture: dict[str, Any]

    @classmethod
    def load(cls, path: str | Path, max_bytes: int = MAX_CAPTURE_BYTES) -> FileSource:
        """Read a capture through the capped reader: a regular file, its size checked before a byte
        is read, depth and number caps checked before parsing; nothing of its text in a message."""
        p = Path(path)
        fix = "Give a capture written by `rightsize monitor --save`; capture a shorter --window or a larger --step."
        data = read_json_capped(p, "the capture (--from)", max_bytes, fix)
        if not isinstance(data, dict) or data.get("kind") != CAPTURE_KIND:
            raise BadInput(
                f"--from {p} is not a rightsize Prometheus capture.",
                f"Its 'kind' is {clean_key(data.get('kind')) if isinstance(data, dict) else type(data).__name__!r}, "
                f"expected {CAPTURE_KIND!r}.",
                "Write one with `rightsize monitor PLAN --prometheus URL --save FILE`.",
            )
        if data.get("version") != CAPTURE_VERSION:
            raise BadInput(
                f"--from {p}: capture version {clean_key(data.get('version'))!r}, this rightsize reads {CAPTURE_VERSION}."
            )
        _check_capture_parts(data, p)
        return cls(p, data)

    @property
    def where(self) -> str:
        return str(self.path)

    def window(self) -> Window:
        """The capture's window, checked as a live window is (`check_window`)."""
        c = self.capture
        values = [c.get(key) for key in ("start_s", "end_s", "step_s")]
        if not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
        ):
            raise BadInput(
                f"--from {self.path}: the capture has no valid start_s/end_s/step_s.",
                "Each must be a finite number of seconds.",
                "Capture again with `rightsize monitor PLAN --prometheus URL --save FILE`.",
            )
        window = Window(*(float(v) for v in values if isinstance(v, int | float)))
        check_window(window, f"--from {self.path}")
        return window

    def query_range(self, query: str, window: Window) -> list[Series]:
        queries = self._queries()
        payload = queries.get(capture_key(query, window, self.capture))
        if payload is None:
            payload = queries.get(query)  # captures written before chunked reads keyed every query alone
        if payload is None:
            return []  # not captured: the same as a metric Prometheus did not have
        return parse_matrix(payload, query, str(self.path))

    def metric_names(self) -> set[str] | None:
        return names(self._queries().get(NAMES_QUERY))

    def _queries(self) -> dict[str, Any]:
        queries = self.capture.get("queries")
        if not isinstance(queries, dict):
            raise BadInput(
                f"--from {self.path}: the capture's 'queries' is not a map of query to answer.",
                fix="Give a capture written by `rightsize monitor --save`.",
            )
        return queries


def _check_capture_parts(data: dict[str, Any], p: Path) -> None:
    """`queries` a mapping of query -> answer, `selectors` a mapping of text: what the reader relies on."""
    queries, selectors = data.get("queries", {}), data.get("selectors", {})
    bad = (
        "queries"
        if not isinstance(queries, dict)
        else "selectors"
        if not isinstance(selectors, dict) or not all(isinstance(v, str) for v in selectors.values())
        else None
    )
    if bad is None:
        bad = next(
            (f"queries.{clean_key(q)}" for q, answer in queries.items() if not _answer_shaped(q, answer)),
            None,
        )
    if bad is not None:
        raise BadInput(
            f"--from {p}: the capture's `{bad}` is not "
            + (
                "a mapping of text."
                if bad == "selectors"
                else "a mapping of query to answer."
                if bad == "queries"
                else "a Prometheus answer (status, and data with a result list of series, each a metric mapping "
                "and a values list)."
            ),
            "A capture is read as `rightsize monitor --save` wrote it.",
            "Capture again with `rightsize monitor PLAN --prometheus URL --save FILE`.",
        )
    for answer in queries.values():  # a Prometheus error is quoted in messages: keep it one short line
        for key in ("error", "errorType"):
            if key in answer:
                answer[key] = clean_key(answer[key], 200)


def _answer_shaped(query: str, answer: Any) -> bool:
    """A stored answer has the shape the readers walk: its series are checked, their samples are
    checked as they are read (`parse_matrix`)."""
    if not isinstance(answer, dict):
        return False
    data = answer.get("data")
    if answer.get("status") != "success" or data is None:
        return True  # an error answer, reported as the server's error
    if query == NAMES_QUERY:
        return isinstance(data, list)
    if not isinstance(data, dict) or not isinstance(data.get("result", []), list):
        return False
    return all(
        isinstance(item, dict)
        and isinstance(item.get("metric") or {}, dict)
        and isinstance(item.get("values") or [], list)
        for item in data.get("result", [])
    )


def on_grid(series: Series, grid: np.ndarray) -> np.ndarray:
    """The series' values at the window's steps, NaN where it has no sample."""
    out = np.full(grid.shape, np.nan)
    if series.t_s.size == 0:
        return out
    step = grid[1] - grid[0] if grid.size > 1 else 1.0
    pos = np.rint((series.t_s - grid[0]) / step)
    ok = np.isfinite(pos) & (pos >= 0) & (pos < grid.size)  # checked before the cast: no overflow
    out[pos[ok].astype(np.int64)] = series.values[ok]
    return out
