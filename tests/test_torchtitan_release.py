"""The exported torchtitan job, read by torchtitan 0.1.0's own config code (the pinned release,
installed in CI with `pip install --no-deps torchtitan==0.1.0`): its `ConfigManager` parses the
generated TOML and the launch's `--section.key` overrides with tyro, and every key we write must
land in the release's `JobConfig` with the value we wrote. torchtitan itself silently drops a key
it does not know; here an unknown key fails. The vendored table the other framework tests read
(tests/data/torchtitan_v0.1.0_job_config.json) is checked against the release's dataclasses too.

Only `torchtitan/config_manager.py` is loaded (the package's __init__ imports every model and the
datasets library, which this check does not need). Skipped when the wheel is absent, unless
RIGHTSIZE_REQUIRE_TORCHTITAN is set (CI sets it)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from export_plans import plan_dict

from rightsize.export.frameworks import launch_for
from rightsize.export.names import ShellExpr, argv
from rightsize.export.plan_view import training_view

DATA = Path(__file__).parent / "data"
EXAMPLES = ["llama3-70b-pretrain"]


def _release() -> types.ModuleType:
    spec = importlib.util.find_spec("torchtitan")
    if spec is None or not spec.submodule_search_locations:
        if os.environ.get("RIGHTSIZE_REQUIRE_TORCHTITAN"):
            pytest.fail("torchtitan 0.1.0 is required (RIGHTSIZE_REQUIRE_TORCHTITAN is set)")
        pytest.skip("torchtitan 0.1.0 is not installed (pip install --no-deps torchtitan==0.1.0)")
    pytest.importorskip("tyro", reason="tyro (torchtitan's argument parser) is not installed")
    root = Path(list(spec.submodule_search_locations)[0])
    from importlib.metadata import version

    assert version("torchtitan") == "0.1.0", "the export pins torchtitan 0.1.0"
    if "torchtitan" not in sys.modules:  # the package without its __init__ (models, datasets)
        pkg = types.ModuleType("torchtitan")
        pkg.__path__ = [str(root)]
        sys.modules["torchtitan"] = pkg
    name = "torchtitan.config_manager"
    if name not in sys.modules:
        loader = importlib.util.spec_from_file_location(name, root / "config_manager.py")
        assert loader is not None and loader.loader is not None
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module
        loader.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def release() -> types.ModuleType:
    return _release()


def _sections(cm: types.ModuleType) -> dict[str, dict[str, Any]]:
    hints = typing.get_type_hints(cm.JobConfig)
    out = {}
    for f in dataclasses.fields(cm.JobConfig):
        cls = hints[f.name]
        out[f.name] = {g.name: g for g in dataclasses.fields(cls)}
    return out


def test_vendored_table_matches_the_release(release: types.ModuleType) -> None:
    table = json.loads((DATA / "torchtitan_v0.1.0_job_config.json").read_text())["sections"]
    real = _sections(release)
    assert set(table) == set(real)
    for section, keys in real.items():
        assert set(table[section]) == set(keys), section


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_release_parses_the_export_and_keeps_every_value(
    release: types.ModuleType, example: str, tmp_path: Path
) -> None:
    launch = launch_for(training_view(plan_dict(example)), "torchtitan")
    path = tmp_path / "torchtitan.toml"
    path.write_text(launch.files["torchtitan.toml"], encoding="utf-8")
    doc = tomllib.loads(path.read_text())
    real = _sections(release)
    for section, keys in doc.items():
        assert section in real, f"[{section}] is not a torchtitan 0.1.0 section (it would be dropped)"
        for key in keys:
            assert key in real[section], (
                f"[{section}] {key} is not a torchtitan 0.1.0 key (it would be dropped)"
            )
    # the job script's overrides, with each shell expression ($DATA_PATH, ...) as the path it names
    values = {flag: f"/mnt/{v.text.lstrip('$').lower()}" if isinstance(v, ShellExpr) else v
              for flag, v in launch.arg_list if flag != "--job.config_file"}  # fmt: skip
    overrides = argv(values.items())
    config = release.ConfigManager().parse_args(["--job.config_file", str(path), *overrides])
    for section, keys in doc.items():
        for key, value in keys.items():
            got = getattr(getattr(config, section), key)
            assert got == value or (isinstance(got, list) and list(value) == got), (section, key, value, got)
    it = iter(overrides)
    for flag in it:  # `--section.key VALUE` pairs, as the job script passes them
        value = next(it, None)
        section, key = flag.removeprefix("--").split(".", 1)
        got = getattr(getattr(config, section), key.replace("-", "_"))
        assert str(got).lower() == str(value).lower() or got == type(got)(value), (flag, value, got)
