"""Job files from a plan: Slurm scripts, Kubernetes manifests, Prometheus rules.

`export_plan(plan, target, out_dir)` takes a plan as its versioned JSON dict (what
`rightsize plan --format json` writes, or `report.render.result_dict` of a fresh plan) and
writes the target's files into `out_dir`. Plans are read only through
`export.plan_view`; nothing here decides sizing, it only translates the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput
from rightsize.export.plan_view import KIND_EXPORTS, plan_kind, serving_view, training_view

TARGETS = ("slurm", "kubernetes", "prometheus")


def render_files(
    plan: dict[str, Any],
    target: str,
    framework: str = "auto",
    profile_device: str = "gpu",
    node_labels: dict[str, str] | None = None,
    engine: str | None = None,
) -> dict[str, str]:
    """File name -> content for `target`. `node_labels` (Kubernetes): the labels the pods and
    the Kueue flavor select nodes by, instead of the priced cloud instance type."""
    if node_labels and target != "kubernetes":
        raise BadInput(
            f"--node-label selects Kubernetes nodes; the {target} export has no node labels.",
            fix="Use --node-label with --target kubernetes, or leave it out.",
        )
    kind = plan_kind(plan)
    if kind in KIND_EXPORTS:  # vision and recommendation plans
        from rightsize.export.kind_exports import render_kind

        if framework != "auto" or engine:
            raise BadInput(
                f"--framework/--engine choose an LLM trainer or server; a {kind.replace('_', ' ')} has its own.",
                "Vision and recommendation exports write their one pinned trainer.",
                "Leave --framework and --engine out.",
            )
        return render_kind(plan, kind, target, node_labels)
    if kind == "fleet_plan":
        from rightsize.export.kueue import fleet_files

        if target != "kubernetes":
            raise BadInput(
                f"A fleet plan exports to Kubernetes (Kueue quotas), not {target}.",
                "A fleet's quotas are Kueue objects; its workloads export one by one.",
                "Use --target kubernetes, or export each workload's own plan.",
            )
        if node_labels:
            raise BadInput(
                "--node-label is for one workload's plan; a fleet's Kueue flavors select nodes by the "
                "labels rightsize/pool and rightsize/capacity (see kueue-fleet.yaml).",
                fix="Label the nodes with those, or export each workload's own plan with --node-label.",
            )
        return fleet_files(plan)
    if target == "slurm":
        from rightsize.export import slurm

        if kind == "training_plan":
            v = training_view(plan)
            files = slurm.train_sbatch(v, framework)
            if v.hw.vendor == "intel":  # rightsize profile measures CUDA/ROCm devices: none on Gaudi
                return files
            return {**files, **slurm.profile_sbatch(v, profile_device)}
        return slurm.serve_sbatch(serving_view(plan), engine)
    if target == "kubernetes":
        from rightsize.export import kubernetes

        if kind == "training_plan":
            return kubernetes.training_files(training_view(plan), framework, node_labels)
        view = serving_view(plan)
        if view.disaggregated is not None:  # prefill and decode pools behind SGLang's router
            from rightsize.export.k8s_disagg import disaggregated_files

            return disaggregated_files(view, node_labels, engine)
        return kubernetes.serving_files(view, node_labels, engine=engine)
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
    *,
    force: bool = False,
    inputs: Sequence[str | Path | None] = (),
    node_labels: dict[str, str] | None = None,
    engine: str | None = None,
) -> list[Path]:
    """Write the target's files into `out_dir`, safely (`export.folder`): nothing is written
    when any file would be refused; existing files with other contents are replaced only with
    `force`, and `inputs` (the command's input files) never. The paths, the manifest last."""
    from rightsize.export.folder import write_export
    from rightsize.export.plan_view import header as plan_header

    files = render_files(plan, target, framework, profile_device, node_labels, engine)
    about = {"plan": plan_header(plan).name, "plan_kind": plan_kind(plan)}
    return write_export(out_dir, files, target, about, force=force, inputs=inputs)


__all__ = ["TARGETS", "export_plan", "render_files"]
