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

A request counts as completed only when its stream ends with `[DONE]`, carried tokens and
the server's token count agrees with the stream (`serve_client`); every other request is a
failure counted by kind (malformed, reset, http_error, truncated, timeout, ...) and never
meets an SLO. `summary.slo_met` says whether `slo_attainment` of all requests met every
SLO (without SLOs: whether every request completed); the CLI exits 1 when it is false.
Standard library only (threads and http.client); torch-free.
"""

from __future__ import annotations

import math
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
from rightsize.profile.prompts import load_prompt_set, prompt_source
from rightsize.profile.serve_client import FAILURE_KINDS, StreamResult, stream_request


@dataclass
class ServeConfig:
    url: str
    rate: float | None = None  # requests per second (Poisson); None with concurrency
    concurrency: int | None = None
    duration_s: float = 60.0
    max_requests: int = 1000
    input_len: int = 64  # prompt tokens (exact with a tokenizer, else one-token words: see prompts.py)
    output_len: int = 32
    request_timeout_s: float = 60.0  # the whole request, first byte to [DONE]
    read_timeout_s: float | None = None  # the longest wait for the next byte (default: request_timeout_s)
    chat: bool = False
    model: str | None = None
    slo: dict[str, float] = field(default_factory=dict)  # ttft_s, tpot_s, e2el_s
    slo_attainment: float = 0.95  # the SLO is met when this share of all requests meets every SLO
    seed: int = 0
    tokenizer: str | None = None  # a Hugging Face tokenizer id or folder; default: `model`
    dataset: str | None = None  # a prompt set (ShareGPT JSON or JSON Lines, `prompts.load_prompt_set`)
    dataset_output_len: bool = True  # with a dataset: output lengths from its replies (else output_len)


# A chat template wraps the prompt in role markers and special tokens: allow this many more tokens.
CHAT_TEMPLATE_TOKENS = 256


@dataclass(frozen=True)
class Sent:
    """What was sent: the prompt's length in bytes and in the units it was made of (`prompts.py`)."""

    prompt_bytes: int
    prompt_units: int
    chat: bool = False

    @property
    def max_prompt_tokens(self) -> int:
        """No tokenizer makes more tokens than bytes (byte-level BPE and byte fallback: one at most)."""
        return self.prompt_bytes + (CHAT_TEMPLATE_TOKENS if self.chat else 16)


def _prompt_tokens(res: StreamResult, sent: Sent | None) -> tuple[int, str | None]:
    """The prompt tokens to count, and why the server's figure was not used (None: it was)."""
    claimed = res.prompt_tokens
    if sent is None:
        return (claimed or 0), None
    if claimed is None:
        return sent.prompt_units, None  # no usage report: the count the prompt was made with
    if 1 <= claimed <= sent.max_prompt_tokens:
        return claimed, None
    shown = str(claimed) if len(str(claimed)) <= 24 else f"a {len(str(claimed))}-digit number"
    return sent.prompt_units, (
        f"the server reported {shown} prompt tokens for a prompt of {sent.prompt_bytes} bytes "
        f"(plausible: 1 to {sent.max_prompt_tokens}); counted {sent.prompt_units} instead"
    )


def _record(index: int, res: StreamResult, sent: Sent | None = None) -> dict[str, Any]:
    """One request's JSON Lines record; `status` is "ok" only for a complete, counted stream.

    A usage report that cannot be true (more prompt tokens than the prompt has bytes) is not
    believed: the record says so (`usage_trusted: false`, `usage_note`) and counts the prompt
    as it was made."""
    ok = res.failure is None
    prompt_tokens, untrusted = _prompt_tokens(res, sent) if ok else (0, None)
    rec: dict[str, Any] = {
        "type": "result",
        "kind": "serve",
        "key": f"serve:{index}",
        "status": "ok" if ok else "error",
        "start": res.start,
        "e2el_s": max(res.end - res.start, 0.0),
        "output_tokens": res.output_tokens if ok else 0,
        "prompt_tokens": prompt_tokens,
    }
    if untrusted:
        rec["usage_trusted"] = False
        rec["usage_note"] = untrusted
    if ok:
        rec["ttft_s"] = res.chunks[0] - res.start
        rec["itl_s"] = [float(x) for x in np.diff(res.chunks)]
        if res.output_tokens > 1:
            rec["tpot_s"] = (rec["e2el_s"] - rec["ttft_s"]) / (res.output_tokens - 1)
    else:
        rec["failure"] = res.failure
        rec["error"] = res.error or res.failure
    return rec


def _send(
    cfg: ServeConfig, index: int, prompt: str, prompt_units: int | None = None, output_len: int | None = None
) -> dict[str, Any]:
    u = urllib.parse.urlsplit(cfg.url)
    path = u.path.rstrip("/") + ("/chat/completions" if cfg.chat else "/completions")
    body: dict[str, Any] = {
        "model": cfg.model or "default",
        "max_tokens": output_len or cfg.output_len,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": True,
        "temperature": 0.0,
    }
    if cfg.chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    res = stream_request(cfg.url, path, body, cfg.request_timeout_s, cfg.read_timeout_s)
    units = cfg.input_len if prompt_units is None else prompt_units
    return _record(index, res, Sent(len(prompt.encode("utf-8")), units, cfg.chat))


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


def summarise_requests(
    records: list[dict[str, Any]], slo: dict[str, float], attainment: float = 0.95
) -> dict[str, Any]:
    """Throughput, latency percentiles, failures by kind, goodput and whether the SLO was met.

    A failed request never meets an SLO: `slo_met` asks that `attainment` of *all* requests
    (failed ones included) complete within every SLO. Without SLOs, `slo_met` is whether every
    request completed."""
    ok = [r for r in records if r["status"] == "ok"]
    if records:
        t0 = min(r["start"] for r in records)
        t1 = max(r["start"] + r["e2el_s"] for r in records)
        duration = max(t1 - t0, 1e-9)
    else:
        duration = 0.0
    good = [r for r in ok if all(r.get(k, math.inf) <= v for k, v in slo.items())]
    out_tokens = sum(r["output_tokens"] for r in ok)
    in_tokens = sum(r["prompt_tokens"] for r in ok)
    per_s = (lambda x: x / duration) if duration else (lambda x: 0.0)
    failures = {kind: 0 for kind in FAILURE_KINDS}
    for r in records:
        if r["status"] != "ok":
            kind = r.get("failure") or "client_error"
            failures[kind] = failures.get(kind, 0) + 1
    good_fraction = len(good) / len(records) if records else 0.0
    return {
        "requests": len(records),
        "completed": len(ok),
        "failed": len(records) - len(ok),
        "failures": {kind: n for kind, n in failures.items() if n},
        "duration_s": duration,
        "request_throughput_per_s": per_s(len(ok)),
        "output_token_throughput_per_s": per_s(out_tokens),
        "total_token_throughput_per_s": per_s(out_tokens + in_tokens),
        "total_input_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "goodput_requests_per_s": per_s(len(good)) if slo else None,
        "slo": slo,
        "slo_attainment_target": attainment if slo else None,
        "slo_attainment": good_fraction if slo else None,
        "slo_met": (bool(records) and good_fraction >= attainment)
        if slo
        else bool(records) and not (len(records) - len(ok)),
        "ttft_s": _pct([r["ttft_s"] for r in ok]),
        "tpot_s": _pct([r["tpot_s"] for r in ok if "tpot_s" in r]),
        "itl_s": _pct([x for r in ok for x in r["itl_s"]]),
        "e2el_s": _pct([r["e2el_s"] for r in ok]),
        "errors": sorted({r.get("error", "") for r in records if r["status"] != "ok"})[:5],
        "usage_untrusted": sum(1 for r in ok if r.get("usage_trusted") is False),
        "warnings": _warnings(ok),
    }


VLLM_PERCENTILES = (90, 95, 99)  # benchmark_serving.py --metric-percentiles 90,95,99


def vllm_benchmark(summary: dict[str, Any], cfg: ServeConfig) -> dict[str, Any]:
    """The summary under the key names of vLLM's benchmark (vllm/benchmarks/serve.py v0.10.1,
    `benchmark()`'s result: duration, completed, request_throughput, output_throughput,
    mean/median/std/pNN of ttft, tpot, itl, e2el in ms) with --metric-percentiles 90,95,99 and
    --percentile-metrics ttft,tpot,itl,e2el, plus the run's request_rate and max_concurrency as
    its saved JSON has them. Figures computed once, in `summarise_requests`."""
    out: dict[str, Any] = {
        "request_rate": cfg.rate if cfg.rate is not None else "inf",
        "max_concurrency": cfg.concurrency,
        "duration": summary["duration_s"],
        "completed": summary["completed"],
        "total_input_tokens": summary["total_input_tokens"],
        "total_output_tokens": summary["total_output_tokens"],
        "request_throughput": summary["request_throughput_per_s"],
        "request_goodput": summary["goodput_requests_per_s"],
        "output_throughput": summary["output_token_throughput_per_s"],
        "total_token_throughput": summary["total_token_throughput_per_s"],
    }
    for metric in ("ttft", "tpot", "itl", "e2el"):
        stats = summary[f"{metric}_s"]
        for stat in ("mean", "median", "std", *(f"p{p}" for p in VLLM_PERCENTILES)):
            out[f"{stat}_{metric}_ms"] = stats[stat] * 1e3 if stats else None
    return out


def _warnings(ok: list[dict[str, Any]]) -> list[str]:
    """What the reader must know about the figures: usage reports that were not believed."""
    notes = [r["usage_note"] for r in ok if r.get("usage_trusted") is False]
    if not notes:
        return []
    return [
        f"{len(notes)} of {len(ok)} completed requests reported token usage that cannot be true; their "
        f"prompt tokens are counted as sent, not as reported (e.g. {notes[0]}). Check the server's usage "
        "accounting before trusting its token counts."
    ]


_LIMITS = {
    "rate": (1e-3, 1e4, "--rate", "requests per second"),
    "concurrency": (1, 1024, "--concurrency", "clients"),
    "duration_s": (1e-3, 7 * 86400.0, "--duration", "seconds"),
    "max_requests": (1, 1_000_000, "--max-requests", "requests"),
    "input_len": (1, 10_000_000, "--input-len", "characters"),
    "output_len": (1, 1_000_000, "--output-len", "tokens"),
    "request_timeout_s": (1e-3, 86400.0, "--timeout", "seconds"),
    "read_timeout_s": (1e-3, 86400.0, "--read-timeout", "seconds"),
    "slo_attainment": (1e-6, 1.0, "--slo-attainment", "(a fraction)"),
}


def check_config(cfg: ServeConfig) -> None:
    """BadInput naming the option for a missing, non-finite or out-of-range setting."""
    if (cfg.rate is None) == (cfg.concurrency is None):
        raise BadInput(
            "Give exactly one of --rate and --concurrency.",
            "The load is either Poisson arrivals at a rate, or a fixed number of clients.",
            "Use e.g. --rate 4 or --concurrency 8.",
        )
    u = urllib.parse.urlsplit(cfg.url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise BadInput(
            f"'{cfg.url[:200]}' is not an http(s) URL.",
            "`profile serve` needs the endpoint's base URL.",
            "Pass e.g. --url http://127.0.0.1:8000/v1",
        )
    for key, (low, high, option, unit) in _LIMITS.items():
        value = getattr(cfg, key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise BadInput(
                f"{option} {value!r} is not a finite number.",
                f"It counts {unit}.",
                f"Give {option} a number.",
            )
        if not low <= value <= high:
            raise BadInput(
                f"{option} {value:g} is out of range.",
                f"It must lie between {low:g} and {high:g} {unit}.",
                f"Give {option} a value in that range.",
            )
    for name, limit in cfg.slo.items():
        if not (isinstance(limit, int | float) and math.isfinite(limit) and limit > 0):
            raise BadInput(
                f"--slo {name}: {limit!r} is not a positive finite time.", "", "Write e.g. ttft:500ms."
            )


def run_serve_profile(
    cfg: ServeConfig,
    out: Path | None = None,
    progress: Callable[[str], None] | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Run the load test; every request issued gets exactly one record (a failure counted by kind).

    Longer than 80 lines for one reason: the prompt source (generated or a dataset), the arrival
    loop (rate or concurrency) and the record writing share the run's state (clients, the output
    file, the deadline) and are kept in one place so a request can never be issued unrecorded."""
    check_config(cfg)
    say = progress or (lambda _m: None)
    rng = random.Random(cfg.seed)
    prompts = prompt_source(cfg.tokenizer or cfg.model) if cfg.dataset is None else None
    pset = (
        load_prompt_set(
            cfg.dataset,
            cfg.max_requests,
            cfg.seed,
            None if cfg.dataset_output_len else cfg.output_len,
            cfg.tokenizer or cfg.model,
        )
        if cfg.dataset is not None
        else None
    )
    counts = prompts.unit if prompts is not None else pset.source if pset is not None else ""
    hdr = jsonl.header("serve", {**cfg.__dict__, "input_len_counts": counts})
    writer, _ = jsonl.start_run(out, hdr, False, force)
    records: dict[int, dict[str, Any]] = {}
    issued: dict[int, float] = {}
    lock = threading.Lock()
    threads: list[threading.Thread] = []
    stop_at = time.perf_counter() + cfg.duration_s
    counter = iter(range(cfg.max_requests))

    def one(i: int) -> None:
        with lock:
            issued[i] = time.perf_counter()
        try:
            if pset is not None:  # the set cycles when fewer prompts were kept than requests
                item = pset.items[i % len(pset.items)]
                rec = _send(cfg, i, item.prompt, item.prompt_units, item.output_len)
            else:
                assert prompts is not None
                rec = _send(cfg, i, prompts.make(random.Random(cfg.seed * 100003 + i), cfg.input_len))
        except Exception as err:  # a bug in the client must not lose the request
            rec = _record(
                i,
                StreamResult(
                    start=issued[i], end=time.perf_counter(), failure="client_error", error=repr(err)[:200]
                ),
            )
        with lock:
            records[i] = rec
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
            threads = [threading.Thread(target=client, daemon=True) for _ in range(int(cfg.concurrency))]
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
                time.sleep(min(rng.expovariate(cfg.rate), max(0.0, stop_at - time.perf_counter())))
        for t in threads:
            t.join(timeout=max(0.0, stop_at - time.perf_counter()) + cfg.request_timeout_s + 5)
    except KeyboardInterrupt:
        say("interrupted: every finished request is saved")
        raise
    finally:
        with lock:
            _record_stragglers(issued, records, writer, cfg.request_timeout_s)
            done = [records[i] for i in sorted(records)]
            summary = summarise_requests(done, cfg.slo, cfg.slo_attainment)
            summary["vllm_benchmark"] = vllm_benchmark(summary, cfg)
            writer.write({"type": "summary", "kind": "serve", "summary": summary})
        writer.close()
    for warning in summary["warnings"]:
        say(f"warning: {warning}")
    return {"header": hdr, "summary": summary, "results": done}


def _record_stragglers(
    issued: dict[int, float],
    records: dict[int, dict[str, Any]],
    writer: jsonl.ProfileWriter,
    timeout_s: float,
) -> None:
    """A request still unanswered when the test ends is a timeout, never a missing row."""
    now = time.perf_counter()
    for i, started in issued.items():
        if i not in records:
            res = StreamResult(
                start=started, end=now, failure="timeout", error=f"still running after {timeout_s:g} s"
            )
            records[i] = _record(i, res)
            writer.write(records[i])
