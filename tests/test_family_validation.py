"""Issue 28: accuracy per accelerator family, the generated validation table plans read, and
the family spread the uncertainty ranges take."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from rightsize.catalog import accelerators
from rightsize.catalog.families import (
    UNVALIDATED_SIGMA,
    FamilyValidation,
    families,
    family_of,
    family_sigma,
    family_validation,
    validation_of,
)
from rightsize.report.family_rows import alternatives_row, family_row
from rightsize.validate.families import compute_table, family_breakdown, serialise, table_path


def test_every_catalog_accelerator_has_exactly_one_family() -> None:
    seen: dict[str, str] = {}
    for f in families().values():
        for acc in f.accelerators:
            assert acc not in seen, f"{acc} is in {seen.get(acc)} and {f.id}"
            seen[acc] = f.id
    ids = set(accelerators())
    assert ids == set(seen), f"unlisted: {ids - set(seen)}, unknown: {set(seen) - ids}"


def test_stored_table_matches_a_fresh_computation() -> None:
    """catalog/data/family_validation.json is generated (python -m rightsize.validate.families
    --write); a change to the model or the rows without regenerating it fails here."""
    stored = table_path().read_text(encoding="utf-8")
    assert serialise(compute_table()) == stored, "regenerate: python -m rightsize.validate.families --write"


def _row(acc: str, err: float | None, within: bool | None = None, metric: str = "step_time_s") -> dict:
    r: dict = {"accelerator": acc, "error": err, "metric": metric}
    if within is not None:
        r["within_p10_p90"] = within
    return r


def test_breakdown_groups_by_family_and_counts_rejections() -> None:
    rows = [
        _row("h100-sxm", 0.10, True),
        _row("h200-sxm", -0.30, False),  # same family as h100-sxm (hopper)
        _row("h800-sxm", 0.02, True, "output_tokens_per_s"),
        _row("tpu-v6e", None),  # rejected as not fitting: counted, not dropped
        _row("tpu-v6e", -0.07, True),
    ]
    out = family_breakdown(rows)
    assert set(out) == {"hopper", "tpu-v6e"}
    h = out["hopper"]
    assert h["rows"] == 3 and h["not_predicted"] == 0
    assert h["median_abs_error"] == pytest.approx(0.10)
    assert h["max_abs_error"] == pytest.approx(0.30)
    assert h["coverage_p10_p90"] == pytest.approx(2 / 3)
    assert h["by_kind"]["training"]["rows"] == 2 and h["by_kind"]["serving"]["rows"] == 1
    t = out["tpu-v6e"]
    assert (t["rows"], t["not_predicted"], t["median_abs_error"]) == (1, 1, pytest.approx(0.07))


def test_family_sigma_widens_with_fewer_and_poorer_rows() -> None:
    def fv(n: int, med: float | None) -> FamilyValidation:
        return FamilyValidation("x", n, 0, med, med, None, 0)

    assert fv(0, None).sigma == UNVALIDATED_SIGMA
    assert fv(3, 0.10).sigma > fv(30, 0.10).sigma  # fewer rows, wider
    assert fv(30, 0.25).sigma > fv(30, 0.10).sigma  # poorer rows, wider
    # a lognormal's median |log error| is 0.674 sigma: many rows at 10% -> sigma near 0.14
    assert fv(10**6, 0.10).sigma == pytest.approx(math.log(1.1) / 0.674, rel=0.01)


def test_unknown_and_unvalidated_accelerators_say_so() -> None:
    assert family_of("my-own-asic") == "my-own-asic"
    v = validation_of("my-own-asic")
    assert v.rows == 0 and "not validated" in v.headline()
    assert family_sigma("my-own-asic") == UNVALIDATED_SIGMA


def test_table_lists_every_family_and_the_gaudi3_rows() -> None:
    table = family_validation()
    assert set(table) == set(families())
    g = table["gaudi3"]["serving"]
    assert table["gaudi3"]["training"].rows == 0  # no published Gaudi 3 training row yet
    assert g.rows >= 24 and g.median_abs_error is not None and g.median_abs_error <= 0.15


def test_plan_headline_names_the_family_validation() -> None:
    label, text = family_row(SimpleNamespace(best=SimpleNamespace(accelerator="gaudi3"))) or ("", "")
    assert label == "validated (family)"
    assert text.startswith("Intel Gaudi 3: validated on ") and "median error" in text
    # a family with no published row yet says so (any such family; TPU v5e at the time of writing)
    empty = [f for f, v in family_validation().items() if v["all"].rows == 0]
    if empty:
        acc = families()[empty[0]].accelerators[0]
        _, unval = family_row(SimpleNamespace(best=SimpleNamespace(accelerator=acc))) or ("", "")
        assert "not validated" in unval


def test_a_serving_plan_carries_its_family_status(tmp_path: Path) -> None:
    from rightsize.cli.main import main

    spec = tmp_path / "g3.yaml"
    spec.write_text(
        "kind: inference\nname: g3\nmodel: llama2-7b\n"
        "serving: {scenario: fixed_batch, batch: 64, weight_precision: fp8, kv_precision: fp8}\n"
        "traffic: {prompt_tokens: 128, output_tokens: 2048}\n"
        "targets: {accelerators: [gaudi3], tp: 1, replicas: 1}\n",
        encoding="utf-8",
    )
    out = tmp_path / "plan.json"
    assert main(["plan", str(spec), "--format", "json", "--output", str(out)]) == 0
    plan = json.loads(out.read_text(encoding="utf-8"))
    fam = plan["uncertainty"]["family"]
    assert fam["family"] == "gaudi3" and fam["rows"] >= 24
    assert fam["kind"] == "serving"
    assert fam["sigma"] == pytest.approx(family_sigma("gaudi3", "serving"))


def test_every_family_offered_says_how_well_it_is_validated() -> None:
    """The alternatives' families get a short status too; the chosen family is not repeated."""
    plan = SimpleNamespace(
        best=SimpleNamespace(accelerator="mi300x"),
        alternatives=[
            (SimpleNamespace(accelerator="gaudi3"), "slower"),
            (SimpleNamespace(accelerator="mi325x"), "dearer"),  # same family as the chosen part
            (SimpleNamespace(accelerator="my-own-asic"), "unknown"),
        ],
        uncertainty={"family": {"kind": "serving"}},
    )
    label, text = alternatives_row(plan) or ("", "")
    assert label == "validated (alternatives)"
    assert "Intel Gaudi 3: " in text and "my-own-asic: not validated" in text
    assert "MI300X" not in text
