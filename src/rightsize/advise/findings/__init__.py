"""The advisor's rules. Each rule is a small function from a plan view to a `Finding` (or
None when it does not apply), with the numbers that triggered it and a concrete fix.
`advise(plan)` runs every rule and ranks the findings by impact: the share of the run's
time or cost the finding puts at stake (0..1). The rules read the typed plan through
`rightsize.advise.view.PlanView`, so each reaches every workload kind it applies to.

Modules by topic: `thresholds` (named constants, each with its reason), `base` (`Finding`),
`bottleneck`, `under` (under-provisioning), `over` (over-provisioning), `fit` (the wrong
workload, prototypes that will not scale).
"""

from __future__ import annotations

from typing import Any

from rightsize.advise.findings.arbiter import one_bottleneck
from rightsize.advise.findings.base import CATEGORIES, COMM_KEYS, Finding, Rule
from rightsize.advise.findings.bottleneck import (
    compute_bound,
    input_bound,
    memory_bandwidth_bound,
    network_bound,
    pipeline_bubble,
    storage_bound,
)
from rightsize.advise.findings.fit import (
    prototype_wont_scale,
    serving_cluster_for_training,
    training_cluster_for_serving,
)
from rightsize.advise.findings.over import (
    cheaper_per_unit,
    faster_than_needed,
    idle_billed_gpus,
    low_utilisation,
    unplanned_spare_gpus,
)
from rightsize.advise.findings.terms import in_platform_terms
from rightsize.advise.findings.thresholds import *  # noqa: F403
from rightsize.advise.findings.under import (
    deadline_risk,
    fabric_too_slow,
    growth_limits,
    memory_headroom,
    slo_headroom,
    thermal_limit,
)
from rightsize.advise.view import PlanView, view
from rightsize.catalog.platforms import platform_for

__all__ = [
    "CATEGORIES",
    "COMM_KEYS",
    "RULES",
    "Finding",
    "PlanView",
    "Rule",
    "advise",
    "compute_bound",
    "network_bound",
    "pipeline_bubble",
    "memory_bandwidth_bound",
    "input_bound",
    "storage_bound",
    "memory_headroom",
    "fabric_too_slow",
    "thermal_limit",
    "deadline_risk",
    "slo_headroom",
    "growth_limits",
    "low_utilisation",
    "faster_than_needed",
    "unplanned_spare_gpus",
    "cheaper_per_unit",
    "training_cluster_for_serving",
    "serving_cluster_for_training",
    "prototype_wont_scale",
]

RULES: tuple[Rule, ...] = (
    compute_bound,
    network_bound,
    pipeline_bubble,
    memory_bandwidth_bound,
    input_bound,
    storage_bound,
    memory_headroom,
    fabric_too_slow,
    thermal_limit,
    deadline_risk,
    slo_headroom,
    growth_limits,
    low_utilisation,
    faster_than_needed,
    unplanned_spare_gpus,
    idle_billed_gpus,
    cheaper_per_unit,
    training_cluster_for_serving,
    serving_cluster_for_training,
    prototype_wont_scale,
)


def advise(plan: Any) -> list[Finding]:
    """Every rule's finding for the plan, highest impact first."""
    from rightsize.advise.evidence import thin_ground  # imports Finding from this package

    v = plan if isinstance(plan, PlanView) else view(plan)
    found = one_bottleneck([f for rule in (*RULES, thin_ground) if (f := rule(v)) is not None])
    if v.acc is not None:  # the vendor's own words: chips on a TPU plan, no NVIDIA names on AMD
        plat = platform_for(v.acc.id, v.acc.vendor)
        found = [in_platform_terms(f, plat) for f in found]
    return sorted(found, key=lambda f: (-f.impact, f.rule))
