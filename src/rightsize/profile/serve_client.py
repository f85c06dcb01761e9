"""One streaming request to an OpenAI-compatible endpoint, read defensively (issue #15).

A request succeeds only when its stream ends properly (`data: [DONE]`), carried at least one
token, and the server's token count (when it sends one) agrees with the stream. Anything else
is a failure of one kind:

- `connect`: the connection was refused or the host is unknown;
- `http_error`: a status other than 200 (and 429), or an error object inside the stream;
- `rate_limited`: HTTP 429, the server turned the request away (not retried: a load test
  measures what the server does under the load, refusals included);
- `malformed`: a chunk that is not JSON or not in the OpenAI shape, a negative or non-integer
  token count, a line longer than `max_line_bytes`, a broken HTTP response;
- `reset`: the server closed or reset the connection mid-response;
- `truncated`: the stream ended without `[DONE]` (or with no tokens at all);
- `token_mismatch`: the server's `completion_tokens` is below the number of chunks that
  carried text (each holds at least one token) or above the `max_tokens` asked for;
- `too_large`: the response grew past `max_response_bytes`;
- `timeout`: no byte within `read_timeout_s`, or the whole request past `timeout_s` (a
  watchdog shuts the socket, so a server dripping one byte a second cannot hold it).
Standard library only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

FAILURE_KINDS = (
    "connect",
    "http_error",
    "malformed",
    "reset",
    "truncated",
    "token_mismatch",
    "too_large",
    "timeout",
    "rate_limited",
    "client_error",
)
MAX_LINE_BYTES = 1 << 20
MAX_RESPONSE_BYTES = 64 << 20


class _Failure(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


@dataclass
class StreamResult:
    start: float = 0.0
    end: float = 0.0
    chunks: list[float] = field(default_factory=list)  # arrival time of each chunk with text
    output_tokens: int = 0
    prompt_tokens: int | None = None  # as the server reported it (None: it did not); see serve.py
    failure: str | None = None  # one of FAILURE_KINDS
    error: str | None = None


@dataclass
class _Stream:
    """What has been read of one response so far."""

    max_tokens: int
    done: bool = False
    text_chunks: list[float] = field(default_factory=list)
    completion_tokens: int | None = None
    prompt_tokens: int | None = None


def stream_request(
    url: str,
    path: str,
    body: dict[str, Any],
    timeout_s: float,
    read_timeout_s: float | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
) -> StreamResult:
    """POST `body` to `url`'s host at `path` and read the SSE stream within the limits."""
    res = StreamResult()
    u = urllib.parse.urlsplit(url)
    read_timeout = min(read_timeout_s or timeout_s, timeout_s)
    conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(u.hostname or "127.0.0.1", u.port, timeout=read_timeout)
    timed_out = threading.Event()
    res.start = time.perf_counter()
    deadline = res.start + timeout_s
    held: list[socket.socket] = []  # the connection's socket (http.client drops its own reference)

    def expire() -> None:  # the overall limit: shut the socket whatever phase the request is in
        timed_out.set()
        for sock in held:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(timeout_s, expire)
    watchdog.daemon = True
    watchdog.start()
    stream = _Stream(max_tokens=int(body.get("max_tokens") or 0))
    try:
        conn.connect()
        if conn.sock is not None:
            held.append(conn.sock)
        if timed_out.is_set():
            expire()
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            detail = resp.read(300).decode("utf-8", errors="replace")
            kind = "rate_limited" if resp.status == 429 else "http_error"  # the server refused the load
            raise _Failure(kind, f"HTTP {resp.status}: {' '.join(detail.split())[:200]}")
        _read_events(resp, held[0], stream, deadline, read_timeout, max_line_bytes, max_response_bytes)
        _check_complete(stream)
        res.output_tokens = (
            stream.completion_tokens if stream.completion_tokens is not None else len(stream.text_chunks)
        )
        res.prompt_tokens = stream.prompt_tokens
    except _Failure as failure:
        # the watchdog shut the socket: whatever the reader then saw, the request timed out
        res.failure = "timeout" if timed_out.is_set() else failure.kind
        res.error = str(failure)
    except Exception as err:  # every way a socket or a response can break is a counted failure
        res.failure, res.error = _classify(err, timed_out.is_set())
    finally:
        watchdog.cancel()
        res.end = time.perf_counter()
        res.chunks = stream.text_chunks
        with contextlib.suppress(Exception):
            conn.close()
        for sock in held:
            with contextlib.suppress(OSError):
                sock.close()
    if timed_out.is_set() and res.failure not in (None, "timeout"):
        res.failure, res.error = "timeout", f"no complete response within {timeout_s:g} s"
    if res.failure is None and timed_out.is_set():
        res.failure, res.error = "timeout", f"no complete response within {timeout_s:g} s"
    return res


def _classify(err: BaseException, timed_out: bool) -> tuple[str, str]:
    text = f"{type(err).__name__}: {' '.join(str(err).split())[:200]}"
    if timed_out or isinstance(err, TimeoutError | socket.timeout):
        return "timeout", text
    if isinstance(err, ConnectionRefusedError | socket.gaierror):
        return "connect", text
    if isinstance(err, http.client.IncompleteRead):
        return "truncated", text
    if isinstance(err, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError):
        return "reset", text
    if isinstance(err, http.client.HTTPException | ValueError | UnicodeError):
        return "malformed", text
    if isinstance(err, OSError):
        return ("connect", text) if err.errno in (111, 113, 101, 99) else ("reset", text)
    return "client_error", text


def _read_events(
    resp: http.client.HTTPResponse,
    sock: socket.socket,
    stream: _Stream,
    deadline: float,
    read_timeout_s: float,
    max_line_bytes: int,
    max_response_bytes: int,
) -> None:
    """Read SSE lines with bounded buffers until `[DONE]`, the end of the body or a limit."""
    buf = b""
    total = 0
    while not stream.done:
        left = deadline - time.perf_counter()
        if left <= 0:
            raise _Failure("timeout", "the whole request took longer than its timeout")
        sock.settimeout(max(min(read_timeout_s, left), 1e-3))
        data = resp.read1(65536)
        if not data:
            break
        total += len(data)
        if total > max_response_bytes:
            raise _Failure("too_large", f"the response passed {max_response_bytes:,} bytes")
        buf += data
        *lines, buf = buf.split(b"\n")
        if len(buf) > max_line_bytes:
            raise _Failure("malformed", f"a line longer than {max_line_bytes:,} bytes")
        for line in lines:
            _event(line.strip(), stream)
            if stream.done:
                break
    # an unterminated last line is a cut-off event: `_check_complete` reports the stream as truncated


def _event(line: bytes, stream: _Stream) -> None:
    if not line.startswith(b"data:"):
        return  # comments, `event:` and `id:` lines, keep-alives
    data = line[5:].strip()
    if data == b"[DONE]":
        stream.done = True
        return
    try:
        obj = json.loads(data)
    except ValueError:
        raise _Failure("malformed", "a stream chunk is not JSON") from None
    if not isinstance(obj, dict):
        raise _Failure("malformed", "a stream chunk is not a JSON object")
    if obj.get("error") is not None:
        message = obj["error"].get("message") if isinstance(obj["error"], dict) else obj["error"]
        raise _Failure("http_error", f"error in the stream: {' '.join(str(message).split())[:200]}")
    usage = obj.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            raise _Failure("malformed", "`usage` is not an object")
        stream.completion_tokens = _count(usage, "completion_tokens", stream.completion_tokens)
        stream.prompt_tokens = _count(usage, "prompt_tokens", stream.prompt_tokens)
    choices = obj.get("choices") or []
    if not isinstance(choices, list):
        raise _Failure("malformed", "`choices` is not a list")
    for choice in choices:
        if not isinstance(choice, dict):
            raise _Failure("malformed", "a choice is not an object")
        delta = choice.get("delta") if "text" not in choice else None
        text = choice.get("text") if "text" in choice else (delta or {}).get("content")
        if text is not None and not isinstance(text, str):
            raise _Failure("malformed", "a choice's text is not a string")
        if text:
            stream.text_chunks.append(time.perf_counter())
            if stream.max_tokens and len(stream.text_chunks) > stream.max_tokens:
                raise _Failure(
                    "token_mismatch", f"more chunks of text than the {stream.max_tokens} tokens asked for"
                )


def _count(usage: dict[str, Any], key: str, previous: int | None) -> int | None:
    value = usage.get(key)
    if value is None:
        return previous
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Failure("malformed", f"usage.{key} is not a number")
    if isinstance(value, float) and not math.isfinite(value):  # an int of 400 digits is checked by the caller
        raise _Failure("malformed", f"usage.{key} is not a finite number")
    if value < 0 or value != int(value):
        raise _Failure("malformed", f"usage.{key} is {str(value)[:24]}, not a whole number of tokens >= 0")
    return int(value)


def _check_complete(stream: _Stream) -> None:
    if not stream.done:
        raise _Failure("truncated", "the stream ended without data: [DONE]")
    if not stream.text_chunks:
        raise _Failure("truncated", "the stream carried no tokens")
    n = stream.completion_tokens
    if n is not None:
        if n < len(stream.text_chunks):
            raise _Failure(
                "token_mismatch",
                f"usage.completion_tokens is {str(n)[:24]}, but {len(stream.text_chunks)} chunks carried text",
            )
        if stream.max_tokens and n > stream.max_tokens:
            raise _Failure(
                "token_mismatch",
                f"usage.completion_tokens is {str(n)[:24]}, more than max_tokens {stream.max_tokens}",
            )
