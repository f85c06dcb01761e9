"""The advisor in the vendor's own words: rules are written once, for any accelerator, in the
words of the most common platform (GPUs); `in_platform_terms` rewrites a finding's title and
fix for the plan's platform (`rightsize.catalog.platforms`): chips on a TPU, Trainium or
Gaudi plan, and no NVIDIA generation names where the accelerator is not NVIDIA's."""

from __future__ import annotations

import dataclasses

from rightsize.advise.findings.base import Finding
from rightsize.catalog.platforms import Platform, say_units

_NVIDIA_ONLY = (
    # (phrase written for NVIDIA parts, what it says on any platform)
    (" on Hopper or Blackwell", " where the accelerator has FP8 matrix units"),
)


def in_platform_terms(finding: Finding, plat: Platform) -> Finding:
    """``finding`` with its title and fix in ``plat``'s words (unchanged on an NVIDIA platform)."""
    if plat.vendor == "nvidia":
        return finding
    title, fix = finding.title, finding.fix
    for nvidia, neutral in _NVIDIA_ONLY:
        title, fix = title.replace(nvidia, neutral), fix.replace(nvidia, neutral)
    if plat.unit_noun != "GPU":
        title, fix = say_units(title, plat.unit_noun), say_units(fix, plat.unit_noun)
    return dataclasses.replace(finding, title=title, fix=fix)
