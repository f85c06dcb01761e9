"""The cost section in words a buyer reads: what each way of paying costs and why, not a
dump of every key. Reads the sizing's cost dictionary (its JSON form) and decides nothing."""

from __future__ import annotations

from typing import Any

from rightsize.report import units
from rightsize.report.bom import breakeven_text, unit_name, usd_fine
from rightsize.report.document import Section, Table

_OPTION_NAMES = {
    "on_demand": "on demand",
    "reserved_1y": "reserved, 1 year",
    "reserved_3y": "reserved, 3 years",
    "spot": "spot",
}


def _money(v: Any) -> str:
    return units.usd(v) if isinstance(v, int | float) else "-"


def _fine(v: Any) -> str:
    return usd_fine(v) if isinstance(v, int | float) else "-"


def _dated(opt: dict[str, Any]) -> str:
    as_of = opt.get("price_as_of")
    if not as_of:
        return "-"
    return f"{as_of} (stale)" if opt.get("price_stale") else str(as_of)


def _note(name: str, opt: dict[str, Any]) -> str:
    if name == "spot":
        if opt.get("applicable") is False:
            return "not applicable: " + str(opt.get("not_applicable_reason") or "")
        bits = [f"{opt.get('preemptions_per_hour', 0):.2g} preemptions an hour"]
        factor = opt.get("slowdown_factor")
        if isinstance(factor, int | float) and factor > 1.0005:
            bits.append(f"the work takes {factor:.3g}x as long")
        if opt.get("spare_nodes"):
            bits.append(f"{units.plural(int(opt['spare_nodes']), 'spare node')} kept up")
        return "; ".join(bits)
    used = opt.get("commitment_used_fraction")
    if name.startswith("reserved") and isinstance(used, int | float):
        text = f"{units.pct(used, 1)} of the committed hours used"
        term, monthly, idle = opt.get("term_hours"), opt.get("monthly_payment_usd"), opt.get("idle_usd")
        if isinstance(term, int | float) and isinstance(monthly, int | float):
            text += f"; a {term / 8760:g}-year term at {units.usd(monthly)} a month"
        if isinstance(idle, int | float) and idle > 0:
            text += f", {units.usd(idle)} of it idle unless other work fills it"
        u = opt.get("utilisation_assumed_fraction")
        if isinstance(u, int | float):
            text += f"; the run is charged at {units.pct(u, 0)} of the term used, as owned hardware is"
        return text
    return ""


def _summary(cost: dict[str, Any], per: str) -> Table:
    used, billed = cost.get("gpus_used"), cost.get("gpus_billed")
    summary = [
        ["deployment", str(cost.get("deployment", "-"))],
        ["accelerator", f"{cost.get('accelerator', '-')} in {cost.get('node', '-')} nodes"],
        ["GPUs billed (whole instances)", f"{billed:,}" if isinstance(billed, int) else "-"],
        ["GPUs used", f"{used:,}" if isinstance(used, int) else "-"],
        ["schedule", str(cost.get("schedule", "-"))],
    ]
    if cost.get("priced_instance"):
        summary.append(["cloud prices are for", str(cost["priced_instance"])])
    if isinstance(cost.get("run_s"), int | float):
        summary.append(["one run takes", units.seconds(cost["run_s"])])
    gh_billed, gh_used = cost.get("gpu_hours_billed"), cost.get("gpu_hours_used")
    if isinstance(gh_billed, int | float) and isinstance(gh_used, int | float):
        period = cost.get("period", per)
        summary.append([f"GPU-hours billed per {period}", units.count(gh_billed)])
        summary.append([f"GPU-hours used per {period}", units.count(gh_used)])
    return Table(["what", "value"], summary, "what is costed", ["l", "l"])


def _cloud_table(cloud: dict[str, Any], per: str, unit: str) -> Table:
    rows = [
        [
            _OPTION_NAMES.get(name, name.replace("_", " ")),
            _money(opt.get("usd_per_instance_hour")),
            _money(opt.get("usd_per_gpu_hour")),
            _dated(opt),
            _money(opt.get(f"usd_per_{per}")),
            _fine(opt.get("usd_per_million_units")),
            str(opt.get("pays", "")).removeprefix("not applicable: ")
            if opt.get("applicable") is not False
            else "-",
            _note(name, opt),
        ]
        for name, opt in cloud.items()
        if isinstance(opt, dict)
    ]
    head = ["option", "per instance-hour", "per GPU-hour (derived)", "price as of", f"per {per}"]
    return Table(
        [*head, f"per 1M {unit}", "what it pays for", "notes"],
        rows,
        "renting in the cloud",
        ["l", "r", "r", "l", "r", "r", "l", "l"],
    )


def _onprem_table(onprem: dict[str, Any], per: str, unit: str) -> Table:
    parts = ", ".join(f"{k} {units.usd(v)}" for k, v in (onprem.get("capex_breakdown_usd") or {}).items())
    year = ", ".join(f"{k} {units.usd(v)}" for k, v in (onprem.get("usd_per_year_breakdown") or {}).items())
    rows = [
        ["capital cost", f"{_money(onprem.get('capex_usd'))} ({parts})"],
        ["a year", f"{_money(onprem.get('usd_per_year'))} ({year})"],
        ["per GPU-hour owned", _money(onprem.get("usd_per_gpu_hour_owned"))],
        [
            f"per useful GPU-hour at {units.pct(onprem.get('utilisation_fraction', 0), 0)} busy",
            _money(onprem.get("usd_per_useful_gpu_hour")),
        ],
        [
            f"over its life ({units.number(onprem.get('amortisation_years', 0))} years)",
            _money(onprem.get("tco_over_amortisation_usd")),
        ],
        [f"per {per}", _money(onprem.get(f"usd_per_{per}"))],
        [f"per 1M {unit}", _fine(onprem.get("usd_per_million_units"))],
    ]
    return Table(["what", "value"], rows, "owning on premises", ["l", "l"])


def cost_section(cost: dict[str, Any]) -> Section:
    sec = Section("sizing-cost", "Cost")
    per = "run" if cost.get("schedule") == "one-off" or cost.get("run_s") else "month"
    sec.tables.append(_summary(cost, per))
    unit = unit_name(cost.get("work_unit"))
    cloud = cost.get("cloud") or {}
    if cloud:
        sec.tables.append(_cloud_table(cloud, per, unit))
    elif cost.get("cloud_unavailable"):
        sec.text.append("Cloud: " + str(cost["cloud_unavailable"]).splitlines()[0])
    onprem = cost.get("onprem") or {}
    if onprem:
        sec.tables.append(_onprem_table(onprem, per, unit))
    elif cost.get("onprem_unavailable"):
        sec.text.append("On premises: " + str(cost["onprem_unavailable"]).splitlines()[0])
    be = (cost.get("breakeven_utilisation_fraction") or {}).get("on_demand")
    if isinstance(be, int | float):
        sec.text.append("Break-even: " + breakeven_text(be) + ".")
    sec.bullets.extend(
        str(n) for n in cost.get("notes") or [] if not str(n).startswith("spot is not applicable")
    )
    from rightsize.report.sections import source_line

    sec.bullets.extend(source_line(s) for s in cost.get("sources") or [] if isinstance(s, dict))
    return sec
