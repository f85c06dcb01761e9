"""How a disaggregated serving plan reads (issue 30): the decision names its two pools, the
headline gives each pool's replicas and capacity with its P10-P90, and a section states the
choice against aggregated replicas with both sides' GPUs, cost and SLO attainment, and the KV
cache's transfer between the pools. Every figure is the search's (`search.serving_disagg`)."""

from __future__ import annotations

from typing import Any

from rightsize.report import units
from rightsize.report.document import Section, Table


def chosen(b: Any) -> Any | None:
    """The plan's DisaggDecision when it chose disaggregated pools, else None."""
    d = getattr(b, "disaggregation", None)
    if d is None or d.chosen != "disaggregated" or d.prefill is None or d.decode is None:
        return None
    return d


def _shape(pool: Any) -> str:
    lay = pool.layout
    shape = (
        f"tp{lay.tp}" + (f" x pp{lay.pp}" if lay.pp > 1 else "") + (f" x ep{lay.ep}" if lay.ep > 1 else "")
    )
    return shape + (f" ({lay.nodes} nodes)" if lay.nodes > 1 else "")


def decision(b: Any, d: Any) -> str:
    return (
        f"disaggregated {d.ratio}: {units.plural(d.prefill.replicas, 'prefill replica')} x {_shape(d.prefill)} "
        f"+ {units.plural(d.decode.replicas, 'decode replica')} x {_shape(d.decode)} on {b.accelerator} = "
        f"{units.plural(b.gpus, 'GPU')} (weights {b.weight_precision}, KV cache {b.kv_precision})"
    )


def replicas_text(c: Any) -> str:
    """A candidate's replicas in the alternatives table: its pools when disaggregated."""
    d = chosen(c)
    if d is None:
        return f"{c.replicas} x {c.replica_shape} {c.accelerator}"
    return f"{d.ratio} ({d.prefill.replicas} + {d.decode.replicas}) x {_shape(d.prefill)} {c.accelerator}"


def key_rows(d: Any, unc: dict[str, Any] | None) -> list[tuple[str, str]]:
    metrics = (unc or {}).get("metrics") or {}
    rows = []
    for pool in (d.prefill, d.decode):
        m = metrics.get(f"{pool.role}_replica_capacity_rps")
        rng = f" (P10-P90 {m['p10']:,.2f} to {m['p90']:,.2f})" if m else ""
        rows.append(
            (
                f"{pool.role} pool",
                f"{units.plural(pool.replicas, 'replica')} x {_shape(pool)}, "
                f"{pool.replica_capacity_rps:,.2f} req/s each within the {pool.sized_for.upper()} SLO{rng}",
            )
        )
    return rows


def _mode_row(m: Any) -> list[str]:
    return [
        m.mode,
        f"{m.gpus:,}",
        f"{units.usd(m.cost_usd_per_hour)}/h" if m.cost_usd_per_hour is not None else "unpriced",
        f"{m.slo_attainment:.1%}" if m.slo_attainment is not None else "-",
        units.seconds(m.ttft_p95_s),
        units.seconds(m.tpot_p95_s),
        "yes" if m.meets_slos else "no",
    ]


def section(d: Any) -> Section:
    """Aggregated against disaggregated, as both were simulated at the design rate."""
    modes = [d.aggregated] + ([d.disaggregated] if d.disaggregated is not None else [])
    table = Table(
        ["serving", "GPUs", "compute cost", "SLO attainment", "TTFT p95", "TPOT p95", "meets SLOs"],
        [_mode_row(m) for m in modes],
    )
    text = [d.reason, "Compute cost: the nodes billed, before the storage the headline cost adds."]
    kv = d.kv_transfer
    if kv is not None:
        text.append(
            f"Each request's KV cache ({kv.bytes_per_request_mean / 1e6:,.0f} MB on average, "
            f"{kv.kv_bytes_per_token / 1e3:,.1f} kB per token) moves from prefill to decode over {kv.link} at "
            f"{kv.bandwidth_bytes_per_s / 1e9:,.0f} GB/s per replica: {units.seconds(kv.seconds_p50)} p50, "
            f"{units.seconds(kv.seconds_p95)} p95."
        )
    return Section(
        "disaggregation",
        "Aggregated or disaggregated prefill and decode",
        text=text,
        tables=[table],
        brief=True,
    )
