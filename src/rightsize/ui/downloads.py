"""What the browser downloads: the plan in every format `rightsize plan` writes, and the job
files `rightsize export` writes for every target, in one zip with a manifest (JSON) that lists
each file and each target left out with the exporter's reason."""

from __future__ import annotations

import io
import json
import re
import zipfile
from typing import Any

from rightsize.errors import BadInput

PLAN_FORMATS = {
    "json": ("application/json", "json"),
    "markdown": ("text/markdown; charset=utf-8", "md"),
    "html": ("text/html; charset=utf-8", "html"),
    "table": ("text/plain; charset=utf-8", "txt"),
}
_EXECUTABLE = (".sbatch", ".sh")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_stem(plan_json: dict[str, Any]) -> str:
    """A file name from the plan's name: letters, digits, '.', '_' and '-' only."""
    stem = _UNSAFE.sub("-", str(plan_json.get("name") or "plan")).strip(".-")[:80]
    return stem or "plan"


def plan_file(result: Any, plan_json: dict[str, Any], fmt: str) -> tuple[str, str, str]:
    """(text, media type, file name) of the plan in `fmt`, rendered as `rightsize plan --format FMT`
    renders it."""
    from rightsize.report.render import render

    if fmt not in PLAN_FORMATS:
        raise BadInput(
            f"Output format '{fmt}' is not available for a plan.",
            f"Formats: {', '.join(PLAN_FORMATS)}.",
            "Ask for json, markdown, html or table.",
        )
    media, suffix = PLAN_FORMATS[fmt]
    return render(result, fmt, "Plan") + "\n", media, f"{file_stem(plan_json)}.{suffix}"


def jobs_zip(plan_json: dict[str, Any]) -> bytes:
    """A zip of every target's job files (`export.render_files`), each under its target's folder,
    and `manifest.json`: the plan, the files per target and the targets left out, with why."""
    from rightsize._version import __version__
    from rightsize.export import TARGETS, render_files

    buffer = io.BytesIO()
    manifest: dict[str, Any] = {
        "kind": "rightsize_ui_export",
        "rightsize_version": __version__,
        "plan": {"name": plan_json.get("name"), "kind": plan_json.get("kind")},
        "targets": {},
        "left_out": {},
    }
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for target in TARGETS:
            try:
                files = render_files(plan_json, target)
            except BadInput as err:
                manifest["left_out"][target] = err.message()
                continue
            for name, text in files.items():
                info = zipfile.ZipInfo(f"{target}/{name}")
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (0o755 if name.endswith(_EXECUTABLE) else 0o644) << 16
                archive.writestr(info, text)
            manifest["targets"][target] = sorted(files)
        archive.writestr("manifest.json", json.dumps(manifest, indent=2) + "\n")
    return buffer.getvalue()
