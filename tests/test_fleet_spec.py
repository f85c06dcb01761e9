"""Bad fleet specs get clear errors with exit code 2 (issue #16): missing files, include cycles,
duplicate names, an end before a start, a workload outside the horizon, malformed fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.spec.fleet_load import load_fleet, parse_fleet

LORA: dict[str, Any] = {
    "name": "lora",
    "model": "llama3-8b",
    "training": {"seq_len": 4096, "global_batch": 64, "train_tokens": "100M", "method": "lora"},
    "targets": {"accelerators": ["h100-sxm"]},
}


def _write(tmp: Path, name: str, data: dict[str, Any]) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _fleet(workloads: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"kind": "fleet", "start": "2027-01", "horizon_months": 12, "workloads": workloads, **extra}


def _cli_error(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["plan", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


def test_missing_workload_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "fleet.yaml", _fleet([{"spec": "nowhere/train.yaml"}]))
    err = _cli_error(path, capsys)
    assert "nowhere/train.yaml" in err and "No such file" in err and "To fix" in err


def test_include_cycle_shows_the_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, "a.yaml", _fleet([{"spec": "b.yaml"}]))
    _write(tmp_path, "b.yaml", {"kind": "fleet", "workloads": [{"spec": "a.yaml"}]})
    err = _cli_error(tmp_path / "a.yaml", capsys)
    assert "cycle" in err.lower()
    assert "a.yaml -> " in err and "b.yaml -> " in err


def test_self_include_is_a_cycle(tmp_path: Path) -> None:
    _write(tmp_path, "self.yaml", _fleet([{"spec": "self.yaml"}]))
    with pytest.raises(BadInput, match="includes itself"):
        load_fleet(tmp_path / "self.yaml")


def test_an_included_fleet_adds_its_workloads(tmp_path: Path) -> None:
    _write(tmp_path, "lora.yaml", LORA)
    _write(
        tmp_path, "inner.yaml", {"kind": "fleet", "workloads": [{"spec": "lora.yaml", "name": "inner-lora"}]}
    )
    fleet = load_fleet(
        _write(tmp_path, "outer.yaml", _fleet([{"spec": "inner.yaml"}, {"spec": "lora.yaml"}]))
    )
    assert [e.name for e in fleet.entries] == ["inner-lora", "lora"]


def test_duplicate_names_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, "lora.yaml", LORA)
    path = _write(tmp_path, "fleet.yaml", _fleet([{"spec": "lora.yaml"}, {"spec": LORA}]))
    err = _cli_error(path, capsys)
    assert "both named 'lora'" in err and "name:" in err


def test_end_before_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "fleet.yaml", _fleet([{"spec": LORA, "start": "2027-06", "end": "2027-03"}]))
    err = _cli_error(path, capsys)
    assert "end (2027-03) is before start (2027-06)" in err


@pytest.mark.parametrize(
    ("entry", "extra", "message"),
    [
        ({"spec": LORA, "start": "2029-01"}, {}, "outside the fleet's horizon"),
        ({"spec": LORA, "start": "March 2027"}, {}, "YYYY-MM"),
        ({"spec": LORA, "start": "2027-13"}, {}, "YYYY-MM"),
        ({"spec": LORA, "batch": {"requests": "2M", "output_tokens": "1B"}}, {}, "exactly one of"),
        ({"spec": LORA, "batch": {"requests": "2M", "window": "22-22"}}, {}, "window"),
        ({"spec": LORA, "load": {"hourly": [1.0] * 23}}, {}, "24 hourly factors"),
        ({"spec": LORA}, {"policy": {"pools": "single"}}, "policy.accelerator"),
        ({"spec": LORA}, {"policy": {"capacity": ["spot"]}}, "cannot carry services"),
        ({"spec": LORA}, {"policy": {"capacity": ["spot", "capacity_block"]}}, "cannot carry services"),
        ({"spec": LORA, "spec_typo": 1}, {}, "unknown key"),
        ({"spec": {"kind": "fleet", "workloads": []}}, {}, "inline fleet"),
    ],
)
def test_malformed_fleets(entry: dict[str, Any], extra: dict[str, Any], message: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_fleet(_fleet([entry], **extra), Path.cwd())
    assert message in err.value.message()


def test_a_fleet_needs_a_start() -> None:
    data = _fleet([{"spec": LORA}])
    del data["start"]
    with pytest.raises(BadInput, match="does not say when it starts"):
        parse_fleet(data)
    data["workloads"][0]["start"] = "2027-05"
    assert parse_fleet(data).start_month == 2027 * 12 + 4


def test_bad_inline_workload_spec_names_where(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = {**LORA, "training": {**LORA["training"], "seq_len": -1}}
    err = _cli_error(_write(tmp_path, "fleet.yaml", _fleet([{"spec": bad}])), capsys)
    assert "workloads[0] inline" in err and "seq_len" in err


def test_estimate_refuses_a_fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "fleet.yaml", _fleet([{"spec": LORA}]))
    assert main(["estimate", str(path)]) == 2
    assert "rightsize plan FLEET.yaml" in capsys.readouterr().err


def test_a_workload_that_cannot_be_planned_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An infeasible workload (a deadline no allowed hardware meets) stops the fleet with exit 1, naming it."""
    hopeless = {
        **LORA,
        "name": "hopeless",
        "training": {**LORA["training"], "method": "full", "train_tokens": "15T"},
        "targets": {"accelerators": ["h100-sxm"], "gpus": 8, "deadline": "1h"},
    }
    path = _write(tmp_path, "fleet.yaml", _fleet([{"spec": hopeless}]))
    assert main(["plan", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Workload 'hopeless'" in err and "Traceback" not in err
