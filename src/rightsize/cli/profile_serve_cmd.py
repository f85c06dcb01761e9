"""`rightsize profile serve`: argument parsing for the load test of an OpenAI-compatible streaming
endpoint (one rate, a fixed concurrency, a list of rates or a sweep); the logic is in
`rightsize.profile.serve` and `rightsize.profile.serve_sweep`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from rightsize.cli.profile_cmds import (
    DEFAULT_OUTPUT_LEN,
    _positive_float,
    _positive_int,
    _progress,
    _rates,
    _seconds,
    _write,
)
from rightsize.errors import BadInput


def _slo(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, _, value = part.partition(":")
        name = name.strip().lower()
        if name not in ("ttft", "tpot", "e2el"):
            raise argparse.ArgumentTypeError(f"unknown SLO {name!r}: use ttft, tpot or e2el")
        out[f"{name}_s"] = _seconds(value.strip())
    return out


def cmd_serve(args: argparse.Namespace) -> int:
    from rightsize.profile.render import render_serve
    from rightsize.profile.serve import ServeConfig, run_serve_profile

    rate, conc = args.rate, args.concurrency
    sweep = args.rates is not None or args.sweep
    if sweep and conc is not None:
        raise BadInput(
            "--rates / --sweep run Poisson arrivals at each rate; --concurrency is a fixed number of clients.",
            "A rate sweep and a fixed concurrency are two kinds of load.",
            "Drop --concurrency, or drop --rates / --sweep.",
        )
    if rate is None and conc is None and not sweep:
        conc = 1
    cfg = ServeConfig(
        url=args.url,
        rate=rate,
        concurrency=conc,
        duration_s=args.duration,
        max_requests=args.max_requests,
        input_len=args.input_len,
        output_len=args.output_len or DEFAULT_OUTPUT_LEN,
        request_timeout_s=args.timeout,
        read_timeout_s=args.read_timeout,
        chat=args.chat,
        model=args.served_model,
        slo=args.slo or {},
        slo_attainment=args.slo_attainment,
        seed=args.seed,
        tokenizer=args.tokenizer,
        dataset=args.dataset,
        dataset_output_len=args.output_len is None,  # a given --output-len fixes it for the dataset too
    )
    if sweep:
        from rightsize.profile.serve_sweep import render_sweep, run_rate_sweep, sweep_rates

        rates = args.rates or sweep_rates(rate or 1.0)
        out = Path(args.out) if args.out else None
        res = run_rate_sweep(cfg, rates, out, _progress, args.force, stop_at_miss=args.sweep)
        _write(args, res, render_sweep)
        return 0 if res["summary"]["slo_met"] else 1
    res = run_serve_profile(cfg, Path(args.out) if args.out else None, _progress, args.force)
    _write(args, res, render_serve)
    summary = res["summary"]
    if not summary["slo_met"]:
        # exit 1: measured, but the endpoint did not meet the SLO (or, without one, requests failed)
        failed = ", ".join(f"{n} {kind}" for kind, n in summary["failures"].items()) or "none"
        met = summary.get("slo_attainment")
        sys.stderr.write(
            "rightsize: SLO not met: "
            + (
                f"{met:.1%} of requests met every SLO, {args.slo_attainment:.0%} were needed; "
                if met is not None
                else ""
            )
            + f"{summary['failed']} of {summary['requests']} requests failed ({failed})\n"
        )
        return 1
    return 0


def register_serve(padd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """`profile serve`: a load test of a streaming endpoint."""
    sp = padd("serve", "load-test an OpenAI-compatible streaming endpoint (TTFT, TPOT, ITL, goodput)")
    sp.add_argument("--url", required=True, help="base URL, e.g. http://127.0.0.1:8000/v1")
    sp.add_argument("--rate", type=_positive_float, help="Poisson arrival rate, requests per second")
    sp.add_argument("--concurrency", type=_positive_int, help="fixed number of concurrent clients")
    sp.add_argument(
        "--duration", type=_seconds, default=60.0, help="stop issuing after this long (default 60s)"
    )
    sp.add_argument("--max-requests", type=_positive_int, default=1000)
    sp.add_argument(
        "--input-len",
        type=_positive_int,
        default=64,
        help="prompt length in tokens: exact with `transformers` and --tokenizer (or --served-model), "
        "else one-token words (an estimate; the profile says which)",
    )
    sp.add_argument("--tokenizer", help="Hugging Face tokenizer id or folder for exact prompt token counts")
    sp.add_argument(
        "--output-len",
        type=_positive_int,
        default=None,
        help=f"output tokens per request (default {DEFAULT_OUTPUT_LEN}; with --dataset: the replies' lengths "
        "unless given)",
    )
    sp.add_argument(
        "--dataset",
        metavar="FILE",
        help="prompts from a file: ShareGPT JSON (conversations of from/value turns) or JSON Lines "
        "({'prompt': ..., 'output_len' or 'completion': ...}); sampled with --seed as vLLM's benchmark does",
    )
    sp.add_argument("--seed", type=int, default=0, help="sampling seed for --dataset and the arrivals")
    sp.add_argument(
        "--rates",
        type=_rates,
        help="run the test at each of these arrival rates (req/s), e.g. 1,2,4,8; one --out file per rate",
    )
    sp.add_argument(
        "--sweep",
        action="store_true",
        help="double the rate from --rate (default 1) until a rate misses --slo; reports the highest that met it",
    )
    sp.add_argument(
        "--read-timeout",
        type=_seconds,
        help="longest wait for the next byte of a response (default: --timeout, the whole request)",
    )
    sp.add_argument(
        "--slo-attainment",
        type=_positive_float,
        default=0.95,
        help="share of all requests (failed ones count against it) that must meet every SLO "
        "for the test to pass, exit 0 (default 0.95)",
    )
    sp.add_argument("--chat", action="store_true", help="use /chat/completions instead of /completions")
    sp.add_argument("--served-model", help="the `model` field to send")
    sp.add_argument(
        "--slo",
        type=_slo,
        help="e.g. ttft:500ms,tpot:50ms,e2el:10s (goodput; exit 1 when not met; without --slo, "
        "exit 1 when any request failed)",
    )
    sp.set_defaults(func=cmd_serve, timeout=60.0)
