"""Every exported Megatron-LM command, run through the pinned release's own argument code.

The release: Megatron-LM tag core_v0.13.0. Its `megatron/training` is on no package index
(tests/data/megatron_release.py says what was checked), so its arguments.py, activations.py
and utils.py are copied byte for byte into tests/data/megatron_lm_core_v0.13.0 (SHA-256 checked
here against SOURCE.json), and `megatron/core` comes from the megatron-core 0.13.0 wheel of the
same tag (CI: `pip install --no-deps megatron-core==0.13.0`). Nothing of the argument logic is
stubbed: from utils.py only the three functions arguments.py imports are taken (the rest of
that module needs a distributed run), and the GPU query answers with the plan's accelerator.

For each job file (Slurm `train.sbatch`, the Kubernetes JobSet's script) the command is
expanded by bash as the job would run it, then, as `pretrain_gpt.py` does:
`parse_args` (unknown flags, types, choices), `validate_args` with the job's world size and
environment (parallel sizes, pipeline layout, precision, FSDP, MoE rules), the model config
(`core_transformer_config_from_args`: TransformerConfig's own checks), the micro-batch count
(megatron.core's calculator) and, for an interleaved pipeline, the schedule's own check
(`forward_backward_pipelining_with_interleaving`, run up to its first use of the model). A
command the release rejects fails here.

Skipped when megatron-core 0.13.0 is not installed, unless RIGHTSIZE_REQUIRE_MEGATRON is set.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import hashlib
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
import types
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from export_plans import plan_dict

from rightsize.errors import BadInput
from rightsize.export.plan_view import TrainingView, training_view
from rightsize.export.slurm import train_sbatch

DATA = Path(__file__).parent / "data"
RELEASE = DATA / "megatron_lm_core_v0.13.0"
SOURCE = json.loads((RELEASE / "SOURCE.json").read_text())
CORE_VERSION = "0.13.0"
# pretrain_gpt.py (core_v0.13.0): pretrain(..., args_defaults={'tokenizer_type': 'GPT2BPETokenizer'})
ARGS_DEFAULTS = {"tokenizer_type": "GPT2BPETokenizer"}
# CUDA compute capability (major, minor) of the catalog's NVIDIA parts, which arguments.py asks
# torch for (developer.nvidia.com/cuda-gpus, read 2026-11-25).
COMPUTE_CAPABILITY = {"a100": (8, 0), "h100": (9, 0), "h800": (9, 0), "h200": (9, 0), "h20": (9, 0),
                      "gh200": (9, 0), "b200": (10, 0), "b300": (10, 3), "gb200": (10, 0), "gb300": (10, 3),
                      "l40s": (8, 9), "l4": (8, 9)}  # fmt: skip
# The training examples, and what each exports with --framework megatron.
EXAMPLES = ["gpt3-175b-megatron", "llama3-70b-pretrain", "mixtral-8x7b-pretrain", "deepseek-v3-pretrain",
            "llama3.1-405b-pretrain"]  # fmt: skip
ENV = {"MEGATRON_DIR": "/opt/Megatron-LM", "TOKENIZER_MODEL": "meta-llama/Meta-Llama-3-8B",
       "CKPT_DIR": "/ckpt/run", "DATA_PATH": "/data/tokens_text_document", "EXIT_MIN": "230"}  # fmt: skip


def _load(name: str, path: Path) -> types.ModuleType:
    loader = importlib.machinery.SourceFileLoader(name, str(path))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


@cache
def release() -> types.ModuleType:
    """megatron.training.arguments of core_v0.13.0 (see the module docstring)."""
    try:
        from importlib.metadata import version

        have = version("megatron-core")
    except Exception:
        have = None
    if have != CORE_VERSION:
        why = f"megatron-core {CORE_VERSION} is not installed (pip install --no-deps megatron-core=={CORE_VERSION})"
        if os.environ.get("RIGHTSIZE_REQUIRE_MEGATRON"):
            pytest.fail(f"{why}; RIGHTSIZE_REQUIRE_MEGATRON is set (found {have})")
        pytest.skip(why)
    for path, digest in SOURCE["sha256"].items():
        data = (RELEASE / (path + ".txt")).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"{path} differs from {SOURCE['tag']}"
    import megatron.core  # noqa: F401  (the wheel: megatron/core of the same tag)
    import torch

    root = RELEASE / "megatron" / "training"
    if "megatron.training" not in sys.modules:  # the package without its __init__ (training loop)
        pkg = types.ModuleType("megatron.training")
        pkg.__path__ = [str(root)]
        sys.modules["megatron.training"] = pkg
    utils = types.ModuleType("megatron.training.utils")
    tree = ast.parse((root / "utils.py.txt").read_text())
    wanted = {"get_device_arch_version", "update_use_dist_ckpt", "print_rank_0"}  # what arguments.py imports
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    assert {n.name for n in body} == wanted
    utils.__dict__["torch"] = torch
    exec(compile(ast.Module(body=body, type_ignores=[]), str(root / "utils.py"), "exec"), utils.__dict__)  # noqa: S102
    sys.modules["megatron.training.utils"] = utils
    _load("megatron.training.activations", root / "activations.py.txt")
    return _load("megatron.training.arguments", root / "arguments.py.txt")


@contextlib.contextmanager
def _job(argv: list[str], env: dict[str, str], capability: tuple[int, int]) -> Iterator[None]:
    """The process as torchrun starts rank 0 of the job: its argv, environment and GPU."""
    import torch

    saved_argv, saved_env = sys.argv, dict(os.environ)
    props = types.SimpleNamespace(major=capability[0], minor=capability[1])
    patches = {
        "get_device_capability": lambda *a, **k: capability,
        "get_device_properties": lambda *a, **k: props,
    }
    saved_cuda = {k: getattr(torch.cuda, k) for k in patches}
    own_group = not torch.distributed.is_initialized()
    if own_group:  # rank 0 of a one-process group (Gloo, in memory), gone after the check
        store = torch.distributed.HashStore()
        torch.distributed.init_process_group("gloo", store=store, rank=0, world_size=1)
    from megatron.core import utils as core_utils
    from megatron.core.models.common.embeddings import rope_utils
    from packaging.version import Version as PkgVersion

    def te_kernel(*a: Any, **k: Any) -> Any:  # Transformer Engine's fused RoPE, which the image carries
        raise NotImplementedError("a stand-in: this check builds no model")

    saved_rope = rope_utils.fused_apply_rotary_pos_emb, rope_utils.fused_apply_rotary_pos_emb_thd
    # Transformer Engine's version, which the fp8 and fusion checks ask for: 2.5.0, the one the
    # release's own CI image builds (docker/Dockerfile.ci.dev TE_COMMIT 8382eed6,
    # TransformerEngine build_tools/VERSION.txt at that commit).
    core_utils._te_version = PkgVersion("2.5.0")
    rope_utils.fused_apply_rotary_pos_emb = rope_utils.fused_apply_rotary_pos_emb_thd = te_kernel
    try:
        sys.argv = argv
        os.environ.clear()
        os.environ.update(env)
        for k, fn in patches.items():
            setattr(torch.cuda, k, fn)
        yield
    finally:
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
        for k, fn in saved_cuda.items():
            setattr(torch.cuda, k, fn)
        rope_utils.fused_apply_rotary_pos_emb, rope_utils.fused_apply_rotary_pos_emb_thd = saved_rope
        core_utils._te_version = None
        if own_group:
            torch.distributed.destroy_process_group()


def _interleaved_check(args: argparse.Namespace, config: Any, micro: int) -> None:
    """Megatron's interleaved schedule (core_v0.13.0) on the job's pipeline, up to its first
    use of the model: its range and remainder checks on the micro-batch group."""
    import torch
    from megatron.core import parallel_state
    from megatron.core.pipeline_parallel import schedules

    class Chunk(torch.nn.Module):  # a model chunk that carries the job's config and nothing else
        def __init__(self) -> None:
            super().__init__()
            self.config = config

    vpp = args.virtual_pipeline_model_parallel_size
    parallel_state.set_pipeline_model_parallel_world_size(args.pipeline_model_parallel_size)
    parallel_state.set_pipeline_model_parallel_rank(0)
    parallel_state.set_virtual_pipeline_model_parallel_world_size(vpp)
    cuda = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]  # a CPU stand-in for the device
    try:
        schedules.forward_backward_pipelining_with_interleaving(
            forward_step_func=None, data_iterator=[iter(())] * vpp, model=[Chunk() for _ in range(vpp)],
            num_microbatches=micro, seq_length=args.seq_length, micro_batch_size=args.micro_batch_size,
        )  # fmt: skip
    except RuntimeError as e:  # past the checks, the schedule asks the chunk for its model type
        if "couldn't find attribute model_type" not in str(e):
            raise
    finally:
        torch.Tensor.cuda = cuda  # type: ignore[method-assign]
        parallel_state.set_pipeline_model_parallel_world_size(None)
        parallel_state.set_virtual_pipeline_model_parallel_world_size(None)
        parallel_state.set_pipeline_model_parallel_rank(None)


def run_release(argv: list[str], env: dict[str, str], world_size: int, capability: tuple[int, int]) -> Any:
    """pretrain_gpt.py's start on rank 0, through the release's own code; the parsed args."""
    a = release()  # first: it skips (or fails, when required) without megatron-core
    from megatron.core.num_microbatches_calculator import ConstantNumMicroBatchesCalculator

    job_env = {**env, "RANK": "0", "WORLD_SIZE": str(world_size)}
    out = io.StringIO()
    with _job(["pretrain_gpt.py", *argv], job_env, capability), contextlib.redirect_stdout(out):
        try:
            args = a.parse_args(None, False)
        except SystemExit as e:  # argparse: an unknown flag, a bad value
            raise AssertionError(f"Megatron-LM core_v0.13.0 rejects the arguments (exit {e.code})") from e
        args = a.validate_args(args, copy.deepcopy(ARGS_DEFAULTS))
        config = a.core_transformer_config_from_args(args)
        micro = ConstantNumMicroBatchesCalculator(
            args.global_batch_size, args.micro_batch_size, args.data_parallel_size, False, 0
        ).get()
        if args.virtual_pipeline_model_parallel_size:
            _interleaved_check(args, config, micro)
    return args


# --- the job files ---------------------------------------------------------------------


def _bash_words(text: str, env: dict[str, str]) -> list[str]:
    """The words bash makes of `text` (a command line of the job file) with `env` set."""
    script = f"printf '%s\\0' {text}"
    run = subprocess.run(["bash", "-c", script], env={"PATH": "/usr/bin:/bin", **env},
                         capture_output=True, check=True)  # fmt: skip
    return run.stdout.decode().split("\0")[:-1]


def sbatch_command(text: str) -> tuple[list[str], dict[str, str]]:
    """The Megatron command of a train.sbatch, as bash expands it, and the literal variables
    the script exports before it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("srun "))
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith("&"))
    block = "\n".join(lines[start : end + 1]).rstrip().removesuffix("&")
    words = block.replace("\\\n", " ")
    cmd = words[words.index(" rank ") + len(" rank ") :]
    argv = _bash_words(cmd, ENV)
    assert argv[0] == "python" and argv[1] == ENV["MEGATRON_DIR"] + "/pretrain_gpt.py", argv[:2]
    exported = {}
    for line in lines[:start]:
        m = re.match(r"export ([A-Z_]+=[^\s$]*)(\s+#.*)?$", line)
        if m:
            key, value = shlex.split(m.group(1))[0].split("=", 1)
            exported[key] = value
    return argv[2:], exported


def capability_of(v: TrainingView) -> tuple[int, int]:
    key = next(
        (k for k in sorted(COMPUTE_CAPABILITY, key=len, reverse=True) if v.hw.accelerator.startswith(k)), None
    )
    assert key is not None, (
        f"no compute capability for {v.hw.accelerator}: add it from developer.nvidia.com/cuda-gpus"
    )
    return COMPUTE_CAPABILITY[key]


def check_plan(plan: dict[str, Any]) -> Any:
    """Export the plan's Slurm job with Megatron-LM and run its command through the release."""
    v = training_view(plan)
    sbatch = train_sbatch(v, "megatron")["train.sbatch"]
    argv, exported = sbatch_command(sbatch)
    args = run_release(argv, {**ENV, **exported}, v.gpus, capability_of(v))
    assert (args.tensor_model_parallel_size, args.pipeline_model_parallel_size) == (v.tp, v.pp)
    assert (args.context_parallel_size, args.expert_model_parallel_size) == (v.cp, v.ep)
    assert args.data_parallel_size == v.dp * v.ep // max(1, v.ep) or args.data_parallel_size == v.dp
    assert (args.virtual_pipeline_model_parallel_size or 1) == v.vpp
    assert args.global_batch_size == v.global_batch and args.micro_batch_size == v.micro_batch
    assert args.train_iters == v.steps
    return args


@pytest.mark.parametrize("example", EXAMPLES)
def test_release_accepts_every_example(example: str) -> None:
    plan = plan_dict(example)
    # Not NVIDIA, or layer activation offload (no --cpu-offloading in this release: see
    # test_release_rejects_what_it_cannot_run): refused with the reason.
    if training_view(plan).hw.vendor != "nvidia" or str(plan["best"]["parallel"]["recompute"]).startswith(
        "layer_offload"
    ):
        with pytest.raises(BadInput):
            train_sbatch(training_view(plan), "megatron")
        return
    args = check_plan(plan)
    assert args.position_embedding_type in ("rope", "learned_absolute")


def variant(example: str, gpus_per_node: int = 8, **change: Any) -> dict[str, Any]:
    """The example's plan with another layout (and precision, batch): the world size follows
    the layout (tp x pp x cp x dp GPUs)."""
    plan = plan_dict(example)
    par = plan["best"]["parallel"]
    for key in ("precision", "global_batch"):
        if key in change:
            plan["spec"]["training"][key] = change.pop(key)
    par.update(change)
    gpus = par["tp"] * par["pp"] * par["cp"] * par["dp"]
    plan["best"]["gpus"] = gpus
    plan["sizing"]["nodes"]["nodes"] = max(1, gpus // gpus_per_node)
    return plan


# Layouts the planner may choose and the examples do not show: TP/PP/VPP/CP/EP, FP8, ZeRO-3,
# MoE, GQA and MLA, uneven pipelines, interleaved micro-batch counts off the pp grid.
VARIANTS = {
    "llama70b-tp8-pp4-vpp5-cp2": ("llama3-70b-pretrain", {"tp": 8, "pp": 4, "vpp": 5, "cp": 2, "dp": 8}),
    "llama70b-tp4-cp4-fsdp": ("llama3-70b-pretrain", {"tp": 4, "pp": 1, "vpp": 1, "cp": 4, "dp": 16,
                                                      "zero_stage": 3}),
    "llama70b-fp8-pp8-vpp10": ("llama3-70b-pretrain", {"tp": 8, "pp": 8, "vpp": 10, "dp": 4, "precision": "fp8"}),
    "llama70b-pp3-uneven": ("llama3-70b-pretrain", {"tp": 8, "pp": 3, "vpp": 1, "dp": 8, "global_batch": 96}),
    "llama70b-pp6-vpp2-uneven": ("llama3-70b-pretrain", {"tp": 4, "pp": 6, "vpp": 2, "dp": 4, "global_batch": 128}),
    "llama70b-tp16-gqa8": ("llama3-70b-pretrain", {"tp": 16, "pp": 2, "vpp": 1, "dp": 4}),
    "llama70b-full-recompute": ("llama3-70b-pretrain", {"tp": 8, "pp": 2, "vpp": 1, "dp": 4, "recompute": "full"}),
    "gpt3-pp8-vpp3-12-micro": ("gpt3-175b-megatron", {"global_batch": 16 * 12}),
    "gpt3-pp8-vpp4-17-micro": ("gpt3-175b-megatron", {"vpp": 4, "global_batch": 16 * 17}),
    "gpt3-pp5-uneven": ("gpt3-175b-megatron", {"pp": 5, "vpp": 1, "dp": 8}),
    "gpt3-pp7-vpp2-uneven": ("gpt3-175b-megatron", {"pp": 7, "vpp": 2, "dp": 8, "global_batch": 8 * 21}),
    "gpt3-fp16-zero0": ("gpt3-175b-megatron", {"zero_stage": 0, "precision": "fp16", "vpp": 1}),
    "mixtral-ep8-tp2-pp4-fp8": ("mixtral-8x7b-pretrain", {"tp": 2, "pp": 4, "ep": 8, "dp": 8, "micro_batch": 1,
                                                          "precision": "fp8"}),
    "mixtral-ep4-vpp2": ("mixtral-8x7b-pretrain", {"tp": 1, "pp": 4, "vpp": 2, "ep": 4, "dp": 16, "micro_batch": 1}),
    "deepseek-pp16-ep64-fp8": ("deepseek-v3-pretrain", {"tp": 2, "pp": 16, "vpp": 1, "ep": 64, "dp": 64,
                                                        "zero_stage": 1}),
    "deepseek-pp8-vpp4-ep8-fsdp": ("deepseek-v3-pretrain", {"tp": 1, "pp": 8, "vpp": 4, "ep": 8, "dp": 32}),
}  # fmt: skip


@pytest.mark.parametrize("name", VARIANTS)
def test_release_accepts_or_exporter_refuses(name: str) -> None:
    """A layout the pinned release cannot run is refused by the exporter, with its reason;
    anything exported is accepted by the release."""
    example, change = VARIANTS[name]
    plan = variant(example, **change)
    try:
        check_plan(plan)
    except BadInput as e:  # refused with the reason (tp over GQA groups, for one)
        assert "cannot run this plan" in str(e) and "core_v0.13.0" in str(e), e


def _sample(**change: str | None) -> tuple[list[str], dict[str, str]]:
    """The GPT-3 example's command with flags changed (None: a bare flag), added or dropped
    ("drop"), and the environment its job file exports."""
    argv, exported = sbatch_command(
        train_sbatch(training_view(plan_dict("gpt3-175b-megatron")), "megatron")["train.sbatch"]
    )
    out: list[str] = []
    i = 0
    while i < len(argv):
        flag = argv[i]
        bare = i + 1 >= len(argv) or argv[i + 1].startswith("--")
        if flag not in change:
            out += argv[i : i + (1 if bare else 2)]
        i += 1 if bare else 2
    for flag, value in change.items():
        if value != "drop":
            out += [flag] if value is None else [flag, value]
    return out, {**ENV, **exported}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"--use-megatron-fsdp": None}, "exit 2"),  # a flag of core_v0.14, not this release
        ({"--cpu-offloading": None}, "exit 2"),  # layer activation offload: export/fw_offload refuses it
        ({"--num-layers-per-virtual-pipeline-stage": "5"}, "divisible"),  # 96 layers / pp 8 = 12, not 5k
        ({"--global-batch-size": str(16 * 12)}, "remainder of M"),  # 12 micro-batches in groups of pp 8
        ({"--position-embedding-type": "alibi"}, "exit 2"),
        ({"--expert-model-parallel-size": "2"}, "num_experts must be non None"),  # a dense model
        ({"--group-query-attention": None, "--num-query-groups": "4"}, "num_query_groups"),  # 4 groups, tp 8
    ],
)
def test_release_rejects_what_it_cannot_run(change: dict[str, str | None], why: str) -> None:
    """The harness fails where the release does: commands it rejects, with its own reason."""
    with pytest.raises((AssertionError, ValueError, RuntimeError)) as e:
        run_release(*_sample(**change), 1024, (8, 0))
    assert why in str(e.value) or why in repr(e.value.__cause__), e.value


def test_flag_table_is_the_release_parser() -> None:
    """tests/data/megatron_core_v0.13.0_arguments.json (the table the checks without
    megatron-core read) equals what the release's own parser declares."""
    sys.path.insert(0, str(DATA))
    from megatron_release import TABLE, flag_table

    parser = release().add_megatron_arguments(argparse.ArgumentParser(allow_abbrev=False))
    assert json.loads(TABLE.read_text())["flags"] == flag_table(parser)


@pytest.mark.parametrize("vpp", [2, 3, 4, 6])
@pytest.mark.parametrize("micro", [1, 7, 8, 9, 12, 15, 17, 23, 96])
def test_release_runs_every_interleaving(vpp: int, micro: int) -> None:
    """Each micro-batch count per replica on GPT-3's pp 8: the release's schedule accepts the
    exported group size, or the exporter refuses (fewer micro-batches than stages)."""
    plan = variant("gpt3-175b-megatron", vpp=vpp, global_batch=16 * micro)
    try:
        check_plan(plan)
    except BadInput as e:
        assert micro < 8 and "micro-batches" in str(e), e


def k8s_command(files: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The Megatron command of the Kubernetes JobSet's container, as its bash runs it, and the
    environment it has then."""
    import yaml

    docs = [d for d in yaml.safe_load_all(files["training.yaml"]) if d and d.get("kind") == "JobSet"]
    pod = docs[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    script = pod["containers"][0]["args"][0]
    assert script.count("exec torchrun ") == 1, script
    probe = script.replace('mkdir -p "$CKPT_DIR"\n', "").replace("exec torchrun ", "printf '%s\\0' torchrun ")
    run = subprocess.run(["bash", "-c", probe + "printf '\\1\\0'; env -0"], capture_output=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "JOB_COMPLETION_INDEX": "0", **ENV})  # fmt: skip
    words = run.stdout.decode().split("\0")[:-1]
    cut = words.index("\1")
    env = dict(w.split("=", 1) for w in words[cut + 1 :])
    entry = next(i for i, w in enumerate(words) if w.endswith("/pretrain_gpt.py"))
    return words[entry + 1 : cut], env


@pytest.mark.parametrize("example", ["gpt3-175b-megatron", "llama3-70b-pretrain", "deepseek-v3-pretrain"])
def test_release_accepts_the_kubernetes_job(example: str) -> None:
    from rightsize.export.k8s_training import training_files

    v = training_view(plan_dict(example))
    argv, env = k8s_command(training_files(v, "megatron"))
    args = run_release(argv, env, v.gpus, capability_of(v))
    assert (args.tensor_model_parallel_size, args.pipeline_model_parallel_size) == (v.tp, v.pp)
    assert args.data_path == [env["DATA_PATH"]] and args.save == env["CKPT_DIR"]
