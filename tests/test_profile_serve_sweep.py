"""`profile serve` with prompt sets (ShareGPT JSON, JSON Lines), rate sweeps, goodput at the
SLO and vLLM's benchmark key names, against the loopback test server (a few seconds)."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("torch") is None:  # pragma: no cover
    if os.environ.get("RIGHTSIZE_REQUIRE_TORCH"):
        raise RuntimeError("RIGHTSIZE_REQUIRE_TORCH is set but torch is not installed")
    pytest.skip("torch is not installed (the profile extra)", allow_module_level=True)

from rightsize.errors import BadInput  # noqa: E402
from rightsize.profile.prompts import load_prompt_set  # noqa: E402
from rightsize.profile.serve import ServeConfig, run_serve_profile  # noqa: E402
from rightsize.profile.serve_server import start_in_thread  # noqa: E402
from rightsize.profile.serve_sweep import run_rate_sweep  # noqa: E402

BENCH_KEYS = json.loads(
    (Path(__file__).parent / "data" / "engine_args" / "vllm_v0.10.1_benchmark_keys.json").read_text()
)


@pytest.fixture(scope="module")
def server():  # type: ignore[no-untyped-def]
    srv = start_in_thread()
    yield srv
    srv.shutdown()


def _sharegpt(path: Path, n: int = 30) -> list[dict[str, Any]]:
    convs: list[dict[str, Any]] = [
        {"id": str(i), "conversations": [{"from": "human", "value": " ".join([f"w{i}"] * (5 + i))},
                                         {"from": "gpt", "value": " ".join(["r"] * (4 + i % 7))},
                                         {"from": "human", "value": "a third turn is ignored"}]}
        for i in range(n)
    ]  # fmt: skip
    convs.insert(3, {"id": "short", "conversations": [{"from": "human", "value": "only one turn here"}]})
    convs.insert(
        5,
        {
            "id": "tiny",
            "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "a b c d"}],
        },
    )
    path.write_text(json.dumps(convs))
    return convs


def test_sharegpt_sampled_as_vllm_samples(tmp_path: Path) -> None:
    convs = _sharegpt(tmp_path / "sg.json")
    ps = load_prompt_set(str(tmp_path / "sg.json"), n=10, seed=7, output_len=None, tokenizer=None)
    # vLLM (ShareGPTDataset): keep >= 2 turns, random.seed(seed); random.shuffle, then take valid pairs
    kept = [c for c in convs if len(c["conversations"]) >= 2]
    random.seed(7)
    random.shuffle(kept)
    want = [c for c in kept if len(c["conversations"][0]["value"].split()) >= 4][:10]
    assert [it.prompt for it in ps.items] == [c["conversations"][0]["value"] for c in want]
    assert [it.output_len for it in ps.items] == [len(c["conversations"][1]["value"].split()) for c in want]
    assert "ShareGPT" in ps.source and "seed 7" in ps.source and "words" in ps.source
    fixed = load_prompt_set(str(tmp_path / "sg.json"), n=5, seed=7, output_len=16, tokenizer=None)
    assert {it.output_len for it in fixed.items} == {16}


def test_jsonl_prompts_and_bad_files(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text(
        json.dumps({"prompt": "tell me about the sea and the sky", "output_len": 12}) + "\n\n"
        + json.dumps({"prompt": "write a poem about the moon tonight", "completion": "one two three four five"}) + "\n"
    )  # fmt: skip
    ps = load_prompt_set(str(f), n=10, seed=0, output_len=None, tokenizer=None)
    assert sorted(it.output_len for it in ps.items) == [5, 12]
    (tmp_path / "bad.jsonl").write_text('{"text": "no prompt"}\n')
    with pytest.raises(BadInput, match="no text 'prompt'"):
        load_prompt_set(str(tmp_path / "bad.jsonl"), 5, 0, None, None)
    (tmp_path / "noreply.jsonl").write_text('{"prompt": "a b c d e f"}\n')
    with pytest.raises(BadInput, match="no reply and no output_len"):
        load_prompt_set(str(tmp_path / "noreply.jsonl"), 5, 0, None, None)
    assert load_prompt_set(str(tmp_path / "noreply.jsonl"), 5, 0, 8, None).items[0].output_len == 8
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(BadInput, match="not valid JSON"):
        load_prompt_set(str(tmp_path / "broken.json"), 5, 0, None, None)


def test_dataset_run_reports_vllm_keys(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _sharegpt(tmp_path / "sg.json")
    cfg = ServeConfig(url=server.url, rate=20.0, duration_s=1.0, max_requests=6, dataset=str(tmp_path / "sg.json"),
                      slo={"ttft_s": 5.0, "tpot_s": 5.0})  # fmt: skip
    res = run_serve_profile(cfg)
    ps = load_prompt_set(str(tmp_path / "sg.json"), 6, 0, None, None)
    by_index = {int(r["key"].split(":")[1]): r for r in res["results"]}
    for i, r in by_index.items():
        assert r["status"] == "ok" and r["output_tokens"] == ps.items[i % len(ps.items)].output_len
    b = res["summary"]["vllm_benchmark"]
    assert set(b) <= set(BENCH_KEYS["keys"])  # vLLM's own names, nothing invented
    assert {"request_throughput", "output_throughput", "request_goodput", "mean_ttft_ms", "p99_tpot_ms",
            "median_itl_ms", "p90_e2el_ms"} <= set(b)  # fmt: skip
    s = res["summary"]
    assert b["mean_ttft_ms"] == pytest.approx(s["ttft_s"]["mean"] * 1e3)
    assert b["total_output_tokens"] == sum(r["output_tokens"] for r in res["results"])
    assert b["request_goodput"] == pytest.approx(s["request_throughput_per_s"])  # every request met 5 s


def test_rate_sweep_and_cli(server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cfg = ServeConfig(url=server.url, duration_s=0.6, max_requests=4, output_len=3, slo={"ttft_s": 1e-9})
    res = run_rate_sweep(cfg, [8.0, 4.0], tmp_path / "sweep.jsonl")
    assert [r["request_rate"] for r in res["sweep"]] == [4.0, 8.0]
    assert res["max_rate_meeting_slo"] is None and all(r["request_goodput"] == 0.0 for r in res["sweep"])
    assert (tmp_path / "sweep-rate4.jsonl").exists() and (tmp_path / "sweep-rate8.jsonl").exists()
    stop = run_rate_sweep(cfg, [2.0, 4.0, 8.0], stop_at_miss=True)
    assert len(stop["sweep"]) == 1  # the first rate missed a 1 ns TTFT: the sweep stops
    with pytest.raises(BadInput, match="--sweep needs --slo"):
        run_rate_sweep(ServeConfig(url=server.url), [1.0], stop_at_miss=True)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    cmd = [sys.executable, "-m", "rightsize.cli.main", "profile", "serve", "--url", server.url, "--rates", "5,10",
           "--duration", "0.5", "--max-requests", "3", "--output-len", "3", "--slo", "ttft:5s", "--format", "json"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [r["request_rate"] for r in doc["sweep"]] == [5.0, 10.0] and doc["max_rate_meeting_slo"] == 10.0
    bad = subprocess.run([*cmd[:5], server.url, "--sweep", "--concurrency", "2"], capture_output=True, text=True,
                         timeout=60, env=env)  # fmt: skip
    assert bad.returncode == 2 and "--concurrency" in bad.stderr
