"""The advisor in the vendor's own words: rules are written once, for any accelerator, in the
words of the most common platform (GPUs); `speak` rewrites a sentence for the plan's platform
(`rightsize.catalog.platforms`): chips on a TPU, Trainium or Gaudi plan, no NVIDIA generation
names where the accelerator is not NVIDIA's, and the vendor's own profiler where `rightsize
profile` cannot measure the accelerator. `in_platform_terms` applies it to a finding."""

from __future__ import annotations

import dataclasses

from rightsize.advise.findings.base import Finding
from rightsize.catalog.platforms import Platform, say_units

_NVIDIA_ONLY = (
    # (phrase written for NVIDIA parts, what it says on any platform)
    (" on Hopper or Blackwell", " where the accelerator has FP8 matrix units"),
)

# `rightsize profile` times the step through PyTorch's CUDA device, which NVIDIA's CUDA and
# AMD's ROCm builds provide; on the other platforms the vendor's profiler measures the step, and
# `rightsize calibrate` (which reads rightsize profiles) has nothing to fit.
_PROFILERS = {
    "aws-trainium": "the Neuron profiler, `neuron-profile` (AWS Neuron SDK)",
    "intel-gaudi": "the Intel Gaudi profiler, `hl-prof-config` or the PyTorch profiler with HPU activities",
    "google-tpu": "the JAX profiler, `jax.profiler` viewed in XProf or TensorBoard",
}
# (phrase naming `rightsize profile`, the same sentence with {tool} for the vendor's profiler)
_PROFILE_PHRASES = (
    (
        "(`rightsize profile train`) and plan with `--calibration`",
        "(with {tool}) and compare the step with the plan's",
    ),
    ("(`rightsize profile`)", "(with {tool})"),
)


def profiler(plat: Platform) -> str | None:
    """The vendor's profiler where `rightsize profile` cannot measure ``plat``'s accelerators."""
    return _PROFILERS.get(plat.id)


def speak(text: str, plat: Platform) -> str:
    """``text`` (written for NVIDIA GPUs) in ``plat``'s words; unchanged on an NVIDIA platform."""
    if plat.vendor == "nvidia":
        return text
    for nvidia, neutral in _NVIDIA_ONLY:
        text = text.replace(nvidia, neutral)
    tool = profiler(plat)
    if tool:
        for ours, theirs in _PROFILE_PHRASES:
            text = text.replace(ours, theirs.format(tool=tool))
    return say_units(text, plat.unit_noun)


def in_platform_terms(finding: Finding, plat: Platform) -> Finding:
    """``finding`` with its title and fix in ``plat``'s words (unchanged on an NVIDIA platform)."""
    if plat.vendor == "nvidia":
        return finding
    return dataclasses.replace(finding, title=speak(finding.title, plat), fix=speak(finding.fix, plat))
