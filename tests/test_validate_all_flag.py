"""`rightsize validate --all` checks every bundled set: the paths it hands to the validator are
the union of what --holdout, --families, --more, --stacks, --engines and --mechanisms each add."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rightsize.cli import main as cli


def _paths_for(flags: list[str], monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    seen: list[Path] = []

    def fake(paths: list[Path], *args: Any, **kwargs: Any) -> dict[str, Any]:
        seen.extend(paths)
        raise SystemExit(0)

    monkeypatch.setattr("rightsize.validate.run.validate_paths", fake)
    with pytest.raises(SystemExit):
        cli.main(["validate", *flags])
    return seen


def test_all_is_the_union_of_every_set(monkeypatch: pytest.MonkeyPatch) -> None:
    every = _paths_for(["--all"], monkeypatch)
    union: set[Path] = set()
    for flag in ("--holdout", "--families", "--more", "--stacks", "--engines", "--mechanisms"):
        one = _paths_for([flag], monkeypatch)
        assert set(one) <= set(every), flag
        union |= set(one)
    assert set(every) == union and len(every) == len(set(every))
    names = {p.name for p in every}
    assert {
        "holdout_training.csv",
        "training_more.csv",
        "stacks_training.csv",
        "serving_public.csv",
        "serving_mechanisms.csv",
    } <= names
