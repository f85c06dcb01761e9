"""Terminal and JSON rendering of serving plans."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rightsize.constants import GB, REPORT_SCHEMA_VERSION

if TYPE_CHECKING:
    from rightsize.search.serving import ServingCandidate, ServingPlan


SCHEMA_VERSION = REPORT_SCHEMA_VERSION


def serving_dict(plan: ServingPlan) -> dict[str, Any]:
    def cand(c: ServingCandidate) -> dict[str, Any]:
        return {**asdict(c), "gpus": c.gpus}

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "serving_plan",
        "name": plan.name,
        "model": plan.model,
        "scenario": plan.scenario,
        "objective": plan.objective,
        "best": cand(plan.best),
        "alternatives": [{**cand(c), "why_not": why} for c, why in plan.alternatives],
        "pareto": [cand(c) for c in plan.pareto],
        "rejected": [{"accelerator": a, "reason": r} for a, r in plan.rejected],
        "assumptions": plan.assumptions,
        "search": {"seconds": plan.seconds},
    }


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:,.1f} ms"


def render_serving(plan: ServingPlan, title: str = "Serving plan") -> str:
    b = plan.best
    out = [
        f"{title}: {plan.name}  (model {plan.model}, scenario {plan.scenario}, objective {plan.objective})",
        "",
    ]
    out.append("Chosen:")
    out.append(
        f"  {b.replicas} replica(s) x tp{b.tp} on {b.accelerator} = {b.gpus} GPUs  "
        f"(weights {b.weight_precision}, KV cache {b.kv_precision})"
    )
    if plan.scenario == "serving":
        out.append(
            f"  one replica sustains {b.replica_capacity_rps:,.2f} req/s within the SLOs; "
            f"sized for {b.design_rate_rps:,.1f} req/s"
        )
    out.append(f"  output throughput {b.output_tokens_per_s:,.0f} tokens/s")
    if b.cost_usd_per_hour is not None:
        line = f"  cost ${b.cost_usd_per_hour:,.2f}/h on demand"
        if b.cost_usd_per_m_output_tokens is not None:
            line += f", ${b.cost_usd_per_m_output_tokens:,.3f} per 1M output tokens"
        if b.cost_usd_per_m_input_tokens is not None:
            line += f", ${b.cost_usd_per_m_input_tokens:,.3f} per 1M input tokens"
        out.append(line)
    if b.output_tokens_per_joule is not None:
        out.append(f"  {b.output_tokens_per_joule:,.2f} output tokens per joule at TDP")
    if b.latency_s:
        out.append("  latency:        p50        p90        p95        p99")
        for m in ("ttft", "tpot", "e2e"):
            vals = [b.latency_s.get(f"{m}_p{p}_s") for p in (50, 90, 95, 99)]
            if any(v is not None for v in vals):
                out.append(f"    {m:<6} " + " ".join(f"{_ms(v):>10}" for v in vals))
    if b.slo_headroom:
        out.append(
            "  SLO headroom (limit / achieved): "
            + ", ".join(f"{k.removesuffix('_s')} {v:.2f}x" for k, v in b.slo_headroom.items())
        )
    if b.goodput is not None:
        out.append(f"  goodput (requests meeting every SLO): {b.goodput:.1%}")
    mem = b.memory
    if mem:
        out.append(
            f"  memory: weights {mem.get('weights_bytes_per_gpu', 0) / GB:,.1f} GB per GPU, "
            f"KV cache for {mem.get('kv_capacity_tokens', 0):,.0f} tokens per replica"
        )
    if plan.alternatives:
        out += ["", "Alternatives:"]
        for c, why in plan.alternatives:
            cost = f"${c.cost_usd_per_hour:,.2f}/h" if c.cost_usd_per_hour is not None else ""
            out.append(
                f"  {c.replicas:>4} x tp{c.tp:<2} {c.accelerator:<14} {c.gpus:>5} GPUs {cost:>12}  "
                f"{c.output_tokens_per_s:>10,.0f} tok/s  {why}"
            )
    if len(plan.pareto) > 1:
        out += ["", "Pareto front (p95 end-to-end latency vs cost per hour):"]
        for c in plan.pareto:
            cost = f"${c.cost_usd_per_hour:,.2f}/h" if c.cost_usd_per_hour is not None else f"{c.gpus} GPUs"
            out.append(
                f"  {c.replicas:>4} x tp{c.tp:<2} {c.accelerator:<14} e2e p95 {_ms(c.latency_s.get('e2e_p95_s')):>12}  {cost}"
            )
    if plan.rejected:
        out += ["", "Rejected:"] + [f"  {a}: {r}" for a, r in plan.rejected]
    if plan.assumptions:
        out += ["", "Assumed:"] + [f"  - {a}" for a in plan.assumptions]
    out += ["", f"Planned in {plan.seconds:.1f} s."]
    return "\n".join(out)
