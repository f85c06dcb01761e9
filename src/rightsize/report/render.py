"""One entry point from a result to a document: `render(result, fmt, title)`.

`fmt` is one of FORMATS. The result is a training or serving plan, any plan with
`to_dict()` (vision, recommendation, ...), the dict that `validate` returns, or a profile
dict (kind "profile"; see `rightsize.report.other_docs`). The CLI calls only this, so a new
format or result kind is added here.

- table: a short terminal summary (rich tables, plain text).
- markdown: the whole report for a design document.
- html: the whole report as one self-contained file with inline SVG charts.
- json: the versioned data (`schema_version`), valid against report/data/report.schema.json.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rightsize.constants import REPORT_SCHEMA_VERSION
from rightsize.errors import BadInput
from rightsize.report.document import Document

FORMATS = ("table", "json", "markdown", "html")
SCHEMA_VERSION = REPORT_SCHEMA_VERSION


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, default=_jsonable, allow_nan=False)


def _jsonable(o: Any) -> Any:
    if hasattr(o, "as_dict"):
        return o.as_dict()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if isinstance(o, set | tuple):
        return list(o)
    try:
        return float(o)
    except (TypeError, ValueError):
        return str(o)


def _clean(obj: Any) -> Any:
    """JSON cannot hold NaN or infinity: they become null."""
    if isinstance(obj, float) and obj != obj or obj in (float("inf"), float("-inf")):
        return None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if hasattr(obj, "as_dict") and not isinstance(obj, type):
        return _clean(obj.as_dict())
    if type(obj).__module__ == "numpy":
        return _clean(obj.tolist())
    return obj


def _is_fleet(result: Any) -> bool:
    """A fleet plan (the fleet package is imported only once a fleet is planned)."""
    fleet = sys.modules.get("rightsize.fleet")
    return fleet is not None and isinstance(result, fleet.FleetPlan)


def _is_profile(result: Any) -> bool:
    if isinstance(result, dict):
        return result.get("kind") == "profile"
    return isinstance(result, list) and any(
        isinstance(r, dict) and ("step_s" in r or "t_s" in r or r.get("kind") == "profile") for r in result
    )


def _is_monitor(result: Any) -> bool:
    """A `rightsize monitor` result (object, or its dict)."""
    if isinstance(result, dict):
        return result.get("kind") == "monitor"
    return type(result).__name__ == "MonitorResult"


def _is_fleet_monitor(result: Any) -> bool:
    """`rightsize monitor` on a fleet (object, or its dict)."""
    if isinstance(result, dict):
        return result.get("kind") == "fleet_monitor"
    return type(result).__name__ == "FleetMonitorResult"


def _is_sweep(result: Any) -> bool:
    """`rightsize sweep` (object, or its dict)."""
    if isinstance(result, dict):
        return result.get("kind") == "sweep"
    return type(result).__name__ == "SweepResult"


def _plan_extras(result: Any) -> dict[str, Any]:
    """What every plan adds to its JSON: sizing, uncertainty, findings, checklists."""
    from rightsize.advise import advise, checklists
    from rightsize.advise.view import sizing_dict

    out: dict[str, Any] = {}
    sizing = sizing_dict(result)
    if sizing:
        out["sizing"] = sizing
    unc = getattr(result, "uncertainty", None)
    if unc:
        out["uncertainty"] = unc
    cal = (getattr(result, "extra", None) or {}).get("calibration")
    if cal:
        out["calibration"] = cal
    spec = (getattr(result, "extra", None) or {}).get("spec")
    if spec:
        out["spec"] = spec
    out["findings"] = [f.as_dict() for f in advise(result)]
    lists = checklists(result)
    if any(lists.values()):
        out["checklists"] = {k: [i.as_dict() for i in v] for k, v in lists.items()}
    return out


def result_dict(result: Any) -> dict[str, Any]:
    """The versioned JSON-ready dict of any result."""
    from rightsize.advise.view import plan_kind
    from rightsize.report.plan_json import plan_dict
    from rightsize.report.platform_terms import json_in_platform_terms
    from rightsize.report.serving_text import serving_dict

    if _is_fleet(result):
        return _clean({"schema_version": SCHEMA_VERSION, **result.to_dict()})
    if _is_monitor(result) or _is_fleet_monitor(result) or _is_sweep(result):
        return _clean(result if isinstance(result, dict) else result.to_dict())
    kind = plan_kind(result)
    acc = getattr(getattr(result, "best", None), "accelerator", None)  # its platform's words
    if kind == "training":
        return json_in_platform_terms(_clean({**plan_dict(result), **_plan_extras(result)}), acc)
    if kind == "serving":
        return json_in_platform_terms(_clean({**serving_dict(result), **_plan_extras(result)}), acc)
    if _is_profile(result):
        from rightsize.report.other_docs import profile_from_records

        return _clean({"schema_version": SCHEMA_VERSION, **profile_from_records(result), "kind": "profile"})
    if isinstance(result, dict):
        if "rows" in result and "summary" in result:
            return _clean({"schema_version": SCHEMA_VERSION, "kind": "validation", **result})
        return _clean({"schema_version": SCHEMA_VERSION, **result})
    if hasattr(result, "to_dict"):
        d = result.to_dict()
        d.setdefault("kind", type(result).__name__)
        d["schema_version"] = SCHEMA_VERSION
        return _clean({**d, **_plan_extras(result)})
    raise TypeError(f"no renderer for {type(result).__name__}")


def document(result: Any, title: str = "Plan") -> Document:
    """The format-neutral document of any result."""
    from rightsize.advise.view import plan_kind
    from rightsize.report.plan_doc import serving_document, training_document

    if _is_fleet(result):
        from rightsize.report.fleet_doc import fleet_document

        return fleet_document(result, title)
    if _is_monitor(result):
        from rightsize.report.monitor_doc import monitor_document

        return monitor_document(result_dict(result), title if title != "Plan" else "Monitor")
    if _is_fleet_monitor(result):
        from rightsize.report.fleet_monitor_doc import fleet_monitor_document

        return fleet_monitor_document(result_dict(result), title if title != "Plan" else "Fleet monitor")
    if _is_sweep(result):
        from rightsize.report.sweep_doc import sweep_document

        return sweep_document(result_dict(result), title if title != "Plan" else "Sweep")
    kind = plan_kind(result)
    if kind == "training":
        return training_document(result, title)
    if kind == "serving":
        return serving_document(result, f"Serving {title.lower()}" if title[:1].isupper() else title)
    from rightsize.report.other_docs import generic_document, profile_document, validation_document

    if _is_profile(result):
        return profile_document(result, title if title != "Plan" else "Profile")
    if isinstance(result, dict) and "rows" in result and "summary" in result:
        return validation_document(result, title)
    if isinstance(result, dict) or hasattr(result, "to_dict"):
        return generic_document(result, title)
    raise TypeError(f"no renderer for {type(result).__name__}")


def render(result: Any, fmt: str, title: str = "Plan") -> str:
    if fmt == "json":
        return to_json(result_dict(result))
    if fmt not in FORMATS:
        raise BadInput(
            f"Output format '{fmt}' is not available for this result.",
            f"Formats: {', '.join(FORMATS)}.",
            "Use --format table, markdown, html or json.",
        )
    if fmt == "table" and hasattr(result, "render_text") and not hasattr(result, "best"):
        # A plan kind with its own terminal text: keep it, and add the advisor's top findings.
        from rightsize.advise import advise
        from rightsize.advise.view import sizing_dict
        from rightsize.report.sections import findings_section, uncertainty_section
        from rightsize.report.terminal import render_terminal

        text = str(result.render_text(title)).rstrip()
        margins = sizing_dict(result).get("margins")
        shared = [
            uncertainty_section(
                getattr(result, "uncertainty", None), margins if isinstance(margins, list) else None
            )
        ]
        shared.append(findings_section(advise(result)))
        extra = render_terminal(
            Document("findings", "Advisor", sections=[s for s in shared if s is not None])
        )
        return text + "\n\n" + extra
    if fmt == "table" and isinstance(result, dict) and "rows" in result and "summary" in result:
        from rightsize.report.validation_text import render_validation

        return render_validation(result)  # every case's error, as DESIGN.md asks of `validate`
    doc = document(result, title)
    cal = (getattr(result, "extra", None) or {}).get("calibration")
    if cal:
        doc.sections.insert(0, _calibration_section(cal))
    if fmt == "markdown":
        from rightsize.report.markdown import render_markdown

        return render_markdown(doc).rstrip("\n")
    if fmt == "html":
        from rightsize.report.html import render_html

        return render_html(doc)
    from rightsize.report.terminal import render_terminal

    return render_terminal(doc).rstrip("\n")


def _calibration_section(cal: dict[str, Any]) -> Any:
    """Default against calibrated predictions, side by side."""
    from rightsize.report import units
    from rightsize.report.document import Section, Table

    d, c, ch = cal.get("default", {}), cal.get("calibrated", {}), cal.get("relative_change", {})
    rows = [
        [
            units.label(k),
            units.value(k, d.get(k)),
            units.value(k, c.get(k)),
            units.pct(ch[k]) if k in ch else "",
        ]
        for k in ("accelerator", "gpus", "step_time_s", "mfu", "time_to_train_s", "cost_usd")
        if d.get(k) is not None or c.get(k) is not None
    ]
    sec = Section("calibration", "Default against calibrated prediction", brief=True)
    sec.tables.append(
        Table(["", "default", "calibrated", "change"], rows, "calibration", ["l", "r", "r", "r"])
    )
    applied = ", ".join(cal.get("overrides_applied_to") or []) or "no accelerator in this plan"
    sec.bullets.append(f"Calibration applied to: {applied}.")
    return sec


def render_profile(profile: dict[str, Any] | list[dict[str, Any]], fmt: str, title: str = "Profile") -> str:
    """A profile (dict or JSONL records; shape in `rightsize.report.other_docs`) in any format."""
    from rightsize.report.other_docs import profile_from_records

    return render(profile_from_records(profile), fmt, title)


def json_schema() -> dict[str, Any]:
    """The JSON Schema every `--format json` output validates against."""
    from importlib.resources import files

    text = files("rightsize.report").joinpath("data/report.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
