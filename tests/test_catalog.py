"""Catalog data and lookups: every figure sourced, datasheet sanity, clear errors."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from rightsize.catalog import (
    DTYPES,
    Accelerator,
    CatalogDataError,
    Efficiency,
    Sourced,
    accelerators,
    build_catalog,
    get_accelerator,
    get_node,
    node_for,
    nodes,
    with_efficiency,
)
from rightsize.catalog.efficiency import FP8_FROM_BF16, SCALAR_FIELDS
from rightsize.catalog.loader import iter_numbers, parse_document, read_data_file
from rightsize.constants import GB, GiB
from rightsize.errors import BadInput

REQUIRED_ACCELERATORS = [
    "a100-sxm-40gb",
    "a100-sxm-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200-sxm",
    "b200",
    "gb200",
    "mi300x",
    "mi325x",
    "l40s",
    "l4",
]
REQUIRED_NODES = [
    "dgx-a100-80gb",
    "dgx-a100-40gb",
    "hgx-h100",
    "h100-pcie-server",
    "hgx-h200",
    "hgx-b200",
    "gb200-nvl72-tray",
    "mi300x-platform",
    "mi325x-platform",
    "l40s-server",
    "l4-server",
]
DATA_FILES = ["accelerators.yaml", "nodes.yaml", "efficiency.yaml"]


# --- presence ---------------------------------------------------------------------------


@pytest.mark.parametrize("acc_id", REQUIRED_ACCELERATORS)
def test_required_accelerator_present(acc_id: str) -> None:
    assert acc_id in accelerators()


@pytest.mark.parametrize("node_id", REQUIRED_NODES)
def test_required_node_present(node_id: str) -> None:
    assert node_id in nodes()


# --- provenance: every number in the raw files resolves to value + source + as_of -------


@pytest.mark.parametrize("file", DATA_FILES)
def test_every_number_in_raw_yaml_is_sourced(file: str) -> None:
    raw = read_data_file(file)
    numbers = list(iter_numbers(raw))
    assert numbers, f"{file} has no numbers?"
    for path, _value, holder in numbers:
        assert holder is not None, f"{file}: {path} is a bare number; write {{value, source, as_of}}"
        assert isinstance(holder.get("source"), str) and holder["source"].strip(), f"{file}: {path}"
        assert isinstance(holder.get("as_of"), str) and holder["as_of"].strip(), f"{file}: {path}"


def test_every_parsed_figure_has_a_source() -> None:
    for acc in accelerators().values():
        expected = {f"peak_dense_flops_per_s.{d}" for d in acc.peak_dense_flops_per_s}
        expected |= {
            "hbm_bytes",
            "hbm_bytes_per_s",
            "scaleup_bytes_per_s",
            "scaleup_domain_gpus",
            "tdp_w",
            "sm_count",
        }
        assert expected <= set(acc.sources), acc.id
        eff = acc.efficiency
        eff_expected = {f"gemm_peak_fraction.{d}" for d in eff.gemm_peak_fraction} | set(SCALAR_FIELDS)
        assert eff_expected <= set(eff.sources), acc.id
        for s in [*acc.sources.values(), *eff.sources.values()]:
            assert s.source and s.as_of


def test_efficiency_figures_say_what_kind_of_number_they_are() -> None:
    # Every efficiency source starts by saying whether it is measured, estimated or a placeholder.
    kinds = ("measured", "estimate", "placeholder")
    for acc in accelerators().values():
        for name, s in acc.efficiency.sources.items():
            assert s.source.startswith(kinds), f"{acc.id}.{name}: {s.source[:60]}"


# --- datasheet sanity: dense, not sparse; units -------------------------------------------

# (accelerator, dtype, dense peak FLOP/s, why)
DENSE_PEAKS = [
    ("h100-sxm", "bf16", 989.4e12, "H100 SXM datasheet 1,979 sparse / 2"),
    ("h100-sxm", "fp8", 1978.9e12, "3,958 sparse / 2"),
    ("h200-sxm", "bf16", 989.4e12, "same compute as H100 SXM"),
    ("h100-pcie", "bf16", 756.5e12, "1,513 sparse / 2"),
    ("a100-sxm-80gb", "bf16", 312e12, "A100 datasheet, dense"),
    ("a100-sxm-80gb", "tf32", 156e12, "A100 TF32 dense"),
    ("b200", "bf16", 2.25e15, "HGX B200 4.5 PF sparse / 2"),
    ("gb200", "bf16", 2.5e15, "NVL72 360 PF sparse / 72 / 2"),
    ("mi300x", "bf16", 1307.4e12, "AMD dense figure"),
    ("mi325x", "fp8", 2614.9e12, "same compute as MI300X"),
    ("l40s", "bf16", 362.05e12, "733 sparse"),
    ("l4", "bf16", 121e12, "242 sparse / 2"),
]


@pytest.mark.parametrize(("acc_id", "dtype", "expected", "why"), DENSE_PEAKS)
def test_dense_peak_matches_datasheet(acc_id: str, dtype: str, expected: float, why: str) -> None:
    assert get_accelerator(acc_id).peak_flops_per_s(dtype) == pytest.approx(expected, rel=0.01), why


@pytest.mark.parametrize("acc_id", ["h100-sxm", "h100-pcie", "h800-sxm", "h200-sxm"])
def test_hopper_fp8_is_twice_bf16(acc_id: str) -> None:
    acc = get_accelerator(acc_id)
    assert acc.peak_flops_per_s("fp8") == pytest.approx(2 * acc.peak_flops_per_s("bf16"), rel=0.001)


def test_fp8_is_about_twice_bf16_everywhere() -> None:
    # 2% rather than exact: the L40S datasheet prints BF16 362.05 but FP8 733 (= 2 x 366.5).
    # AWS prints Trainium2 FP8 1,299 against BF16 667 TFLOPS (1.95x): 3% for it.
    # Gaudi 3's MMEs run FP8 at the BF16 rate (Intel, Hot Chips 2024: 1,835 TFLOPS for both).
    same_rate = {"gaudi3"}
    for acc in accelerators().values():
        if acc.id in same_rate:
            assert acc.peak_flops_per_s("fp8") == acc.peak_flops_per_s("bf16"), acc.id
        elif acc.supports("fp8"):
            assert acc.peak_flops_per_s("fp8") == pytest.approx(
                2 * acc.peak_flops_per_s("bf16"), rel=0.03 if acc.id == "trn2" else 0.02
            ), acc.id


def test_bf16_equals_fp16_everywhere() -> None:
    for acc in accelerators().values():
        if acc.supports("bf16") and acc.supports("fp16"):
            assert acc.peak_flops_per_s("bf16") == acc.peak_flops_per_s("fp16"), acc.id


def test_units() -> None:
    # A100 "80GB" reports 81920 MiB: more than 80e9 bytes.
    assert get_accelerator("a100-sxm-80gb").hbm_bytes > 80 * GB
    assert get_accelerator("a100-sxm-80gb").hbm_bytes == 80 * GiB
    # NVLink4: 900 GB/s bidirectional = 450 GB/s per direction.
    assert get_accelerator("h100-sxm").scaleup_bytes_per_s == 450e9
    assert get_accelerator("a100-sxm-80gb").scaleup_bytes_per_s == 300e9
    assert get_accelerator("b200").scaleup_bytes_per_s == 900e9
    assert get_accelerator("gb200").scaleup_domain_gpus == 72
    for acc in accelerators().values():
        assert 15 * GB <= acc.hbm_bytes < 400 * GB, acc.id  # T4 reports 15 GiB; TPU v5e has 16 GB
        assert 1e11 < acc.hbm_bytes_per_s < 2e13, acc.id
        assert acc.tdp_w >= 50, acc.id


def test_memory_grows_with_generation() -> None:
    order = ["a100-sxm-40gb", "a100-sxm-80gb", "h200-sxm", "b200", "mi300x", "mi325x"]
    sizes = [get_accelerator(a).hbm_bytes for a in order]
    assert sizes == sorted(sizes)


# --- lookups and errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "expected"), [("H100-SXM", "h100-sxm"), ("h100_sxm", "h100-sxm"), (" l4 ", "l4")]
)
def test_get_accelerator_is_forgiving_about_case(typed: str, expected: str) -> None:
    assert get_accelerator(typed).id == expected


def test_unknown_accelerator_suggests_a_close_id() -> None:
    with pytest.raises(BadInput) as info:
        get_accelerator("h100")
    assert "h100-sxm" in info.value.fix or "h100-pcie" in info.value.fix
    assert "rightsize catalog" in info.value.fix


def test_unknown_node_is_bad_input() -> None:
    with pytest.raises(BadInput, match="Unknown node type"):
        get_node("dgx-h100")


def test_missing_dtype_names_the_ones_it_has() -> None:
    a100 = get_accelerator("a100-sxm-80gb")
    assert not a100.supports("fp8")
    with pytest.raises(BadInput) as info:
        a100.peak_flops_per_s("fp8")
    assert "bf16" in info.value.why and "tf32" in info.value.why


@pytest.mark.parametrize(
    ("alias", "canonical"), [("bfloat16", "bf16"), ("float16", "fp16"), ("BF16", "bf16")]
)
def test_dtype_aliases(alias: str, canonical: str) -> None:
    acc = get_accelerator("h100-sxm")
    assert acc.supports(alias)
    assert acc.peak_flops_per_s(alias) == acc.peak_flops_per_s(canonical)


def test_fp4_only_on_blackwell_and_cdna4() -> None:
    with_fp4 = {a.id for a in accelerators().values() if a.supports("fp4")}
    assert with_fp4 == {"b200", "gb200", "b300", "gb300", "rtx-pro-6000", "mi355x", "mi350x"}


def test_every_node_points_to_a_known_accelerator_and_back() -> None:
    accs = accelerators()
    for node in nodes().values():
        assert node.accelerator in accs, node.id
    for acc in accs.values():
        assert node_for(acc.id).accelerator == acc.id


# (node, NIC bytes/s per GPU)
SCALEOUT_PER_GPU = [
    ("hgx-h100", 50e9),  # 8 x 400 Gb/s / 8 GPUs
    ("hgx-h200", 50e9),
    ("hgx-b200", 50e9),
    ("gb200-nvl72-tray", 50e9),  # 4 x 400 Gb/s / 4 GPUs
    ("dgx-a100-80gb", 25e9),  # 8 x 200 Gb/s / 8 GPUs
    ("mi300x-platform", 50e9),
]


@pytest.mark.parametrize(("node_id", "expected"), SCALEOUT_PER_GPU)
def test_scaleout_per_gpu(node_id: str, expected: float) -> None:
    assert get_node(node_id).scaleout_bytes_per_s_per_gpu == pytest.approx(expected)


def test_lookups_return_fresh_dicts_over_shared_objects() -> None:
    first = accelerators()
    first.clear()
    assert accelerators()
    assert get_accelerator("b200") is accelerators()["b200"]


def test_catalog_objects_are_hashable() -> None:
    cache = {
        get_accelerator("h100-sxm"): 1,
        get_node("hgx-h100"): 2,
        get_accelerator("h100-sxm").efficiency: 3,
    }
    assert cache[get_accelerator("h100-sxm")] == 1


# --- efficiency ---------------------------------------------------------------------------


def _eff(gemm: dict[str, float]) -> Efficiency:
    base = get_accelerator("h100-sxm").efficiency
    return Efficiency(
        gemm_peak_fraction=gemm,
        gemm_tile_m=128,
        gemm_tile_n=256,
        attention_fraction=base.attention_fraction,
        memory_bw_fraction=base.memory_bw_fraction,
        scaleup_bw_fraction=base.scaleup_bw_fraction,
        scaleout_bw_fraction=base.scaleout_bw_fraction,
        scaleup_latency_s=base.scaleup_latency_s,
        scaleout_latency_s=base.scaleout_latency_s,
        kernel_overhead_s=base.kernel_overhead_s,
        sources={},
    )


# (fractions known, dtype asked, expected, why)
GEMM_FALLBACKS = [
    ({"bf16": 0.8}, "bf16", 0.8, "own figure"),
    ({"bf16": 0.8}, "fp16", 0.8, "fp16 falls back to bf16"),
    ({"fp16": 0.7}, "bf16", 0.7, "bf16 falls back to fp16"),
    ({"bf16": 0.8}, "fp8", 0.8 * FP8_FROM_BF16, "fp8 derived from bf16 when unknown"),
    ({"bf16": 0.8, "fp8": 0.6}, "fp8", 0.6, "own fp8 figure wins"),
    ({"bf16": 0.8, "fp8": 0.6}, "fp4", 0.6, "fp4 falls back to fp8"),
    ({"bf16": 0.8}, "tf32", 0.8, "others fall back to bf16"),
    ({"bf16": 0.8}, "bfloat16", 0.8, "aliases are normalised"),
]


@pytest.mark.parametrize(("gemm", "dtype", "expected", "why"), GEMM_FALLBACKS)
def test_gemm_fraction_fallbacks(gemm: dict[str, float], dtype: str, expected: float, why: str) -> None:
    assert _eff(gemm).gemm_fraction(dtype) == pytest.approx(expected), why


def test_efficiencies_are_plausible() -> None:
    for acc in accelerators().values():
        eff = acc.efficiency
        for dtype in DTYPES:
            if acc.supports(dtype):
                assert 0.2 < eff.gemm_fraction(dtype) <= 1.0, (acc.id, dtype)
        assert 0 < eff.attention_fraction <= eff.gemm_fraction("bf16"), acc.id
        assert 0.5 < eff.memory_bw_fraction <= 1.0, acc.id
        assert eff.scaleup_latency_s < eff.scaleout_latency_s, acc.id
        assert acc.sm_count >= 1 and eff.gemm_tile_m >= 64 and eff.gemm_tile_n >= 64


def test_measured_gemm_fractions() -> None:
    # Stas Bekman's MAMF table: A100 271.2/312, H100 SXM 794.5/989 BF16, 1402.6/1979 FP8.
    assert get_accelerator("a100-sxm-80gb").efficiency.gemm_fraction("bf16") == pytest.approx(
        0.869, abs=0.005
    )
    assert get_accelerator("h100-sxm").efficiency.gemm_fraction("bf16") == pytest.approx(0.803, abs=0.005)
    assert get_accelerator("h100-sxm").efficiency.gemm_fraction("fp8") == pytest.approx(0.709, abs=0.005)


def test_with_efficiency_overrides_and_records_source() -> None:
    h100 = get_accelerator("h100-sxm")
    tuned = with_efficiency(h100, memory_bw_fraction=0.7, gemm_peak_fraction_bf16=0.75, gemm_tile_n=128)
    assert tuned.efficiency.memory_bw_fraction == 0.7
    assert tuned.efficiency.gemm_fraction("bf16") == 0.75
    assert tuned.efficiency.gemm_tile_n == 128 and isinstance(tuned.efficiency.gemm_tile_n, int)
    assert "override" in tuned.efficiency.sources["memory_bw_fraction"].source
    assert "override" in tuned.efficiency.sources["gemm_peak_fraction.bf16"].source
    # the cached original is untouched
    assert get_accelerator("h100-sxm").efficiency.memory_bw_fraction == h100.efficiency.memory_bw_fraction
    assert h100.efficiency.gemm_fraction("bf16") == pytest.approx(0.803, abs=0.005)
    assert with_efficiency(h100) is h100


@pytest.mark.parametrize(
    "overrides",
    [
        {"memory_bandwidth": 0.8},
        {"memory_bw_fraction": 1.5},
        {"gemm_tile_m": 100.5},
        {"scaleup_latency_s": 5.0},
    ],
)
def test_with_efficiency_rejects_bad_overrides(overrides: dict[str, float]) -> None:
    with pytest.raises(BadInput):
        with_efficiency(get_accelerator("h100-sxm"), **overrides)


# --- validation on load: synthetic catalogs, one defect each --------------------------------


def _fig(value: Any, source: str = "test datasheet", as_of: str = "2026-11") -> dict[str, Any]:
    return {"value": value, "source": source, "as_of": as_of}


def _minimal() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    acc = {
        "schema_version": 1,
        "accelerators": [
            {
                "id": "x1",
                "name": "Test X1",
                "vendor": "nvidia",
                "form_factor": "sxm",
                "default_node": "x1-node",
                "peak_dense_flops_per_s": {"bf16": _fig("1e15"), "fp8": _fig(2e15)},
                "hbm_bytes": _fig(80e9),
                "hbm_bytes_per_s": _fig(3e12),
                "scaleup_bytes_per_s": _fig(450e9),
                "scaleup_domain_gpus": _fig(8),
                "tdp_w": _fig(700),
                "sm_count": _fig(132),
            }
        ],
    }
    node = {
        "schema_version": 1,
        "nodes": [
            {
                "id": "x1-node",
                "name": "Test node",
                "accelerator": "x1",
                "gpus_per_node": _fig(8),
                "nics_per_node": _fig(8),
                "nic_bits_per_s": _fig(400e9),
                "cpu_cores": _fig(112),
                "host_memory_bytes": _fig(2 * 2**40),
                "local_nvme_bytes": _fig(30e12),
                "max_power_w": _fig(10200),
                "rack_units": _fig(8),
            }
        ],
    }
    default = {
        "gemm_peak_fraction": {"bf16": _fig(0.7)},
        "gemm_tile_m": _fig(128),
        "gemm_tile_n": _fig(128),
        "attention_fraction": _fig(0.45),
        "memory_bw_fraction": _fig(0.85),
        "scaleup_bw_fraction": _fig(0.75),
        "scaleout_bw_fraction": _fig(0.8),
        "scaleup_latency_s": _fig(3e-6),
        "scaleout_latency_s": _fig(10e-6),
        "kernel_overhead_s": _fig(6e-6),
    }
    eff = {"schema_version": 1, "default": default, "accelerators": {"x1": {"memory_bw_fraction": _fig(0.9)}}}
    return acc, node, eff


def test_minimal_synthetic_catalog_builds() -> None:
    cat = build_catalog(*_minimal())
    x1 = cat.accelerators["x1"]
    assert x1.peak_flops_per_s("bf16") == 1e15  # numeric string accepted (YAML 1.1 reads 1e15 as str)
    assert x1.efficiency.memory_bw_fraction == 0.9
    assert x1.efficiency.attention_fraction == 0.45  # inherited from default, with its source
    assert x1.efficiency.sources["attention_fraction"] == Sourced(0.45, "test datasheet", "2026-11")
    assert cat.nodes["x1-node"].scaleout_bytes_per_s_per_gpu == 50e9


Doc = dict[str, Any]
Mutation = Callable[[Doc, Doc, Doc], None]


def _acc0(acc: Doc) -> Doc:
    entry: Doc = acc["accelerators"][0]
    return entry


def _node0(node: Doc) -> Doc:
    entry: Doc = node["nodes"][0]
    return entry


# (what is wrong, mutation, file named in the error, text in the error)
DEFECTS: list[tuple[str, Mutation, str, str]] = [
    ("missing source", lambda a, n, e: _acc0(a)["hbm_bytes"].pop("source"), "accelerators.yaml", "hbm_bytes"),
    (
        "empty source",
        lambda a, n, e: _acc0(a)["tdp_w"].update(source=" "),
        "accelerators.yaml",
        "tdp_w.source",
    ),
    ("missing as_of", lambda a, n, e: _node0(n)["cpu_cores"].pop("as_of"), "nodes.yaml", "cpu_cores"),
    (
        "as_of not a date",
        lambda a, n, e: _acc0(a)["tdp_w"].update(as_of="2024"),
        "accelerators.yaml",
        "as_of",
    ),
    (
        "zero value",
        lambda a, n, e: _acc0(a)["hbm_bytes_per_s"].update(value=0),
        "accelerators.yaml",
        "positive",
    ),
    ("negative value", lambda a, n, e: _node0(n)["max_power_w"].update(value=-1), "nodes.yaml", "positive"),
    ("bare number", lambda a, n, e: _acc0(a).update(tdp_w=700), "accelerators.yaml", "tdp_w"),
    (
        "not a number",
        lambda a, n, e: _acc0(a)["hbm_bytes"].update(value="80 GB"),
        "accelerators.yaml",
        "number",
    ),
    (
        "GB written for bytes",
        lambda a, n, e: _acc0(a)["hbm_bytes"].update(value=80),
        "accelerators.yaml",
        "unit",
    ),
    (
        "fractional SM count",
        lambda a, n, e: _acc0(a)["sm_count"].update(value=13.5),
        "accelerators.yaml",
        "whole",
    ),
    ("typo in a key", lambda a, n, e: _acc0(a).update(hbm_byte=_fig(1e9)), "accelerators.yaml", "hbm_byte"),
    ("typo in a figure", lambda a, n, e: _acc0(a)["tdp_w"].update(sorce="x"), "accelerators.yaml", "sorce"),
    (
        "unknown dtype",
        lambda a, n, e: _acc0(a)["peak_dense_flops_per_s"].update(fp9=_fig(1e15)),
        "accelerators.yaml",
        "fp9",
    ),
    (
        "unknown form factor",
        lambda a, n, e: _acc0(a).update(form_factor="usb"),
        "accelerators.yaml",
        "form_factor",
    ),
    (
        "duplicate id",
        lambda a, n, e: a["accelerators"].append(copy.deepcopy(_acc0(a))),
        "accelerators.yaml",
        "duplicate",
    ),
    ("node -> unknown accelerator", lambda a, n, e: _node0(n).update(accelerator="x2"), "nodes.yaml", "x2"),
    (
        "default_node unknown",
        lambda a, n, e: _acc0(a).update(default_node="nope"),
        "accelerators.yaml",
        "nope",
    ),
    (
        "efficiency for unknown accelerator",
        lambda a, n, e: e["accelerators"].update(zz={}),
        "efficiency.yaml",
        "zz",
    ),
    (
        "fraction above one",
        lambda a, n, e: e["default"]["memory_bw_fraction"].update(value=1.2),
        "efficiency.yaml",
        "memory_bw_fraction",
    ),
    (
        "latency in microseconds",
        lambda a, n, e: e["default"]["scaleup_latency_s"].update(value=3),
        "efficiency.yaml",
        "unit",
    ),
    (
        "default incomplete",
        lambda a, n, e: e["default"].pop("kernel_overhead_s"),
        "efficiency.yaml",
        "kernel_overhead_s",
    ),
    ("wrong schema", lambda a, n, e: n.update(schema_version=2), "nodes.yaml", "schema_version"),
]


@pytest.mark.parametrize(("what", "mutate", "file", "text"), DEFECTS, ids=[d[0] for d in DEFECTS])
def test_validation_names_file_and_key(what: str, mutate: Mutation, file: str, text: str) -> None:
    acc, node, eff = _minimal()
    mutate(acc, node, eff)
    with pytest.raises(CatalogDataError) as info:
        build_catalog(acc, node, eff)
    assert info.value.file == file, what
    assert text in str(info.value), what


@pytest.mark.parametrize(
    ("text", "problem"),
    [("[1, 2]", "mapping"), ("schema_version: 1\nnodes: [\n", "YAML"), ("nodes: []\n", "schema_version")],
)
def test_parse_document_rejects_malformed_files(text: str, problem: str) -> None:
    with pytest.raises(CatalogDataError, match=problem):
        parse_document(text, "nodes.yaml")


def test_shipped_accelerator_is_an_accelerator() -> None:
    assert all(isinstance(a, Accelerator) for a in accelerators().values())
