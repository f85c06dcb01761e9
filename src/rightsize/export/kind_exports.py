"""Exports of the vision and recommendation plan kinds, and their refusals.

- Recommendation training exports to Slurm and Kubernetes as TorchRec's DLRM trainer
  (`export.recsys_jobs`, `export.fw_recsys`).
- Recommendation serving, and every vision plan, is refused with what is missing: a job is
  written only with arguments checked against the pinned framework release's own parser, and
  none is pinned for them yet (torchvision's `references/classification/train.py` is not in
  its wheel and its release tag is not vendored; Triton and TorchServe configs are not written).
- Prometheus rules are written for LLM plans (their metrics are the LLM engines' and the
  trainers' own); these kinds are refused there.
"""

from __future__ import annotations

from typing import Any

from rightsize.errors import BadInput
from rightsize.export.plan_fields import Fields


def _vision_refusal(plan: dict[str, Any], target: str) -> BadInput:
    best = Fields(plan).sub("best")
    train = Fields(plan).sub("spec").sub("train", False)
    figures = ""
    if best.has("batch_per_gpu") and train.has("epochs"):
        figures = (
            f": {best.integer('gpus', 1, 10**7)} GPUs, batch {best.integer('batch_per_gpu', 1, 10**9)} per GPU, "
            f"{train.num('epochs', 0.0, 1e6):g} epochs, precision {train.text('precision', default='bf16', max_len=20)}, "
            f"{best.num('cpu_cores_per_gpu', 0.0, 1e4, default=0.0):g} data-loader cores per GPU"
        )
    return BadInput(
        f"Vision plans cannot be exported to {target} yet.",
        "rightsize writes a job only with arguments checked against the pinned framework release's own parser; "
        "torchvision's classification reference (references/classification/train.py) is not in its wheel and "
        "no release tag of it is vendored for that check (nor a Triton/TorchServe config for inference).",
        "Run torchvision's references/classification/train.py (or your trainer) with the plan's figures"
        + figures
        + ".",
    )


def render_kind(
    plan: dict[str, Any], kind: str, target: str, node_labels: dict[str, str] | None
) -> dict[str, str]:
    """File name -> content for a vision or recommendation plan."""
    if kind == "vision_plan":
        raise _vision_refusal(plan, target)
    mode = Fields(plan).text("mode", default="training", max_len=40)
    if mode != "training":
        raise BadInput(
            f"Recommendation {mode} plans cannot be exported to {target} yet.",
            "The recommendation export writes TorchRec training jobs; no inference server (Triton, TorchServe) "
            "config is written.",
            "Serve the model with your inference server at the plan's replicas and batch, or export a training plan.",
        )
    if target == "prometheus":
        raise BadInput(
            "Recommendation plans have no Prometheus rules.",
            "The rules read the LLM trainers' and engines' own metrics; TorchRec's DLRM trainer exports none.",
            "Export with --target slurm or kubernetes.",
        )
    from rightsize.export.recsys_jobs import train_sbatch, training_files
    from rightsize.export.recsys_view import recsys_training_view

    v = recsys_training_view(plan)
    if target == "slurm":
        if node_labels:
            raise BadInput(
                "--node-label selects Kubernetes nodes; the slurm export has no node labels.",
                fix="Use --node-label with --target kubernetes, or leave it out.",
            )
        return train_sbatch(v)
    if target == "kubernetes":
        return training_files(v, node_labels)
    raise BadInput(
        f"Unknown export target {target!r}.",
        "Export writes slurm, kubernetes, prometheus.",
        "Use --target slurm, kubernetes or prometheus.",
    )
