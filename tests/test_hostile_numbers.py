"""Issue #24, numbers from a hostile world: every figure that enters from a spec or a calibration is
checked for range and sign where it is read (the allowed range in the message); durations need a
unit; `k` on a sequence length is 1,024 and said; `plan --calibration` works on every kind; a fleet
checks one run against its turnaround; no "$-0", "(got 0) (got 0)" or "-3U"; and any plan that exits
0 holds only finite figures, with no negative count, cost, time or size (examples and perturbed
specs)."""

from __future__ import annotations

import copy
import json
import math
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rightsize.api import plan
from rightsize.cli.main import main
from rightsize.errors import BadInput, Infeasible, RightsizeError, SpecNote
from rightsize.fleet.findings import _saving
from rightsize.report import units
from rightsize.report.fleet_doc import _saving_text
from rightsize.report.render import render
from rightsize.spec.load import parse_spec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PLANNED = sorted(p for p in EXAMPLES.glob("*.yaml") if "fleet" not in p.name)

TRAIN = {
    "model": "llama3-8b",
    "training": {"seq_len": 4096, "global_batch": 64, "train_tokens": "1B"},
    "targets": {"accelerators": ["h100-sxm"]},
}
SERVE = {
    "kind": "inference",
    "model": "llama3-8b",
    "traffic": {"rate": 2, "prompt_tokens": 512, "output_tokens": 128},
    "slo": {"ttft": "500ms", "tpot": "50ms"},
    "targets": {"accelerators": ["h100-sxm"]},
}


def _bad(raw: dict[str, Any]) -> str:
    with pytest.raises(BadInput) as err:
        parse_spec(raw, ROOT)
    return str(err.value)


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(base)
    *parents, last = path.split(".")
    node = raw
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return raw


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err
    return code, out, err


# ----------------------------------------------------------------------------- durations need a unit

VISION_SERVE = {"kind": "vision", "mode": "inference", "model": "resnet50", "inference": {"streams": 4}}
RECSYS_SERVE = {
    "kind": "recommendation",
    "mode": "inference",
    "model": "dlrm-dcnv2-criteo",
    "inference": {"qps": 100},
}


@pytest.mark.parametrize(
    ("base", "path", "fix"),
    [
        (SERVE, "slo.tpot", "'50ms' or '50s'"),
        (SERVE, "slo.ttft", "'50ms' or '50s'"),
        (SERVE, "slo.e2e", "'50ms' or '50s'"),
        (TRAIN, "targets.deadline", "'50s', '50h' or '50d'"),
        (VISION_SERVE, "inference.latency_p99", "'50ms' or '50s'"),
        (RECSYS_SERVE, "inference.latency", "'50ms' or '50s'"),
        (TRAIN, "infrastructure.schedule", None),
    ],
)
def test_a_duration_without_a_unit_is_refused_with_the_fix(
    base: dict[str, Any], path: str, fix: str | None
) -> None:
    if fix is None:  # the schedule's turnaround has no `_s` key: a bare number is always refused
        message = _bad(_with(base, path, {"jobs_per_week": 1, "turnaround": 50}))
        assert "turnaround: 50 has no unit" in message and "'50h'" in message
        assert "turnaround_s" not in message
        return
    message = _bad(_with(base, path, 50))
    key = path.rsplit(".", 1)[1]
    assert f"{key}: 50 has no unit" in message and fix in message
    assert f"{key}_s: 50" in message  # the key that names seconds still takes a number


def test_the_key_that_names_seconds_takes_a_number() -> None:
    raw = _with(SERVE, "slo.tpot_s", 0.05)
    del raw["slo"]["tpot"]
    spec = parse_spec(raw, ROOT)
    assert spec.slo.tpot_s == pytest.approx(0.05)
    spec = parse_spec(_with(SERVE, "slo.tpot", "50ms"), ROOT)
    assert spec.slo.tpot_s == pytest.approx(0.05)


def test_a_fleet_turnaround_without_a_unit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "lora.yaml").write_text((EXAMPLES / "llama3-8b-lora-weekly.yaml").read_text())
    fleet = {"kind": "fleet", "start": "2027-01", "workloads": [{"spec": "lora.yaml", "turnaround": 3600}]}
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    with pytest.raises(BadInput, match="turnaround: 3600 has no unit"):
        plan(tmp_path / "fleet.yaml")


# ---------------------------------------------------------------------- k on a length is 1,024, said


@pytest.mark.parametrize(("text", "tokens"), [("8k", 8192), ("8K", 8192), ("128k", 131072), ("1M", 2**20)])
def test_k_on_a_sequence_length_is_1024_and_said(text: str, tokens: int) -> None:
    raw = _with(TRAIN, "training.seq_len", text)
    raw["training"]["global_batch_tokens"] = "16Mi"
    del raw["training"]["global_batch"]
    with pytest.warns(SpecNote, match=rf"seq_len: '{text}' is read as {tokens:,} tokens"):
        spec = parse_spec(raw, ROOT)
    assert spec.training.seq_len == tokens


def test_lengths_are_binary_and_counts_stay_decimal() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecNote)
        plain = parse_spec(_with(TRAIN, "training.seq_len", 8000), ROOT)  # no k: no note
    assert plain.training.seq_len == 8000
    with pytest.warns(SpecNote, match="prompt_tokens|mean: '2k' is read as 2,048"):
        serve = parse_spec(_with(SERVE, "traffic.prompt_tokens", "2k"), ROOT)
    assert serve.traffic.prompt_tokens.mean == 2048
    counted = parse_spec(_with(TRAIN, "training.global_batch", "2k"), ROOT)
    assert counted.training.global_batch == 2000  # a count, not a length: k is 1,000


def test_the_cli_prints_how_a_length_was_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "spec.yaml"
    raw = _with(TRAIN, "training.seq_len", "4k")
    path.write_text(yaml.safe_dump(raw))
    code, _, err = run(capsys, "plan", str(path), "--format", "json")
    assert code == 0 and "note: seq_len: '4k' is read as 4,096 tokens" in err


# --------------------------------------------------------------------- magnitude, sign and floors


@pytest.mark.parametrize(
    ("base", "path"),
    [
        (SERVE, "traffic.rate"),
        (TRAIN, "training.global_batch"),
        (TRAIN, "infrastructure.facility.rack_units"),
        (TRAIN, "infrastructure.growth.data_growth_per_year"),
        (SERVE, "engine.max_batch"),
        (SERVE, "seed"),
    ],
)
def test_a_400_digit_integer_is_bad_input_naming_the_key(base: dict[str, Any], path: str) -> None:
    message = _bad(_with(base, path, 10**400))
    assert path in message and "401-digit number" in message and "10^24" in message
    assert "0" * 100 not in message  # not echoed whole


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 1e30, -1e30])
def test_non_finite_and_absurd_floats_are_bad_input(value: float) -> None:
    message = _bad(_with(TRAIN, "infrastructure.storage.preprocessed_multiple", value))
    assert "infrastructure.storage.preprocessed_multiple" in message


def test_a_400_digit_integer_inside_an_inline_model_is_bad_input() -> None:
    raw = _with(TRAIN, "model", {"preset": "llama3-8b", "hidden": 10**400})
    assert "model.hidden" in _bad(raw)


@pytest.mark.parametrize(
    ("base", "path", "value", "expected"),
    [
        (
            SERVE,
            "policy.utilisation_target",
            1e-9,
            "must be from 0.05 to 1, the share of the time a resource is busy",
        ),
        (TRAIN, "infrastructure.margins.utilisation_target", 1e-9, "must be from 0.05 to 1"),
        (SERVE, "traffic.rate", 1e-12, "traffic.rate_per_s: 1e-12 is less than 0.001"),
        (RECSYS_SERVE, "inference.qps", 1e-12, "inference.qps: 1e-12 is less than 0.001"),
        (SERVE, "slo.tpot", "1e-12s", "slo.tpot_s: 1e-12 is less than 1e-06"),
        (SERVE, "traffic.rate", -3, "Counts must be positive or zero"),
    ],
)
def test_figures_below_their_floor_are_refused_with_the_range(
    base: dict[str, Any], path: str, value: Any, expected: str
) -> None:
    message = _bad(_with(base, path, value))
    assert expected in message
    if "less than" in expected:
        assert "(allowed: " in message


def test_a_negative_seed_or_an_out_of_range_priority_is_bad_input(tmp_path: Path) -> None:
    assert "seed: Input should be greater than or equal to 0 (got -1)" in _bad(_with(SERVE, "seed", -1))
    (tmp_path / "lora.yaml").write_text((EXAMPLES / "llama3-8b-lora-weekly.yaml").read_text())
    fleet = {"kind": "fleet", "start": "2027-01", "workloads": [{"spec": "lora.yaml", "priority": 10**12}]}
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    with pytest.raises(BadInput, match="priority"):
        plan(tmp_path / "fleet.yaml")


def test_a_tiny_bare_power_or_bitrate_is_refused_with_the_unit_to_give(tmp_path: Path) -> None:
    message = _bad(_with(TRAIN, "infrastructure.facility.power_cap", 2))
    assert "power_cap_w: 2 is less than 1,000" in message and "'2 MW'" in message
    stream = _with(VISION_SERVE, "inference.stream_bitrate", 4)
    assert "stream_bitrate: 4 is less than 1,000" in _bad(stream) and "'4 Mb/s'" in _bad(stream)
    (tmp_path / "lora.yaml").write_text((EXAMPLES / "llama3-8b-lora-weekly.yaml").read_text())
    fleet = {
        "kind": "fleet",
        "start": "2027-01",
        "workloads": [{"spec": "lora.yaml"}],
        "policy": {"power_limit": 2},
    }
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    with pytest.raises(BadInput, match="power_limit: is under 1 kW"):
        plan(tmp_path / "fleet.yaml")


def test_a_positive_field_error_shows_the_value_once() -> None:
    message = _bad(_with(SERVE, "slo.tpot", "0ms"))
    assert "must be greater than zero (got '0ms')" in message
    assert message.count("(got") == 1


def test_a_bad_month_shows_the_value_once(tmp_path: Path) -> None:
    (tmp_path / "lora.yaml").write_text((EXAMPLES / "llama3-8b-lora-weekly.yaml").read_text())
    fleet = {"kind": "fleet", "start": "2027-13", "workloads": [{"spec": "lora.yaml"}]}
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    with pytest.raises(BadInput) as err:
        plan(tmp_path / "fleet.yaml")
    assert "YYYY-MM" in str(err.value) and str(err.value).count("(got '2027-13')") == 1


def test_a_deadline_of_seconds_is_said_in_seconds_not_zero_days() -> None:
    with pytest.raises(Infeasible) as err:
        plan(_with(TRAIN, "targets.deadline", "1s"))
    text = str(err.value)
    assert "0.0 days" not in text and "The deadline of 1 s" in text
    assert re.search(r"at least \d+(min|h|d) ", text)


def test_a_rack_too_small_for_its_reserved_units_never_goes_negative() -> None:
    with pytest.raises(BadInput) as err:
        plan(_with(TRAIN, "infrastructure.facility.rack_units", 1))
    assert "-3U" not in str(err.value) and "leaves no room for a node" in str(err.value)


# ---------------------------------------------------------------------------------- calibration


@pytest.mark.parametrize(
    "example",
    ["llama3-70b-chat-serving", "resnet50-video-inference", "dlrm-criteo-serving", "dlrm-criteo-train"],
)
def test_plan_with_a_calibration_works_on_every_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], example: str
) -> None:
    raw = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    raw["targets"] = {**raw.get("targets", {}), "accelerators": ["h100-sxm"]}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(raw))
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"overrides": {"h100-sxm": {"gemm_fraction": 0.5, "memory_bw_fraction": 0.5}}}))
    code, out, _ = run(capsys, "plan", str(spec), "--calibration", str(cal), "--format", "json")
    assert code == 0
    compared = json.loads(out)["calibration"]
    assert compared["overrides_applied_to"] == ["h100-sxm"]
    assert compared["default"]["cost_usd"] > 0 and compared["calibrated"]["cost_usd"] > 0


@pytest.mark.parametrize(
    ("figures", "expected"),
    [
        ({"gemm_fraction": 1e-20}, "gemm_fraction = 1e-20 is out of range"),
        ({"gemm_fraction": 1.5}, "allowed from"),
        ({"hbm_bytes_per_s": 1e20}, "at most 100x from the catalog's"),
        ({"kernel_overhead_s": 1e6}, "allowed 5e-08 to 0.0005"),
    ],
)
def test_calibration_figures_out_of_range_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], figures: dict[str, float], expected: str
) -> None:
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({"overrides": {"h100-sxm": figures}}))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(TRAIN))
    code, _, err = run(capsys, "plan", str(spec), "--calibration", str(cal))
    assert code == 2 and "h100-sxm" in err and next(iter(figures)) in err and expected in err
    with pytest.raises(BadInput, match=re.escape(expected)):
        plan(TRAIN, calibration={"h100-sxm": figures})


# ----------------------------------------------------------------------------------------- fleet


def test_a_fleet_turnaround_shorter_than_one_run_is_a_missed_deadline(tmp_path: Path) -> None:
    (tmp_path / "lora.yaml").write_text((EXAMPLES / "llama3-8b-lora-weekly.yaml").read_text())
    fleet = {
        "kind": "fleet",
        "start": "2027-01",
        "horizon_months": 3,
        "workloads": [{"spec": "lora.yaml", "name": "lora", "turnaround": "1s"}],
    }
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    result = plan(tmp_path / "fleet.yaml")
    turn = [d for d in result.deadlines if d.get("turnaround_s")]
    assert len(turn) == 1 and not turn[0]["met"] and turn[0]["run_s"] > 1
    text = render(result, "table")
    assert "misses its deadline (each run within 1 s)" in text
    assert "$-0" not in text and "-0%" not in text and "no saving" in text  # one workload: nothing pooled
    fleet["workloads"][0]["turnaround"] = "2d"
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    turn = [d for d in plan(tmp_path / "fleet.yaml").deadlines if d.get("turnaround_s")]
    assert len(turn) == 1 and turn[0]["met"]


@pytest.mark.parametrize(
    ("dedicated", "pooled", "text", "title"),
    [
        (100.0, 100.0, "no saving", "makes no saving"),
        (100.0, 100.2, "no saving", "makes no saving"),
        (100.0, 150.0, "pooling costs $50.00 (50%) more", "costs $50 (50%) more"),
        (100.0, 60.0, "$40.00 (40%) saved", "saves $40 (40%)"),
    ],
)
def test_pooling_never_saves_minus_zero(dedicated: float, pooled: float, text: str, title: str) -> None:
    saving = dedicated - pooled
    assert _saving_text({"saving_usd": saving, "saving_fraction": saving / dedicated}) == text
    finding = _saving(SimpleNamespace(dedicated_usd=dedicated, pooled_usd=pooled))  # type: ignore[arg-type]
    assert finding is not None and title in finding.title and "-0" not in finding.title


def test_money_and_shares_that_round_to_zero_have_no_sign() -> None:
    assert units.usd(-0.001) == "$0.00" and units.pct(-0.0001, 0) == "0%" and units.pct(-0.0004, 1) == "0.0%"
    assert units.usd(-150.0) == "$-150" and units.pct(-0.004, 1) == "-0.4%"  # real negatives keep theirs


# ------------------------------------------------------- exit 0 means finite, non-negative figures

# Keys whose numbers are amounts (counts, times, sizes, money, power): never negative. Changes,
# elasticities and margins may be.
_AMOUNT = re.compile(r"(gpus|nodes|racks|replicas|count|_s|_usd|_bytes|_w|_hours|hours)$")


def _numbers(node: Any, path: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _numbers(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _numbers(value, f"{path}[{i}]")
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield path, float(node)


def _assert_sound_figures(data: dict[str, Any]) -> None:
    for path, value in _numbers(data):
        assert math.isfinite(value), f"{path} = {value}"
        if _AMOUNT.search(path) and "saving" not in path:  # pooling may cost more: a negative saving
            assert value >= 0, f"{path} = {value}"


def _assert_sound_plan(raw: dict[str, Any], base_dir: Path) -> None:
    """Either a clear refusal (BadInput or Infeasible) or a plan whose every figure is finite and
    whose amounts are not negative."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SpecNote)
            data = json.loads(render(plan(parse_spec(raw, base_dir)), "json"))
    except RightsizeError as err:
        assert str(err).strip() and "Traceback" not in str(err)
        return
    _assert_sound_figures(data)


def _small(raw: dict[str, Any]) -> dict[str, Any]:
    """At most two accelerators, to keep the search quick."""
    targets = raw.get("targets")
    if isinstance(targets, dict) and isinstance(targets.get("accelerators"), list):
        targets["accelerators"] = targets["accelerators"][:2]
    return raw


@pytest.mark.parametrize("example", PLANNED, ids=lambda p: p.stem)
def test_every_example_plans_to_finite_non_negative_figures(example: Path) -> None:
    _assert_sound_plan(_small(yaml.safe_load(example.read_text())), example.parent)


def test_the_fleet_example_plans_to_finite_non_negative_figures() -> None:
    _assert_sound_figures(json.loads(render(plan(EXAMPLES / "fleet-2027.yaml"), "json")))


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in ("seed", "percentile"):
                yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield path


@settings(max_examples=18, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    example=st.sampled_from(PLANNED),
    picks=st.lists(st.tuples(st.integers(0, 10**6), st.floats(-6, 6)), min_size=1, max_size=2),
)
def test_perturbed_specs_are_refused_or_plan_to_sound_figures(
    example: Path, picks: list[tuple[int, float]]
) -> None:
    """Scale one or two numbers of an example by 10^-6 to 10^6: a message, or a sound plan."""
    raw = _small(yaml.safe_load(example.read_text()))
    leaves = list(_leaves(raw))
    for index, exponent in picks:
        *parents, last = leaves[index % len(leaves)]
        node = raw
        for key in parents:
            node = node[key]
        value = node[last] * 10.0**exponent
        node[last] = int(round(value)) if isinstance(node[last], int) else value
    _assert_sound_plan(raw, example.parent)
