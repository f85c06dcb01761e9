"""Single serving mechanisms against their published figures (validate/mechanism_cases.py,
data/serving_mechanisms.csv): speculative decoding's tokens per verification step from the
per-token acceptance rate, on Red Hat's EAGLE-3 speculator table (k = 1..7). The bars hold
the formula's measured error; a measured acceptance length, when given, is used as is."""

from __future__ import annotations

from pathlib import Path

import pytest

from rightsize.perf.serving_specdec import tokens_per_step
from rightsize.spec.load import parse_spec
from rightsize.validate.kinds import kind_cases
from rightsize.validate.mechanism_cases import bundled_path
from rightsize.validate.run import validate_paths


@pytest.fixture(scope="module")
def result() -> dict:
    return validate_paths([bundled_path()])


def test_every_row_is_sourced_and_predicted(result: dict) -> None:
    found = kind_cases(bundled_path())
    assert found is not None
    for case in found[0]:
        assert case.text("source") and case.text("as_of"), case.id
    rows = result["rows"]
    assert len(rows) == 14 and all(r["predicted"] is not None for r in rows)


def test_independent_acceptance_error_bars(result: dict) -> None:
    """Measured (2026-11-25): 1.5-5.3% high at k = 2-3, 10.7-14.1% at k = 5, 16.4-25.9% at
    k = 7; median 8.0%. The formula never undershoots: later positions are accepted less."""
    rows = {r["id"]: r for r in result["rows"] if r["metric"] == "acceptance_length"}
    for rid, r in rows.items():
        k = int(rid.rsplit("-k", 1)[1])
        assert r["error"] > 0, rid  # the position-blind formula overstates deep drafts
        assert r["error"] < (0.06 if k <= 3 else 0.15 if k <= 5 else 0.27), (rid, r["error"])
    s = result["summary"]["acceptance_length"]
    assert s["median_abs_error"] < 0.09 and s["max_abs_error"] < 0.27
    assert "" not in result["by_family"]  # rows without hardware stay out of the family table


def test_lora_penalty_takes_vllm_v0s_path(result: dict) -> None:
    """vLLM's V0 engine lost 34% of its throughput to one rank-8 adapter (PR #11267, A100,
    Llama 2 7B). The rows name release 0.6.5, so the model takes V0's LoRA path (per-token
    adapter reads in decode, per-slice decode launches, eager prefill launches,
    perf/serving_lora.py). Measured 2026-11-26: 0.879 predicted, +32.4% on both rows (+45%
    before the path); tests/test_serving_lora_path.py pins the mechanism."""
    rows = [r for r in result["rows"] if r["metric"] == "lora_throughput_ratio"]
    assert len(rows) == 2
    for r in rows:
        assert 0.86 < r["predicted"] < 0.90 and r["published"] == pytest.approx(0.664, abs=0.002)
        assert 0.28 < r["error"] < 0.36


def test_measured_acceptance_length_is_used_as_is() -> None:
    assert tokens_per_step(7, 0.83) == pytest.approx((1 - 0.83**8) / 0.17)
    assert tokens_per_step(7, 0.83, 3.62) == 3.62
    assert tokens_per_step(2, 0.5, 9.0) == 3.0  # never more than every draft plus one
    base = {
        "kind": "inference",
        "model": "llama3-8b",
        "traffic": {"rate": 1, "prompt_tokens": 128, "output_tokens": 128},
    }
    spec = parse_spec({**base, "engine": {"speculative": {"draft_tokens": 7, "acceptance_length": 3.62,
                                                          "method": "eagle"}}}, Path("."))  # fmt: skip
    assert spec.engine.speculative.acceptance_length == 3.62
    for bad, why in (
        ({"draft_tokens": 3}, "acceptance_rate .* or acceptance_length"),
        ({"draft_tokens": 3, "acceptance_length": 4.5}, "exceeds draft_tokens"),
    ):
        with pytest.raises(Exception, match=why):
            parse_spec({**base, "engine": {"speculative": bad}}, Path("."))


def test_unknown_mechanism_is_kept_with_its_reason(tmp_path: Path) -> None:
    f = tmp_path / "m.csv"
    f.write_text("id,source,mechanism,metric,value\nx,somewhere,warp-drive,speedup,2.0\n")
    (row,) = validate_paths([f])["rows"]
    assert row["predicted"] is None and "warp-drive" in row["reason"]
