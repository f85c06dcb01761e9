"""`rightsize profile serve --rates 1,2,4` / `--sweep`: the load test at several arrival rates.

Each rate is one `run_serve_profile` run (Poisson arrivals, its own JSON Lines file
`OUT-rate<R>.jsonl` beside `--out`), in increasing order. `--sweep` doubles the rate from
`--rate` (default 1 req/s) until a rate misses the SLO (so it needs `--slo`) or
`MAX_SWEEP_STEPS` rates were run. The result lists, per rate, vLLM's benchmark figures
(`serve.vllm_benchmark`) and whether the SLO was met, and names the highest rate that met
it: the endpoint's capacity at the SLO, to set beside the plan's `replica_capacity_rps`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.profile.serve import ServeConfig, run_serve_profile

MAX_SWEEP_STEPS = 12  # 1 .. 2048 req/s from a start of 1
MAX_RATES = 64


def sweep_rates(start: float) -> list[float]:
    return [start * 2**k for k in range(MAX_SWEEP_STEPS)]


def _out_for(out: Path | None, rate: float) -> Path | None:
    if out is None:
        return None
    return out.with_name(f"{out.stem}-rate{rate:g}{out.suffix or '.jsonl'}")


def run_rate_sweep(
    cfg: ServeConfig,
    rates: list[float],
    out: Path | None = None,
    progress: Callable[[str], None] | None = None,
    force: bool = False,
    stop_at_miss: bool = False,
) -> dict[str, Any]:
    """Run the load test at each rate (ascending); with `stop_at_miss`, stop after the first
    rate whose SLO is not met."""
    if not rates or len(rates) > MAX_RATES:
        raise BadInput(
            f"--rates lists {len(rates)} rates.",
            f"A sweep runs 1 to {MAX_RATES} rates.",
            "Give e.g. --rates 1,2,4,8.",
        )
    if stop_at_miss and not cfg.slo:
        raise BadInput(
            "--sweep needs --slo.",
            "The sweep stops at the first rate that misses the SLO; without one it cannot tell where.",
            "Add e.g. --slo ttft:500ms,tpot:50ms, or list the rates with --rates.",
        )
    say = progress or (lambda _m: None)
    runs: list[dict[str, Any]] = []
    header: dict[str, Any] = {}
    for rate in sorted(set(rates)):
        say(f"rate {rate:g} req/s")
        res = run_serve_profile(
            dataclasses.replace(cfg, rate=rate, concurrency=None), _out_for(out, rate), progress, force
        )
        header = header or res["header"]
        s = res["summary"]
        runs.append({**s["vllm_benchmark"], "slo_met": s["slo_met"], "slo_attainment": s["slo_attainment"],
                     "failed": s["failed"]})  # fmt: skip
        if stop_at_miss and not s["slo_met"]:
            break
    met = [r["request_rate"] for r in runs if r["slo_met"]]
    return {
        "header": header,
        "sweep": runs,
        "slo": cfg.slo,
        "max_rate_meeting_slo": max(met) if met else None,
        "summary": {"slo_met": bool(met)},
    }


def render_sweep(res: dict[str, Any]) -> str:
    lines = [
        "Serving rate sweep" + (f" against SLOs {res['slo']}" if res["slo"] else ""),
        f"{'rate':>7} {'req/s':>8} {'goodput':>8} {'out tok/s':>10} {'p99 TTFT ms':>12} {'p99 TPOT ms':>12} {'SLO':>5}",
    ]
    for r in res["sweep"]:
        good = "-" if r["request_goodput"] is None else f"{r['request_goodput']:.2f}"
        ttft = "-" if r["p99_ttft_ms"] is None else f"{r['p99_ttft_ms']:.1f}"
        tpot = "-" if r["p99_tpot_ms"] is None else f"{r['p99_tpot_ms']:.1f}"
        lines.append(
            f"{r['request_rate']:>7g} {r['request_throughput']:>8.2f} {good:>8} {r['output_throughput']:>10.1f} "
            f"{ttft:>12} {tpot:>12} {'met' if r['slo_met'] else 'miss':>5}"
        )
    best = res["max_rate_meeting_slo"]
    lines.append(
        f"highest rate meeting the SLO: {best:g} req/s" if best is not None else "no rate met the SLO"
    )
    return "\n".join(lines)
