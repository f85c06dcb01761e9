"""Reading a calibration file (written by `rightsize calibrate`): accelerator id -> Hardware
field overrides. torch-free, so planning with a calibration never needs the profiler extra."""

from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path

from rightsize.errors import BadInput
from rightsize.perf.hardware import Hardware
from rightsize.safe_read import clean_key, read_json_capped

MAX_CALIBRATION_BYTES = 16 * 2**20  # a calibration file is a few KB


def load_calibration(path: Path) -> dict[str, dict[str, float]]:
    """Accelerator id -> Hardware field overrides; every figure a known field and a finite,
    positive number, or a BadInput naming it."""
    fix = "Pass a file written by `rightsize calibrate`."
    data = read_json_capped(path, "the calibration file", MAX_CALIBRATION_BYTES, fix)
    overrides = data.get("overrides") if isinstance(data, dict) else None
    if not isinstance(overrides, dict):
        raise BadInput(
            f"The calibration file {path} has no `overrides` mapping.",
            "A calibration maps accelerator ids to fitted efficiency figures.",
            fix,
        )
    known = {f.name for f in fields(Hardware) if f.type in ("float", float)}
    out: dict[str, dict[str, float]] = {}
    for acc, figures in overrides.items():
        if not isinstance(figures, dict):
            raise BadInput(
                f"The calibration file {path}: overrides.{clean_key(acc)} is not a mapping.", "", fix
            )
        for key, value in figures.items():
            where = f"overrides.{clean_key(acc)}.{clean_key(key)}"
            if key not in known:
                raise BadInput(f"The calibration file {path}: {where} is not a hardware figure.", "", fix)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value <= 0
            ):
                raise BadInput(
                    f"The calibration file {path}: {where} is not a positive finite number.", "", fix
                )
        out[str(acc)] = {str(k): float(v) for k, v in figures.items()}
    return out
