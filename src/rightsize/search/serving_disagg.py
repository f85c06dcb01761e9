"""Aggregated or disaggregated: size a prefill pool for the TTFT SLO and a decode pool for
the TPOT SLO on the chosen replica layout, verify the pair end to end in the simulator
(the KV transfer between them included), and state the choice against the aggregated plan
with the numbers (GPUs, cost, SLO attainment of both).

Each pool's replica capacity is found as the aggregated search finds it (`capacity_rps`):
the prefill pool's runs carry prompts only (one output token) and are judged on TTFT; the
decode pool's carry cached prompts and the remaining output and are judged on TPOT. The
pools are then P = ceil(design / (cap_p x u)) and D = ceil(design / (cap_d x u)), and the
whole system is simulated at the design rate (`perf.serving_disagg`); a pool whose SLO
still fails there (the transfer and the decode pool's arrival bursts are only seen
together) grows by one replica until both hold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rightsize.catalog import Accelerator, NodeType
from rightsize.catalog.platforms import platform_for
from rightsize.perf.inference import Replica, offline_throughput
from rightsize.perf.serving_disagg import KvTransfer, Pools, simulate_disaggregated
from rightsize.perf.serving_multinode import ReplicaLayout, gpus_of
from rightsize.perf.serving_sim import SimResult
from rightsize.perf.serving_slo import SloCheck, meets, simulate_meets
from rightsize.search.serving_capacity import capacity_rps
from rightsize.search.serving_costs import billed_cost_usd_per_hour
from rightsize.search.serving_engine import EngineModels, Workload, model_at, slo_check
from rightsize.search.serving_layouts import layout_for
from rightsize.spec.inference import InferenceSpec

GROW_ROUNDS = 8  # most one-replica corrections after the end-to-end check


@dataclass(frozen=True)
class PoolRecord:
    """One pool of a disaggregated deployment (what an exporter deploys per role)."""

    role: str  # "prefill" or "decode"
    replicas: int
    layout: ReplicaLayout
    replica_capacity_rps: float  # per replica, within the SLO that sizes this pool
    sized_for: str  # the SLO that sizes it


@dataclass(frozen=True)
class KvTransferRecord:
    """The KV-cache transfer from prefill to decode, per request."""

    link: str
    kv_bytes_per_token: float
    bytes_per_request_mean: float
    bandwidth_bytes_per_s: float
    seconds_p50: float
    seconds_p95: float


@dataclass(frozen=True)
class ModeFigures:
    """One way of serving, as simulated at the design rate."""

    mode: str  # "aggregated" or "disaggregated"
    gpus: int
    cost_usd_per_hour: float | None
    slo_attainment: float | None  # goodput: fraction of requests meeting every SLO
    meets_slos: bool
    ttft_p95_s: float
    tpot_p95_s: float


@dataclass(frozen=True)
class DisaggDecision:
    """The choice between aggregated and disaggregated serving, with both sides' numbers."""

    chosen: str
    reason: str
    aggregated: ModeFigures
    disaggregated: ModeFigures | None
    ratio: str | None = None  # xPyD
    prefill: PoolRecord | None = None
    decode: PoolRecord | None = None
    kv_transfer: KvTransferRecord | None = None


def kv_transfer_link(rep: Replica, acc: Accelerator, node: NodeType, prefill: int, decode: int) -> KvTransfer:
    """The link a replica's KV cache crosses to a decode replica. NVLink (the scale-up
    domain) when every one of the `prefill` replicas can sit in a domain beside one of the
    `decode` replicas (each domain holding one decode replica and the rest prefill), else
    the RDMA NICs; every GPU of the sending replica sends its shard over its own link."""
    hw, gpus = rep.hw, gpus_of(rep)
    per_domain = min(acc.scaleup_domain_gpus, node.gpus_per_node) // max(gpus, 1)
    if per_domain >= 2 and prefill <= decode * (per_domain - 1):
        bw = gpus * hw.scaleup_bytes_per_s * hw.scaleup_bw_fraction
        return KvTransfer(f"{acc.scaleup_name} (scale-up)", rep.kv_bytes_per_token, bw, hw.scaleup_latency_s)
    link = _scaleout_link(node)
    bw = gpus * hw.scaleout_bytes_per_s_per_gpu * hw.scaleout_bw_fraction
    return KvTransfer(link, rep.kv_bytes_per_token, bw, hw.scaleout_latency_s)


def _scaleout_link(node: NodeType) -> str:
    """The scale-out link in the platform's words: the chips' own RoCE ports (Gaudi), the
    provider's network (EFA), else the nodes' RDMA NICs."""
    plat, gbps = platform_for(node.accelerator), node.nic_bits_per_s / 1e9
    if plat.nics_on_chip:
        per_chip = node.nics_per_node // max(node.gpus_per_node, 1)
        return (
            f"the chips' on-die RoCE ports ({per_chip} x {gbps:g} Gb/s per chip leave the node, "
            f"{node.nics_per_node} per node)"
        )
    if plat.provider_network:
        return f"{plat.scaleout_name} ({node.nics_per_node} x {gbps:g} Gb/s per node)"
    return f"RDMA NIC ({node.nics_per_node} x {gbps:g} Gb/s per node)"


def _prefill_load(wl: Workload) -> Workload:
    ones = np.ones_like(wl.outputs)
    return Workload(wl.prompts, ones, wl.unit_arrivals, wl.mean_prompt, 1.0)


def _decode_load(wl: Workload) -> Workload:
    keep = wl.outputs > 1
    rest = wl.outputs[keep] - 1
    return Workload(
        wl.prompts[keep], rest, wl.unit_arrivals[keep], float(wl.prompts[keep].mean()), float(rest.mean())
    )


def _pool_capacity(
    rep: Replica, spec: InferenceSpec, wl: Workload, check: SloCheck, cached: float, hi: float
) -> float:
    models = EngineModels(rep, spec)

    def ok(rate: float) -> bool:
        m = models.at(wl, rate)
        return simulate_meets(wl.unit_arrivals / rate, wl.prompts, wl.outputs, m, check, cached)

    return capacity_rps(ok, hi * 1e-3, hi, 9)


def _pools(
    rep: Replica, spec: InferenceSpec, wl: Workload, design: float
) -> tuple[float, float, Pools] | None:
    """Each pool's replica capacity and the pools the design rate needs (None: a pool
    cannot meet its SLO even at a trickle)."""
    slo, util = spec.slo, spec.policy.utilisation_target
    pre, dec = _prefill_load(wl), _decode_load(wl)
    pre_upper = offline_throughput(rep, wl.mean_prompt, 1.0)["output_tokens_per_s"]
    dec_upper = (
        offline_throughput(rep, wl.mean_prompt, wl.mean_output)["output_tokens_per_s"] / wl.mean_output
    )
    cached = spec.traffic.prefix_cache_hit_rate
    cap_p = _pool_capacity(
        rep, spec, pre, SloCheck(ttft_s=slo.ttft_s, percentile=slo.percentile), cached, pre_upper * 1.05
    )
    cap_d = _pool_capacity(
        rep, spec, dec, SloCheck(tpot_s=slo.tpot_s, percentile=slo.percentile), 1.0, dec_upper * 3.0
    )
    if cap_p <= 0 or cap_d <= 0:
        return None
    p = max(1, math.ceil(design / (cap_p * util)))
    d = max(1, math.ceil(design / (cap_d * util)))
    pools = Pools(model_at(rep, spec, pre, design / p), model_at(rep, spec, dec, design / d), p, d)
    return cap_p, cap_d, pools


def _verified(
    rep: Replica, spec: InferenceSpec, wl: Workload, design: float, pools: Pools, link: KvTransfer
) -> tuple[Pools, SimResult, np.ndarray]:
    """Grow the pool whose SLO fails end to end, one replica at a time."""
    check, slo = slo_check(spec), spec.slo
    pre, dec = _prefill_load(wl), _decode_load(wl)
    cached = spec.traffic.prefix_cache_hit_rate
    for _ in range(GROW_ROUNDS):
        res, moved = simulate_disaggregated(
            wl.unit_arrivals / design, wl.prompts, wl.outputs, pools, link, cached
        )
        if meets(res, check):
            break
        p, d = pools.prefill_replicas, pools.decode_replicas
        if slo.ttft_s is not None and res.percentile("ttft_s", slo.percentile) > slo.ttft_s:
            p += 1
        else:
            d += 1
        pools = Pools(model_at(rep, spec, pre, design / p), model_at(rep, spec, dec, design / d), p, d)
    return pools, res, moved


def _figures(
    mode: str, gpus: int, res: SimResult, spec: InferenceSpec, acc_id: str, node: NodeType
) -> ModeFigures:
    check = slo_check(spec)
    has_slo = any(v is not None for v in (check.ttft_s, check.tpot_s, check.e2e_s))
    return ModeFigures(
        mode=mode,
        gpus=gpus,
        cost_usd_per_hour=billed_cost_usd_per_hour(acc_id, gpus, node.gpus_per_node),
        slo_attainment=res.goodput(check.ttft_s, check.tpot_s, check.e2e_s) if has_slo else None,
        meets_slos=meets(res, check),
        ttft_p95_s=res.percentile("ttft_s", 95),
        tpot_p95_s=res.percentile("tpot_s", 95),
    )


@dataclass(frozen=True)
class DisaggOutcome:
    """The decision and, when disaggregated serving is chosen, its end-to-end run."""

    decision: DisaggDecision
    result: SimResult | None  # the disaggregated run (None when it was not feasible)
    replicas: int  # P + D


def weigh_disaggregation(
    rep: Replica,
    spec: InferenceSpec,
    wl: Workload,
    design: float,
    acc: Accelerator,
    node: NodeType,
    aggregated: tuple[int, SimResult],
) -> DisaggOutcome:
    """Size, verify and compare disaggregated serving on `rep`'s layout against the
    aggregated deployment (`aggregated`: its GPUs and its run at the design rate)."""
    agg = _figures("aggregated", aggregated[0], aggregated[1], spec, acc.id, node)
    sized = _pools(rep, spec, wl, design)
    if sized is None:
        reason = "A prefill or decode pool misses its SLO even at a trickle of requests."
        return DisaggOutcome(DisaggDecision("aggregated", reason, agg, None), None, 0)
    cap_p, cap_d, pools = sized
    link = kv_transfer_link(rep, acc, node, pools.prefill_replicas, pools.decode_replicas)
    pools, res, moved = _verified(rep, spec, wl, design, pools, link)
    per = gpus_of(rep)
    total = pools.prefill_replicas + pools.decode_replicas
    dis = _figures("disaggregated", total * per, res, spec, acc.id, node)
    layout = layout_for(rep, acc, node)
    decision = DisaggDecision(
        chosen=_choose(spec, agg, dis),
        reason="",
        aggregated=agg,
        disaggregated=dis,
        ratio=pools.ratio,
        prefill=PoolRecord("prefill", pools.prefill_replicas, layout, cap_p, "ttft"),
        decode=PoolRecord("decode", pools.decode_replicas, layout, cap_d, "tpot"),
        kv_transfer=KvTransferRecord(
            link=link.link,
            kv_bytes_per_token=link.kv_bytes_per_token,
            bytes_per_request_mean=float(link.bytes_per_request(wl.prompts).mean()),
            bandwidth_bytes_per_s=link.bandwidth_bytes_per_s,
            seconds_p50=float(np.percentile(moved, 50)),
            seconds_p95=float(np.percentile(moved, 95)),
        ),
    )
    decision = DisaggDecision(**{**decision.__dict__, "reason": _reason(decision, spec)})
    return DisaggOutcome(decision, res if decision.chosen == "disaggregated" else None, total)


def _key(f: ModeFigures, objective: str) -> tuple[float, ...]:
    cost = f.cost_usd_per_hour if f.cost_usd_per_hour is not None else math.inf
    if objective == "gpus":
        return (f.gpus, cost)
    if objective == "latency":
        return (f.ttft_p95_s + f.tpot_p95_s, cost)
    return (cost, f.gpus)


def _choose(spec: InferenceSpec, agg: ModeFigures, dis: ModeFigures) -> str:
    mode = spec.serving.disaggregation
    if not dis.meets_slos:
        return "aggregated"
    if mode == "always" or not agg.meets_slos:
        return "disaggregated"
    better = _key(dis, spec.targets.objective) < _key(agg, spec.targets.objective)
    return "disaggregated" if better else "aggregated"


def _money(v: float | None) -> str:
    return f"${v:,.0f}/h" if v is not None else "unpriced"


def _reason(d: DisaggDecision, spec: InferenceSpec) -> str:
    a, s = d.aggregated, d.disaggregated
    assert s is not None
    parts = [
        f"aggregated: {a.gpus} GPUs, {_money(a.cost_usd_per_hour)}, SLO attainment "
        f"{(a.slo_attainment or 0):.1%}",
        f"disaggregated {d.ratio}: {s.gpus} GPUs, {_money(s.cost_usd_per_hour)}, SLO attainment "
        f"{(s.slo_attainment or 0):.1%}" + ("" if s.meets_slos else " (misses an SLO)"),
    ]
    return f"{d.chosen} chosen by {spec.targets.objective} ({'; '.join(parts)})."
