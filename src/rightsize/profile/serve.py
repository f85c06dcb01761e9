"""`rightsize profile serve`: load-test an OpenAI-compatible streaming endpoint.

Requests arrive as a Poisson process at `rate` per second, or `concurrency` clients send
back-to-back; either way the test stops issuing after `duration_s` or `max_requests`, and
every request has a timeout. Each request streams (`"stream": true`, SSE `data:` chunks)
and the client timestamps every chunk that carries text.

Metrics follow vLLM's `benchmark_serving.py`:
- TTFT: first token's arrival - request start;
- TPOT: (end-to-end latency - TTFT) / (output tokens - 1), requests with > 1 token;
- ITL: the gaps between consecutive token chunks (all requests pooled);
- E2EL: end-to-end latency;
- throughput: completed requests, output tokens and all tokens per second of benchmark
  duration (first request sent to last response finished);
- goodput: requests per second meeting every given SLO (TTFT, TPOT, E2EL).
Output tokens come from the server's usage report when it sends one, else one per chunk.
Standard library only (threads and http.client); torch-free.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.errors import BadInput
from rightsize.profile import jsonl
from rightsize.profile.prompts import prompt_source


@dataclass
class ServeConfig:
    url: str
    rate: float | None = None  # requests per second (Poisson); None with concurrency
    concurrency: int | None = None
    duration_s: float = 60.0
    max_requests: int = 1000
    input_len: int = 64  # prompt tokens (exact with a tokenizer, else one-token words: see prompts.py)
    output_len: int = 32
    request_timeout_s: float = 60.0
    chat: bool = False
    model: str | None = None
    slo: dict[str, float] = field(default_factory=dict)  # ttft_s, tpot_s, e2el_s
    seed: int = 0
    tokenizer: str | None = None  # a Hugging Face tokenizer id or folder; default: `model`


@dataclass
class _Req:
    index: int
    start: float = 0.0
    chunks: list[float] = field(default_factory=list)
    end: float = 0.0
    output_tokens: int = 0
    prompt_tokens: int = 0
    error: str | None = None

    def record(self) -> dict[str, Any]:
        ok = self.error is None and bool(self.chunks)
        rec: dict[str, Any] = {
            "type": "result",
            "kind": "serve",
            "key": f"serve:{self.index}",
            "status": "ok" if ok else "error",
            "start": self.start,
            "e2el_s": self.end - self.start,
            "output_tokens": self.output_tokens,
            "prompt_tokens": self.prompt_tokens,
        }
        if ok:
            rec["ttft_s"] = self.chunks[0] - self.start
            rec["itl_s"] = list(np.diff(self.chunks))
            if self.output_tokens > 1:
                rec["tpot_s"] = (rec["e2el_s"] - rec["ttft_s"]) / (self.output_tokens - 1)
        else:
            rec["error"] = self.error or "no tokens received"
        return rec


def _send(cfg: ServeConfig, req: _Req, prompt: str) -> None:
    u = urllib.parse.urlsplit(cfg.url)
    path = u.path.rstrip("/") + ("/chat/completions" if cfg.chat else "/completions")
    body: dict[str, Any] = {
        "model": cfg.model or "default",
        "max_tokens": cfg.output_len,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
        "temperature": 0.0,
    }
    if cfg.chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    conn_cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
    conn = conn_cls(u.hostname or "127.0.0.1", u.port, timeout=cfg.request_timeout_s)
    req.start = time.perf_counter()
    deadline = req.start + cfg.request_timeout_s
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            req.error = f"HTTP {resp.status}: {resp.read(300).decode(errors='replace')}"
            return
        usage_tokens = None
        while True:
            if time.perf_counter() > deadline:
                req.error = f"timed out after {cfg.request_timeout_s:g} s"
                break
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            obj = json.loads(data)
            if obj.get("usage"):
                usage_tokens = obj["usage"].get("completion_tokens")
                req.prompt_tokens = int(obj["usage"].get("prompt_tokens") or 0)
            for ch in obj.get("choices") or []:
                text = ch.get("text") if "text" in ch else (ch.get("delta") or {}).get("content")
                if text:
                    req.chunks.append(time.perf_counter())
        req.output_tokens = int(usage_tokens) if usage_tokens is not None else len(req.chunks)
    except (OSError, http.client.HTTPException, ValueError) as err:
        req.error = f"{type(err).__name__}: {err}"
    finally:
        req.end = time.perf_counter()
        conn.close()


def _pct(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    v = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(v.mean()),
        "median": float(np.median(v)),
        "std": float(v.std()),
        "p90": float(np.percentile(v, 90)),
        "p95": float(np.percentile(v, 95)),
        "p99": float(np.percentile(v, 99)),
    }


def summarise_requests(records: list[dict[str, Any]], slo: dict[str, float]) -> dict[str, Any]:
    ok = [r for r in records if r["status"] == "ok"]
    if records:
        t0 = min(r["start"] for r in records)
        t1 = max(r["start"] + r["e2el_s"] for r in records)
        duration = max(t1 - t0, 1e-9)
    else:
        duration = 0.0
    good = [r for r in ok if all(r.get(k, float("inf")) <= v for k, v in slo.items())]
    out_tokens = sum(r["output_tokens"] for r in ok)
    in_tokens = sum(r["prompt_tokens"] for r in ok)
    per_s = (lambda x: x / duration) if duration else (lambda x: 0.0)
    return {
        "requests": len(records),
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "duration_s": duration,
        "request_throughput_per_s": per_s(len(ok)),
        "output_token_throughput_per_s": per_s(out_tokens),
        "total_token_throughput_per_s": per_s(out_tokens + in_tokens),
        "goodput_requests_per_s": per_s(len(good)) if slo else None,
        "slo": slo,
        "ttft_s": _pct([r["ttft_s"] for r in ok]),
        "tpot_s": _pct([r["tpot_s"] for r in ok if "tpot_s" in r]),
        "itl_s": _pct([x for r in ok for x in r["itl_s"]]),
        "e2el_s": _pct([r["e2el_s"] for r in ok]),
        "errors": sorted({r.get("error", "") for r in records if r["status"] != "ok"})[:5],
    }


def run_serve_profile(
    cfg: ServeConfig, out: Path | None = None, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    if (cfg.rate is None) == (cfg.concurrency is None):
        raise BadInput(
            "Give exactly one of --rate and --concurrency.",
            "The load is either Poisson arrivals at a rate, or a fixed number of clients.",
            "Use e.g. --rate 4 or --concurrency 8.",
        )
    u = urllib.parse.urlsplit(cfg.url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise BadInput(
            f"'{cfg.url}' is not an http(s) URL.",
            "`profile serve` needs the endpoint's base URL.",
            "Pass e.g. --url http://127.0.0.1:8000/v1",
        )
    say = progress or (lambda _m: None)
    rng = random.Random(cfg.seed)
    writer = jsonl.ProfileWriter(out)
    prompts = prompt_source(cfg.tokenizer or cfg.model)
    hdr = jsonl.header("serve", {**cfg.__dict__, "input_len_counts": prompts.unit})
    writer.write(hdr)
    records: list[dict[str, Any]] = []
    lock = threading.Lock()
    threads: list[threading.Thread] = []
    stop_at = time.perf_counter() + cfg.duration_s
    counter = iter(range(cfg.max_requests))

    def one(i: int) -> None:
        r = _Req(i)
        _send(cfg, r, prompts.make(random.Random(cfg.seed * 100003 + i), cfg.input_len))
        rec = r.record()
        with lock:
            records.append(rec)
            writer.write(rec)
            if len(records) % 10 == 0:
                say(f"{len(records)} requests done")

    def client() -> None:
        while time.perf_counter() < stop_at:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            one(i)

    try:
        if cfg.concurrency is not None:
            threads = [threading.Thread(target=client, daemon=True) for _ in range(cfg.concurrency)]
            for t in threads:
                t.start()
        else:
            assert cfg.rate is not None
            for i in counter:
                if time.perf_counter() >= stop_at:
                    break
                t = threading.Thread(target=one, args=(i,), daemon=True)
                t.start()
                threads.append(t)
                time.sleep(rng.expovariate(cfg.rate))
        for t in threads:
            t.join(timeout=max(0.0, stop_at - time.perf_counter()) + cfg.request_timeout_s + 5)
    except KeyboardInterrupt:
        say("interrupted: every finished request is saved")
        raise
    finally:
        with lock:
            summary = summarise_requests(list(records), cfg.slo)
            writer.write({"type": "summary", "kind": "serve", "summary": summary})
        writer.close()
    return {"header": hdr, "summary": summary, "results": records}
