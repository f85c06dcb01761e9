"""The hardware one evaluation uses: catalog figures, with a calibration's fitted
efficiencies for that accelerator when one is given (`rightsize calibrate`).

A calibration is checked where it is applied: a share of a peak (`gemm_fraction`, the overlaps)
lies from 1/100 of the catalog's share up to 1, and any other figure within 100x of the
catalog's either way. Outside that, a
calibration is not a measurement of this hardware but a typo (a fraction of 1e-20 planned a
training run of 7.9e26 years); the error names the accelerator, the key and the allowed range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from rightsize.catalog import Accelerator, NodeType
from rightsize.errors import BadInput
from rightsize.perf.hardware import Hardware, power_capped

Calibration = dict[str, dict[str, float]]  # accelerator id -> Hardware field overrides

SHARES = frozenset(
    {
        "gemm_fraction",
        "attention_fraction",
        "memory_bw_fraction",
        "scaleup_bw_fraction",
        "scaleout_bw_fraction",
        "tp_comm_overlap",
        "param_gather_overlap",
    }
)
"""Figures that are a share of a peak (or of traffic hidden): from 0 (excluded) to 1."""
FACTOR_RANGE = (0.01, 100.0)
"""How far a calibration may move a figure from the catalog's, as a multiple: a fabric that fell
back to TCP measures 5% of its line rate (18x below the catalog), nothing real measures 100x."""
_FIX = "Re-run `rightsize calibrate` on the hardware, or correct the figure in the calibration file."


def _float_fields() -> frozenset[str]:
    return frozenset(f.name for f in fields(Hardware) if f.type in ("float", float))


def _fail(acc_id: str, key: str, value: object, why: str) -> BadInput:
    return BadInput(f"The calibration for {acc_id}: {key} = {value!r} is out of range.", why, _FIX)


def check_overrides(acc_id: str, catalog: Hardware | None, overrides: Mapping[str, object]) -> None:
    """Raise BadInput for the first figure that is not a finite number within its range.

    `catalog` is the accelerator's catalog hardware (None for an id the catalog lacks: then only the
    shares and finiteness are checked)."""
    known = _float_fields()
    for key, value in overrides.items():
        if key not in known:
            raise BadInput(
                f"The calibration for {acc_id}: {key} is not a hardware figure.",
                f"Known figures: {', '.join(sorted(known))}.",
                _FIX,
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise _fail(acc_id, key, value, "It must be a finite number.")
        found = getattr(catalog, key, None) if catalog is not None else None
        reference = float(found) if isinstance(found, int | float) and found > 0 else 0.0
        if key in SHARES:
            _check_share(acc_id, key, value, reference)
        elif reference > 0:
            low, high = reference * FACTOR_RANGE[0], reference * FACTOR_RANGE[1]
            if not low <= value <= high:
                raise _fail(
                    acc_id,
                    key,
                    value,
                    f"A calibration moves a figure at most 100x from the catalog's ({reference:.4g}): "
                    f"allowed {low:.4g} to {high:.4g}.",
                )
        elif value <= 0:
            raise _fail(acc_id, key, value, f"{key} must be greater than zero.")


def _check_share(acc_id: str, key: str, value: float, reference: float) -> None:
    """A share lies from 1/100 of the catalog's (0 excluded when the catalog has none) up to 1."""
    low = reference * FACTOR_RANGE[0]
    if low < value <= 1 or (low > 0 and value == low):
        return
    shown = f"{low:.4g} (1/100 of the catalog's {reference:.4g})" if low > 0 else "0 (excluded)"
    raise _fail(acc_id, key, value, f"{key} is a share of a peak: allowed from {shown} to 1.")


def checked_calibration(calibration: Calibration | None) -> Calibration | None:
    """The calibration, each accelerator's figures checked against its catalog entry (once per plan,
    before any search: the serving planner applies figures without `calibrated_hardware`)."""
    if not calibration:
        return calibration
    from rightsize.catalog import get_accelerator, node_for

    for acc_id, overrides in calibration.items():
        if not isinstance(overrides, Mapping):
            raise BadInput(f"The calibration for {acc_id} is not a mapping of figures.", "", _FIX)
        try:
            acc = get_accelerator(acc_id)
            catalog: Hardware | None = Hardware.from_catalog(acc, node_for(acc.id), _reference_dtype(acc))
        except (BadInput, KeyError, ValueError):
            catalog = None  # not in the catalog: never applied, only its figures' form is checked
        check_overrides(acc_id, catalog, overrides)
    return calibration


def _reference_dtype(acc: Accelerator) -> str:
    return next((d for d in ("bf16", "fp16", "fp32") if acc.supports(d)), "bf16")


def calibrated_hardware(
    acc: Accelerator,
    node: NodeType,
    dtype: str,
    calibration: Calibration | None,
    power_limit_w: float | None = None,
) -> Hardware:
    """The catalog's figures for `acc` in `node` at `dtype`, on a board capped at `power_limit_w`
    (`power_limit_of(spec, acc.id)`; None: the TDP), with the calibration's overrides over them."""
    hw = power_capped(Hardware.from_catalog(acc, node, dtype), power_limit_w)
    if calibration and acc.id in calibration:
        check_overrides(acc.id, hw, calibration[acc.id])
        hw = hw.with_overrides(**calibration[acc.id])
    return hw


def power_limit_of(spec: Any, accelerator_id: str) -> float | None:
    """The spec's board power limit for `accelerator_id` (`infrastructure.facility.
    gpu_power_limit_w`, one value or one per accelerator), None when it sets none."""
    facility = getattr(getattr(spec, "infrastructure", None), "facility", None)
    return facility.gpu_power_limit_for(accelerator_id) if facility is not None else None
