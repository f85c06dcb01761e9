"""Issue #15: `profile serve` against a server that misbehaves in every way we know. Every failed
request is counted as failed, by kind; nothing hangs past its timeout; the exit code says whether
the SLO was met; bad options are refused without a traceback. torch-free."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from misbehaving_server import MODES, MisbehavingServer, start

from rightsize.cli.main import main
from rightsize.profile.serve import ServeConfig, run_serve_profile
from rightsize.profile.serve_client import stream_request


@pytest.fixture(scope="module")
def server() -> Iterator[MisbehavingServer]:
    srv = start()
    yield srv
    srv.shutdown()


# mode -> the failure kind it must be counted as (None: a success)
EXPECTED = {
    "ok": None,
    "no_done": "truncated",
    "malformed": "malformed",
    "not_object": "malformed",
    "negative_usage": "malformed",
    "inflated_usage": "token_mismatch",
    "undercount": "token_mismatch",
    "drip": "timeout",
    "drip_headers": "timeout",
    "stall": "timeout",
    "long_line": "malformed",
    "reset": "reset",
    "http_500": "http_error",
    "error_event": "http_error",
    "empty": "truncated",
    "huge": "token_mismatch",
}


def test_every_mode_has_an_expectation() -> None:
    assert set(EXPECTED) == set(MODES)


@pytest.mark.parametrize("mode", MODES)
def test_each_misbehaviour_is_a_counted_failure_of_its_kind(server: MisbehavingServer, mode: str) -> None:
    body = {"model": "m", "prompt": "hi", "max_tokens": 4, "stream": True}
    started = time.perf_counter()
    res = stream_request(server.url(mode), f"/{mode}/v1/completions", body, timeout_s=2.0, read_timeout_s=1.0)
    took = time.perf_counter() - started
    assert res.failure == EXPECTED[mode], (mode, res.failure, res.error)
    assert took < 4.0, f"{mode} held the client {took:.1f} s past a 2 s timeout"
    if res.failure is None:
        assert res.output_tokens == 4 and len(res.chunks) == 4


def test_response_size_is_bounded(server: MisbehavingServer) -> None:
    body = {"model": "m", "prompt": "hi", "stream": True}  # no max_tokens: only the size cap stops it
    res = stream_request(
        server.url("huge"), "/huge/v1/completions", body, timeout_s=10, max_response_bytes=1 << 20
    )
    assert res.failure == "too_large"


def test_a_mixed_load_counts_every_failure_and_exits_1(server: MisbehavingServer, tmp_path: Path) -> None:
    n = 2 * len(MODES)
    cfg = ServeConfig(
        url=server.url("mix"),
        concurrency=8,
        duration_s=30,
        max_requests=n,
        output_len=4,
        request_timeout_s=2.0,
        read_timeout_s=1.0,
        slo={"ttft_s": 5.0},
    )
    started = time.perf_counter()
    res = run_serve_profile(cfg, tmp_path / "serve.jsonl")
    assert time.perf_counter() - started < 20
    s = res["summary"]
    assert s["requests"] == n  # every request issued has a record
    assert s["completed"] == 2  # only the two "ok" ones
    assert s["failed"] == n - 2 == sum(s["failures"].values())
    want: dict[str, int] = {}
    for kind in EXPECTED.values():
        if kind:
            want[kind] = want.get(kind, 0) + 2
    assert s["failures"] == want
    assert s["slo_met"] is False and s["slo_attainment"] == pytest.approx(2 / n)
    # every throughput and latency figure is finite, failed requests add no tokens
    assert s["output_token_throughput_per_s"] > 0
    assert all(r["output_tokens"] >= 0 for r in res["results"])
    lines = [json.loads(x) for x in (tmp_path / "serve.jsonl").read_text().splitlines()]
    assert sum(1 for r in lines if r.get("type") == "result") == n


def test_cli_exit_code_says_whether_the_slo_was_met(
    server: MisbehavingServer, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["profile", "serve", "--concurrency", "2", "--max-requests", "4", "--output-len", "3"]
    assert main([*base, "--url", server.url("ok"), "--slo", "ttft:10s", "--timeout", "5s"]) == 0
    assert main([*base, "--url", server.url("ok"), "--slo", "ttft:1us", "--timeout", "5s"]) == 1
    assert "SLO not met" in capsys.readouterr().err
    # no SLO: any failed request fails the test
    assert main([*base, "--url", server.url("no_done"), "--timeout", "5s"]) == 1
    err = capsys.readouterr().err
    assert "4 of 4 requests failed (4 truncated)" in err


@pytest.mark.parametrize(
    "option",
    [
        ["--timeout", "nan"],
        ["--timeout", "inf"],
        ["--timeout", "0"],
        ["--timeout", "-3"],
        ["--rate", "nan"],
        ["--rate", "-1"],
        ["--concurrency", "0"],
        ["--slo", "ttft:nanms"],
        ["--read-timeout", "1e400"],
    ],
)
def test_bad_options_are_refused_without_a_traceback(
    server: MisbehavingServer, option: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["profile", "serve", "--url", server.url("ok"), *option])
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_out_of_range_config_is_bad_input(server: MisbehavingServer) -> None:
    from rightsize.errors import BadInput

    with pytest.raises(BadInput, match="--concurrency"):
        run_serve_profile(ServeConfig(url=server.url("ok"), concurrency=100_000))
    with pytest.raises(BadInput, match="--rate"):
        run_serve_profile(ServeConfig(url=server.url("ok"), rate=float("inf")))
