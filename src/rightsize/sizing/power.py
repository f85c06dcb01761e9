"""Power and cooling: IT power at nameplate and typical load, facility power, energy, and the cooling check.

Accelerators. Each GPU draws between idle and its TDP:

    P_gpu = P_idle + (TDP - P_idle) x f,   P_idle = idle_fraction x TDP
    f     = duty_cycle x min(1, compute_utilisation / utilisation_at_tdp)

A working GPU reaches TDP at ``utilisation_at_tdp`` of peak (MFU, or busy share of the
roofline for serving) because memory traffic and clocks draw power whether or not FLOPs
retire; between jobs (1 - duty_cycle) it idles. GPU slots bought but unused idle.

Host. The node's non-GPU draw at nameplate is max_power_w - gpus_per_node x TDP (CPUs,
DIMMs, NICs, drives, fans, PSU losses); it runs at ``typical_fraction_of_max`` on
average. Nameplate IT power is therefore nodes x max_power_w, plus each compute rack's
management switches, the scale-out fabric (from `rightsize.sizing.fabric`) and storage
(a figure from the caller): the circuits to provision. Typical IT power uses P_gpu and
the host's typical share: what the meter reads on average.

Facility power = IT power x PUE (``infrastructure.facility.pue``, else the price
catalog's default). A ``power_cap_w`` is checked against nameplate facility power and
raises `Infeasible` with the cap to ask for and the GPUs that fit under it.

Cooling. `rightsize.sizing.nodes_racks` packs the racks and picks the cooling; here the
fullest rack's heat is checked against it. Nameplate within the cooling's ceiling: fine.
Nameplate above but the sustained (typical) heat within: peaks may throttle briefly (a
warning). Sustained heat above the ceiling by at most ``max_overshoot_fraction``: GPUs
hold their thermal limit by lowering clocks and the step slows by ``slowdown_fraction``
(`throttle_slowdown`, reported). Beyond that the design does not work: `BadInput`.

Energy = typical facility power x time: per run (``run_s``, goodput-adjusted by the
caller) and per month for recurring jobs, or per month (8,760 h / 12) for a continuous
service; and kWh per million work units = typical facility power / (work units per
second x duty cycle).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from rightsize.catalog.facility import facility_defaults
from rightsize.catalog.loader import Sourced
from rightsize.catalog.nodes import NodeType
from rightsize.catalog.platforms import platform_for
from rightsize.catalog.power_limit import power_limit_figures
from rightsize.catalog.prices import onprem_defaults
from rightsize.catalog.registry import get_accelerator
from rightsize.constants import HOUR_S, HOURS_PER_MONTH, KILO, MEGA
from rightsize.errors import BadInput, Infeasible
from rightsize.perf import power as perf_power
from rightsize.perf.hardware import capped_compute_factor
from rightsize.search.demand import Demand
from rightsize.search.serving_costs import per_million as per_million_units
from rightsize.sizing.nodes_racks import COOLING_FIELD, RACK_POWER_FIELD, choose_cooling, source_entry
from rightsize.spec.infrastructure import Facility

J_PER_KWH = KILO * HOUR_S
J_PER_MWH = MEGA * HOUR_S
MONTH_S = HOURS_PER_MONTH * HOUR_S
POWER_CAP_FIELD = "infrastructure.facility.power_cap_w"
# Load swings at or above this draw a warning (utilities set ramp limits at this size).
LOAD_SWING_WARN_W = 10e6


@dataclass(frozen=True)
class PowerPlan:
    """IT and facility power, the cooling check, energy per run or month, and energy per work unit."""

    nodes: int
    racks: int
    gpus: int  # working GPUs
    gpu_slots: int  # GPUs installed (nodes x gpus_per_node)
    gpu_tdp_w: float
    gpu_idle_w: float
    gpu_activity_fraction: float  # f in P_gpu = idle + (TDP - idle) f
    gpu_typical_w: float  # one working GPU, time-averaged
    accelerators_max_w: float
    accelerators_typical_w: float
    host_max_w: float
    host_typical_w: float
    rack_overhead_w: float
    fabric_w: float
    storage_w: float
    it_power_max_w: float
    it_power_typical_w: float
    pue: float
    facility_power_w: float  # nameplate IT x PUE: what the site must supply
    facility_power_typical_w: float
    power_cap_w: float | None
    nodes_in_fullest_rack: int
    kw_per_rack: float  # nameplate IT power of the fullest rack
    kw_per_rack_typical: float
    cooling: str
    cooling_max_rack_kw: float
    cooling_status: str  # ok / peaks_exceed / throttled
    throttle_slowdown: float  # fraction the step slows from thermal throttling, 0 when none
    run_s: float | None
    energy_per_run_mwh: float | None
    energy_per_month_mwh: float | None
    work_unit: str
    energy_per_million_units_kwh: float | None
    warnings: tuple[str, ...]
    sources: tuple[dict[str, Any], ...]
    load_swing_w: float = 0.0  # facility load lost when every working GPU stalls at once
    # "provider" where the platform's halls are the cloud provider's (TPU, Trainium): the
    # figures above then estimate the provider's draw (energy, carbon), and cooling is not
    # checked against a rack of ours (cooling_status "provider-operated", no throttling)
    facility_operated_by: str = "owner"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # one key per quantity, the one that says its unit (the field's name predates the rule)
        d["throttle_slowdown_fraction"] = d.pop("throttle_slowdown")
        d["warnings"] = list(self.warnings)
        d["sources"] = list(self.sources)
        if self.facility_operated_by == "provider":  # the provider's racks and cooling, not ours
            for k in (
                "racks",
                "rack_overhead_w",
                "nodes_in_fullest_rack",
                "kw_per_rack",
                "kw_per_rack_typical",
            ):
                d.pop(k, None)
            for k in ("cooling", "cooling_max_rack_kw", "power_cap_w"):
                d.pop(k, None)
        return d


def gpu_activity(demand: Demand, utilisation_at_tdp: float) -> float:
    """f = duty_cycle x min(1, compute_utilisation / utilisation_at_tdp), in [0, 1]."""
    return perf_power.gpu_activity(demand.compute_utilisation, demand.duty_cycle, utilisation_at_tdp)


def _cap_error(
    need_w: float, cap_w: float, node: NodeType, nodes: int, per_node_w: float, fixed_w: float, gpus: int
) -> Infeasible:
    nodes_fit = max(math.floor((cap_w - fixed_w) / per_node_w), 0)
    gpus_fit = min(nodes_fit * node.gpus_per_node, gpus)
    return Infeasible(
        f"The plan needs {need_w / MEGA:.2f} MW of facility power; the cap is {cap_w / MEGA:.2f} MW.",
        f"{nodes} x {node.name} at {node.max_power_w / KILO:g} kW nameplate, their racks' switches, the fabric "
        f"and storage, times the PUE: {per_node_w / KILO:.1f} kW per node plus {fixed_w / KILO:.1f} kW fixed.",
        f"Raise {POWER_CAP_FIELD} to at least {math.ceil(need_w / 1e4) / 100:g} MW, or plan for at most "
        f"{gpus_fit} GPUs ({nodes_fit} nodes) under the cap, e.g. with a longer deadline or a lower rate.",
    )


def _pue(facility: Facility, node: NodeType) -> tuple[float, Sourced]:
    """The facility's PUE: the spec's, else the one the provider publishes for its own halls where
    they are the provider's (AWS for Trainium, facility.yaml provider_pue), else the on-premises
    default, with its source."""
    if facility.pue is not None:
        return facility.pue, Sourced(facility.pue, "infrastructure.facility.pue (spec)", "spec")
    plat = platform_for(node.accelerator)
    published = facility_defaults().provider_pue.get(plat.operator) if plat.provider_facility else None
    if published is not None:
        return published.value, published
    return perf_power.default_pue(None), onprem_defaults().sources["pue"]


def _cooling_status(
    kw_rack: float, kw_rack_typical: float, ct: Any, facility: Facility, warnings: list[str]
) -> tuple[str, float]:
    """(status, throttle slowdown) of the fullest rack against cooling `ct`: ok, peaks over
    it, throttled (within the overshoot a derate covers), or `BadInput` beyond that."""
    defaults = facility_defaults()
    cap = ct.max_rack_kw
    if kw_rack <= cap:
        return "ok", 0.0
    if kw_rack_typical <= cap:
        warnings.append(
            f"{kw_rack:.1f} kW per rack at nameplate exceeds {ct.id} cooling's {cap:g} kW, but the sustained "
            f"{kw_rack_typical:.1f} kW fits: brief peaks may throttle."
        )
        return "peaks_exceed", 0.0
    if kw_rack_typical <= cap * (1.0 + defaults.throttle_max_overshoot_fraction):
        throttle = defaults.throttle_slowdown_fraction
        warnings.append(
            f"Sustained heat of {kw_rack_typical:.1f} kW per rack exceeds {ct.id} cooling's {cap:g} kW: GPUs will "
            f"throttle and the step slows by ~{throttle:.0%}. Put fewer nodes in a rack ({RACK_POWER_FIELD}) "
            f"or choose a more capable cooling ({COOLING_FIELD})."
        )
        return "throttled", throttle
    better = choose_cooling(kw_rack_typical, facility, "auto")
    raise BadInput(
        f"{ct.id} cooling cannot remove {kw_rack_typical:.1f} kW per rack (sustained; {kw_rack:.1f} kW at "
        "nameplate).",
        f"It removes at most {cap:g} kW per rack (data/facility.yaml); more than "
        f"{defaults.throttle_max_overshoot_fraction:.0%} over is not a derate but a failure.",
        f"Set {COOLING_FIELD}: {better.id} (up to {better.max_rack_kw:g} kW), or lower {RACK_POWER_FIELD} "
        f"to at most {cap:g} so fewer nodes share a rack.",
    )


def _energy(
    demand: Demand, facility_typical_w: float, span_s: float | None
) -> tuple[float | None, float | None, float | None]:
    """(MWh per run, MWh per month, kWh per million work units) at the typical facility draw."""
    per_run = per_month = None
    if span_s is not None and not demand.continuous:
        per_run = facility_typical_w * span_s / J_PER_MWH
        if demand.runs_per_month:
            per_month = per_run * demand.runs_per_month
    else:
        per_month = facility_typical_w * MONTH_S / J_PER_MWH
    # the energy of a period / the work done in it (one definition, search.serving_costs): a job's
    # run (failures and restarts included) over its units; a service's month over the month's work
    # at its average rate (its duty cycle is already in that rate: not applied twice)
    if per_run is not None and span_s:
        units = demand.work_units_total or demand.work_units_per_s * span_s
        per_million = per_million_units(per_run * J_PER_MWH / J_PER_KWH, units)
    else:
        per_million = per_million_units(facility_typical_w / J_PER_KWH, demand.work_units_per_s)
    return per_run, per_month, per_million


def _power_sources(
    acc: Any, node: NodeType, ct: Any, throttled: bool, pue_src: Sourced, provider: bool = False
) -> list[dict[str, Any]]:
    """Where each figure of the power plan came from (no cooling of ours in a provider's hall)."""
    defaults = facility_defaults()
    sources = [source_entry(f"{acc.id}.tdp_w", acc.sources["tdp_w"])]
    sources.append(source_entry(f"{node.id}.max_power_w", node.sources["max_power_w"]))
    if not provider:
        sources += [source_entry(f"cooling.{ct.id}.{k}", s) for k, s in ct.sources.items()]
    used = [
        "gpu.idle_fraction_of_tdp",
        "gpu.utilisation_at_tdp",
        "host.typical_fraction_of_max",
        "rack.overhead_w",
    ]
    if throttled:
        used += ["throttle.slowdown_fraction", "throttle.max_overshoot_fraction"]
    sources += [source_entry(k, defaults.sources[k]) for k in used]
    sources.append(source_entry("pue", pue_src))
    return sources


def _buildings_and_swing(
    nodes: int, node: NodeType, swing_w: float, training: bool, warnings: list[str]
) -> int:
    """Buildings the nodes need (one building's IT budget, facility.yaml `site`), with a warning
    when they need several, and when a synchronous stall swings the load by LOAD_SWING_WARN_W
    or more: Llama 3's 16,384 H100 swung tens of MW as the whole job stalled and resumed,
    "stretching the limits of the power grid" (Dubey et al. 2024, sec. 3.3.4)."""
    site = facility_defaults().site
    buildings = site.buildings(nodes, node.max_power_w) if site else 1
    if site and buildings > 1:
        warnings.append(
            f"{nodes:,} nodes draw more than one building's {site.building_it_power_w / 1e6:.0f} MW of IT power: "
            f"the cluster spans {buildings} buildings"
            + (
                " joined by a data-centre interconnect (see the fabric's DCI)."
                if training
                else "; its replicas are independent, so no interconnect between buildings is needed."
            )
        )
    if swing_w >= LOAD_SWING_WARN_W:
        warnings.append(
            f"A stall of the whole job (checkpoint, failure, restart) drops the facility load by about "
            f"{swing_w / 1e6:.0f} MW within seconds: agree ramp limits with the utility and plan on-site "
            "storage or load banks to smooth it."
        )
    return buildings


def size_power(
    demand: Demand,
    node: NodeType,
    nodes: int,
    racks: int,
    fabric_power_w: float,
    storage_power_w: float,
    facility: Facility,
    run_s: float | None,
    *,
    cooling: str | None = None,
) -> PowerPlan:
    """Power, cooling check and energy for ``nodes`` nodes in ``racks`` racks (see the module doc).

    ``cooling`` is the type `rightsize.sizing.nodes_racks` chose (pass ``NodesRacks.cooling``);
    without it, ``facility.cooling`` ("auto": the least type whose ceiling handles the
    fullest rack at nameplate). ``run_s`` is one run's wall time, goodput-adjusted; None
    for a service (``demand.run_s`` is used when a job gives none).

    Longer than 80 lines for one reason: it fills the PowerPlan record (35 fields) in one
    place, beside the sums that make them; the decisions live in `_cooling_status`,
    `_pue`, `_energy` and `_power_sources`.
    """
    if nodes < 1 or racks < 1:
        raise BadInput(f"Sizing power for {nodes} nodes in {racks} racks.", "Both must be at least 1.")
    defaults = facility_defaults()
    acc = get_accelerator(node.accelerator)
    warnings: list[str] = []

    # A board power limit (infrastructure.facility.gpu_power_limit_w) is the most a GPU draws;
    # the perf model ran at the same limit (perf.hardware.power_capped), so speed and power agree.
    limit_w = facility.gpu_power_limit_for(acc.id)
    tdp = limit_w or acc.tdp_w
    idle = perf_power.gpu_draw_w(acc.tdp_w, defaults.gpu_idle_fraction_of_tdp, 0.0)
    # MFU is against the datasheet peak: a capped GPU reaches its limit at that share of the
    # utilisation an uncapped one reaches its TDP at (perf.hardware.capped_compute_factor)
    f = gpu_activity(demand, defaults.gpu_utilisation_at_tdp * capped_compute_factor(limit_w, acc.tdp_w))
    gpu_typical = idle + (tdp - idle) * f  # perf.power.gpu_draw_w, its ceiling the limit
    slots = nodes * node.gpus_per_node
    working = min(demand.gpus, slots)
    acc_max = slots * tdp
    acc_typical = working * gpu_typical + (slots - working) * idle

    host_per_node = node.max_power_w - node.gpus_per_node * acc.tdp_w  # the node's nameplate less its GPUs'
    if host_per_node < 0:
        warnings.append(
            f"{node.name}'s max_power_w ({node.max_power_w:g} W) is below its GPUs' TDP "
            f"({node.gpus_per_node} x {acc.tdp_w:g} W); host power taken as 0."
        )
        host_per_node = 0.0
    host_typical_per_node = host_per_node * defaults.host_typical_fraction_of_max
    host_max = nodes * host_per_node
    host_typical = nodes * host_typical_per_node
    overhead = racks * defaults.rack_overhead_w

    it_max = acc_max + host_max + overhead + fabric_power_w + storage_power_w
    it_typical = acc_typical + host_typical + overhead + fabric_power_w + storage_power_w
    pue, pue_src = _pue(facility, node)
    facility_max = it_max * pue
    facility_typical = it_typical * pue

    # the fullest rack against its cooling
    in_fullest = math.ceil(nodes / racks)
    node_max = node.gpus_per_node * tdp + host_per_node
    node_typical = node.gpus_per_node * gpu_typical + host_typical_per_node
    kw_rack = (in_fullest * node_max + defaults.rack_overhead_w) / KILO
    kw_rack_typical = (in_fullest * node_typical + defaults.rack_overhead_w) / KILO
    ct = choose_cooling(kw_rack, facility, cooling)
    cap = ct.max_rack_kw
    provider = platform_for(acc.id, acc.vendor).provider_facility
    if provider:  # the cloud provider's halls: its racks and cooling, not ours to check or throttle
        status, throttle = "provider-operated", 0.0
    else:
        status, throttle = _cooling_status(kw_rack, kw_rack_typical, ct, facility, warnings)

    if facility.power_cap_w is not None and facility_max > facility.power_cap_w:
        per_node = (node_max + defaults.rack_overhead_w / in_fullest + fabric_power_w / nodes) * pue
        raise _cap_error(
            facility_max, facility.power_cap_w, node, nodes, per_node, storage_power_w * pue, demand.gpus
        )

    swing = working * (gpu_typical - idle) * pue
    training = demand.workload in ("pretraining", "fine_tuning")
    _buildings_and_swing(nodes, node, swing, training, warnings)
    span_s = run_s if run_s is not None else demand.run_s
    per_run, per_month, per_million = _energy(demand, facility_typical, span_s)
    sources = _power_sources(acc, node, ct, status == "throttled", pue_src, bool(provider))
    if limit_w:
        limit = Sourced(limit_w, "the spec: board power limit per GPU (nvidia-smi -pl)", "")
        sources.append(source_entry("infrastructure.facility.gpu_power_limit_w", limit))
        figures = power_limit_figures().sources
        sources += [
            source_entry(f"power_limit.{k}", figures[k]) for k in ("exponents.compute", "exponents.memory")
        ]

    return PowerPlan(
        nodes=nodes,
        racks=racks,
        gpus=working,
        gpu_slots=slots,
        gpu_tdp_w=tdp,
        gpu_idle_w=idle,
        gpu_activity_fraction=f,
        gpu_typical_w=gpu_typical,
        accelerators_max_w=acc_max,
        accelerators_typical_w=acc_typical,
        host_max_w=host_max,
        host_typical_w=host_typical,
        rack_overhead_w=overhead,
        fabric_w=fabric_power_w,
        storage_w=storage_power_w,
        it_power_max_w=it_max,
        it_power_typical_w=it_typical,
        pue=pue,
        facility_power_w=facility_max,
        facility_power_typical_w=facility_typical,
        power_cap_w=facility.power_cap_w,
        nodes_in_fullest_rack=in_fullest,
        kw_per_rack=kw_rack,
        kw_per_rack_typical=kw_rack_typical,
        cooling=ct.id,
        cooling_max_rack_kw=cap,
        cooling_status=status,
        throttle_slowdown=throttle,
        run_s=span_s if not demand.continuous else None,
        energy_per_run_mwh=per_run,
        energy_per_month_mwh=per_month,
        work_unit=demand.work_unit,
        energy_per_million_units_kwh=per_million,
        warnings=tuple(warnings),
        sources=tuple(sources),
        load_swing_w=swing,
        facility_operated_by="provider" if provider else "owner",
    )
