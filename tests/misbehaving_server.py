"""An OpenAI-style streaming server that misbehaves on purpose, for the load-test tests (issue #15).

Loopback only (127.0.0.1, a free port) and bounded: every handler stops after `MAX_HANDLER_S`
seconds or at the first failed send, and never sends more than a few MB. The base URL picks the
behaviour: `http://127.0.0.1:PORT/<mode>/v1`, or `/mix/v1` to cycle through every mode by request.

Modes: ok, no_done (stream ends without [DONE]), malformed (a chunk that is not JSON),
not_object (a chunk that is a JSON list), negative_usage (completion_tokens -5), inflated_usage
(more tokens than max_tokens), undercount (fewer tokens than chunks), drip (one byte every 0.2 s,
forever), drip_headers (the status line one byte at a time), stall (headers, then silence),
long_line (megabytes without a newline), reset (an RST mid-stream), http_500, error_event (an
error object in the stream), empty ([DONE] with no tokens), huge (valid chunks past any size),
inflated_prompt (usage claims 1e20 prompt tokens), bigint_prompt (a 400-digit prompt_tokens),
http_429 (Too Many Requests).

The second half of the file is a hostile Prometheus for `rightsize monitor` (see below).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import socket
import socketserver
import struct
import threading
import time
import zlib
from typing import Any

MAX_HANDLER_S = 20.0
MODES = (
    "ok",
    "no_done",
    "malformed",
    "not_object",
    "negative_usage",
    "inflated_usage",
    "undercount",
    "drip",
    "drip_headers",
    "stall",
    "long_line",
    "reset",
    "http_500",
    "error_event",
    "empty",
    "huge",
    "inflated_prompt",
    "bigint_prompt",
    "http_429",
)
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def _chunk(text: str | None = None, usage: dict[str, Any] | None = None) -> bytes:
    obj: dict[str, Any] = {"id": "x", "object": "text_completion", "choices": []}
    if text is not None:
        obj["choices"] = [{"index": 0, "text": text, "finish_reason": None}]
    if usage is not None:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


class _Handler(socketserver.BaseRequestHandler):
    server: MisbehavingServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(5)
        try:
            path, max_tokens = self._read_request(sock)
        except (OSError, ValueError):
            return
        mode = path.strip("/").split("/")[0]
        if mode == "mix":
            mode = next(self.server.cycle)
        self.server.seen.append(mode)
        with contextlib.suppress(OSError):  # the client went away: that is the point of most modes
            getattr(self, f"_{mode}", self._ok)(sock, max(1, min(max_tokens, 64)))

    def _read_request(self, sock: socket.socket) -> tuple[str, int]:
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            part = sock.recv(4096)
            if not part:
                raise ValueError("closed")
            data += part
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = next(
            (int(v) for k, _, v in (x.partition(":") for x in lines[1:]) if k.lower() == "content-length"), 0
        )
        while len(body) < min(length, 1 << 20):
            part = sock.recv(65536)
            if not part:
                break
            body += part
        req = json.loads(body or b"{}")
        return lines[0].split(" ")[1], int(req.get("max_tokens") or 8)

    def _tokens(self, sock: socket.socket, n: int) -> None:
        for _ in range(n):
            sock.sendall(_chunk("a"))

    def _ok(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD)
        self._tokens(sock, n)
        sock.sendall(_chunk(usage={"prompt_tokens": 3, "completion_tokens": n}) + b"data: [DONE]\n\n")

    def _no_done(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD)
        self._tokens(sock, n)

    def _malformed(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD + _chunk("a") + b'data: {"choices": [{"text": \n\n')
        self._tokens(sock, n)
        sock.sendall(b"data: [DONE]\n\n")

    def _not_object(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD + b"data: [1, 2, 3]\n\n" + b"data: [DONE]\n\n")

    def _usage(self, sock: socket.socket, n: int, count: int) -> None:
        sock.sendall(HEAD)
        self._tokens(sock, n)
        sock.sendall(_chunk(usage={"prompt_tokens": 3, "completion_tokens": count}) + b"data: [DONE]\n\n")

    def _negative_usage(self, sock: socket.socket, n: int) -> None:
        self._usage(sock, n, -5)

    def _inflated_usage(self, sock: socket.socket, n: int) -> None:
        self._usage(sock, n, 10**9)

    def _undercount(self, sock: socket.socket, n: int) -> None:
        self._usage(sock, max(n, 2), 1)

    def _inflated_prompt(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD)
        self._tokens(sock, n)
        sock.sendall(_chunk(usage={"prompt_tokens": 1e20, "completion_tokens": n}) + b"data: [DONE]\n\n")

    def _bigint_prompt(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD)
        self._tokens(sock, n)
        usage = b'{"prompt_tokens": ' + b"9" * 400 + b', "completion_tokens": ' + str(n).encode() + b"}"
        sock.sendall(b'data: {"choices": [], "usage": ' + usage + b"}\n\ndata: [DONE]\n\n")

    def _drip(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD)
        payload = itertools.cycle(_chunk("a"))
        end = time.monotonic() + MAX_HANDLER_S
        while time.monotonic() < end:
            sock.sendall(bytes([next(payload)]))
            time.sleep(0.2)

    def _drip_headers(self, sock: socket.socket, n: int) -> None:
        end = time.monotonic() + MAX_HANDLER_S
        for byte in itertools.cycle(HEAD[:20]):
            if time.monotonic() > end:
                return
            sock.sendall(bytes([byte]))
            time.sleep(0.2)

    def _stall(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD)
        time.sleep(MAX_HANDLER_S)

    def _long_line(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD + b"data: ")
        for _ in range(4):  # 4 MB, no newline: the client's line limit must stop it
            sock.sendall(b"x" * (1 << 20))

    def _reset(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD + _chunk("a"))
        time.sleep(0.05)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        sock.close()

    def _http_500(self, sock: socket.socket, n: int) -> None:
        body = b'{"error": {"message": "engine exploded"}}'
        sock.sendall(
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )

    def _http_429(self, sock: socket.socket, n: int) -> None:
        sock.sendall(
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 4\r\n"
            b"Connection: close\r\n\r\nbusy"
        )

    def _error_event(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD + _chunk("a") + b'data: {"error": {"message": "out of KV cache"}}\n\n')

    def _empty(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD + b"data: [DONE]\n\n")

    def _huge(self, sock: socket.socket, n: int) -> None:
        sock.sendall(HEAD)
        block = _chunk("a") * 1000
        for _ in range(400):  # ~50 MB at most
            sock.sendall(block)


class MisbehavingServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.cycle = itertools.cycle(MODES)
        self.seen: list[str] = []

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{mode}/v1"


def start() -> MisbehavingServer:
    srv = MisbehavingServer()
    threading.Thread(target=srv.serve_forever, name="misbehaving-server", daemon=True).start()
    return srv


# --- A hostile Prometheus (issue #24) -------------------------------------------------------------
#
# `start_prometheus()` serves `http://127.0.0.1:PORT/<mode>` as a Prometheus base URL. Transport modes
# misbehave on every request (the metric-name list included); answer modes answer the name list
# properly and misbehave only in `query_range` answers. The good answer carries one serving metric,
# `vllm:request_success_total`, with `RATE` on every step of the query's own grid.

PROM_NAMES = ["vllm:request_success_total"]
RATE = 50.0
PROM_TRANSPORT = (
    "drip",  # a valid header, then the body one byte every 0.3 s
    "drip_headers",  # the status line one byte every 0.3 s
    "stall",  # headers, then silence
    "rate_limited",  # 429, Retry-After: 0, every time
    "rate_limited_long",  # 429, Retry-After: a day
    "rate_limited_once",  # 429 with Retry-After: 1 on the first request, then good answers
    "busy_date_once",  # 503 with Retry-After as an HTTP date ~2 s ahead on the first request, then good
    "redirect_loop",  # 302 to itself
    "redirect_ftp",  # 302 to ftp://
    "false_gzip",  # Content-Encoding: gzip on plain JSON
    "gzip_bomb",  # 200 MB of zeros in a ~200 kB gzip body
    "html",  # a login page instead of JSON
    "huge",  # a body that never ends
    "deep_json",  # 100,000 nested lists
    "big_int",  # a 5,000-digit number
    "http_401",  # authentication wanted
)
PROM_ANSWER = (
    "ok",
    "data_missing",
    "data_list",
    "result_not_list",
    "series_not_object",
    "labels_not_strings",
    "values_not_numbers",
    "values_not_pairs",
    "nan",  # NaN on every step: no samples, not an error
    "inf",
    "negative",
    "unordered",  # timestamps out of order
    "error_status",  # status "error" with a long reason
)


def _http(status: str, body: bytes, headers: dict[str, str] | None = None) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    for k, v in (headers or {"Content-Type": "application/json"}).items():
        head += f"{k}: {v}\r\n"
    return head.encode() + b"\r\n" + body


def _matrix(values: list[list[Any]], labels: Any = None) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": labels or {}, "values": values}]},
    }


class _PromHandler(socketserver.BaseRequestHandler):
    server: HostilePrometheus

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(5)
        try:
            target = self._read_target(sock)
        except (OSError, ValueError):
            return
        from urllib.parse import parse_qs, urlsplit

        u = urlsplit(target)
        key, _, path = u.path.strip("/").partition("/")
        mode = key.split("-")[0]  # "/rate_limited_once-2": the same mode, counted apart
        with self.server.lock:
            self.server.seen.append(key)
            n = self.server.seen.count(key)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        with contextlib.suppress(OSError):
            if mode in PROM_TRANSPORT:
                self._transport(sock, mode, n, target, path, q)
            else:
                sock.sendall(self._answer(mode, path, q))

    def _read_target(self, sock: socket.socket) -> str:
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            part = sock.recv(4096)
            if not part:
                raise ValueError("closed")
            data += part
        return data.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[1]

    def _good(self, path: str, q: dict[str, str], value: Any = RATE) -> dict[str, Any]:
        if path.endswith("label/__name__/values"):
            return {"status": "success", "data": PROM_NAMES}
        start, end, step = (float(q.get(k, "0")) for k in ("start", "end", "step"))
        n = min(int((end - start) / step) + 1 if step > 0 else 1, 11000)
        return _matrix([[start + i * step, str(value)] for i in range(n)])

    def _answer(self, mode: str, path: str, q: dict[str, str]) -> bytes:
        if path.endswith("label/__name__/values") or mode == "ok":
            return _http("200 OK", json.dumps(self._good(path, q)).encode())
        t = float(q.get("start", "0"))
        payloads: dict[str, Any] = {
            "data_missing": {"status": "success"},
            "data_list": {"status": "success", "data": [1, 2]},
            "result_not_list": {"status": "success", "data": {"resultType": "matrix", "result": {"a": 1}}},
            "series_not_object": {"status": "success", "data": {"resultType": "matrix", "result": ["x"]}},
            "labels_not_strings": _matrix([[t, "1"]], {"job": {"nested": 1}}),
            "values_not_numbers": _matrix([[t, "fifty"], [t + 60, "x"]]),
            "values_not_pairs": _matrix([[t, "1", "2"]]),
            "nan": self._good(path, q, "NaN"),
            "inf": self._good(path, q, "+Inf"),
            "negative": self._good(path, q, -RATE),
            "unordered": _matrix([[t + 60, "1"], [t, "1"]]),
            "error_status": {"status": "error", "errorType": "internal", "error": "boom " * 10000},
        }
        return _http("200 OK", json.dumps(payloads[mode]).encode())

    def _transport(
        self, sock: socket.socket, mode: str, n: int, target: str, path: str, q: dict[str, str]
    ) -> None:
        good = json.dumps(self._good(path, q)).encode()
        end = time.monotonic() + MAX_HANDLER_S
        if mode == "drip":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            for byte in itertools.cycle(good):
                if time.monotonic() > end:
                    return
                sock.sendall(bytes([byte]))
                time.sleep(0.3)
        elif mode == "drip_headers":
            for byte in itertools.cycle(b"HTTP/1.1 200 OK\r\nX-Slow: "):
                if time.monotonic() > end:
                    return
                sock.sendall(bytes([byte]))
                time.sleep(0.3)
        elif mode == "stall":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
            time.sleep(MAX_HANDLER_S)
        elif mode == "huge":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n[")
            for _ in range(200):  # 50 MB at most
                sock.sendall(b"1," * (1 << 17))
        else:
            sock.sendall(self._canned(mode, n, target, good))

    def _canned(self, mode: str, n: int, target: str, good: bytes) -> bytes:
        import email.utils

        if mode in ("rate_limited_once", "busy_date_once") and n > 1:
            return _http("200 OK", good)
        canned = {
            "rate_limited": lambda: _http("429 Too Many Requests", b"slow down", {"Retry-After": "0"}),
            "rate_limited_long": lambda: _http("429 Too Many Requests", b"", {"Retry-After": "86400"}),
            "rate_limited_once": lambda: _http("429 Too Many Requests", b"", {"Retry-After": "1"}),
            "busy_date_once": lambda: _http(
                "503 Service Unavailable",
                b"",
                {"Retry-After": email.utils.formatdate(time.time() + 2, usegmt=True)},
            ),
            "redirect_loop": lambda: _http("302 Found", b"", {"Location": target}),
            "redirect_ftp": lambda: _http("302 Found", b"", {"Location": "ftp://127.0.0.1/x"}),
            "false_gzip": lambda: _http("200 OK", good, {"Content-Encoding": "gzip"}),
            "gzip_bomb": lambda: _http("200 OK", _gzip_bomb(), {"Content-Encoding": "gzip"}),
            "html": lambda: _http(
                "200 OK", b"<html><body>Sign in</body></html>", {"Content-Type": "text/html"}
            ),
            "deep_json": lambda: _http("200 OK", b"[" * 100_000 + b"]" * 100_000),
            "big_int": lambda: _http("200 OK", b'{"status": "success", "data": ' + b"9" * 5000 + b"}"),
            "http_401": lambda: _http("401 Unauthorized", b"", {"WWW-Authenticate": "Basic"}),
        }
        return canned[mode]()


@functools.cache
def _gzip_bomb() -> bytes:
    """64 MB of zeros as a ~64 kB gzip body, built once in 1 MB pieces."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"0" * (1 << 20)
    return b"".join([*(z.compress(block) for _ in range(64)), z.flush()])


class HostilePrometheus(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _PromHandler)
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def url(self, mode: str) -> str:
        """The base URL of a server in `mode` (`mode-N` for a mode whose requests are counted apart)."""
        return f"http://127.0.0.1:{self.server_address[1]}/{mode}"

    def count(self, key: str) -> int:
        with self.lock:
            return self.seen.count(key)


def start_prometheus() -> HostilePrometheus:
    srv = HostilePrometheus()
    threading.Thread(target=srv.serve_forever, name="hostile-prometheus", daemon=True).start()
    return srv
