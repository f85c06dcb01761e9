"""`rightsize schema` describes every spec file the project ships, fleets included (issue #29: the
schema command did not describe `kind: fleet`, though fleet errors point to it), and refuses what
the loader refuses for a wrong kind."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from rightsize.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / "examples" / "fleet-2027").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> jsonschema.Draft202012Validator:
    out = tmp_path_factory.mktemp("schema") / "schema.json"
    assert main(["schema", "-o", str(out)]) == 0
    schema = json.loads(out.read_text(encoding="utf-8"))
    assert "fleet" in schema["properties"]["kind"]["enum"]
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_every_example_is_valid_under_the_schema(
    path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    errors = [
        f"{e.json_path}: {e.message[:200]}" for e in validator.iter_errors(yaml.safe_load(path.read_text()))
    ]
    assert not errors, errors


def test_a_fleet_key_in_a_training_spec_is_invalid(validator: jsonschema.Draft202012Validator) -> None:
    spec = yaml.safe_load((ROOT / "examples" / "llama3-70b-pretrain.yaml").read_text())
    assert not list(validator.iter_errors(spec))
    spec["horizon_months"] = 12  # a fleet's key: no kind takes it with a training spec's keys
    assert list(validator.iter_errors(spec))
