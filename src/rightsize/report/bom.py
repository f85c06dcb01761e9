"""The bill of materials in a few lines: what to buy or rent, read off the sizing sections.
Shown in every format (the terminal summary included) ahead of the detailed sections."""

from __future__ import annotations

from typing import Any

from rightsize.report import units
from rightsize.report.document import Section, Table


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def breakeven_text(u: float) -> str:
    """Owning against renting on demand, in words; a break-even above 100% is no break-even."""
    if u > 1.0:
        return (
            "renting on demand is cheaper even with the owned cluster busy every hour "
            f"(owning would need {units.pct(u, 0)} of the hours)"
        )
    return f"owning beats on-demand above {units.pct(u)} utilisation"


_UNIT_NAMES = {"output_token": "output tokens", "query": "queries"}


def unit_name(work_unit: Any) -> str:
    """'output_token' -> 'output tokens', 'image' -> 'images': the plural a per-unit figure names."""
    w = str(work_unit or "unit")
    return _UNIT_NAMES.get(w, w.replace("_", " ") + "s")


def usd_fine(v: float) -> str:
    """A per-unit price with three significant figures below $100 ($4.12, $0.00540)."""
    return units.usd(v) if abs(v) >= 100 or v == 0 else f"${v:,.3g}" if abs(v) >= 1 else f"${v:.3g}"


def per_million_text(usd: Any, work_unit: Any) -> str:
    """'$4.12 per 1M output tokens', or '' when there is no figure."""
    if not isinstance(usd, int | float):
        return ""
    return f"{usd_fine(usd)} per 1M {unit_name(work_unit)}"


def _gpus(nodes: dict[str, Any], cost: dict[str, Any]) -> str:
    """Accelerators billed (whole nodes) and, when fewer, those the job uses, in the
    platform's word (GPUs, chips)."""
    noun = nodes.get("unit_noun") or "GPU"
    billed = cost.get("gpus_billed") or nodes.get("gpus", 0)
    used = cost.get("gpus_used") or billed
    if used < billed:
        return f"{units.plural(billed, noun)} billed, {used:,} used"
    return units.plural(billed, noun)


def _compute_row(nodes: dict[str, Any], cost: dict[str, Any]) -> list[str]:
    """The accelerators, their hosts and the racks around them; where the platform's halls
    are the cloud provider's (TPU, Trainium) the scale-up groups instead of a rack count."""
    head = f"{nodes.get('nodes', 0):,} x {nodes.get('node', '?')} ({_gpus(nodes, cost)})"
    if nodes.get("facility_operated_by") == "provider":
        groups = max(int(nodes.get("scaleup_groups", 0) or 0), 1)
        noun = nodes.get("unit_noun") or "GPU"
        per_group = -(-int(nodes.get("gpus", 0) or 0) // groups)
        hosts = -(-per_group // max(int(nodes.get("gpus_per_node", 1) or 1), 1))
        return [
            "compute",
            f"{head} in {units.plural(groups, str(nodes.get('scaleup_group', 'group')))} of "
            f"{units.plural(per_group, noun)} ({units.plural(hosts, 'host')} each; the largest holds "
            f"{nodes.get('scaleup_group_max_units', 0):,}); racks, power and cooling are provider-operated",
        ]
    return [
        "compute",
        f"{head} in {units.plural(nodes.get('racks', 0), 'rack')} of {nodes.get('nodes_per_rack', 0)} "
        f"({units.number(nodes.get('kw_per_rack', 0))} kW, {nodes.get('cooling', '?')} cooled)",
    ]


def _fabric_row(fabric: dict[str, Any], noun: str = "GPU") -> list[str]:
    if not fabric.get("needed") or fabric.get("operated_by") == "provider":
        return [
            "fabric" if fabric.get("operated_by") != "provider" else "network",
            str(fabric.get("reason", "none")),
        ]
    return [
        "fabric",
        f"{fabric.get('kind', '')} {fabric.get('topology', '')}, {units.plural(fabric.get('tiers', 0), 'tier')}, "
        + (f"{fabric.get('rails', 0)} planes, " if fabric.get("topology") == "multi_plane" else "")
        + f"{units.number(fabric.get('nic_gbps_per_gpu', 0))} Gb/s per {noun}: {fabric.get('leaves', 0)} leaf + "
        f"{fabric.get('spines', 0)} spine + {fabric.get('cores', 0)} core {fabric.get('switch', '')}, "
        f"{fabric.get('transceivers', 0):,} transceivers; {units.usd(fabric.get('capex_usd', 0))}",
    ]


def _dci_rows(fabric: dict[str, Any]) -> list[list[str]]:
    """Buildings and the data-centre interconnect, when the cluster spans more than one."""
    dci = fabric.get("dci")
    if not dci:
        return []
    return [
        [
            "interconnect",
            f"{dci['buildings']} buildings of up to {dci['gpus_per_building']:,} GPUs "
            f"({units.watts(dci['building_it_power_w'])} IT each), {dci['topology']} DCI of "
            f"{units.number(dci['gbps_per_building'] / 1000.0)} Tb/s per building, {dci['route']} "
            f"({units.seconds(dci['latency_s'])} one way): {dci['transceivers']:,} coherent transceivers, "
            f"{dci['fibre_pairs']} fibre pairs; crossed by data parallelism, "
            f"{units.seconds(dci['transfer_s_per_step'])} per step before overlap",
        ]
    ]


def _storage_line(storage: dict[str, Any]) -> str:
    fs = _get(storage, "parallel_file_system") or {}
    cfs = _get(storage, "cloud_file_system") or {}
    cap = _get(storage, "capacity", "file_system_with_margin_bytes")
    if fs.get("tier") == "node_local":
        line = "node-local NVMe (no shared file system: a one-node job)"
    elif fs.get("tier") == "cloud_file_system":  # the provider's halls: its file system, rented
        line = f"{cfs['service']} ({cfs.get('tier')}), {units.nbytes(cfs['provisioned_bytes'])} provisioned"
    else:
        line = (
            f"{fs.get('blocks', 0)} x {fs.get('building_block', 'file-system block')}"
            if fs
            else "file system"
        )
    if isinstance(cap, int | float):
        line += f"; {units.nbytes(cap)} hot tier"
    obj = _get(storage, "capacity", "object_store_with_margin_bytes")
    if isinstance(obj, int | float):
        line += f", {units.nbytes(obj)} object store"
    read = fs.get("read_needed_bytes_per_s")
    write = fs.get("write_needed_bytes_per_s")
    if isinstance(read, int | float) and isinstance(write, int | float):
        line += f"; needs read {units.rate(read)}, checkpoint write {units.rate(write)}"
    return line


def _power_line(power: dict[str, Any]) -> str:
    line = (
        f"IT {units.watts(power.get('it_power_typical_w', 0))} typical, "
        f"{units.watts(power.get('it_power_max_w', 0))} max; facility {units.watts(power.get('facility_power_w', 0))} "
        f"(PUE {power.get('pue', 0):g})"
    )
    if power.get("facility_operated_by") == "provider":
        line = "provider-operated halls; estimated draw " + line
    if isinstance(power.get("energy_per_run_mwh"), int | float):
        line += f"; {units.number(power['energy_per_run_mwh'])} MWh per run"
    elif isinstance(power.get("energy_per_month_mwh"), int | float):
        line += f"; {units.number(power['energy_per_month_mwh'])} MWh per month"
    kwh = power.get("energy_per_million_units_kwh")
    if isinstance(kwh, int | float):
        line += f"; {kwh:.3g} kWh per 1M {unit_name(power.get('work_unit'))}"
    return line


def _reliability_rows(rel: dict[str, Any]) -> list[list[str]]:
    if "goodput_fraction" in rel:
        return [
            [
                "reliability",
                f"MTBF {units.seconds(rel.get('cluster_mtbf_s', 0))}, checkpoint every "
                f"{units.seconds(rel.get('checkpoint_interval_s', 0))}, goodput {units.pct(rel['goodput_fraction'])}"
                + (
                    f"; {units.number(rel.get('interruptions_per_day', 0) / 24.0)} failures an hour, "
                    f"{units.plural(rel['spare_nodes'], 'hot-spare node')}"
                    if rel.get("spare_nodes")
                    else ""
                ),
            ]
        ] + (
            [["checkpoint", str(rel["checkpoint"]).removeprefix("checkpoint: ")]]
            if rel.get("checkpoint")
            else []
        )
    if "replica_failures_per_month" in rel:
        return [
            [
                "reliability",
                f"{rel['replica_failures_per_month']:.2f} replica failures a month; "
                f"{rel.get('spare_replicas_recommended', 0)} spare replica recommended",
            ]
        ]
    return []


def _cost_rows(cost: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    if cost.get("cloud") and cost.get("billed_instances"):  # what the cloud bill rents (catalog.billing)
        rows.append(["cloud instances", str(cost["billed_instances"])])
    per = "run" if cost.get("schedule") == "one-off" else "month"
    for name, opt in (cost.get("cloud") or {}).items():
        v = opt.get(f"usd_per_{per}")
        if isinstance(v, int | float):
            unit = per_million_text(opt.get("usd_per_million_units"), cost.get("work_unit"))
            rows.append(
                [
                    f"cloud {name.replace('_', ' ')}",
                    f"{units.usd(v)} per {per} ({opt.get('pays', '')})"
                    + (f"; {unit}" if unit else "")
                    + (f" [price dated {opt.get('price_as_of')}: stale]" if opt.get("price_stale") else ""),
                ]
            )
    onprem = cost.get("onprem") or {}
    if onprem:
        v = onprem.get(f"usd_per_{per}")
        rows.append(
            [
                "on premises",
                f"capex {units.usd(onprem.get('capex_usd', 0))}, {units.usd(onprem.get('usd_per_year', 0))} a year"
                + (f", {units.usd(v)} per {per}" if isinstance(v, int | float) else "")
                + (
                    f"; {unit}"
                    if (unit := per_million_text(onprem.get("usd_per_million_units"), cost.get("work_unit")))
                    else ""
                ),
            ]
        )
    be = cost.get("breakeven_utilisation_fraction") or {}
    if isinstance(be.get("on_demand"), int | float):
        rows.append(["break-even", breakeven_text(be["on_demand"])])
    for reason in ("cloud_unavailable", "onprem_unavailable"):
        if cost.get(reason):
            rows.append([reason.replace("_", " "), str(cost[reason])])
    return rows


def _growth_rows(sizing: dict[str, Any]) -> list[list[str]]:
    stages = _get(sizing, "growth", "stages") or []
    if len(stages) <= 1:
        return []
    last = stages[-1]
    rows = [
        [
            "growth",
            f"{units.plural(len(stages) - 1, 'purchase')} after the plan's own cluster (one a budget cycle) to "
            f"{last.get('nodes', 0):,} nodes ({last.get('gpus', 0):,} GPUs) over "
            f"{_get(sizing, 'growth', 'horizon_years')} years",
        ]
    ]
    for s in stages[1:]:
        capex = s.get("added_capex_usd")
        per_node = s.get("gpus", 0) // max(s.get("nodes", 0), 1)
        rows.append(
            [
                f"growth purchase {s.get('stage')}",
                f"+{s.get('added_nodes', 0):,} nodes (+{s.get('added_nodes', 0) * per_node:,} GPUs), {s.get('due', '')}"
                + (f", {units.usd(capex)} capital" if isinstance(capex, int | float) else "")
                + f"; {s.get('nodes', 0):,} nodes installed after it",
            ]
        )
    return rows


def bom_section(sizing: dict[str, Any]) -> Section | None:
    """The bill of materials: one row per part of the plan (compute, fabric, storage, power,
    reliability, each cost, growth), from the sizing's JSON view."""
    nodes = sizing.get("nodes") or {}
    if not nodes:
        return None
    cost = sizing.get("cost") or {}
    rows: list[list[str]] = [
        _compute_row(nodes, cost),
        _fabric_row(sizing.get("fabric") or {}, nodes.get("unit_noun") or "GPU"),
        *_dci_rows(sizing.get("fabric") or {}),
        ["storage", _storage_line(sizing.get("storage") or {})],
        ["power", _power_line(sizing.get("power") or {})],
    ]
    rows += _reliability_rows(sizing.get("reliability") or {})
    rows += _cost_rows(cost)
    rows += _growth_rows(sizing)
    sec = Section("bill-of-materials", "Bill of materials", brief=True)
    sec.tables.append(Table(["item", "what"], rows, "bill of materials", ["l", "l"]))
    return sec
