"""One entry point from a result to a document: `render(result, fmt, title)`.

`fmt` is one of FORMATS. The result is a training or serving plan, or the dict that
`validate` returns. The CLI calls only this, so a new format or result kind is added here.
"""

from __future__ import annotations

import json
from typing import Any

from rightsize.errors import BadInput

FORMATS = ("table", "json", "markdown", "html")


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, default=float)


def result_dict(result: Any) -> dict[str, Any]:
    """The versioned JSON-ready dict of any result."""
    from rightsize.report.plan_json import plan_dict
    from rightsize.report.serving_text import serving_dict
    from rightsize.search.serving import ServingPlan
    from rightsize.search.train import TrainingPlan

    if isinstance(result, TrainingPlan):
        return plan_dict(result)
    if isinstance(result, ServingPlan):
        return serving_dict(result)
    if isinstance(result, dict):
        return result
    raise TypeError(f"no renderer for {type(result).__name__}")


def render(result: Any, fmt: str, title: str = "Plan") -> str:
    if fmt == "json":
        return to_json(result_dict(result))
    if fmt == "table":
        from rightsize.report.serving_text import render_serving
        from rightsize.report.text import render_plan
        from rightsize.report.validation_text import render_validation
        from rightsize.search.serving import ServingPlan
        from rightsize.search.train import TrainingPlan

        if isinstance(result, TrainingPlan):
            return render_plan(result, title)
        if isinstance(result, ServingPlan):
            return render_serving(result, f"Serving {title.lower()}")
        return render_validation(result)
    raise BadInput(
        f"Output format '{fmt}' is not available for this result.",
        f"Formats: {', '.join(FORMATS)}.",
        "Use --format table or --format json.",
    )
