"""One bounded HTTP GET for the Prometheus API: a wall-clock deadline, a size cap, retries.

Every limit holds against a hostile server, not only a slow one:

- the whole request (connect, headers, body, redirects, retries) ends by its deadline: a
  watchdog shuts the socket when the deadline passes, so a server that drips one byte every
  few seconds, in the body or in the status line, cannot hold it (a per-read timeout would
  wait forever);
- the body is read in pieces and counted after decoding, so neither a huge answer nor a
  small gzip bomb can fill memory; a body that claims an encoding it does not have is an
  error, not a traceback;
- redirects are followed at most `MAX_REDIRECTS` times, and only to http(s);
- HTTP 429 and 503 (the server asks the client to come back) and connection failures, time-
  outs and other 5xx are retried a bounded number of times with exponential backoff;
  `Retry-After` (seconds or an HTTP date) is honoured, capped to the time left.

`get()` returns (status, body) for any other status; `FetchFailed` says why nothing came back.
Standard library only (http.client), like the serving load tester.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import math
import socket
import threading
import time
import urllib.parse
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_REDIRECTS = 5
BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
RETRY_STATUSES = (429, 502, 503, 504)  # the server is busy or a proxy lost it: ask again
PIECE = 65536


class FetchFailed(Exception):
    """No usable answer: `kind` is one of deadline (tries timed out or the time allowed ran out),
    too_large, encoding, redirects, rate_limited (429 to the last), unavailable (5xx or connection
    errors to the last)."""

    def __init__(self, kind: str, detail: str, attempts: int = 1) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.attempts = attempts


class _Retry(Exception):
    def __init__(
        self, detail: str, wait_s: float | None = None, status: int | None = None, timed_out: bool = False
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.wait_s = wait_s
        self.status = status
        self.timed_out = timed_out


@dataclass
class Limits:
    """How long one request may take, how many bytes it may read and how often it is retried."""

    deadline: float  # time.monotonic() by which everything (every try, every wait) must be done
    max_bytes: int
    attempt_s: float = math.inf  # the longest one try may take
    retries: int = 2
    backoff_s: float = BACKOFF_S
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def left(self) -> float:
        return self.deadline - time.monotonic()


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """`Retry-After` in seconds: a non-negative number, or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def get(url: str, limits: Limits, accept: str = "application/json") -> tuple[int, bytes]:
    """GET `url` within `limits`; retry what the server or the network asks to retry."""
    last: _Retry | None = None
    tries, why_stopped = 0, ""
    for attempt in range(limits.retries + 1):
        if attempt:
            wait = _backoff(limits, attempt, last)
            if wait >= limits.left():
                why_stopped = f"; the next try (in {wait:,.1f} s) would pass the deadline"
                break  # say why the last one failed
            limits.sleep(wait)
        if limits.left() <= 0:
            why_stopped = "; the time allowed ran out"
            break
        tries += 1
        try:
            return _follow(url, limits, accept)
        except _Retry as err:
            last = err
    if last is None:
        raise FetchFailed("deadline", "the time allowed ran out before the first try", 0)
    kind = "rate_limited" if last.status == 429 else "deadline" if last.timed_out else "unavailable"
    raise FetchFailed(kind, last.detail + why_stopped, tries)


def _backoff(limits: Limits, attempt: int, last: _Retry | None) -> float:
    wait = min(limits.backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S)
    if last is not None and last.wait_s is not None:
        wait = max(wait, last.wait_s)  # the server said when; never sooner
    return wait


def _follow(url: str, limits: Limits, accept: str) -> tuple[int, bytes]:
    """One try: follow up to MAX_REDIRECTS redirects; 429/5xx/network errors raise _Retry."""
    for _ in range(MAX_REDIRECTS + 1):
        status, headers, body = _one(url, limits, accept)
        if status in (301, 302, 303, 307, 308):
            target = headers.get("location")
            if not target:
                return status, body
            url = urllib.parse.urljoin(url, target)
            if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
                raise FetchFailed("redirects", f"a redirect to a non-http(s) address ({url[:120]})")
            continue
        if status in RETRY_STATUSES or status >= 500:
            wait = retry_after_s(headers.get("retry-after")) if status in (429, 503) else None
            raise _Retry(f"HTTP {status}", wait, status)
        return status, body
    raise FetchFailed("redirects", f"more than {MAX_REDIRECTS} redirects (a redirect loop?)")


def _one(url: str, limits: Limits, accept: str) -> tuple[int, dict[str, str], bytes]:
    """One HTTP exchange, shut by a watchdog at the deadline whatever phase it is in."""
    overall = limits.left()
    if overall <= 0:
        raise FetchFailed("deadline", "no time left for the request")
    left = min(overall, limits.attempt_s)
    u = urllib.parse.urlsplit(url)
    cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = cls(u.hostname or "", u.port, timeout=left)
    expired = threading.Event()
    held: list[socket.socket] = []

    def expire() -> None:
        expired.set()
        for sock in held:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(left, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.connect()
        if conn.sock is not None:
            held.append(conn.sock)
        if expired.is_set():
            expire()
        target = (u.path or "/") + (f"?{u.query}" if u.query else "")
        conn.request("GET", target, headers={"Accept": accept, "Accept-Encoding": "gzip"})
        resp = conn.getresponse()
        headers = {k.lower(): v for k, v in resp.getheaders()}
        body = _read_body(resp, headers.get("content-encoding", ""), limits, expired)
        return resp.status, headers, body
    except FetchFailed as err:
        if err.kind == "deadline" and expired.is_set():
            _timed_out(limits, left)
        raise
    except _Retry:
        raise
    except Exception as err:  # every way a socket or a response can break
        if expired.is_set() or isinstance(err, TimeoutError):
            _timed_out(limits, left)
        raise _Retry(f"{type(err).__name__}: {' '.join(str(err).split())[:160]}") from None
    finally:
        watchdog.cancel()
        with contextlib.suppress(Exception):
            conn.close()
        for sock in held:
            with contextlib.suppress(OSError):
                sock.close()


def _timed_out(limits: Limits, took: float) -> None:
    """A try ran out of time: retry while the overall deadline allows, else stop."""
    if limits.left() > 0:
        raise _Retry(f"no complete answer within {took:.3g} s", timed_out=True) from None
    raise FetchFailed("deadline", f"no complete answer within {took:.3g} s (the time allowed)") from None


def _read_body(
    resp: http.client.HTTPResponse, encoding: str, limits: Limits, expired: threading.Event
) -> bytes:
    """The body, decoded, in pieces: stop at the deadline or past `max_bytes` (after decoding)."""
    encoding = encoding.strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        wbits = 16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS
        inflate: zlib._Decompress | None = zlib.decompressobj(wbits)
    elif encoding in ("", "identity"):
        inflate = None
    else:
        raise FetchFailed(
            "encoding", f"the answer is in an encoding this client did not ask for ({encoding[:40]!r})"
        )
    out: list[bytes] = []
    size = 0
    while True:
        if expired.is_set():
            raise FetchFailed("deadline", "the answer did not arrive in full in time")
        piece = resp.read1(PIECE)
        if not piece:
            break
        if inflate is not None:
            try:
                piece = inflate.decompress(piece, limits.max_bytes - size + 1)
            except zlib.error:
                raise FetchFailed(
                    "encoding", f"the answer claims Content-Encoding {encoding} but is not"
                ) from None
        size += len(piece)
        if size > limits.max_bytes:
            raise FetchFailed("too_large", f"the answer is larger than {limits.max_bytes:,} bytes")
        out.append(piece)
    if inflate is not None and not inflate.eof:
        raise FetchFailed(
            "encoding", f"the answer claims Content-Encoding {encoding} but is cut short or not {encoding}"
        )
    if expired.is_set():
        raise FetchFailed("deadline", "the answer did not arrive in full in time")
    return b"".join(out)
