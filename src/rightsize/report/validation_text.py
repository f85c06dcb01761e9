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
    lines.append("")
    for metric, s in result["summary"].items():
        if metric == "all":
            lines.append(
                f"P10-P90 range holds the published value for {s['coverage_p10_p90']:.0%} of "
                f"{s['ranged']} ranged rows"
            )
            continue
        if s["n"]:
            lines.append(
                f"{metric}: n={s['n']}  median |error| {s['median_abs_error']:.1%}  "
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
    return "\n".join(lines)
