"""Terminal rendering of plans: the decision, the numbers behind it, the alternatives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rightsize.constants import DAY_S, GiB
from rightsize.report import units

if TYPE_CHECKING:
    from rightsize.search.candidates import Candidate
    from rightsize.search.train import TrainingPlan


_STEP_LABELS = {
    "compute_s": "compute (fwd + bwd + recompute)",
    "tp_comm_exposed_s": "tensor-parallel comm (exposed)",
    "cp_comm_exposed_s": "context-parallel comm (exposed)",
    "ep_comm_exposed_s": "expert-parallel comm (exposed)",
    "pp_comm_exposed_s": "pipeline sends (exposed)",
    "dp_comm_exposed_s": "data-parallel comm (exposed)",
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


def _fmt_days(s: float | None) -> str:
    return units.duration(s)


def candidate_lines(c: Candidate) -> list[str]:
    lines = [
        f"  {c.gpus} x {c.accelerator}  ({c.gpus // max(1, _gpn(c))} x {c.node} nodes)",
        f"  layout: {layout(c)}",
        f"  step time {c.step_time_s:.3f} s   MFU {c.mfu:.1%}   HFU {c.hfu:.1%}   "
        f"{c.tokens_per_s_per_gpu:,.0f} tokens/s per GPU",
    ]
    if c.time_to_train_s is not None:
        cost = f"   ${c.cost_usd:,.0f} on demand" if c.cost_usd is not None else ""
        lines.append(f"  time to train {_fmt_days(c.time_to_train_s)}   {c.gpu_hours:,.0f} GPU-hours{cost}")
        if c.reliability:
            r = c.reliability
            lines.append(
                f"  goodput {r['goodput']:.1%} (an interruption every {r['mtbf_s'] / 3600:,.1f} h, "
                f"checkpoint every {r['checkpoint_interval_s'] / 60:,.0f} min)"
            )
    lines.append("  step breakdown:")
    total = c.step_time_s
    for key, label in _STEP_LABELS.items():
        v = c.step.get(key, 0.0)
        if v > 0:
            lines.append(f"    {label:<34} {v:10.3f} s  {v / total:6.1%}")
    lines.append("  memory per GPU:")
    for key, label in _MEM_LABELS.items():
        v = c.memory.get(key, 0.0)
        lines.append(f"    {label:<34} {v / GiB:10.1f} GiB")
    lines.append(
        f"    {'total':<34} {c.memory['total_bytes'] / GiB:10.1f} GiB of {c.memory['capacity_bytes'] / GiB:.1f} GiB"
    )
    return lines


def _gpn(c: Candidate) -> int:
    from rightsize.catalog import get_node

    return get_node(c.node).gpus_per_node


def render_plan(plan: TrainingPlan, title: str = "Plan") -> str:
    out = [f"{title}: {plan.name}  (model {plan.model}, objective {plan.objective})"]
    if plan.deadline_s:
        out.append(f"deadline {plan.deadline_s / DAY_S:.0f} d")
    out.append("")
    out.append("Chosen:")
    out.extend(candidate_lines(plan.best))
    if plan.runner_up_layout:
        c, why = plan.runner_up_layout
        out += ["", f"Runner-up layout on the same hardware: {layout(c)}", f"  lost: {why}"]
    if plan.alternatives:
        out += ["", "Alternatives (best of each other accelerator):"]
        for c, why in plan.alternatives:
            ttt = _fmt_days(c.time_to_train_s)
            out.append(f"  {c.gpus:>6} x {c.accelerator:<14} {ttt:>10}  MFU {c.mfu:5.1%}  lost: {why}")
    if plan.rejected:
        out += ["", "Rejected:"]
        out += [f"  {r.accelerator}: {r.reason}" for r in plan.rejected]
    if len(plan.pareto) > 1:
        out += ["", "Pareto front (time to train vs GPU-hours):"]
        for c in plan.pareto:
            gh = f"{c.gpu_hours:,.0f} GPU-h" if c.gpu_hours is not None else ""
            out.append(f"  {c.gpus:>6} x {c.accelerator:<14} {_fmt_days(c.time_to_train_s):>10}  {gh}")
    if plan.assumptions:
        out += ["", "Assumed:"] + [f"  - {a}" for a in plan.assumptions]
    out += ["", plan.search_summary()]
    return "\n".join(out)
