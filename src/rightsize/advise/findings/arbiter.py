"""One bottleneck per plan: the step-time rules are arbitrated so a plan is never called
"network-bound" and "compute-bound" at once.

Each step-time rule reads one part of the plan's own breakdown (exposed communication,
pipeline bubble, optimizer memory traffic, input or checkpoint stalls). The bottleneck is
the part with the largest share of the step among the rules that fired; compute-bound is
the verdict only when no loss is large enough to fire. The other losses stay as findings,
named for what they are, not as a second "-bound".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

COMPUTE_RULE = "compute_bound"
# rule -> [(the words that claim a bottleneck, what the finding says when it is not the bottleneck)]
LOSS_RULES: dict[str, list[tuple[str, str]]] = {
    "network_bound": [("Network-bound:", "Exposed communication:")],
    "pipeline_bubble": [],
    "memory_bandwidth_bound": [("Memory-bandwidth-bound", "Memory traffic in the")],
    "input_bound": [("Input-bound:", "Input shortfall:"), ("Decode-bound:", "Decode shortfall:")],
    "storage_bound": [("Storage-bound checkpoints:", "Checkpoint stalls:")],
}


def one_bottleneck(found: list[Any]) -> list[Any]:
    """`found` with at most one finding claiming to be the bottleneck (see the module docstring)."""
    losses = [f for f in found if f.rule in LOSS_RULES]
    if not losses:
        return [_mark(f, True) if f.rule == COMPUTE_RULE else f for f in found]
    top = max(losses, key=lambda f: (f.impact, f.rule))
    out = []
    for f in found:
        if f.rule == COMPUTE_RULE:
            continue  # a loss large enough to be a finding means the step is not compute-bound
        if f.rule in LOSS_RULES:
            out.append(_mark(f, f is top))
        else:
            out.append(f)
    return out


def _mark(f: Any, is_bottleneck: bool) -> Any:
    title = f.title
    for claim, plain in LOSS_RULES.get(f.rule, []):
        if not is_bottleneck and title.startswith(claim):
            title = plain + title[len(claim) :]
    role = "the bottleneck" if is_bottleneck else "a secondary loss"
    return replace(f, title=title, evidence={**f.evidence, "role": role})
