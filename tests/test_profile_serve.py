"""`profile serve` against a real loopback server generating with a tiny PyTorch model (issue #5)."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

if importlib.util.find_spec("torch") is None:  # pragma: no cover
    if os.environ.get("RIGHTSIZE_REQUIRE_TORCH"):
        raise RuntimeError("RIGHTSIZE_REQUIRE_TORCH is set but torch is not installed")
    pytest.skip("torch is not installed (the profile extra)", allow_module_level=True)

from rightsize.errors import BadInput  # noqa: E402
from rightsize.profile.serve import ServeConfig, run_serve_profile, summarise_requests  # noqa: E402
from rightsize.profile.serve_server import start_in_thread  # noqa: E402


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    srv = start_in_thread()
    yield srv
    srv.shutdown()


def test_fixed_concurrency_measures_vllm_metrics(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "serve.jsonl"
    cfg = ServeConfig(
        url=server.url, concurrency=3, duration_s=2.0, max_requests=12, output_len=6, slo={"ttft_s": 5.0}
    )
    res = run_serve_profile(cfg, out)
    s = res["summary"]
    assert s["completed"] == s["requests"] > 0 and s["requests"] <= 12
    for r in res["results"]:
        assert r["output_tokens"] == 6  # from the usage chunk
        assert len(r["itl_s"]) == 5
        # TPOT excludes the first token: (E2EL - TTFT) / (tokens - 1)
        assert abs(r["tpot_s"] - (r["e2el_s"] - r["ttft_s"]) / 5) < 1e-12
    assert s["ttft_s"]["p99"] >= s["ttft_s"]["median"] > 0
    assert s["output_token_throughput_per_s"] > 0
    assert s["goodput_requests_per_s"] == pytest.approx(s["request_throughput_per_s"])
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "summary"


def test_poisson_arrivals_chat_endpoint_and_goodput(server) -> None:  # type: ignore[no-untyped-def]
    cfg = ServeConfig(
        url=server.url,
        rate=20.0,
        duration_s=1.0,
        max_requests=10,
        output_len=4,
        chat=True,
        slo={"ttft_s": 1e-9},
    )
    s = run_serve_profile(cfg)["summary"]
    assert 0 < s["completed"] <= 10
    assert s["goodput_requests_per_s"] == 0.0  # no request meets a 1 ns TTFT


def test_unreachable_endpoint_is_a_recorded_failure_not_a_crash() -> None:
    cfg = ServeConfig(
        url="http://127.0.0.1:9/v1", concurrency=1, duration_s=0.3, max_requests=2, request_timeout_s=2
    )
    s = run_serve_profile(cfg)["summary"]
    assert s["failed"] == s["requests"] > 0 and s["errors"]


def test_bad_arguments() -> None:
    with pytest.raises(BadInput):
        run_serve_profile(ServeConfig(url="http://x/v1", rate=1.0, concurrency=2))
    with pytest.raises(BadInput):
        run_serve_profile(ServeConfig(url="ftp://x", rate=1.0))
    assert summarise_requests([], {})["requests"] == 0
