"""The whole-run section of a training plan: the run's days and GPU-hours by part, each with
where its figure comes from (`sizing.whole_run`), and the headline's note when the chosen
layout stands far from any validated run."""

from __future__ import annotations

from typing import Any

from rightsize.report import units
from rightsize.report.document import Section, Table


def whole_run_section(plan: Any) -> Section | None:
    whole = getattr(getattr(getattr(plan, "sizing", None), "run", None), "whole_run", None)
    if whole is None or not whole.lines:
        return None
    total = whole.total_s
    sec = Section(
        "whole_run",
        f"Whole run ({units.seconds(total)}, {units.number(whole.gpu_hours)} GPU-hours)",
        brief=True,
    )
    rows = [
        [
            line.part,
            units.seconds(line.time_s),
            units.number(line.gpu_hours),
            units.pct(line.time_s / total),
            line.basis,
        ]
        for line in whole.lines
    ]
    rows.append(
        ["whole run", units.seconds(total), units.number(whole.gpu_hours), "100.0%", "sum of the parts"]
    )
    table = Table(["part", "time", "GPU-hours", "share", "basis"], rows, "whole run by part")
    table.brief_columns = [0, 1, 2, 3]  # the terminal summary leaves the sources to the full report
    sec.tables.append(table)
    sec.bullets.extend(whole.notes)
    return sec


def far_from_ground_note(unc: dict[str, Any] | None) -> str:
    """' (far from validated runs: ...)' for the headline when the ground is thin, else ''."""
    g = (unc or {}).get("ground") or {}
    if not g.get("thin"):
        return ""
    thin = g.get("thin_mechanisms") or []
    why = f"never validated here: {', '.join(thin)}" if thin else f"{g.get('distance', 0.0):.1f} steps away"
    return f" (far from validated runs, {why}; range widened to sigma {float(g.get('sigma', 0.0)):.0%})"
