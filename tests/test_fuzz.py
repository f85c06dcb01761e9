"""Property-based fuzzing of the spec schema and the CLI (issue #15), seeded and bounded in time.

Generated specs (the examples, mutated as a careless or hostile user would: NaN, infinity, 1e308,
huge and negative numbers, long strings, wrong types, duplicates, missing and unknown keys) go
through `parse_spec` and `rightsize plan --format json`. Properties: never a traceback, an exit
code in {0, 1, 2}, every rejection names a field or the file, and every number in a JSON output
is finite and sane. `benchmarks/fuzz_cli.py` runs the same generator over thousands of specs.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from spec_fuzz import check_run, mutated_spec, schema_paths, write_spec

from rightsize.errors import BadInput
from rightsize.spec import parse_spec

PATHS = schema_paths()
_SETTINGS = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)


@seed(15)
@settings(max_examples=600, **_SETTINGS)  # type: ignore[arg-type]
@given(rng=st.randoms(use_true_random=False))
def test_parse_spec_accepts_or_names_the_problem(rng: random.Random) -> None:
    spec = mutated_spec(rng, PATHS)
    try:
        parse_spec(spec, Path.cwd(), source="fuzz.yaml")
    except BadInput as err:
        text = err.message()
        assert "fuzz.yaml" in text
        assert "Traceback" not in text


@seed(1515)
@settings(max_examples=60, **_SETTINGS)  # type: ignore[arg-type]
@given(rng=st.randoms(use_true_random=False))
def test_cli_plan_never_tracebacks_and_json_is_finite(rng: random.Random) -> None:
    spec = _fast(mutated_spec(rng, PATHS))
    with tempfile.TemporaryDirectory() as tmp:
        path = write_spec(spec, Path(tmp) / "spec.yaml")
        code, problem = check_run(["plan", str(path), "--format", "json"])
    assert problem is None, problem
    assert code in (0, 1, 2)


def _fast(spec: dict[str, Any]) -> dict[str, Any]:
    """Keep CI quick: one accelerator where the spec lists several (the search per accelerator
    is the same code)."""
    targets = spec.get("targets")
    if (
        isinstance(targets, dict)
        and isinstance(targets.get("accelerators"), list)
        and targets["accelerators"]
    ):
        targets["accelerators"] = targets["accelerators"][:1]
    return spec


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "/dev/null"],
        ["plan", "/nonexistent/spec.yaml"],
        ["estimate", "/dev/zero"],
        ["validate", "/dev/zero"],
        ["validate", "/nonexistent.csv"],
        ["schema", "-o", "/proc/version"],
        ["plan", "examples/llama2-7b-batch1.yaml", "--calibration", "/dev/zero"],
    ],
)
def test_cli_bad_paths_are_exit_2(argv: list[str]) -> None:
    root = Path(__file__).resolve().parents[1]
    argv = [str(root / a) if a.startswith("examples/") else a for a in argv]
    code, problem = check_run(argv, want_json=False)
    assert problem is None and code == 2, problem
