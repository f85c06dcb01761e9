"""Reading a calibration file (written by `rightsize calibrate`): accelerator id -> Hardware
field overrides. torch-free, so planning with a calibration never needs the profiler extra."""

from __future__ import annotations

import json
from pathlib import Path

from rightsize.errors import BadInput


def load_calibration(path: Path) -> dict[str, dict[str, float]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise BadInput(
            f"Cannot read the calibration file {path}.",
            str(err),
            "Pass a file written by `rightsize calibrate`.",
        ) from None
    overrides = data.get("overrides") if isinstance(data, dict) else None
    if not isinstance(overrides, dict):
        raise BadInput(
            f"The calibration file {path} has no `overrides` mapping.",
            "A calibration maps accelerator ids to fitted efficiency figures.",
            "Pass a file written by `rightsize calibrate`.",
        )
    return {str(acc): {str(k): float(v) for k, v in fields.items()} for acc, fields in overrides.items()}
