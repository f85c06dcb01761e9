"""Reading Prometheus: the HTTP API (`/api/v1/query_range`) or a saved capture of it.

`PrometheusSource` asks a live server with httpx: a timeout on every request, a bounded
number of retries with backoff (connection errors and 5xx only; a bad query is not
retried), and a cap on the response size read while streaming, so a runaway query
cannot fill memory. `FileSource` answers the same queries from a capture written by
``rightsize monitor --save FILE`` (for air-gapped sites: capture where Prometheus is
reachable, analyse anywhere). Both return `Series`: labels plus aligned numpy arrays.

Every failure becomes a `BadInput` (exit 2) that says what was asked, why it failed and
what to do; nothing here lets a traceback through for a network or data problem.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rightsize.errors import BadInput
from rightsize.safe_read import clean_key, read_json_capped

CAPTURE_KIND = "rightsize-prometheus-capture"
CAPTURE_VERSION = 1
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_RETRIES = 2  # attempts after the first, for connection errors and 5xx only
DEFAULT_MAX_RESPONSE_BYTES = 64 * 2**20  # 64 MiB per query: ~1M samples of JSON
BACKOFF_S = 0.5
MAX_CAPTURE_WINDOW_S = 90 * 86400.0  # as `monitor --window` allows
MAX_CAPTURE_POINTS = 11_000  # Prometheus' limit on the points of one range query
MAX_CAPTURE_BYTES = 256 * 2**20  # a capture of a day at 15 s steps is a few MB; a month of many series fits
# The question asked of `/api/v1/label/__name__/values`, stored in a capture like a query.
NAMES_QUERY = "__names__"


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


class Source(Protocol):
    """Where measurements come from: a live Prometheus or a capture file."""

    @property
    def where(self) -> str: ...

    def query_range(self, query: str, window: Window) -> list[Series]: ...

    def metric_names(self) -> set[str] | None: ...


def parse_matrix(payload: Any, query: str, where: str) -> list[Series]:
    """The series of a `query_range` JSON answer; a Prometheus error becomes a BadInput."""
    if not isinstance(payload, dict):
        raise BadInput(f"{where} answered {query!r} with something that is not a Prometheus reply.")
    if payload.get("status") != "success":
        kind, err = payload.get("errorType", "error"), payload.get("error", "no reason given")
        raise BadInput(
            f"Prometheus at {where} rejected the query {query!r}.",
            f"{kind}: {err}",
            "Check --selector (a PromQL label matcher such as '{job=\"dcgm\"}').",
        )
    data = payload.get("data") or {}
    if data.get("resultType") not in ("matrix", None) or not isinstance(data.get("result", []), list):
        raise BadInput(f"{where} answered {query!r} with a {data.get('resultType')!r}, not a matrix.")
    out: list[Series] = []
    for item in data.get("result", []):
        values = item.get("values") or []
        try:
            arr = np.array([[float(ts), float(v)] for ts, v in values], dtype=np.float64).reshape(-1, 2)
        except (TypeError, ValueError):
            raise BadInput(f"{where} answered {query!r} with values that are not numbers.") from None
        out.append(Series(dict(item.get("metric") or {}), arr[:, 0], arr[:, 1]))
    return out


@dataclass
class PrometheusSource:
    """A live Prometheus server, read over its HTTP API."""

    url: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    record: dict[str, Any] | None = None  # when set, every answer is kept for --save
    _client: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        url = self.url.rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise BadInput(
                f"--prometheus {self.url!r} is not an http(s) URL.",
                "rightsize reads the Prometheus HTTP API.",
                "Give the server's base URL, e.g. --prometheus http://prometheus:9090",
            )
        self.url = url
        import httpx

        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s), follow_redirects=True)

    @property
    def where(self) -> str:
        return self.url

    def close(self) -> None:
        self._client.close()

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        import httpx

        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(BACKOFF_S * 2 ** (attempt - 1))
            try:
                with self._client.stream("GET", self.url + path, params=params) as resp:
                    body = self._read_capped(resp, params.get("query", path))
                    if resp.status_code >= 500:
                        last = f"HTTP {resp.status_code}"
                        continue
                    if resp.status_code not in (200, 400, 422):
                        raise BadInput(
                            f"{self.url}{path} answered HTTP {resp.status_code}.",
                            "That is not a Prometheus query API (or it needs authentication).",
                            "Point --prometheus at the server's base URL, e.g. http://prometheus:9090",
                        )
            except httpx.TimeoutException:
                last = f"no answer within {self.timeout_s:g} s"
                continue
            except httpx.TransportError as err:
                last = f"{type(err).__name__}: {err}"
                continue
            try:
                return json.loads(body)
            except json.JSONDecodeError:
                raise BadInput(
                    f"{self.url}{path} did not answer JSON.",
                    "That is not a Prometheus query API.",
                    "Point --prometheus at the server's base URL, e.g. http://prometheus:9090",
                ) from None
        raise BadInput(
            f"Prometheus at {self.url} is unreachable.",
            f"{self.retries + 1} attempts failed; last: {last}.",
            "Check the URL and that the server is up (curl URL/-/ready), or analyse a capture with --from FILE.",
        )

    def _read_capped(self, resp: Any, what: str) -> bytes:
        chunks: list[bytes] = []
        size = 0
        for chunk in resp.iter_bytes():
            size += len(chunk)
            if size > self.max_response_bytes:
                raise BadInput(
                    f"Prometheus's answer to {what!r} is larger than {self.max_response_bytes / 2**20:.0f} MiB.",
                    "Too many series or steps for one query (a selector that matches every job?).",
                    "Narrow --selector, shorten --window, raise --step, or raise --max-response-mib.",
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def query_range(self, query: str, window: Window) -> list[Series]:
        params = {"query": query, "start": window.start_s, "end": window.end_s, "step": window.step_s}
        payload = self._get("/api/v1/query_range", params)
        if self.record is not None:
            self.record.setdefault("queries", {})[query] = payload
        return parse_matrix(payload, query, self.url)

    def metric_names(self) -> set[str] | None:
        payload = self._get("/api/v1/label/__name__/values", {})
        if self.record is not None:
            self.record.setdefault("queries", {})[NAMES_QUERY] = payload
        if not isinstance(payload, dict) or payload.get("status") != "success":
            return None
        return {str(n) for n in payload.get("data") or []}


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
        """The capture's window: finite start before end, a positive step, at most
        MAX_CAPTURE_WINDOW_S long and MAX_CAPTURE_POINTS steps (what a live query may ask)."""
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
        start, end, step = (float(v) for v in values if isinstance(v, int | float))
        if not (step > 0 and end > start and end - start <= MAX_CAPTURE_WINDOW_S):
            raise BadInput(
                f"--from {self.path}: the capture's window is {start:g} to {end:g} s every {step:g} s.",
                f"A window runs forward (end_s after start_s), for at most {MAX_CAPTURE_WINDOW_S / 86400:g} days, "
                "with a positive step_s.",
                "Capture again with `rightsize monitor PLAN --prometheus URL --save FILE`.",
            )
        if (end - start) / step > MAX_CAPTURE_POINTS:
            raise BadInput(
                f"--from {self.path}: the capture's window has {(end - start) / step:,.0f} steps.",
                f"Prometheus answers at most {MAX_CAPTURE_POINTS:,} points per series; a capture holds no more.",
                "Capture again with a larger --step or a shorter --window.",
            )
        return Window(start, end, step)

    def query_range(self, query: str, window: Window) -> list[Series]:
        payload = (self.capture.get("queries") or {}).get(query)
        if payload is None:
            return []  # not captured: the same as a metric Prometheus did not have
        return parse_matrix(payload, query, str(self.path))

    def metric_names(self) -> set[str] | None:
        payload = (self.capture.get("queries") or {}).get(NAMES_QUERY)
        if not isinstance(payload, dict) or payload.get("status") != "success":
            return None
        return {str(n) for n in payload.get("data") or []}


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
    idx = np.rint((series.t_s - grid[0]) / step).astype(np.int64)
    ok = (idx >= 0) & (idx < grid.size)
    out[idx[ok]] = series.values[ok]
    return out
