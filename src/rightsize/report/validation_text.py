"""Terminal rendering of validation results."""

from __future__ import annotations

from typing import Any


def render_validation(result: dict[str, Any]) -> str:
    lines = [f"{'case':<44} {'metric':<22} {'published':>12} {'predicted':>12} {'error':>8}  {'P10-P90':>21}"]
    for r in result["rows"]:
        pred = f"{r['predicted']:,.4g}" if r["predicted"] is not None else "-"
        err = f"{r['error']:+.1%}" if r["error"] is not None else "n/a"
        rng = ""
        if "p10" in r:
            mark = "in" if r.get("within_p10_p90") else "OUT"
            rng = f"{r['p10']:>9,.4g}-{r['p90']:<9,.4g} {mark}"
        lines.append(f"{r['id']:<44} {r['metric']:<22} {r['published']:>12,.4g} {pred:>12} {err:>8}  {rng}")
        if r.get("reason"):
            lines.append(f"    not predicted: {r['reason']}")
        if r.get("source"):
            lines.append("    " + _source_line(r))
        if r.get("scale_check"):
            lines.append("    " + _scale_line(r["scale_check"]))
    lines.append("")
    for metric, s in result["summary"].items():
        if metric == "all":
            lines.append(
                f"P10-P90 range holds the published value for {s['coverage_p10_p90']:.0%} of "
                f"{s['ranged']} ranged rows"
            )
            continue
        if s["n"]:
            label = "whole runs (gpu_hours)" if metric == "gpu_hours" else metric
            lines.append(
                f"{label}: n={s['n']}  median |error| {s['median_abs_error']:.1%}  "
                f"max |error| {s['max_abs_error']:.1%}"
                + (f"  ({s['not_predicted']} not predicted)" if s["not_predicted"] else "")
                + (
                    f"  P10-P90 coverage {s['coverage_p10_p90']:.0%}"
                    if s.get("coverage_p10_p90") is not None
                    else ""
                )
            )
        else:
            lines.append(f"{metric}: no case predicted ({s['not_predicted']} not predicted)")
    for name, s in (result.get("by_source") or {}).items():
        lines.append(
            f"serving, {name}: n={s['n']}  median |error| {s['median_abs_error']:.1%}  "
            f"max |error| {s['max_abs_error']:.1%}"
        )
    for basis, s in (result.get("whole_runs_by_scale") or {}).items():
        lines.append(
            f"whole runs on the {basis}: n={s['n']}  median |error| {s['median_abs_error']:.1%}  "
            f"max |error| {s['max_abs_error']:.1%}"
            + (
                f"  P10-P90 coverage {s['coverage_p10_p90']:.0%}"
                if s.get("coverage_p10_p90") is not None
                else ""
            )
        )
    for name, summary in (result.get("by_file") or {}).items():
        for metric, s in summary.items():
            if metric != "all" and s["n"] + s["not_predicted"]:
                med = (
                    f"median |error| {s['median_abs_error']:.1%}  max |error| {s['max_abs_error']:.1%}"
                    if s["n"]
                    else ""
                )
                lines.append(f"{name}, {metric}: n={s['n']}  {med}  ({s['not_predicted']} not predicted)")
    lines.extend(_family_lines(result.get("by_family") or {}))
    return "\n".join(lines)


def _family_lines(by_family: dict[str, Any]) -> list[str]:
    """One line per accelerator family: rows, median and worst |error|, P10-P90 coverage."""
    out = ["", "by accelerator family:"] if by_family else []
    for fid, s in by_family.items():
        if not s["rows"]:
            out.append(f"  {fid}: no row predicted ({s['not_predicted']} not predicted)")
            continue
        cov = (
            f"  P10-P90 coverage {s['coverage_p10_p90']:.0%}" if s.get("coverage_p10_p90") is not None else ""
        )
        rej = f"  ({s['not_predicted']} not predicted)" if s["not_predicted"] else ""
        out.append(
            f"  {fid}: n={s['rows']}  median |error| {s['median_abs_error']:.1%}  "
            f"max |error| {s['max_abs_error']:.1%}{cov}{rej}"
        )
    return out


def _source_line(r: dict[str, Any]) -> str:
    """Which source predicted a serving row, and the error of each source."""
    parts = [f"source: {r['source']}"]
    if "analytic_error" in r:
        parts.append(f"analytic {r['analytic_error']:+.1%}")
    if "kernels_error" in r:
        parts.append(f"measured kernels {r['kernels_error']:+.1%}")
        falls = r.get("fallbacks") or {}
        if falls:
            parts.append("analytic for " + ", ".join(sorted(falls)))
    else:
        parts.append(str(r.get("kernel_table", "")))
    return "; ".join(parts)


def _scale_line(check: dict[str, Any]) -> str:
    """One line for the terminal: the count the published figure implies, and the curve."""
    curve = ", ".join(f"{int(g):,}: {h / 1e6:.3g}M" for g, h in check["gpu_hours_by_gpus"].items())
    head = (
        f"published value matches a plan on about {check['implied_gpus']:,} GPUs"
        if check["implied_gpus"] is not None
        else "no count tried reaches the published value"
    )
    return f"scale check: {head} (the search picked {check['searched_gpus']:,}); GPU-hours by GPUs: {curve}"
