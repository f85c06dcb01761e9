"""Vision and recommendation against published runs (issue #28): `rightsize validate` reads the
bundled vision.csv and recsys.csv (DeepLearningExamples ResNet-50 on A100, MLPerf Inference v4.0
ResNet-50 and DLRMv2 on H100), predicts every row through the planners, and holds the errors under
their bars; bad files are refused with a message."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from rightsize.errors import BadInput
from rightsize.validate.cases import bundled_paths
from rightsize.validate.kinds import case_count, kind_cases, kind_rows
from rightsize.validate.run import validate_paths

DATA = Path(__file__).resolve().parent.parent / "src" / "rightsize" / "validate" / "data"
FILES = ("vision.csv", "recsys.csv")


@pytest.fixture(scope="module")
def result() -> dict:
    return validate_paths([DATA / f for f in FILES])


def test_bundled_with_the_default_validation() -> None:
    names = {p.name for p in bundled_paths()}
    assert set(FILES) <= names


@pytest.mark.parametrize("name", FILES)
def test_every_row_has_a_source_date_and_note(name: str) -> None:
    with (DATA / name).open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows
    for r in rows:
        assert r["source"].startswith("https://"), r["id"]
        assert len(r["as_of"]) >= 7 and r["as_of"][:4].isdigit(), r["id"]
        assert r["note"].strip(), r["id"]
        assert float(r["value"]) > 0


def test_every_published_run_is_predicted(result: dict) -> None:
    """None rejected that ran for real."""
    missing = [(r["id"], r.get("reason")) for r in result["rows"] if r["predicted"] is None]
    assert not missing


@pytest.mark.parametrize(
    ("metric", "median_bar", "worst_bar"),
    [
        # worst: the L40S int8 inference rows (-28% to -35%): MLPerf shows the L40S at 49% of its
        # int8 peak with one engine context at batch 64 (Dell R7615) or four at 32 (R760xa); with
        # the Ada int8 GEMM fraction at the measured BF16 one (same mma fragments) and engine
        # contexts the model reaches 29-31k images/s per L40S against 44k, while the L4 (-3%) and
        # the A100 (-2%, -5%) fit and the same card trains in fp16 within 15%.
        # Hopper Server rows run +1% to +17% (Server at 82-94% of Offline; queueing does not explain it).
        ("images_per_s", 0.15, 0.36),
        # worst: the Hopper DLRMv2 Server rows (+8%, +16%; Server at 92-94% of Offline), MLPerf
        # Training DLRMv2 on 128 H100 (+12%) and DLRMv2 Offline on 8 L40S at NVIDIA's 7,500-pair
        # batch (-11%).
        ("samples_per_s", 0.15, 0.17),
    ],
)
def test_errors_under_their_bars(result: dict, metric: str, median_bar: float, worst_bar: float) -> None:
    errs = [abs(r["error"]) for r in result["rows"] if r["metric"] == metric]
    assert errs
    assert statistics.median(errs) <= median_bar
    assert max(errs) <= worst_bar
    s = result["summary"][metric]
    assert s["n"] == len(errs) and s["median_abs_error"] == pytest.approx(statistics.median(errs))
    assert s["coverage_p10_p90"] is not None  # every row carries a range


def test_ranges_are_ordered_and_near_the_row(result: dict) -> None:
    for r in result["rows"]:
        assert r["p10"] <= r["p50"] <= r["p90"], r["id"]
        assert r["p90"] < 1.8 * r["predicted"] and r["p10"] > r["predicted"] / 1.8, r["id"]


def test_mechanisms_the_rows_show(result: dict) -> None:
    by_id = {r["id"]: r for r in result["rows"]}
    # PyTorch's DataLoader (Pillow decode on 16 cores per GPU) bounds the eager recipe; MXNet
    # with DALI and fused BN/ReLU/add is compute bound and faster on the same A100.
    assert by_id["dle-pyt-rn50-a100-80gb-1gpu-amp"]["chosen"]["input_bound"]
    assert not by_id["dle-mxnet-rn50-a100-80gb-1gpu-amp"]["chosen"]["input_bound"]
    assert (
        by_id["dle-mxnet-rn50-a100-80gb-1gpu-amp"]["predicted"]
        > by_id["dle-pyt-rn50-a100-80gb-1gpu-amp"]["predicted"]
    )
    # A server bound picks a smaller batch than offline, and serves less.
    off, srv = by_id["mlperf-inf-v4.0-rn50-h100x1-offline"], by_id["mlperf-inf-v4.0-rn50-h100x1-server"]
    assert srv["chosen"]["batch"] < off["chosen"]["batch"]
    assert srv["predicted"] < off["predicted"]
    assert srv["chosen"]["latency_p99_s"] <= 0.015
    # DLRMv2 samples are 270 pairs each: the model's pairs/s divided by 270.
    dl = by_id["mlperf-inf-v4.0-dlrmv2-h100x1-offline"]
    assert dl["chosen"]["batch_pairs"] == 600_000
    # A Server row's batch is its engine's largest: the planner picks up to it.
    assert by_id["mlperf-inf-v4.0-rn50-dell-h100x8-server"]["chosen"]["batch"] <= 391
    assert by_id["mlperf-inf-v4.0-dlrmv2-h100x1-server"]["chosen"]["batch_pairs"] <= 102_400


def test_capped_batches() -> None:
    from rightsize.search.job_common import capped_batches

    assert capped_batches([1, 2, 4, 8, 16], 6) == [1, 2, 4, 6]
    assert capped_batches([1, 2, 4], None) == [1, 2, 4]
    assert capped_batches([1, 2, 4], 2) == [1, 2]


def test_llm_files_are_left_to_their_readers() -> None:
    training = DATA / "training.csv"
    assert kind_cases(training) is None and kind_rows(training) is None
    assert case_count(training) > 0
    assert case_count(DATA / "vision.csv") == 24


def test_bad_files_are_refused(tmp_path: Path) -> None:
    header = "id,model,mode,accelerator,gpus,precision,batch,scenario,metric,value\n"
    no_scenario = tmp_path / "a.csv"
    no_scenario.write_text(
        "id,model,mode,accelerator,gpus,precision,batch,metric,value\nx,resnet50,training,h100-sxm,1,bf16,,images_per_s,1\n"
    )
    with pytest.raises(BadInput, match="lacks columns: scenario"):
        kind_cases(no_scenario)
    bad_value = tmp_path / "b.csv"
    bad_value.write_text(header + "x,resnet50,training,h100-sxm,1,bf16,,training,images_per_s,fast\n")
    with pytest.raises(BadInput, match="not a number"):
        kind_cases(bad_value)
    # A row the model cannot read is kept, with the reason, never dropped.
    unknown = tmp_path / "c.csv"
    unknown.write_text(
        header
        + "x,resnet51,training,h100-sxm,1,bf16,,training,images_per_s,100\n"
        + "y,resnet50,inference,h100-sxm,1,int8,,burst,images_per_s,100\n"
    )
    rows = kind_rows(unknown)
    assert rows is not None and len(rows) == 2
    assert all(r["predicted"] is None and r["reason"] for r in rows)
    assert "resnet51" in rows[0]["reason"] and "burst" in rows[1]["reason"]


def test_ranges_join_the_model_error_of_the_other_rows(result: dict) -> None:
    """P10-P90 = efficiency spread combined with the RMS log error of the kind's other rows
    (leave-one-out), so a row never vouches for itself."""
    import math

    rows = [r for r in result["rows"] if r["metric"] == "images_per_s"]
    target = rows[0]
    others = [math.log(r["predicted"] / r["published"]) for r in rows[1:]]
    sigma = math.sqrt(sum(e * e for e in others) / len(others))
    assert target["model_sigma"] == pytest.approx(sigma)
    eff = target["efficiency_range"]
    assert target["p10"] <= eff["p10"] and target["p90"] >= eff["p90"]
    # nominal 80%: the joined ranges hold about that share of the published figures
    assert 0.6 <= result["summary"]["images_per_s"]["coverage_p10_p90"] <= 1.0


def test_few_other_rows_widen_the_range_by_students_t(result: dict) -> None:
    """sigma_m comes from n residuals: the new row's error over it is t with n degrees of
    freedom, wider than the normal for few rows (recsys has 5 others, vision 14)."""
    import math

    from rightsize.validate.kind_cases import Z90, t90

    assert t90(5) == pytest.approx(1.4759, abs=1e-3)  # t-table, 90th percentile, 5 dof
    assert t90(14) == pytest.approx(1.3450, abs=1e-3)
    assert t90(0) == 0.0 and t90(5000) == Z90
    for r in result["rows"]:
        eff, n = r["efficiency_range"], sum(1 for o in result["rows"] if o["metric"] == r["metric"]) - 1
        sigma_e = math.log(eff["p90"] / eff["p10"]) / (2 * Z90)
        spread = math.hypot(Z90 * sigma_e, t90(n) * r["model_sigma"])
        assert r["p90"] == pytest.approx(eff["p50"] * math.exp(spread)), r["id"]
