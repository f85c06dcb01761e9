"""Terminal rendering of plans: the decision, the numbers behind it, the alternatives."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rightsize.search.candidates import Candidate


_STEP_LABELS = {
    "compute_s": "compute (fwd + bwd + recompute)",
    "tp_comm_exposed_s": "tensor-parallel comm (exposed)",
    "cp_comm_exposed_s": "context-parallel comm (exposed)",
    "ep_comm_exposed_s": "expert-parallel comm (exposed)",
    "pp_comm_exposed_s": "pipeline sends (exposed)",
    "dp_comm_exposed_s": "data-parallel comm (exposed)",
    "dci_comm_exposed_s": "cross-building DCI comm (exposed)",
    "bubble_s": "pipeline bubble",
    "optimizer_s": "optimizer step",
    "straggler_s": "slowest GPU (speed spread)",
}
_MEM_LABELS = {
    "weights_bytes": "weights",
    "gradients_bytes": "gradients",
    "optimizer_bytes": "optimizer states",
    "activations_bytes": "activations",
    "logits_bytes": "logits and loss",
    "framework_bytes": "framework and buffers",
}


def layout(c: Candidate) -> str:
    p = c.parallel
    parts = [f"TP{p['tp']}", f"PP{p['pp']}"]
    if p["vpp"] > 1:
        parts[-1] += f"x{p['vpp']}v"
    parts.append(f"DP{p['dp']}")
    if p["cp"] > 1:
        parts.append(f"CP{p['cp']}")
    if p["ep"] > 1:
        parts.append(f"EP{p['ep']}")
    extra = [f"micro-batch {p['micro_batch']}", f"recompute {p['recompute']}", f"ZeRO-{p['zero_stage']}"]
    if p["sequence_parallel"]:
        extra.append("sequence parallel")
    return " ".join(parts) + " (" + ", ".join(extra) + ")"


def _gpn(c: Candidate) -> int:
    from rightsize.catalog import get_node

    return get_node(c.node).gpus_per_node
