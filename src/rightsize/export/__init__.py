"""Job files from a plan: Slurm scripts, Kubernetes manifests, Prometheus rules.

`export_plan(plan, target, out_dir)` takes a plan as its versioned JSON dict (what
`rightsize plan --format json` writes, or `report.render.result_dict` of a fresh plan) and
writes the target's files into `out_dir`. Plans are read only through
`export.plan_view`; nothing here decides sizing, it only translates the plan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.plan_view import plan_kind, serving_view, training_view

TARGETS = ("slurm", "kubernetes", "prometheus")


def render_files(
    plan: dict[str, Any], target: str, framework: str = "auto", profile_device: str = "gpu"
) -> dict[str, str]:
    """File name -> content for `target`."""
    kind = plan_kind(plan)
    if kind == "fleet_plan":
        from rightsize.export.kueue import fleet_files

        if target != "kubernetes":
            raise BadInput(
                f"A fleet plan exports to Kubernetes (Kueue quotas), not {target}.",
                "A fleet's quotas are Kueue objects; its workloads export one by one.",
                "Use --target kubernetes, or export each workload's own plan.",
            )
        return fleet_files(plan)
    if target == "slurm":
        from rightsize.export import slurm

        if kind == "training_plan":
            v = training_view(plan)
            return {**slurm.train_sbatch(v, framework), **slurm.profile_sbatch(v, profile_device)}
        return slurm.serve_sbatch(serving_view(plan))
    if target == "kubernetes":
        from rightsize.export import kubernetes

        if kind == "training_plan":
            return kubernetes.training_files(training_view(plan), framework)
        return kubernetes.serving_files(serving_view(plan))
    if target == "prometheus":
        from rightsize.export import prometheus

        if kind == "training_plan":
            return prometheus.training_rules(training_view(plan))
        return prometheus.serving_rules(serving_view(plan))
    raise BadInput(
        f"Unknown export target {target!r}.",
        f"Export writes {', '.join(TARGETS)}.",
        "Use --target slurm, kubernetes or prometheus.",
    )


def export_plan(
    plan: dict[str, Any],
    target: str,
    out_dir: Path,
    framework: str = "auto",
    profile_device: str = "gpu",
) -> list[Path]:
    """Write the target's files into `out_dir`; the paths written."""
    files = render_files(plan, target, framework, profile_device)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadInput(
            f"Cannot create the output folder {out_dir}.", str(err), "Pass a writable --out."
        ) from None
    written = []
    for name, text in files.items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        if name.endswith(".sbatch") or name.endswith(".sh"):
            path.chmod(0o755)
        written.append(path)
    return written


__all__ = ["TARGETS", "export_plan", "render_files"]
