"""An OpenAI-style streaming server that misbehaves on purpose, for the load-test tests (issue #15).

Loopback only (127.0.0.1, a free port) and bounded: every handler stops after `MAX_HANDLER_S`
seconds or at the first failed send, and never sends more than a few MB. The base URL picks the
behaviour: `http://127.0.0.1:PORT/<mode>/v1`, or `/mix/v1` to cycle through every mode by request.

Modes: ok, no_done (stream ends without [DONE]), malformed (a chunk that is not JSON),
not_object (a chunk that is a JSON list), negative_usage (completion_tokens -5), inflated_usage
(more tokens than max_tokens), undercount (fewer tokens than chunks), drip (one byte every 0.2 s,
forever), drip_headers (the status line one byte at a time), stall (headers, then silence),
long_line (megabytes without a newline), reset (an RST mid-stream), http_500, error_event (an
error object in the stream), empty ([DONE] with no tokens), huge (valid chunks past any size).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import socketserver
import struct
import threading
import time
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
