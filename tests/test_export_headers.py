"""Every exported artefact names the plan it came from: spec name, plan schema version and dates."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rightsize.export import render_files

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402

CASES = [
    ("llama3-70b-pretrain", "slurm", "megatron"),
    ("llama3-70b-pretrain", "slurm", "torchtitan"),
    ("llama3-8b-lora-weekly", "slurm", "auto"),
    ("llama3-70b-pretrain", "kubernetes", "nemo"),
    ("llama3-70b-pretrain", "prometheus", "auto"),
    ("llama3-70b-chat-serving", "slurm", "auto"),
    ("llama3-70b-chat-serving", "kubernetes", "auto"),
    ("llama3-70b-chat-serving", "prometheus", "auto"),
]


@pytest.mark.parametrize(("example", "target", "framework"), CASES)
def test_every_file_names_its_plan(example: str, target: str, framework: str) -> None:
    plan = plan_dict(example)
    files = render_files(plan, target, framework)
    assert files
    for name, text in files.items():
        comments = [ln for ln in text.splitlines() if ln.startswith("# ")]
        head = "\n".join(comments[:12])
        assert f"plan: {plan['name']} (kind {plan['kind']}" in head, name
        assert f"plan schema version {plan['schema_version']}" in head, name
        assert re.search(r"planned: \d{4}-\d\d-\d\dT.*exported: \d{4}-\d\d-\d\dT", head), name
