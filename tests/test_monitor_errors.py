"""`rightsize monitor` error paths and building blocks, without a real Prometheus: a stdlib HTTP
server plays a misbehaving one (wrong units, huge answers, 5xx, no metrics), so every failure
must end in a message and an exit code, never a traceback."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest

from rightsize.cli.main import main
from rightsize.errors import BadInput
from rightsize.monitor.plan_view import planned
from rightsize.monitor.prom import Window
from rightsize.monitor.queries import LengthHistogram, matcher
from rightsize.monitor.replan import recommend
from rightsize.monitor.run import choose_window

SPEC = Path(__file__).parent / "data" / "monitor" / "serving.yaml"
Answer = Callable[[str, dict[str, list[str]]], tuple[int, bytes]]


def _ok(data: Any) -> bytes:
    return json.dumps({"status": "success", "data": data}).encode()


def _matrix(values: list[float], labels: dict[str, str] | None = None, t0: float = 1.7e9) -> bytes:
    pts = [[t0 + 60 * i, str(v)] for i, v in enumerate(values)]
    return _ok({"resultType": "matrix", "result": [{"metric": labels or {}, "values": pts}]})


@pytest.fixture
def fake() -> Iterator[dict[str, Any]]:
    state: dict[str, Any] = {"answer": None, "calls": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state["calls"] += 1
            url = urlparse(self.path)
            code, body = state["answer"](url.path, parse_qs(url.query))
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()


@pytest.fixture(scope="module")
def plan_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    assert main(["plan", str(SPEC), "--format", "json", "-o", str(out)]) == 0
    return out


def _monitor(plan: Path, url: str, *extra: str) -> int:
    return main(["monitor", str(plan), "--prometheus", url, "--window", "1h", *extra])


def test_unreachable_prometheus(plan_json: Path, capsys: Any) -> None:
    assert _monitor(plan_json, "http://127.0.0.1:9", "--timeout", "1s") == 2
    err = capsys.readouterr().err
    assert "unreachable" in err and "3 attempts" in err and "Traceback" not in err


def test_no_known_metrics(plan_json: Path, fake: dict[str, Any], capsys: Any) -> None:
    fake["answer"] = lambda path, q: (200, _ok(["up", "node_cpu_seconds_total"]))
    assert _monitor(plan_json, fake["url"]) == 2
    err = capsys.readouterr().err
    assert "none of the DCGM exporter or vLLM metrics" in err and "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in err


def test_ratio_in_percent_is_a_unit_error(plan_json: Path, fake: dict[str, Any], capsys: Any) -> None:
    def answer(path: str, q: dict[str, list[str]]) -> tuple[int, bytes]:
        if path.endswith("/values"):
            return 200, _ok(["DCGM_FI_PROF_GR_ENGINE_ACTIVE"])
        return 200, _matrix([45.0, 60.0, 87.5], {"gpu": "0", "Hostname": "n1"})

    fake["answer"] = answer
    assert _monitor(plan_json, fake["url"]) == 2
    err = capsys.readouterr().err
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE reports values up to 87.5" in err and "ratio" in err


def test_huge_answer_is_refused(plan_json: Path, fake: dict[str, Any], capsys: Any) -> None:
    big = _matrix([0.5] * 60000, {"gpu": "0"})
    assert len(big) > 2**20
    fake["answer"] = lambda path, q: (
        (200, _ok(["DCGM_FI_PROF_GR_ENGINE_ACTIVE"])) if path.endswith("/values") else (200, big)
    )
    assert _monitor(plan_json, fake["url"], "--max-response-mib", "1") == 2
    err = capsys.readouterr().err
    assert "larger than 1 MiB" in err and "Narrow --selector" in err


def test_server_errors_are_retried_then_reported(plan_json: Path, fake: dict[str, Any], capsys: Any) -> None:
    fake["answer"] = lambda path, q: (503, b"overloaded")
    assert _monitor(plan_json, fake["url"]) == 2
    assert fake["calls"] == 3  # one try and two retries
    assert "HTTP 503" in capsys.readouterr().err


def test_promql_error_is_shown(plan_json: Path, fake: dict[str, Any], capsys: Any) -> None:
    def answer(path: str, q: dict[str, list[str]]) -> tuple[int, bytes]:
        if path.endswith("/values"):
            return 200, _ok(["DCGM_FI_PROF_GR_ENGINE_ACTIVE"])
        return 400, json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode()

    fake["answer"] = answer
    assert _monitor(plan_json, fake["url"]) == 2
    assert "bad_data: parse error" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--selector", "job=dcgm"], "not a PromQL label matcher"),
        (["--from", "/nonexistent.json"], "Give exactly one of"),
        (["--window", "200d"], "longer than 90 d"),
    ],
)
def test_bad_arguments(
    plan_json: Path, fake: dict[str, Any], capsys: Any, args: list[str], message: str
) -> None:
    fake["answer"] = lambda path, q: (200, _ok(["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]))
    assert _monitor(plan_json, fake["url"], *args) == 2
    assert message in capsys.readouterr().err


def test_bad_capture_and_bad_plan(plan_json: Path, tmp_path: Path, capsys: Any) -> None:
    cap = tmp_path / "cap.json"
    cap.write_text('{"status": "success"}', encoding="utf-8")
    assert main(["monitor", str(plan_json), "--from", str(cap)]) == 2
    assert "not a rightsize Prometheus capture" in capsys.readouterr().err
    notplan = tmp_path / "x.json"
    notplan.write_text("[1, 2]", encoding="utf-8")
    assert main(["monitor", str(notplan), "--from", str(cap)]) == 2
    assert "not a plan" in capsys.readouterr().err


def test_plan_json_reads_like_the_plan_object(plan_json: Path) -> None:
    from rightsize.api import plan as run_plan
    from rightsize.spec import load_spec

    spec = load_spec(SPEC)
    live = planned(run_plan(spec), spec)
    saved = planned(json.loads(plan_json.read_text(encoding="utf-8")))
    assert saved.accelerator == live.accelerator
    for key in ("replicas", "gpus", "replica_capacity_rps", "design_rate_rps", "peak_rate_rps",
                "memory_bytes_per_gpu", "gpu_typical_w"):  # fmt: skip
        assert getattr(saved, key) == pytest.approx(getattr(live, key), rel=0.03), key


def test_length_histogram_mean_quantile_spread() -> None:
    # 100 requests: 50 in (0, 100], 40 in (100, 200], 10 in (200, +inf)
    h = LengthHistogram(np.array([100.0, 200.0, np.inf]), np.array([50.0, 90.0, 100.0]), 12000.0, 100.0)
    assert h.mean == 120.0
    assert h.quantile(0.5) == pytest.approx(100.0)
    assert h.quantile(0.7) == pytest.approx(150.0)
    assert 40 < h.std() < 80


def test_recommendation_bounds_widen_for_short_history() -> None:
    def obs(days: float) -> Any:
        n = int(days * 24 * 12)
        rate = 100 + 50 * np.sin(np.arange(n) / 40.0)
        from rightsize.monitor.queries import Observed

        w = Window(0.0, 300.0 * (n - 1), 300.0)
        return Observed(window=w, grid=w.grid(), serving={"request_success": rate})

    week, day = recommend(obs(7)), recommend(obs(1))
    assert week is not None and day is not None
    assert week.upper_factor == pytest.approx(1 + 1 / 7, rel=0.01)
    assert day.upper_factor == pytest.approx(2.0, rel=0.01)  # VPA: 24 h of history doubles the upper bound
    assert day.upper_rps > week.upper_rps
    assert week.lower_rps <= week.target_rps <= week.upper_rps


def test_window_and_matcher() -> None:
    w = choose_window(7 * 86400.0, 1_700_000_000.0, None)
    assert w.step_s == 300 and w.end_s % 300 == 0 and w.grid().size == 2017
    assert choose_window(3600.0, 1_700_000_000.0, None).step_s == 60
    assert matcher('{job="dcgm", env=~"p.*"}') == 'job="dcgm", env=~"p.*"'
    assert matcher(None) == ""
    with pytest.raises(BadInput):
        matcher("job=dcgm")


def test_gpu_count_and_straggler_rules_on_hand_made_series() -> None:
    from rightsize.monitor.compare import compare
    from rightsize.monitor.plan_view import Planned
    from rightsize.monitor.queries import Observed

    w = Window(0.0, 3600.0 * 23, 3600.0)
    busy = np.full(24, 0.6)
    obs = Observed(window=w, grid=w.grid())
    obs.gpu["gr_engine_active"] = {f"n/gpu{i}": busy.copy() for i in range(4)}
    p = Planned(kind="training", name="t", accelerator="h100-sxm", gpus=4)
    assert compare(obs, p) == []  # four equal, busy GPUs: on plan
    obs.gpu["gr_engine_active"]["n/gpu2"] = busy * 0.5  # one GPU half as busy: waits on the others
    (f,) = compare(obs, p)
    assert f.rule == "monitor_straggler_gpu" and f.evidence["gpu"] == "n/gpu2"
    p8 = Planned(kind="training", name="t", accelerator="h100-sxm", gpus=8)
    rules = {f.rule: f for f in compare(obs, p8)}
    assert rules["monitor_gpu_count_differs"].category == "under-provisioning"


def test_a_slow_node_is_named_as_a_node() -> None:
    from rightsize.monitor.compare import compare
    from rightsize.monitor.plan_view import Planned
    from rightsize.monitor.queries import Observed

    w = Window(0.0, 3600.0 * 23, 3600.0)
    obs = Observed(window=w, grid=w.grid())
    obs.gpu["gr_engine_active"] = {
        f"{host}/gpu{i}": np.full(24, level)
        for host, level in (("a", 0.5), ("b", 0.5), ("c", 0.8))
        for i in range(4)
    }
    (f,) = compare(obs, Planned(kind="training", name="t", accelerator="h100-sxm", gpus=12))
    assert f.rule == "monitor_straggler_node" and f.evidence["node"] == "c"


def _series_answer(series: dict[str, bytes], names: list[str]) -> Answer:
    """Answer the name list, and each query with the first body whose key the query contains."""

    def answer(path: str, q: dict[str, list[str]]) -> tuple[int, bytes]:
        if path.endswith("/values"):
            return 200, _ok(names)
        query = q.get("query", [""])[0]
        body = next((b for k, b in series.items() if k in query), _ok({"resultType": "matrix", "result": []}))
        return 200, body

    return answer


@pytest.mark.parametrize(
    ("values", "phrase"),
    [
        ([0.5, -0.16, 0.5], "as -0.16 ratio, which it cannot be"),
        ([0.5, float("inf"), 0.5], "as inf ratio, which it cannot be"),
    ],
)
def test_negative_or_infinite_gpu_activity_is_refused(
    plan_json: Path, fake: dict[str, Any], capsys: Any, values: list[float], phrase: str
) -> None:
    body = _matrix(values, {"gpu": "0", "Hostname": "n1"})
    fake["answer"] = _series_answer(
        {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": body}, ["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
    )
    assert _monitor(plan_json, fake["url"]) == 2
    err = capsys.readouterr().err
    assert phrase in err and "from 0 to" in err, err


def _hist(le_rows: list[tuple[str, float]], total: float, count: float) -> dict[str, bytes]:
    t = 1.7e9
    buckets = _ok(
        {
            "resultType": "matrix",
            "result": [{"metric": {"le": le}, "values": [[t, str(c)]]} for le, c in le_rows],
        }
    )
    return {
        "sum by (le) (increase(vllm:request_prompt_tokens_bucket": buckets,
        "sum(increase(vllm:request_prompt_tokens_sum": _matrix([total]),
        "sum(increase(vllm:request_prompt_tokens_count": _matrix([count]),
        "vllm:request_prompt_tokens_sum": _matrix([500.0] * 3),  # the mean-length query
        "vllm:request_success_total": _matrix([50.0] * 3),
    }


@pytest.mark.parametrize(
    ("rows", "total", "count", "phrase"),
    [
        ([("100", 5.0), ("abc", 9.0)], 900.0, 9.0, "with le='abc'"),
        ([("100", 5.0), ("+Inf", -9.0)], 900.0, 9.0, "negative, infinite or impossible counts"),
        ([("100", 5.0), ("+Inf", 9.0)], -900.0, 9.0, "negative, infinite or impossible counts"),
        ([("100", 5.0), ("+Inf", 9.0)], 1e300, 9.0, "negative, infinite or impossible counts"),
    ],
)
def test_hostile_length_histograms_are_refused(
    plan_json: Path, fake: dict[str, Any], capsys: Any, rows: Any, total: float, count: float, phrase: str
) -> None:
    names = ["vllm:request_success_total", "vllm:request_prompt_tokens_bucket", "vllm:request_prompt_tokens"]
    fake["answer"] = _series_answer(_hist(rows, total, count), names)
    assert _monitor(plan_json, fake["url"]) == 2
    err = capsys.readouterr().err
    assert phrase in err and "Traceback" not in err, err
