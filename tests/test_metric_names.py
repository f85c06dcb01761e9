"""The DCGM exporter / vLLM metric-name map: every name sourced and dated, units per version."""

from __future__ import annotations

import pytest

from rightsize.catalog.loader import CatalogDataError, iter_numbers, read_data_file
from rightsize.catalog.metric_names import (
    exporter_labels,
    find_by_name,
    metric_spec,
    metric_specs,
    to_si,
    version_tuple,
)

REQUIRED = {
    "gr_engine_active": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "sm_active": "DCGM_FI_PROF_SM_ACTIVE",
    "tensor_active": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "dram_active": "DCGM_FI_PROF_DRAM_ACTIVE",
    "gpu_util": "DCGM_FI_DEV_GPU_UTIL",
    "fb_used": "DCGM_FI_DEV_FB_USED",
    "power_usage": "DCGM_FI_DEV_POWER_USAGE",
    "total_energy": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "power_violation": "DCGM_FI_DEV_POWER_VIOLATION",
    "time_to_first_token": "vllm:time_to_first_token_seconds",
    "inter_token_latency": "vllm:inter_token_latency_seconds",
    "num_requests_running": "vllm:num_requests_running",
    "num_requests_waiting": "vllm:num_requests_waiting",
    "kv_cache_usage": "vllm:kv_cache_usage_perc",
    "request_success": "vllm:request_success_total",
    "request_prompt_tokens": "vllm:request_prompt_tokens",
    "request_generation_tokens": "vllm:request_generation_tokens",
}


@pytest.mark.parametrize(("key", "name"), sorted(REQUIRED.items()))
def test_current_name_is_first(key: str, name: str) -> None:
    assert metric_spec(key).primary.name == name
    assert metric_spec(key).primary.current


def test_every_entry_has_source_and_date() -> None:
    for spec in metric_specs().values():
        for entry in spec.names:
            assert entry.source and entry.as_of[:2] == "20", entry


def test_no_unsourced_numbers_in_file() -> None:
    # Versions are quoted strings; the file holds no bare figures.
    assert list(iter_numbers(read_data_file("metric_names.yaml"))) == []


def test_older_vllm_names_are_kept() -> None:
    assert metric_spec("kv_cache_usage").distinct_names() == (
        "vllm:kv_cache_usage_perc",
        "vllm:gpu_cache_usage_perc",
    )
    itl = metric_spec("inter_token_latency")
    assert itl.distinct_names()[1] == "vllm:time_per_output_token_seconds"
    assert itl.names[1].until == "0.13.0"


def test_units_per_naming_scheme() -> None:
    # DCP ratios are 0..1 under DCGM_FI_PROF_* but percent under the 1.x-compatibility names.
    gr = metric_spec("gr_engine_active")
    assert gr.entry("DCGM_FI_PROF_GR_ENGINE_ACTIVE").unit == "ratio"
    assert gr.entry("dcgm_fi_prof_gr_engine_active").unit == "percent"
    assert metric_spec("gpu_util").primary.unit == "percent"
    assert metric_spec("kv_cache_usage").primary.unit == "ratio"
    assert to_si(45.0, "percent") == pytest.approx(0.45)
    assert to_si(1024.0, "MiB") == 1024 * 2**20
    assert to_si(5000.0, "mJ") == pytest.approx(5.0)


def test_violation_unit_depends_on_exporter_version() -> None:
    spec = metric_spec("power_violation")
    assert spec.entry("DCGM_FI_DEV_POWER_VIOLATION", "3.3.9-3.6.1").unit == "us"
    assert spec.entry("DCGM_FI_DEV_POWER_VIOLATION", "4.4.2-4.7.0").unit == "us"
    assert spec.entry("DCGM_FI_DEV_POWER_VIOLATION", "4.4.2-4.7.1").unit == "ns"
    assert spec.entry("DCGM_FI_DEV_POWER_VIOLATION").unit == "ns"


def test_version_tuple_orders_releases() -> None:
    assert version_tuple("0.9.2") < version_tuple("0.10.2") < version_tuple("0.12.0")
    assert version_tuple("4.4.2-4.7.0") < version_tuple("4.4.2-4.7.1")


def test_find_by_name_and_labels() -> None:
    found = find_by_name("vllm:gpu_cache_usage_perc")
    assert found is not None and found[0].key == "kv_cache_usage"
    assert find_by_name("no_such_metric") is None
    assert exporter_labels()["dcgm-exporter"]["gpu"] == "gpu"
    assert exporter_labels()["vllm"]["model"] == "model_name"


def test_unknown_key_lists_known() -> None:
    with pytest.raises(KeyError, match="known"):
        metric_spec("gpu_utilisation")
    with pytest.raises(KeyError):
        to_si(1.0, "furlongs")


def test_bad_unit_rejected() -> None:
    from rightsize.catalog import metric_names as mn

    bad = {"key": "x", "si_unit": "ratio", "description": "d", "names": [
        {"name": "n", "exporter": "vllm", "since": "1", "until": None, "type": "gauge", "unit": "MiB",
         "source": "s", "as_of": "2026-01"}]}  # fmt: skip
    with pytest.raises(CatalogDataError, match="cannot express"):
        mn._parse_metric(bad, 0)
