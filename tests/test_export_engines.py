"""`rightsize export --engine vllm|sglang|trtllm`: every command line the exports write is
parsed by the engine's own argument table, and the parsed values are the plan's.

The tables (tests/data/engine_args, each with its source):
- SGLang v0.5.19: the parser `ServerArgs.add_cli_args` builds, dumped from the PyPI wheel
  (derive_sglang.py; the module runs as shipped, its runtime imports as placeholders);
- vLLM v0.10.1: the parser `AsyncEngineArgs.add_cli_args` builds (derive_vllm.py, on vLLM's
  CPU platform) plus the OpenAI frontend's fields read with `ast`;
- sglang-router 0.3.2: the parser `RouterArgs.add_cli_args` builds (derive_sglang_router.py);
- TensorRT-LLM: the `trtllm-serve` options and LLM API keys read by hand from serve.py (its
  wheel needs CUDA and is over 1 GB): the weakest of the three checks, said so in the file.
An unknown flag, a value of the wrong type or outside the choices fails the test (argparse
exits), as it would fail the engine's own start-up."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from engine_tables import parser_from_rows

from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.export.plan_view import serving_view

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402
from test_export_kubernetes import _by_kind  # noqa: E402

ARGS = Path(__file__).parent / "data" / "engine_args"
MODEL = "meta-llama/Meta-Llama-3-70B-Instruct"
AMD_NODE = "mi300x-platform"


@cache
def _table(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((ARGS / name).read_text())
    assert doc["source"]
    return doc


def _parse(table: str, words: list[str]) -> argparse.Namespace:
    rows = _table(table)["arguments" if "arguments" in _table(table) else "options"]
    try:
        ns, extra = parser_from_rows(rows).parse_known_args(words)
    except argparse.ArgumentError as err:  # a wrong type or a value outside the choices
        raise AssertionError(f"{table} rejects {words}: {err}") from err
    assert not extra, f"{table} does not know {extra}"
    return ns


def _k8s_args(plan: dict[str, Any], engine: str) -> tuple[dict[str, Any], list[list[str]]]:
    objs = _by_kind(render_files(plan, "kubernetes", engine=engine))  # validated: core schema and CRDs
    if "LeaderWorkerSet" in objs:
        t = objs["LeaderWorkerSet"]["spec"]["leaderWorkerTemplate"]
        pods = [t["leaderTemplate"]["spec"], t["workerTemplate"]["spec"]]
    else:
        pods = [objs["Deployment"]["spec"]["template"]["spec"]]
    subst = {"$(MODEL)": MODEL, "$(LWS_WORKER_INDEX)": "1", "$(LWS_LEADER_ADDRESS):20000": "10.0.0.1:20000"}
    return objs, [[subst.get(a, a) for a in pod["containers"][0]["args"]] for pod in pods]


def _slurm_command(text: str, program: str) -> list[str]:
    """The words after `program` in the job script's launch command, variables given values."""
    joined = text.replace(" \\\n", " ")
    line = next(ln for ln in joined.splitlines() if program in ln and not ln.startswith("#"))
    for var, val in {"$MODEL": MODEL, "${PORT}": "8001", "$PORT": "8001", "$NODE_RANK": "1",
                     "$MASTER_ADDR": "10.0.0.1"}.items():  # fmt: skip
        line = line.replace(var, val)
    words = shlex.split(line)
    return [w for w in words[words.index(program) + 1 :] if w != "&"]


def _plan(tp: int | None = None, **best: Any) -> dict[str, Any]:
    """The chat example's plan with its replica re-shaped: the planner's own layout records
    (nodes per replica, the `layout` record) describe the old shape, so they go with it."""
    plan = plan_dict("llama3-70b-chat-serving")
    if tp or {"pp", "ep"} & set(best):
        for key in ("nodes_per_replica", "gpus_per_replica", "layout"):
            plan["best"].pop(key, None)
    if tp:
        plan["best"]["tp"] = tp
    plan["best"].update(best)
    return plan


@pytest.mark.parametrize("layout", [{}, {"tp": 16}, {"tp": 8, "pp": 2}])
def test_sglang_parses_and_matches_plan(layout: dict[str, Any]) -> None:
    plan = _plan(**layout)
    v = serving_view(plan)
    objs, pods = _k8s_args(plan, "sglang")
    assert ("LeaderWorkerSet" in objs) == (v.nodes_per_replica > 1)
    for rank, words in enumerate(pods):
        ns = _parse("sglang_v0.5.19_server_args.json", words)
        assert (ns.model_path, ns.tp_size, ns.pp_size if v.pp > 1 else 1) == (MODEL, v.tp, v.pp)
        assert ns.kv_cache_dtype == "fp8_e4m3" and ns.quantization == "fp8"  # the plan's fp8 KV and weights
        assert ns.context_length == str(v.max_model_len) and 0.3 <= ns.mem_fraction_static <= 0.95
        if v.nodes_per_replica > 1:
            assert (ns.nnodes, ns.node_rank, ns.dist_init_addr) == (
                v.nodes_per_replica,
                rank,
                "10.0.0.1:20000",
            )
    so = objs["ScaledObject"]["spec"]["triggers"][0]["metadata"]["query"]
    assert "sglang:num_queue_reqs" in so
    text = render_files(plan, "slurm", engine="sglang")["serve.sbatch"]
    ns = _parse("sglang_v0.5.19_server_args.json", _slurm_command(text, "sglang.launch_server"))
    assert ns.tp_size == v.tp and ns.port == 8001
    if v.nodes_per_replica > 1:
        assert f"#SBATCH --nodes={v.nodes_per_replica}" in text and ns.nnodes == v.nodes_per_replica


@pytest.mark.parametrize("layout", [{}, {"tp": 16}, {"tp": 8, "pp": 2}])
def test_vllm_parses_and_matches_plan(layout: dict[str, Any]) -> None:
    plan = _plan(**layout)
    v = serving_view(plan)
    table = "vllm_v0.10.1_engine_args.json"
    objs, pods = _k8s_args(plan, "vllm")
    if v.nodes_per_replica == 1:
        ns = _parse(table, pods[0])
        assert (ns.model, ns.tensor_parallel_size) == (MODEL, v.tp)
    else:  # the Ray leader's shell command carries vllm serve's arguments
        cmd = pods[0][0].split("vllm serve ", 1)[1].replace('"$MODEL"', MODEL)
        ns = _parse(table, shlex.split(cmd)[1:])
        assert (
            ns.distributed_executor_backend == "ray"
            and objs["LeaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["size"] == v.nodes_per_replica
        )
    assert ns.tensor_parallel_size == v.tp and (ns.pipeline_parallel_size or 1) == v.pp
    assert ns.kv_cache_dtype == "fp8" and ns.max_num_seqs >= 1
    text = render_files(plan, "slurm", engine="vllm")["serve.sbatch"]
    ns = _parse(table, _slurm_command(text, "serve")[1:])
    assert ns.tensor_parallel_size == v.tp and ns.port == 8001


def test_trtllm_command_and_options_match_plan() -> None:
    plan = _plan()
    v = serving_view(plan)
    keys = _table("trtllm_serve_keys.json")
    objs, pods = _k8s_args(plan, "trtllm")
    ns = _parse("trtllm_serve_keys.json", pods[0][1:])  # after the positional model
    assert pods[0][0] == MODEL and ns.backend == "pytorch"
    options = yaml.safe_load(objs["ConfigMap"]["data"]["extra-llm-api-options.yaml"])
    assert set(options) <= set(keys["llm_api_keys"])
    assert set(options["kv_cache_config"]) <= set(keys["kv_cache_config_keys"])
    assert (options["tensor_parallel_size"], options["pipeline_parallel_size"]) == (v.tp, v.pp)
    assert 0.05 <= options["kv_cache_config"]["free_gpu_memory_fraction"] <= 0.95
    assert options["kv_cache_config"]["dtype"] == "fp8" and options["max_seq_len"] == v.max_model_len
    mount = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][-1]
    assert ns.extra_llm_api_options == f"{mount['mountPath']}/extra-llm-api-options.yaml"
    assert "ScaledObject" not in objs  # no queue metric relied on: said in the header instead
    multi = render_files(_plan(tp=16, ep=16), "slurm", engine="trtllm")
    assert (
        "trtllm-llmapi-launch trtllm-serve" in multi["serve.sbatch"] and "--mpi=pmix" in multi["serve.sbatch"]
    )
    assert yaml.safe_load(multi["extra-llm-api-options.yaml"])["moe_expert_parallel_size"] == 16
    ns = _parse("trtllm_serve_keys.json", _slurm_command(multi["serve.sbatch"], "trtllm-serve")[1:])
    assert ns.extra_llm_api_options == "extra-llm-api-options.yaml"


def test_sglang_disaggregated_pools_and_router() -> None:
    pools = {
        "prefill": {"replicas": 2, "tp": 4},
        "decode": {"replicas": 3, "tp": 2},
        "transfer_backend": "mooncake",
    }
    text = render_files(_plan(disaggregated=pools), "slurm", engine="sglang")["serve.sbatch"]
    assert "#SBATCH --nodes=5" in text
    joined = text.replace(" \\\n", " ")
    servers = [ln for ln in joined.splitlines() if "sglang.launch_server" in ln]
    assert len(servers) == 5
    seen = []
    for k, line in enumerate(servers):
        words = shlex.split(line.replace("$MODEL", MODEL).replace(f"${{NODES[{k}]}}", f"node{k}"))
        ns = _parse(
            "sglang_v0.5.19_server_args.json",
            [w for w in words[words.index("sglang.launch_server") + 1 :] if w != "&"],
        )
        seen.append((ns.disaggregation_mode, ns.tp_size, ns.disaggregation_bootstrap_port))
        assert ns.disaggregation_transfer_backend == "mooncake" and ns.port == 30000
    assert seen == [("prefill", 4, 8998)] * 2 + [("decode", 2, None)] * 3
    router = next(ln for ln in joined.splitlines() if "sglang_router.launch_router" in ln)
    for k in range(5):
        router = router.replace(f"${{NODES[{k}]}}", f"node{k}")
    words = shlex.split(router)
    ns = _parse(
        "sglang_router_v0.3.2_args.json",
        [w for w in words[words.index("sglang_router.launch_router") + 1 :] if w != "&"],
    )
    assert ns.pd_disaggregation and ns.port == 8000
    assert ns.prefill == [["http://node0:30000", "8998"], ["http://node1:30000", "8998"]]
    assert ns.decode == [[f"http://node{k}:30000"] for k in (2, 3, 4)]


def test_engine_refusals_and_default() -> None:
    amd = _plan()
    amd["best"].update(accelerator="mi300x", node=AMD_NODE)
    with pytest.raises(BadInput, match="NVIDIA GPUs only"):
        render_files(amd, "slurm", engine="trtllm")
    with pytest.raises(BadInput, match="one node per replica"):
        render_files(_plan(tp=16), "kubernetes", engine="trtllm")
    dis = _plan(disaggregated={"prefill": {"replicas": 2, "tp": 2}, "decode": {"replicas": 4, "tp": 2}})
    with pytest.raises(BadInput, match="separate pools"):
        render_files(dis, "kubernetes", engine="trtllm")
    with pytest.raises(BadInput, match="Export with --engine sglang"):
        render_files(dis, "slurm", engine="vllm")
    planned = _plan()
    planned["spec"].setdefault("engine", {})["name"] = "sglang"  # the engine the plan was sized for
    assert "sglang.launch_server" in render_files(planned, "slurm")["serve.sbatch"]
    assert "vllm serve" in render_files(planned, "slurm", engine="vllm")["serve.sbatch"]


def _stub_bin(root: Path) -> Path:
    """Stand-ins for Slurm and the engines: srun runs its command without its options,
    scontrol names two hosts, every engine program records its argument vector."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    scripts = {
        "srun": 'while [ "${1#-}" != "$1" ]; do shift; done; exec "$@"',
        "scontrol": "printf 'nodeA\\nnodeB\\nnodeC\\nnodeD\\nnodeE\\n'",
        "sleep": "exit 0",
    }
    record = 'f=$(mktemp "$CALLS/call.XXXXXX"); printf "%s\\0" "$(basename "$0")" "$@" > "$f"'
    for prog in ("python3", "vllm", "ray", "trtllm-serve", "trtllm-llmapi-launch"):
        scripts[prog] = record
    for name, body in scripts.items():
        (bin_dir / name).write_text("#!/bin/bash\n" + body + "\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_multi_node_slurm_scripts_run(engine: str, tmp_path: Path) -> None:
    """The multi-node job script runs under bash (stub srun/scontrol): every node's command
    reaches the engine with its rank and the head's address, accepted by the engine's table."""
    files = render_files(_plan(tp=16), "slurm", engine=engine)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    calls = tmp_path / "calls"
    calls.mkdir()
    env = {"PATH": f"{_stub_bin(tmp_path)}:{os.environ['PATH']}", "CALLS": str(calls),
           "SLURM_ARRAY_TASK_ID": "1", "SLURM_JOB_NODELIST": "node[A-B]", "HOME": str(tmp_path)}  # fmt: skip
    run = subprocess.run(
        ["bash", "serve.sbatch"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30
    )
    assert run.returncode == 0, run.stderr
    argvs = [f.read_bytes().split(b"\0")[:-1] for f in sorted(calls.iterdir())]
    words = [[w.decode() for w in a] for a in argvs]
    if engine == "sglang":
        servers = sorted((a for a in words if a[0] == "python3"), key=lambda a: a[a.index("--node-rank") + 1])
        assert len(servers) == 2
        for rank, a in enumerate(servers):
            ns = _parse("sglang_v0.5.19_server_args.json", [w.replace("$MODEL", MODEL) for w in a[3:]])
            assert (ns.node_rank, ns.nnodes, ns.dist_init_addr, ns.port) == (rank, 2, "nodeA:20000", 8001)
    elif engine == "vllm":
        assert sorted(a[:3] for a in words if a[0] == "ray") == [
            ["ray", "start", "--address=nodeA:6379"], ["ray", "start", "--head"]
        ]  # fmt: skip
        serve = next(a for a in words if a[0] == "vllm")
        ns = _parse("vllm_v0.10.1_engine_args.json", serve[3:])
        assert (ns.tensor_parallel_size, ns.port, ns.distributed_executor_backend) == (16, 8001, "ray")
    else:
        serve = next(a for a in words if a[0] == "trtllm-llmapi-launch")
        assert serve[1] == "trtllm-serve"
        ns = _parse("trtllm_serve_keys.json", serve[3:])
        assert ns.port == 8001 and (tmp_path / ns.extra_llm_api_options).exists()
