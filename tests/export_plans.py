"""Plans of the bundled examples as their JSON dicts, planned once per test session."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@cache
def _plan_text(example: str) -> str:
    from rightsize.api import plan
    from rightsize.report.render import result_dict, to_json

    return to_json(result_dict(plan(ROOT / "examples" / f"{example}.yaml")))


def plan_dict(example: str) -> dict[str, Any]:
    """A fresh copy (tests may change it) of the example's plan as `--format json` writes it."""
    return json.loads(_plan_text(example))
