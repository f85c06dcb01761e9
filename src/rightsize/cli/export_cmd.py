"""`rightsize export PLAN_OR_SPEC --target slurm|kubernetes|prometheus --out DIR`: argument
parsing only. A spec (YAML) is planned first; a saved `--format json` plan is read as it is.
Files already in DIR with other contents are kept unless --force (see `export.folder`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize.errors import BadInput

MAX_PLAN_BYTES = 64 * 2**20
"""A saved plan is tens of KB (a fleet plan a few MB); the cap is checked before a byte is read."""


def load_plan_or_spec(path: str, calibration: str | None = None) -> dict[str, Any]:
    """The plan's versioned JSON dict: read from a JSON plan, or planned from a spec. A JSON plan
    is read through the capped reader (a regular file, size, depth and number caps before parsing)
    and must be a mapping with a textual `kind`; its fields are checked by the exporters."""
    from rightsize.safe_read import read_json_capped

    p = Path(path)
    if p.suffix.lower() == ".json":
        fix = "Pass a file from `rightsize plan SPEC --format json -o plan.json`."
        data = read_json_capped(p, "the plan", MAX_PLAN_BYTES, fix)
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str) or not data["kind"]:
            why = (
                f"Its top level is a {'list' if isinstance(data, list) else type(data).__name__}, not a mapping."
                if not isinstance(data, dict)
                else "It has no textual `kind` (what `rightsize plan SPEC --format json` writes has one)."
            )
            raise BadInput(f"{path} is JSON but not a plan.", why, fix)
        return data
    from rightsize.api import plan
    from rightsize.report.render import result_dict

    return result_dict(plan(p, calibration=calibration))


def node_labels(items: list[str] | None) -> dict[str, str]:
    """`--node-label KEY=VALUE` (repeatable) as a mapping; a key given twice is refused."""
    from rightsize.export.names import node_label

    out: dict[str, str] = {}
    for item in items or []:
        key, value = node_label(item)
        if key in out and out[key] != value:
            raise BadInput(
                f"--node-label {key} is given twice ({out[key]!r} and {value!r}).",
                fix="Give each label key once.",
            )
        out[key] = value
    return out


def cmd_export(args: argparse.Namespace) -> int:
    from rightsize.export import export_plan

    labels = node_labels(args.node_label)

    data = load_plan_or_spec(args.plan, args.calibration)
    written = export_plan(
        data,
        args.target,
        Path(args.out),
        args.framework,
        args.profile_device,
        force=args.force,
        inputs=[args.plan, args.calibration],
        node_labels=labels or None,
        engine=args.engine,
    )
    for path in written:
        sys.stdout.write(f"{path}\n")
    return 0


def register(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    from rightsize.export import TARGETS
    from rightsize.export.frameworks import FRAMEWORKS

    help_ = "job files from a plan: Slurm scripts, Kubernetes manifests, Prometheus rules"
    sp = sub.add_parser("export", help=help_, description=help_)
    sp.add_argument(
        "plan", metavar="PLAN_OR_SPEC", help="a plan (JSON from `plan --format json`) or a spec (YAML)"
    )
    sp.add_argument("--target", required=True, choices=TARGETS)
    sp.add_argument(
        "--framework",
        choices=("auto", *FRAMEWORKS),
        default="auto",
        help="training framework whose arguments the job uses (default: auto = NeMo for LoRA, else Megatron-LM)",
    )
    sp.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="folder to write the files into, with a manifest (rightsize-manifest-TARGET.json) of them",
    )
    sp.add_argument(
        "--force",
        action="store_true",
        help="replace files in --out that have other contents, or are read-only (never a link or an input)",
    )
    sp.add_argument(
        "--engine",
        choices=("vllm", "sglang", "trtllm"),
        default=None,
        help="serving engine the files run (default: the plan's engine.name, else vllm)",
    )
    sp.add_argument("--calibration", metavar="FILE", help="plan a spec with this calibration file")
    sp.add_argument(
        "--node-label",
        action="append",
        metavar="KEY=VALUE",
        help=(
            "kubernetes: a label your nodes carry, which pods and the Kueue flavor select instead of the "
            "priced cloud instance type (repeatable; e.g. node.kubernetes.io/instance-type=p5.48xlarge)"
        ),
    )
    sp.add_argument(
        "--profile-device",
        choices=("gpu", "cpu"),
        default="gpu",
        help="slurm: the profiling job on GPUs (NCCL) or CPU ranks (gloo, to check the launcher)",
    )
    sp.set_defaults(func=cmd_export)
