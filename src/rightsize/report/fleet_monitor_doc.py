"""The fleet monitor report: each workload's use of the pool against its slot over the window,
the findings, and the rest of the horizon re-planned from what was observed
(`monitor.fleet_use.FleetMonitorResult.to_dict()`)."""

from __future__ import annotations

import time
from typing import Any

from rightsize.report import units
from rightsize.report.document import Document, Section, Table


def _utc(t_s: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t_s))


def _hours(v: Any) -> str:
    return "-" if v is None else f"{units.number(float(v))} GPU-h"


def _ratio(v: Any) -> str:
    return "-" if v is None else f"{float(v):.2f}x"


def fleet_monitor_document(d: dict[str, Any], title: str = "Fleet monitor") -> Document:
    w = d["window"]
    rows = [
        [
            u["name"],
            u["kind"],
            _hours(u["planned_gpu_hours"]),
            _hours(u["held_gpu_hours"]),
            _ratio(u["use_ratio"]),
            "-" if u["activity_fraction"] is None else units.pct(u["activity_fraction"]),
            "-" if u["peak_gpus"] is None else f"{u['peak_gpus']} (slot {u['planned_peak_gpus']})",
            _ratio(u["demand_scale"]),
        ]
        for u in d["workloads"]
    ]
    use = Section(
        "use",
        "Each workload against its slot",
        text=[
            f"Window {_utc(w['start_s'])} to {_utc(w['end_s'])} from {d['source']}; a workload's GPU series are "
            f"picked by {d['workload_selector']} ($workload: its name)."
        ],
        tables=[
            Table(
                ["workload", "kind", "slot", "held", "held / slot", "busy", "peak GPUs", "re-plan demand"],
                rows,
                align=["l", "l", "r", "r", "r", "r", "r", "r"],
            )
        ],
        brief=True,
    )
    found = Section(
        "findings",
        "Findings",
        bullets=[f"[{f['severity']}] {f['title']}. {f['fix']}" for f in d["findings"]]
        or ["None: every workload held within 25% of its slot and kept its GPUs busy."],
        brief=True,
    )
    sections = [use, found]
    p, r = d["planned"], d.get("replan")
    decision = "Nothing left to re-plan."
    key = [("workloads", str(len(d["workloads"]))), ("findings", str(len(d["findings"])))]
    if r:
        delta = r["capacity_usd"] - p["capacity_usd"]
        decision = (
            f"From {r['from_month']}: {units.usd(r['capacity_usd'])} of capacity over {r['months']} months "
            f"({'+' if delta >= 0 else '-'}{units.usd(abs(delta))} against the plan for those months), peak "
            f"{r['peak_gpus']} GPUs (planned {p['peak_gpus']})."
        )
        key += [("re-planned capacity", units.usd(r["capacity_usd"])), ("peak GPUs", str(r["peak_gpus"]))]
        sections.append(
            Section(
                "replan",
                f"Re-plan from {r['from_month']}",
                tables=[
                    Table(
                        ["", "planned", "re-planned"],
                        [
                            ["months", str(p["months"]), str(r["months"])],
                            ["capacity cost", units.usd(p["capacity_usd"]), units.usd(r["capacity_usd"])],
                            ["peak GPUs", str(p["peak_gpus"]), str(r["peak_gpus"])],
                            ["GPU-hours", _hours(p["gpu_hours"]), _hours(r["gpu_hours"])],
                        ],
                    )
                ],
                bullets=list(d.get("notes") or []),
                brief=True,
            )
        )
    elif d.get("notes"):
        sections.append(Section("replan", "Re-plan", bullets=list(d["notes"])))
    return Document(
        "fleet_monitor", f"{title}: {d['name']}", decision=decision, key_numbers=key, sections=sections
    )
