"""Recommendation (issue #7): DLRM table bytes and all-to-all bytes by hand, placement across
HBM / host / SSD, the training and serving planners, and bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from rightsize.api import plan
from rightsize.catalog import get_accelerator, node_for
from rightsize.constants import REPORT_SCHEMA_VERSION
from rightsize.errors import BadInput
from rightsize.perf.hardware import Hardware
from rightsize.perf.recsys import (
    EULER_GAMMA,
    dense_params,
    embedding_comm,
    place_tables,
    row_bytes,
    table_bytes,
    zipf_hit_rate,
)
from rightsize.search.recsys import RecsysPlan
from rightsize.spec import SPEC_KINDS, load_spec, parse_spec
from rightsize.spec.recsys import RecsysSpec, get_recsys_model

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DLRM = get_recsys_model("dlrm-dcnv2-criteo")


# ------------------------------------------------------------------------------------- by hand


def test_table_bytes_by_hand() -> None:
    # the 40M-row tables of MLPerf DLRM-DCNv2: 40,000,000 x 128 x 4 B = 20.48 GB
    assert table_bytes(40_000_000, 128, "fp32") == 20.48e9
    assert table_bytes(40_000_000, 128, "fp16") == 10.24e9
    assert row_bytes(128, "int8") == 128 + 8  # row-wise int8: fp32 scale and bias per row
    # row-wise Adagrad adds one fp32 per row while training
    assert table_bytes(1000, 128, "fp32", "adagrad_rowwise") == 1000 * (512 + 4)
    # the whole preset: 26 tables, 204,184,588 rows (MLPerf's 40M cap), 214 lookups per sample
    assert len(DLRM.tables) == 26 and DLRM.total_rows == 204_184_588 and DLRM.lookups_per_sample == 214
    assert table_bytes(DLRM.total_rows, 128, "fp32") == pytest.approx(104.54e9, rel=1e-4)


def test_gathered_rows_cost_whole_sectors() -> None:
    """HBM is read in 32-byte sectors: packed int8 rows of 128 + 8 B start at offsets 0, 8, 16
    and 24 of a sector and each touches 5 sectors (160 B); 256 and 512 B rows cost their size."""
    from rightsize.perf.recsys import fetched_row_bytes

    assert fetched_row_bytes(row_bytes(128, "int8")) == 160.0
    assert fetched_row_bytes(row_bytes(128, "fp16")) == 256.0
    assert fetched_row_bytes(row_bytes(128, "fp32")) == 512.0
    # 72 B rows (gcd 8): offsets 0, 8, 16, 24 touch 3, 3, 3 and 3 sectors
    assert fetched_row_bytes(72.0) == 96.0
    # 20 B rows (gcd 4): of the 8 offsets, 0-12 stay in one sector and 16-28 straddle two
    assert fetched_row_bytes(20.0) == pytest.approx(32.0 * (4 * 1 + 4 * 2) / 8)


def test_dense_params_by_hand() -> None:
    bottom = 13 * 512 + 512 + 512 * 256 + 256 + 256 * 128 + 128
    x0 = 27 * 128  # 26 pooled embeddings + the bottom MLP's output
    dcn = 3 * (x0 * 512 + 512 * x0 + x0)  # low-rank U, V and a bias per cross layer
    top = x0 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 512 + 512 + 512 * 256 + 256 + 256 * 1 + 1
    assert dense_params(DLRM) == bottom + dcn + top


def _hw(acc: str = "h100-sxm") -> Hardware:
    return Hardware.from_catalog(get_accelerator(acc), node_for(acc), "bf16")


def test_table_wise_all_to_all_bytes_by_hand() -> None:
    rows = [t.rows for t in DLRM.tables]
    pool = [t.pooling for t in DLRM.tables]
    pl = place_tables(rows, pool, row_bytes(128, "fp32"), 8, 60e9, 0.0, sharding="table")
    assert all(t.tier == "hbm" and t.sharding == "table" for t in pl.tables)
    comm = embedding_comm(DLRM, pl, _hw(), global_batch=65536, comm_bytes=2.0, training=True)
    # each GPU's buffer: local batch 8192 x 26 tables x 128 dims x 2 B; 7/8 of it leaves the GPU
    assert comm.pooled_all_to_all_bytes == 8192 * 26 * 128 * 2 == 54_525_952
    assert comm.input_dist_bytes == 8192 * 214 * 8  # int64 indices
    assert comm.row_wise_bytes == 0 and comm.time_s > 0
    single = place_tables(rows, pool, row_bytes(128, "fp32"), 1, 200e9, 0.0)
    assert embedding_comm(DLRM, single, _hw(), 65536, 2.0, True).time_s == 0.0


def test_zipf_hit_rate_by_hand() -> None:
    assert zipf_hit_rate(1000, 1e6) == pytest.approx(
        (math.log(1000) + EULER_GAMMA) / (math.log(1e6) + EULER_GAMMA)
    )
    assert zipf_hit_rate(2e6, 1e6) == 1.0 and zipf_hit_rate(0, 1e6) == 0.0


def test_placement_spills_to_host_when_tables_exceed_hbm() -> None:
    rows = [t.rows for t in DLRM.tables]
    pool = [t.pooling for t in DLRM.tables]
    row = row_bytes(128, "fp32")
    total = sum(rows) * row  # 104.5 GB
    roomy = place_tables(rows, pool, row, 2, 60e9, 1e12)
    assert not roomy.spilled and roomy.hbm_table_bytes == pytest.approx(total)
    tight = place_tables(rows, pool, row, 1, 60e9, 1e12)
    assert tight.spilled and tight.ssd_bytes == 0
    assert tight.hbm_table_bytes <= 60e9 and tight.hbm_table_bytes + tight.host_bytes == pytest.approx(total)
    # leftover HBM caches spilled rows; lookups split between HBM and host by the hit rate
    assert tight.hbm_table_bytes + tight.hbm_cache_bytes == pytest.approx(60e9)
    assert 0 < tight.cache_hit_rate < 1
    assert sum(tight.lookups_per_sample.values()) == pytest.approx(214)
    # no host room: the rest goes to SSD
    no_host = place_tables(rows, pool, row, 1, 60e9, 0.0)
    assert no_host.ssd_bytes == pytest.approx(tight.host_bytes)
    # hottest tables (lookups per byte) stay in HBM
    hot = max(range(26), key=lambda i: pool[i] / rows[i])
    assert tight.tables[hot].tier == "hbm"


def test_fixed_hit_rate_is_used() -> None:
    rows, pool = [1e8], [10.0]
    pl = place_tables(rows, pool, 512.0, 1, 1e9, 1e12, cache_hit_rate=0.9)
    assert pl.cache_hit_rate == 0.9
    assert pl.lookups_per_sample["host"] == pytest.approx(1.0)


# ------------------------------------------------------------------------------------- planners


def test_serving_example_spills_and_meets_slo() -> None:
    p = plan(EXAMPLES / "dlrm-criteo-serving.yaml")
    assert isinstance(p, RecsysPlan) and p.mode == "inference"
    b = p.best
    assert b.latency_p99_s is not None and b.latency_p99_s <= 0.030
    assert b.replicas is not None and b.gpus_per_replica is not None
    assert b.gpus == b.replicas * b.gpus_per_replica
    design = 20_000 * 1.2 * 100  # samples/s with headroom
    assert b.samples_per_s >= design
    # 209 GB of fp16 tables exceed one GPU: either sharded over the replica or spilled to host
    assert p.tables["total_bytes"] == pytest.approx(4 * 204_184_588 * 256)
    if b.gpus_per_replica == 1:
        assert b.placement["host_bytes"] > 0
    d = p.demand
    assert d is not None and d.workload == "serving" and d.work_unit == "query" and d.base_rate_rps == 20_000
    out = p.to_dict()
    assert out["kind"] == "recommendation_plan" and out["schema_version"] == REPORT_SCHEMA_VERSION
    json.dumps(out, default=str)
    assert "tables" in p.render_text("Plan")


def test_training_example_meets_deadline() -> None:
    p = plan(EXAMPLES / "dlrm-criteo-train.yaml")
    b = p.best
    assert b.time_to_train_s is not None and b.time_to_train_s <= 3600
    assert sum(v for k, v in b.step.items() if k != "step_s") == pytest.approx(b.step["step_s"])
    d = p.demand
    assert d is not None and d.work_unit == "sample" and d.work_units_total == 4_195_197_692
    sweep = [d.step_s_by_nic_gbps[g] for g in sorted(d.step_s_by_nic_gbps)]
    assert all(a >= c - 1e-12 for a, c in zip(sweep, sweep[1:], strict=False))


def test_one_gpu_spills_eight_do_not() -> None:
    one = plan(_spec(targets={"accelerators": ["h100-sxm"], "gpus": 1})).best
    eight = plan(_spec(targets={"accelerators": ["h100-sxm"], "gpus": 8})).best
    assert one.placement["host_bytes"] > 0 and eight.placement["host_bytes"] == 0
    assert eight.samples_per_s > one.samples_per_s


# ----------------------------------------------------------------------------------------- input


def _spec(**extra: Any) -> RecsysSpec:
    data: dict[str, Any] = {"kind": "recommendation", "model": "dlrm-dcnv2-criteo", "train": {"epochs": 1}}
    data.update(extra)
    spec = parse_spec(data, Path("."))
    assert isinstance(spec, RecsysSpec)
    return spec


@pytest.mark.parametrize(
    ("data", "field", "expect"),
    [
        ({"mode": "inference", "inference": {"qps": -5}}, "inference.qps", "must be positive"),
        ({"model": "dlrm-dcnv3", "train": {}}, "model", "unknown recommendation model"),
        (
            {"train": {}, "embeddings": {"cache_hit_rate": 1.5}},
            "embeddings.cache_hit_rate",
            "less than or equal",
        ),
        ({"mode": "inference"}, "", "needs an `inference:` section"),
    ],
)
def test_bad_input_names_the_field(data: dict[str, Any], field: str, expect: str) -> None:
    spec = {"kind": "recommendation", "model": "dlrm-dcnv2-criteo", **data}
    with pytest.raises(BadInput) as info:
        parse_spec(spec)
    assert info.value.exit_code == 2
    assert (f"{field}:" if field else "") in info.value.why and expect in info.value.why


def test_registered_and_examples_load() -> None:
    assert SPEC_KINDS["recommendation"] is RecsysSpec
    for name in ("dlrm-criteo-serving.yaml", "dlrm-criteo-train.yaml"):
        spec = load_spec(EXAMPLES / name)
        assert isinstance(spec, RecsysSpec) and spec.kind == "recommendation"


def test_training_lookups_read_and_write_the_optimizer_state() -> None:
    """A training step's fused backward reads and writes each looked-up row (3 passes with the
    forward read) and its optimizer state (2 passes): exact Adagrad, as the MLPerf reference runs
    it, keeps one fp32 per element, as large as an fp32 row."""
    from rightsize.perf import datapipe
    from rightsize.perf.recsys import TRAIN_ROW_PASSES, TRAIN_STATE_PASSES, lookup_time, state_bytes_per_row

    assert DLRM.optimizer == "adagrad"
    row = row_bytes(128, "fp32")
    state = state_bytes_per_row(128, DLRM.optimizer)
    assert state == row == 512
    pl = place_tables([1e6], [10.0], row + state, 1, 1e12, 0.0)
    acc = get_accelerator("h100-sxm")
    hw = Hardware.from_catalog(acc, node_for(acc.id), "bf16")
    bw = hw.hbm_bytes_per_s * hw.memory_bw_fraction * datapipe.tier("hbm_gather_fraction")
    train = lookup_time(pl, hw, 1000.0, row, training=True, state_row=state)
    assert train.hbm_s == pytest.approx(
        1000 * 10 * (TRAIN_ROW_PASSES * row + TRAIN_STATE_PASSES * state) / bw
    )
    serve = lookup_time(pl, hw, 1000.0, row, training=False, state_row=state)
    assert serve.hbm_s == pytest.approx(1000 * 10 * row / bw)
