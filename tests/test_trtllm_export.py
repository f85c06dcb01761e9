"""Issue #25: every TensorRT-LLM file the export writes, read by TensorRT-LLM's own tables.

The table (tests/data/engine_args/trtllm_serve_keys.json) is derived from TensorRT-LLM's
source by derive_trtllm.py (`ast` over commands/serve.py and llmapi/llm_args.py; its
`source` says which release tree and why not the pinned 1.0.0's). Here:

- every `trtllm-serve` command line (Kubernetes container args, the Slurm script's launch
  line) is parsed by a click command rebuilt from the table's options, with click's own
  parser: an unknown option, a value of the wrong type or outside a Choice fails, as it
  fails `trtllm-serve` at start-up;
- every `--extra_llm_api_options` YAML is checked against the LLM API's pydantic fields
  (`TorchLlmArgs` and the config classes it names): an unknown key in a class that forbids
  extras (`StrictBaseModel`) or a value of the wrong type fails, as pydantic fails
  `update_llm_args_with_extra_dict` / `TorchLlmArgs(**kwargs)`.

All LLM serving examples are exported for TensorRT-LLM to Slurm and Kubernetes; a target
the export refuses (multi-node on Kubernetes, disaggregated pools) must say why."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.export.k8s_platform import data as k8s_data
from rightsize.export.plan_view import serving_view
from rightsize.export.trtllm import OPTIONS_FILE, TRTLLM_VERSION

sys.path.insert(0, str(Path(__file__).parent))
from export_plans import plan_dict  # noqa: E402
from slurm_cluster import missing, slurm_cluster, wait_job  # noqa: E402

TABLE = Path(__file__).parent / "data" / "engine_args" / "trtllm_serve_keys.json"
SERVING = [
    "llama3-70b-chat-serving",
    "llama2-7b-batch1",
    "deepseek-v3-ep-serving",
    "llama3-405b-serve-multinode",
    "llama3-70b-disaggregated-serving",
]
MODEL = "meta-llama/Meta-Llama-3-70B-Instruct"
_CLICK = {"int": click.INT, "float": click.FLOAT, "str": click.STRING}


@cache
def _table() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(TABLE.read_text())
    assert doc["source"] and doc["models"]["TorchLlmArgs"]["fields"]
    return doc


@cache
def _serve() -> click.Command:
    """`trtllm-serve serve` rebuilt from the table: its arguments and options, click types."""
    params: list[click.Parameter] = [click.Argument([a]) for a in _table()["positional"]]
    for row in _table()["options"]:
        if row.get("flag"):
            params.append(click.Option([*row["flags"], row["dest"]], is_flag=True))
            continue
        typ: click.ParamType = _CLICK[row["type"]]
        if row.get("choices"):
            typ = click.Choice(row["choices"])
        params.append(
            click.Option([*row["flags"], row["dest"]], type=typ, multiple=bool(row.get("multiple")))
        )
    return click.Command("serve", params=params)


def _parse(words: list[str]) -> dict[str, Any]:
    try:
        ctx = _serve().make_context("trtllm-serve", list(words))
    except click.ClickException as err:  # unknown option, bad type, value outside a Choice
        raise AssertionError(f"trtllm-serve rejects {words}: {err.format_message()}") from err
    return dict(ctx.params)


def _value_ok(value: Any, row: dict[str, Any], where: str) -> None:
    if value is None:
        assert row["none"], f"{where}: None not allowed ({row['annotation']})"
        return
    ok = []
    for t in row["types"]:
        if t == "int":
            ok.append(isinstance(value, int) and not isinstance(value, bool))
        elif t == "float":
            ok.append(isinstance(value, (int, float)) and not isinstance(value, bool))
        elif t == "bool":
            ok.append(isinstance(value, bool))
        elif t == "str":
            ok.append(isinstance(value, str))
        elif t == "choice":
            ok.append(value in row.get("choices", []))
        elif t == "list":
            ok.append(isinstance(value, list))
        elif t == "dict":
            ok.append(isinstance(value, dict))
        elif t.startswith("model:"):
            ok.append(isinstance(value, dict))
            if isinstance(value, dict):
                _check_model(t[6:], value, where)
        else:  # any
            ok.append(True)
    assert any(ok), f"{where}={value!r} is not {row['annotation']}"


def _check_model(name: str, mapping: dict[str, Any], where: str = "") -> None:
    """The pydantic model `name` of the table would accept `mapping`."""
    model = _table()["models"][name]
    for key, value in mapping.items():
        path = f"{where}.{key}" if where else key
        if key not in model["fields"]:
            assert not model["forbid_extra"], f"{name} forbids unknown key {path!r}"
            continue
        _value_ok(value, model["fields"][key], path)


def _exports(example: str) -> list[tuple[str, list[str], dict[str, Any]]]:
    """(where, trtllm-serve words after the program, LLM API options) of each export target."""
    plan = plan_dict(example)
    out = []
    for target in ("slurm", "kubernetes"):
        try:
            files = render_files(plan, target, engine="trtllm")
        except BadInput as err:  # refused: the reason must name what is missing
            assert err.what and err.fix, (example, target)
            continue
        if target == "slurm":
            joined = files["serve.sbatch"].replace(" \\\n", " ")
            line = next(ln for ln in joined.splitlines() if "trtllm-serve " in ln and not ln.startswith("#"))
            line = line.replace('"$MODEL"', MODEL).replace("${PORT}", "8001").replace("$PORT", "8001")
            words = shlex.split(line)
            words = [w for w in words[words.index("trtllm-serve") + 1 :] if w != "&"]
            options = yaml.safe_load(files[OPTIONS_FILE])
        else:
            docs = [d for text in files.values() for d in yaml.safe_load_all(text) if d]
            pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
            words = [MODEL if a == "$(MODEL)" else a for a in pod["containers"][0]["args"]]
            options = yaml.safe_load(next(d for d in docs if d["kind"] == "ConfigMap")["data"][OPTIONS_FILE])
        out.append((target, words, options))
    return out


@pytest.mark.parametrize("example", SERVING)
def test_every_trtllm_export_parses_with_the_table(example: str) -> None:
    v = serving_view(plan_dict(example))
    seen = _exports(example)
    if v.hw.vendor == "nvidia" and not v.disaggregated:
        assert any(t == "slurm" for t, _, _ in seen), f"{example}: no TensorRT-LLM export on Slurm"
    for target, words, options in seen:
        params = _parse(words)
        assert params["model"] == MODEL and params["backend"] == "pytorch", target
        assert params["extra_llm_api_options"].endswith(OPTIONS_FILE)
        _check_model(_table()["llm_api_root"], options)
        # TensorRT-LLM's world is tp x pp ranks, one per GPU of the replica (mapping.py)
        world = options["tensor_parallel_size"] * options["pipeline_parallel_size"]
        assert world == v.gpus_per_replica and options["pipeline_parallel_size"] == v.pp
        if v.ep > v.tp:  # the planner's wide EP: attention data-parallel, experts over every GPU
            assert options["enable_attention_dp"] and options["moe_expert_parallel_size"] == world
        else:
            assert (
                options["tensor_parallel_size"] == v.tp and options.get("moe_expert_parallel_size", 1) == v.ep
            )
        if target == "slurm" and v.nodes_per_replica > 1:
            srun = _srun_options(example)
            assert int(srun["ntasks"]) == world == int(srun["nodes"]) * int(srun["ntasks-per-node"])
        assert options["max_seq_len"] == v.max_model_len
        assert 0.05 <= options["kv_cache_config"]["free_gpu_memory_fraction"] <= 0.95


def _srun_options(example: str) -> dict[str, str]:
    """The options of the multi-node launch line (`srun ... trtllm-llmapi-launch`)."""
    text = render_files(plan_dict(example), "slurm", engine="trtllm")["serve.sbatch"].replace(" \\\n", " ")
    line = next(ln for ln in text.splitlines() if "trtllm-llmapi-launch" in ln and not ln.startswith("#"))
    words = shlex.split(line)
    return dict(w[2:].split("=", 1) for w in words[1 : words.index("trtllm-llmapi-launch")] if "=" in w)


@pytest.mark.skipif(bool(missing()), reason=f"Slurm daemons not installed: {missing()}")
def test_multi_node_launch_starts_one_rank_per_gpu(tmp_path: Path) -> None:
    """A real slurmd runs one node of the exported job: the allocation the script asks for
    (one task per node, the node's CPUs) and the launch line's step options start one task
    per GPU there (Slurm takes the allocation's task count unless --ntasks is given)."""
    example = "deepseek-v3-ep-serving"  # 2 nodes x 8 GPUs, TensorRT-LLM world 16
    text = render_files(plan_dict(example), "slurm", engine="trtllm")["serve.sbatch"]
    sb = dict(
        ln[len("#SBATCH --") :].split("=", 1) for ln in text.splitlines() if ln.startswith("#SBATCH --")
    )
    srun = _srun_options(example)
    per_node, cpus = int(srun["ntasks-per-node"]), int(sb["cpus-per-task"])
    assert int(sb["ntasks-per-node"]) == 1 and int(srun["cpus-per-task"]) * per_node <= cpus
    step = ["srun", "--nodes=1", f"--ntasks={per_node}", f"--ntasks-per-node={per_node}",
            f"--cpus-per-task={srun['cpus-per-task']}", "hostname"]  # fmt: skip
    root = tmp_path / "slurm"
    root.mkdir()
    root.chmod(0o755)
    out = root / "out.txt"
    job = root / "one-node.sbatch"
    job.write_text(
        f"#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task={cpus}\n"
        f"#SBATCH --output={out}\n{shlex.join(step)}\n"
    )
    with slurm_cluster(root / "cluster", cpus=cpus) as env:
        sub = subprocess.run(
            ["sbatch", "--parsable", str(job)], env=env, capture_output=True, text=True, cwd=root
        )
        assert sub.returncode == 0, sub.stderr
        assert wait_job(sub.stdout.strip().split(";")[0], env, 90) == "COMPLETED"
    ranks = [ln for ln in out.read_text().splitlines() if ln and not ln.startswith("srun:")]
    assert len(ranks) == per_node, out.read_text()


def test_the_checks_reject_what_trtllm_rejects() -> None:
    """The same checks fail on an unknown option, a bad type, an unknown key, a bad value."""
    _parse([MODEL, "--backend", "pytorch", "--tp_size", "8"])
    for words in ([MODEL, "--tensor-parallel-size", "8"], [MODEL, "--tp_size", "eight"],
                  [MODEL, "--backend", "vllm"]):  # fmt: skip
        with pytest.raises(AssertionError, match="rejects"):
            _parse(words)
    root = _table()["llm_api_root"]
    _check_model(root, {"tensor_parallel_size": 8, "kv_cache_config": {"dtype": "fp8"}})
    bad: list[dict[str, Any]] = [
        {"tensor_parallel_sizes": 8},  # unknown key: TorchLlmArgs forbids extras
        {"kv_cache_config": {"fraction": 0.9}},  # unknown key in KvCacheConfig
        {"max_batch_size": "64"},  # a string for an int
        {"kv_cache_config": {"free_gpu_memory_fraction": True}},  # a bool for a float
    ]
    for options in bad:
        with pytest.raises(AssertionError):
            _check_model(root, options)


def test_the_image_carries_the_pinned_release() -> None:
    """The pinned image is NGC's TensorRT-LLM release container of the version the exporter
    names (nvcr.io/nvidia/tensorrt-llm/release:1.0.0; NVIDIA's 1.0.0 docs use this tag)."""
    image = k8s_data()["stacks"]["nvidia"]["serving_engines"]["trtllm"]["image"]
    assert image == "nvcr.io/nvidia/tensorrt-llm/release:" + TRTLLM_VERSION.split()[-1]
