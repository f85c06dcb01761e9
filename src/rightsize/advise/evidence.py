"""Advice about the evidence behind a plan: a chosen layout that rests on mechanisms, hardware
or scales the validation never covered (`rightsize.search.ground`)."""

from __future__ import annotations

from typing import Any

from rightsize.advise.findings import Finding
from rightsize.advise.view import PlanView

# z of the 90th percentile of a normal: the share of time at stake is the P90's excess.
Z90 = 1.2816


def thin_ground(v: PlanView) -> Finding | None:
    """The plan's layout stands far from validated runs, or uses a mechanism no validated
    run on a like accelerator used: its range is wide and its base value least trusted."""
    ground: dict[str, Any] = (v.uncertainty or {}).get("ground") or {}
    if v.kind != "training" or not ground.get("thin"):
        return None
    thin = ground.get("thin_mechanisms") or []
    nearest = ground.get("nearest") or []
    sigma = float(ground.get("sigma", 0.0))
    what = (
        f"uses {', '.join(m.replace('_', ' ') for m in thin)}, which no validated run on this kind of "
        "accelerator exercised"
        if thin
        else f"stands {ground.get('distance', 0.0):.1f} steps from the nearest validated run"
    )
    return Finding(
        "thin_validation",
        "under-provisioning",
        min(1.0, Z90 * sigma),
        f"The chosen layout rests on thin validation: it {what}",
        {  # evidence values are scalars (the report schema): lists joined as text
            "ground_distance": ground.get("distance"),
            "model_error_sigma": sigma,
            "thin_mechanisms": ", ".join(thin) or None,
            "nearest_validated_runs": ", ".join(str(n.get("id")) for n in nearest) or None,
            "differences_from_nearest": "; ".join(
                f"{k} {v:g}" for k, v in (nearest[0].get("differences") or {}).items()
            )
            if nearest
            else None,
        },
        "Measure it before committing: run a few steps of this layout on one or two nodes "
        "(`rightsize profile train`) and plan with `--calibration`; or fix the layout to a validated one "
        "(`parallel:`) and compare.",
    )
