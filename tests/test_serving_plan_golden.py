"""The serving search's plans are pinned: a speed-up of the search (fewer runs, cheaper
runs) must not change any plan. Each plan (best option, alternatives, Pareto front,
rejections, assumptions, the disaggregation decision; `seconds` excluded), with floats
rounded to 9 significant figures, is compared with tests/data/serving_plan_golden.json,
written by the search before its speed-ups. Regenerate only for a deliberate change of
the model: `RIGHTSIZE_REGEN_GOLDEN=1 pytest tests/test_serving_plan_golden.py`.

The specs: benchmarks/bench_serving_plan.py's (`accelerators: all`) and every serving
example in examples/.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from rightsize.search.serving import plan_serving
from rightsize.spec.load import parse_spec, read_spec_yaml

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "serving_plan_golden.json"
EXAMPLES = (
    "llama3-70b-chat-serving.yaml",
    "llama3-70b-disaggregated-serving.yaml",
    "llama3-405b-serve-multinode.yaml",
    "deepseek-v3-ep-serving.yaml",
    "llama2-7b-batch1.yaml",
)
CASES = ("bench-all", *EXAMPLES)


def _round(x: Any) -> Any:
    if isinstance(x, bool) or x is None or isinstance(x, str | int):
        return x
    if isinstance(x, float):
        if not math.isfinite(x):
            return str(x)
        return float(f"{x:.9g}")
    if isinstance(x, dict):
        return {str(k): _round(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_round(v) for v in x]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _round({f.name: getattr(x, f.name) for f in dataclasses.fields(x)})
    if hasattr(x, "tolist"):
        return _round(x.tolist())
    return str(x)


def summary(case: str) -> dict[str, Any]:
    name = EXAMPLES[0] if case == "bench-all" else case
    data = read_spec_yaml(ROOT / "examples" / name)
    if case == "bench-all":
        data["targets"]["accelerators"] = "all"
    spec = parse_spec(data, ROOT / "examples", name)
    plan = plan_serving(spec)  # type: ignore[arg-type]
    out = _round({f.name: getattr(plan, f.name) for f in dataclasses.fields(plan) if f.name != "seconds"})
    assert isinstance(out, dict)
    return out


@pytest.mark.parametrize("case", CASES)
def test_serving_plan_is_unchanged(case: str) -> None:
    got = summary(case)
    if os.environ.get("RIGHTSIZE_REGEN_GOLDEN"):
        stored = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        stored[case] = got
        GOLDEN.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())[case]
    assert json.loads(json.dumps(got)) == want
