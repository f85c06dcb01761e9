"""Exports of the vision and recommendation plan kinds, and their refusals.

- Vision training exports to Slurm and Kubernetes as torchvision's classification reference
  (`export.vision_jobs`, `export.fw_vision`); recommendation training as TorchRec's DLRM
  trainer (`export.recsys_jobs`, `export.fw_recsys`).
- Vision and recommendation serving is refused with what is missing (no Triton or TorchServe
  config is written).
- Prometheus rules are written for LLM plans (their metrics are the LLM engines' and the
  trainers' own); these kinds are refused there.
"""

from __future__ import annotations

from typing import Any

from rightsize.errors import BadInput
from rightsize.export.plan_fields import Fields


def render_kind(
    plan: dict[str, Any], kind: str, target: str, node_labels: dict[str, str] | None
) -> dict[str, str]:
    """File name -> content for a vision or recommendation plan."""
    what = "Vision" if kind == "vision_plan" else "Recommendation"
    mode = Fields(plan).text("mode", default="training", max_len=40)
    if mode != "training":
        raise BadInput(
            f"{what} {mode} plans cannot be exported to {target} yet.",
            f"The {what.lower()} export writes training jobs; no inference server (Triton, TorchServe) config "
            "is written.",
            "Serve the model with your inference server at the plan's replicas and batch, or export a training plan.",
        )
    if target == "prometheus":
        raise BadInput(
            f"{what} plans have no Prometheus rules.",
            "The rules read the LLM trainers' and engines' own metrics; torchvision's reference and TorchRec's "
            "DLRM trainer export none.",
            "Export with --target slurm or kubernetes.",
        )
    if target == "slurm" and node_labels:
        raise BadInput(
            "--node-label selects Kubernetes nodes; the slurm export has no node labels.",
            fix="Use --node-label with --target kubernetes, or leave it out.",
        )
    if kind == "vision_plan":
        from rightsize.export import vision_jobs
        from rightsize.export.vision_view import vision_training_view

        vv = vision_training_view(plan)
        if target == "slurm":
            return vision_jobs.train_sbatch(vv)
        if target == "kubernetes":
            return vision_jobs.training_files(vv, node_labels)
    else:
        from rightsize.export import recsys_jobs
        from rightsize.export.recsys_view import recsys_training_view

        rv = recsys_training_view(plan)
        if target == "slurm":
            return recsys_jobs.train_sbatch(rv)
        if target == "kubernetes":
            return recsys_jobs.training_files(rv, node_labels)
    raise BadInput(
        f"Unknown export target {target!r}.",
        "Export writes slurm, kubernetes, prometheus.",
        "Use --target slurm, kubernetes or prometheus.",
    )
