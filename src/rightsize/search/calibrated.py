"""The hardware one evaluation uses: catalog figures, with a calibration's fitted
efficiencies for that accelerator when one is given (`rightsize calibrate`)."""

from __future__ import annotations

from rightsize.catalog import Accelerator, NodeType
from rightsize.perf.hardware import Hardware

Calibration = dict[str, dict[str, float]]  # accelerator id -> Hardware field overrides


def calibrated_hardware(
    acc: Accelerator, node: NodeType, dtype: str, calibration: Calibration | None
) -> Hardware:
    hw = Hardware.from_catalog(acc, node, dtype)
    if calibration and acc.id in calibration:
        hw = hw.with_overrides(**calibration[acc.id])
    return hw
