"""A tiny OpenAI-compatible streaming server that generates tokens with a small randomly
initialised PyTorch decoder (needs torch). For testing `rightsize profile serve` on loopback:

    python -m rightsize.profile.serve_server --port 8000

POST /v1/completions and /v1/chat/completions with `"stream": true` answer with Server-Sent
Events (`data: {...}` chunks, then `data: [DONE]`) in OpenAI's format, one token per chunk,
and a final usage chunk when `stream_options.include_usage` is set; without streaming, one
JSON body. Tokens are bytes (vocabulary 256): the prompt's UTF-8 bytes are its tokens. It
always generates `max_tokens` tokens (as benchmarks run with ignore_eos). One engine lock
serialises decoding steps across requests, so concurrent requests queue as on one device.
Standard library only (http.server); no web framework.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import torch

from rightsize.profile.torch_model import build_decoder
from rightsize.spec.model import ModelArch

TINY = ModelArch(name="tiny-serve", layers=1, hidden=64, heads=4, ffn_hidden=128, vocab=256, mlp="gelu")


class Engine:
    def __init__(self, arch: ModelArch = TINY, context: int = 128, seed: int = 0) -> None:
        self.model = build_decoder(arch, seed=seed).eval()
        self.context = context
        self.lock = threading.Lock()

    @torch.no_grad()
    def next_token(self, ids: list[int]) -> int:
        with self.lock:
            x = torch.tensor([ids[-self.context :]], dtype=torch.long)
            logits = self.model(x)[0, -1]
            return int(torch.argmax(logits))


def _token_text(tok: int) -> str:
    return chr(32 + tok % 95)  # printable, one character per token


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _json(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": self.server.model_name, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        chat = self.path.rstrip("/").endswith("/chat/completions")
        if not (chat or self.path.rstrip("/").endswith("/completions")):
            self._json(404, {"error": {"message": "not found"}})
            return
        length = int(self.headers.get("Content-Length", "0"))
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON"}})
            return
        if chat:
            prompt = "".join(str(m.get("content", "")) for m in req.get("messages", []))
        else:
            prompt = str(req.get("prompt", ""))
        ids = list(prompt.encode("utf-8")) or [0]
        n_prompt = len(ids)
        max_tokens = int(req.get("max_tokens") or req.get("max_completion_tokens") or 16)
        rid = f"cmpl-{uuid.uuid4().hex[:12]}"
        created = int(time.time())
        engine = self.server.engine

        def chunk(text: str | None, finish: str | None = None) -> dict[str, Any]:
            if chat:
                delta = {"content": text} if text is not None else {}
                choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
                obj = "chat.completion.chunk"
            else:
                choice = {"index": 0, "text": text or "", "finish_reason": finish}
                obj = "text_completion"
            return {
                "id": rid,
                "object": obj,
                "created": created,
                "model": self.server.model_name,
                "choices": [choice],
            }

        usage = lambda n: {"prompt_tokens": n_prompt, "completion_tokens": n, "total_tokens": n_prompt + n}  # noqa: E731
        if not req.get("stream"):
            out = []
            for _ in range(max_tokens):
                tok = engine.next_token(ids)
                ids.append(tok)
                out.append(_token_text(tok))
            body = chunk("".join(out), "length")
            body["usage"] = usage(max_tokens)
            self._json(200, body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            if chat:
                first = chunk(None)
                first["choices"][0]["delta"] = {"role": "assistant", "content": ""}
                self._send(first)
            for i in range(max_tokens):
                tok = engine.next_token(ids)
                ids.append(tok)
                self._send(chunk(_token_text(tok), "length" if i == max_tokens - 1 else None))
            if (req.get("stream_options") or {}).get("include_usage"):
                final = chunk(None)
                final["choices"] = []
                final["usage"] = usage(max_tokens)
                self._send(final)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _send(self, obj: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, engine: Engine | None = None) -> None:
        super().__init__((host, port), Handler)
        self.engine = engine or Engine()
        self.model_name = "rightsize-tiny"

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/v1"


def start_in_thread(port: int = 0) -> Server:
    """A server on 127.0.0.1 (a free port by default) answering from a daemon thread."""
    srv = Server(port=port)
    threading.Thread(target=srv.serve_forever, name="rightsize-serve", daemon=True).start()
    return srv


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    args = p.parse_args(argv)
    srv = Server(args.host, args.port)
    print(f"serving on {srv.url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        srv.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
