"""The advisor: findings (bottlenecks, under- and over-provisioning, the wrong workload,
configurations that will not scale) and the SCALE and DEPLOY checklists, each from a
plan's own numbers. `advise(plan)` and `checklists(plan)` are the entry points."""

from rightsize.advise.checklists import checklists
from rightsize.advise.findings import RULES, Finding, advise

__all__ = ["RULES", "Finding", "advise", "checklists"]
