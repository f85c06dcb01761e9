"""`rightsize export --target slurm`: the job scripts match the plan, and the generated
profiling job runs to completion on a real (single-host) Slurm cluster: the comms profiler
as two srun tasks and a tiny CPU training job under srun + torchrun, records coming back."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rightsize.cli.main import main
from rightsize.export import render_files
from rightsize.export.plan_view import training_view
from rightsize.export.slurm import time_limit
from rightsize.export.slurm_segments import RESTART_S, SEGMENT_MAX_S, plan_segments

sys.path.insert(0, str(Path(__file__).parent))
from slurm_cluster import _free_port, missing, slurm_cluster, wait_job  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def plan_70b(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("plan") / "plan.json"
    assert (
        main(["plan", str(ROOT / "examples/llama3-70b-pretrain.yaml"), "--format", "json", "-o", str(out)])
        == 0
    )
    return json.loads(out.read_text())


def _sbatch(text: str, key: str) -> str:
    m = re.search(rf"^#SBATCH --{key}(?:=(.*))?$", text, re.M)
    assert m, f"no --{key} in the script"
    return m.group(1) or ""


def _arg(text: str, flag: str) -> str:
    m = re.search(rf"{flag} (\S+)", text)
    assert m, f"no {flag}"
    return m.group(1)


def test_train_sbatch_matches_the_plan(plan_70b: dict) -> None:
    files = render_files(plan_70b, "slurm", "megatron")
    s = files["train.sbatch"]
    best, sizing = plan_70b["best"], plan_70b["sizing"]
    par = best["parallel"]
    assert int(_sbatch(s, "nodes")) == sizing["nodes"]["nodes"]
    gpn = int(_sbatch(s, "gpus-per-node"))
    assert gpn * int(_sbatch(s, "nodes")) == best["gpus"]
    assert int(_arg(s, "--tensor-model-parallel-size")) == par["tp"]
    assert int(_arg(s, "--pipeline-model-parallel-size")) == par["pp"]
    assert int(_arg(s, "--micro-batch-size")) == par["micro_batch"]
    assert int(_arg(s, "--num-layers-per-virtual-pipeline-stage")) * par["pp"] * par["vpp"] == 80
    # DP is what is left: gpus / (tp pp cp)
    assert best["gpus"] // (par["tp"] * par["pp"] * par["cp"]) == par["dp"]
    assert ("--use-distributed-optimizer" in s) == (par["zero_stage"] in (1, 2))
    assert "--sequence-parallel" in s
    # time limit: a 33-day run as 48 h segments, each requeued until the last step is saved
    margin = plan_70b["spec"]["infrastructure"]["margins"]["safety_margin"]
    seg = plan_segments(training_view(plan_70b), "megatron")
    assert _sbatch(s, "time") == time_limit(SEGMENT_MAX_S) == "2-00:00:00"
    per = SEGMENT_MAX_S - 2 * seg.lead_s - RESTART_S
    assert seg.segments == math.ceil(sizing["run"]["run_s"] * (1 + margin) / per)
    assert f"as {seg.segments} segment(s)" in s
    # the warning leaves time for the plan's own checkpoint write and two steps
    write = sizing["reliability"]["checkpoint_write_s"]
    assert seg.lead_s >= write + 2 * best["step"]["step_time_s"]
    assert _sbatch(s, "signal") == f"B:USR1@{seg.lead_s}"
    assert '--exit-duration-in-mins "$EXIT_MIN"' in s and "--exit-signal-handler" in s
    # the whole node's memory, exclusively; one task per GPU
    assert (
        _sbatch(s, "mem") == "0"
        and _sbatch(s, "exclusive") == ""
        and int(_sbatch(s, "ntasks-per-node")) == gpn
    )
    # checkpoint interval from the reliability model, in steps
    steps = round(sizing["reliability"]["checkpoint_interval_s"] / best["step"]["step_time_s"])
    assert int(_arg(s, "--save-interval")) == steps
    assert _sbatch(s, "requeue") == "" and "scontrol requeue" in s
    assert "NCCL_IB_HCA=mlx5" in s and "NCCL_CROSS_NIC=0" in s  # rail-optimised InfiniBand
    assert "torchrun" not in s  # srun starts the ranks: signals reach them, not a launcher
    assert f"plan schema version {plan_70b['schema_version']}" in s and "plan: llama3-70b-pretrain" in s
    assert subprocess.run(["bash", "-n"], input=s, text=True).returncode == 0
    assert subprocess.run(["bash", "-n"], input=files["profile.sbatch"], text=True).returncode == 0


@pytest.mark.parametrize("framework", ["torchtitan", "nemo"])
def test_other_frameworks_carry_the_layout(plan_70b: dict, framework: str) -> None:
    files = render_files(plan_70b, "slurm", framework)
    par = plan_70b["best"]["parallel"]
    if framework == "torchtitan":
        toml = files["torchtitan.toml"]
        import tomllib

        cfg = tomllib.loads(toml)["parallelism"]
        assert cfg["tensor_parallel_degree"] == par["tp"] and cfg["pipeline_parallel_degree"] == par["pp"]
        assert cfg["data_parallel_shard_degree"] * cfg["data_parallel_replicate_degree"] == par["dp"]
        assert "torchtitan.toml" in files["train.sbatch"]
    else:
        py = files["nemo_train.py"]
        compile(py, "nemo_train.py", "exec")
        assert f"s.tensor_model_parallel_size = {par['tp']}" in py
        assert f"virtual_pipeline_model_parallel_size = {par['vpp']}" in py
        assert "--ntasks-per-node=8" in files["train.sbatch"]  # one task per GPU under srun


def test_lora_plan_needs_nemo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = ROOT / "examples/llama3-8b-lora-weekly.yaml"
    code = main(["export", str(spec), "--target", "slurm", "--framework", "megatron", "--out", str(tmp_path)])
    assert code == 2 and "--framework nemo" in capsys.readouterr().err
    assert (
        main(["export", str(spec), "--target", "slurm", "--framework", "nemo", "--out", str(tmp_path)]) == 0
    )
    assert 'peft_scheme="lora"' in (tmp_path / "nemo_train.py").read_text()


def test_serving_sbatch_one_server_per_replica(tmp_path: Path) -> None:
    spec = ROOT / "examples/llama3-70b-chat-serving.yaml"
    plan_file = tmp_path / "plan.json"
    assert main(["plan", str(spec), "--format", "json", "-o", str(plan_file)]) == 0
    plan = json.loads(plan_file.read_text())
    assert main(["export", str(plan_file), "--target", "slurm", "--out", str(tmp_path / "out")]) == 0
    s = (tmp_path / "out/serve.sbatch").read_text()
    assert _sbatch(s, "array") == f"0-{plan['best']['replicas'] - 1}"
    assert int(_sbatch(s, "gpus-per-node")) == plan["best"]["tp"]
    assert int(_arg(s, "--tensor-parallel-size")) == plan["best"]["tp"]
    assert "--kv-cache-dtype fp8" in s if plan["best"]["kv_precision"] == "fp8" else True
    assert subprocess.run(["bash", "-n"], input=s, text=True).returncode == 0


def test_bad_inputs_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    assert main(["export", str(bad), "--target", "slurm", "--out", str(tmp_path)]) == 2
    assert "not a plan" in capsys.readouterr().err
    bad.write_text(json.dumps({"kind": "training_plan", "schema_version": 99}))
    assert main(["export", str(bad), "--target", "slurm", "--out", str(tmp_path)]) == 2
    assert "schema_version" in capsys.readouterr().err


def _skip_reason() -> str | None:
    if os.environ.get("RIGHTSIZE_REQUIRE_SLURM"):
        return None  # CI installs Slurm: a missing piece is a failure there, not a skip
    if missing():
        return f"Slurm/munge not installed ({', '.join(missing())}); .ci/run installs slurm-wlm and munge"
    if os.geteuid() != 0:
        return "the test Slurm cluster runs its daemons as root"
    if shutil.which("torchrun", path=os.path.dirname(sys.executable)) is None:
        return "torch (torchrun) is not installed: pip install 'rightsize[profile]'"
    return None


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_profile_job_runs_under_slurm(plan_70b: dict) -> None:
    root = Path(tempfile.mkdtemp(prefix="rightsize-slurm-", dir="/tmp"))
    root.chmod(0o755)
    try:
        job_dir = root / "job"
        plan_file = root / "plan.json"
        plan_file.write_text(json.dumps(plan_70b))
        out = [
            "export",
            str(plan_file),
            "--target",
            "slurm",
            "--profile-device",
            "cpu",
            "--out",
            str(job_dir),
        ]
        assert main(out) == 0
        v = training_view(plan_70b)
        assert int(_sbatch((job_dir / "profile.sbatch").read_text(), "nodes")) == min(v.nodes, 2)
        bindir = os.path.dirname(sys.executable)
        with slurm_cluster(root / "cluster") as env:
            env = {
                **env,
                "PATH": bindir + os.pathsep + env["PATH"],
                "RIGHTSIZE": os.path.join(bindir, "rightsize"),
                "PROFILE_PORT": str(_free_port()),  # tests running side by side never share it
            }
            env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
            # one host here: the job's other options as generated
            sub = subprocess.run(
                ["sbatch", "--parsable", "--nodes=1", "profile.sbatch"],
                cwd=job_dir, env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            job = sub.stdout.strip().split(";")[0]
            state = wait_job(job, env, 240)
            log = next(job_dir.glob(f"*-{job}.out"), None)
            assert state == "COMPLETED", f"job {state}:\n{log.read_text()[-3000:] if log else ''}"
        comms = [json.loads(x) for x in (job_dir / f"profiles/comms-{job}.jsonl").read_text().splitlines()]
        res = [r for r in comms if r.get("type") == "result"]
        assert {r["op"] for r in res} == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p"}
        assert all(r["world_size"] == 2 and r["launcher"] == "srun" for r in res)
        assert all(len(r["per_rank_time_s"]) == 2 and r["time_s"]["median"] > 0 for r in res)
        assert comms[0]["type"] == "header" and comms[0]["config"]["launcher"] == "srun"
        train = [json.loads(x) for x in (job_dir / f"profiles/train-{job}.jsonl").read_text().splitlines()]
        steps = [r for r in train if r.get("type") == "result"]
        assert len(steps) == 2 and all(r["world_size"] == 2 and r["launcher"] == "torchrun" for r in steps)
        assert all(r["step_time_s"] == max(r["per_rank_step_s"].values()) for r in steps)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize(("layers", "pp", "vpp"), [(61, 16, 2), (80, 4, 3), (7, 2, 1)])
def test_uneven_pipeline_layout_holds_every_layer(layers: int, pp: int, vpp: int) -> None:
    from rightsize.export.frameworks import pipeline_layout

    stages = pipeline_layout(layers, pp, vpp).split("|")
    assert len(stages) == pp * vpp and sum(s.count("t") for s in stages) == layers
    assert stages[0].startswith("E") and stages[-1].endswith("L")
    counts = [s.count("t") for s in stages]
    assert max(counts) - min(counts) <= 1


# --- Other accelerators (#25): never NVIDIA settings or a GPU launcher on a part that is not NVIDIA.


def _plan_on(example: str, accelerator: str, tmp: Path, **targets: object) -> dict:
    import yaml

    from rightsize import api
    from rightsize.report.render import result_dict

    spec = yaml.safe_load((ROOT / f"examples/{example}.yaml").read_text())
    spec["targets"].update({"accelerators": [accelerator], **targets})
    path = tmp / f"{example}-{accelerator}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return result_dict(api.plan(path))


@pytest.mark.parametrize(
    ("accelerator", "stack"), [("tpu-v5p", "JAX/XLA"), ("trn2", "Neuron")]
)  # Gaudi exports Intel's Megatron-LM fork (test_export_audit: test_gaudi_training_*)
def test_non_gpu_plans_are_refused_with_their_stack(tmp_path: Path, accelerator: str, stack: str) -> None:
    from rightsize.errors import BadInput

    extra = {"deadline": "200d"} if accelerator == "tpu-v5p" else {}
    plan = _plan_on("llama3-70b-pretrain", accelerator, tmp_path, **extra)
    assert plan["best"]["accelerator"] == accelerator
    for fw in ("auto", "megatron", "torchtitan", "nemo"):
        with pytest.raises(BadInput) as err:
            render_files(plan, "slurm", fw)
        assert stack in err.value.why and accelerator in err.value.what
    with pytest.raises(BadInput, match="GPU jobs only"):
        render_files(plan, "slurm", "auto", "gpu")


def test_tpu_serving_is_refused(tmp_path: Path) -> None:
    import yaml

    from rightsize import api
    from rightsize.errors import BadInput
    from rightsize.report.render import result_dict

    spec = yaml.safe_load((ROOT / "examples/llama3-70b-chat-serving.yaml").read_text())
    spec["targets"]["accelerators"] = ["tpu-v5p"]
    spec["serving"]["weight_precision"] = "int8"  # what vLLM TPU loads on v5p (no fp8)
    path = tmp_path / "tpu.yaml"
    path.write_text(yaml.safe_dump(spec))
    plan = result_dict(api.plan(path))
    assert plan["best"]["accelerator"] == "tpu-v5p"
    with pytest.raises(BadInput, match="TPU"):
        render_files(plan, "slurm")


def test_amd_plan_has_no_nvidia_settings(tmp_path: Path) -> None:
    plan = _plan_on("llama3-70b-pretrain", "mi300x", tmp_path)
    assert plan["best"]["accelerator"] == "mi300x"
    files = render_files(plan, "slurm", "megatron")
    for name, text in files.items():
        assert "nvidia" not in text.lower() and "CUDA_" not in text, name
    s = files["train.sbatch"]
    assert "NCCL_IB_HCA" not in s  # the plan does not say the NICs are ConnectX: RCCL picks them
    assert "NCCL_DEBUG=WARN" in s  # RCCL reads NCCL's variable names
    assert re.search(r"^#SBATCH --gpus-per-node=\d+$", s, re.M)  # Slurm's gres is `gpu` for AMD too
    serve = render_files(_plan_on("llama3-70b-chat-serving", "mi300x", tmp_path), "slurm")["serve.sbatch"]
    assert "nvidia" not in serve.lower() and "CUDA_" not in serve


# --- Preemption and segments (#25): the requeue decision, run by bash with logging stubs.

_STUB = '#!/bin/bash\necho "$(basename "$0") $*" >> "$CALLS"\n'


def _requeue_run(
    tmp: Path, script: str, saved: str | None, restarts: int = 0, usr1: bool = False, term: bool = False
) -> tuple[int, str, str]:
    """Run train.sbatch with stubs that log their calls; the stub trainer saves `saved` as
    Megatron's latest iteration (or nothing), optionally after the batch shell's USR1."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("scontrol", "scancel", "squeue", "python"):
        (bin_dir / name).write_text(_STUB)
    (bin_dir / "scontrol").write_text(_STUB + '[ "$1" = show ] && echo n1\nexit 0\n')
    trainer = _STUB + "sleep 1\n"
    if usr1:
        trainer += 'kill -USR1 "$BATCH_PID"; sleep 1\n'
    if term:
        trainer += 'kill -TERM "$BATCH_PID"; sleep 1\n'
    if saved is not None:
        trainer += f'mkdir -p "$CKPT_DIR"; echo {saved} > "$CKPT_DIR/latest_checkpointed_iteration.txt"\n'
    (bin_dir / "python").write_text(trainer)
    (bin_dir / "srun").write_text('#!/bin/bash\nwhile [[ "${1:-}" == -* ]]; do shift; done\nexec "$@"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    (tmp / "job.sbatch").write_text(script)
    calls = tmp / "calls.log"
    calls.write_text("")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp), "CALLS": str(calls), "SLURM_JOB_ID": "7",
           "SLURM_JOB_NODELIST": "n1", "DATA_PATH": "d", "TOKENIZER_MODEL": "t", "SLURM_RESTART_COUNT": str(restarts)}  # fmt: skip
    wrapped = "BATCH_PID=$$; export BATCH_PID\n"
    res = subprocess.run(["bash", "-c", wrapped + 'exec bash job.sbatch'], cwd=tmp, env=env,
                         capture_output=True, text=True, timeout=30)  # fmt: skip
    return res.returncode, res.stderr, calls.read_text()


def test_requeue_only_after_a_new_checkpoint(plan_70b: dict, tmp_path: Path) -> None:
    s = render_files(plan_70b, "slurm", "megatron")["train.sbatch"]
    steps = training_view(plan_70b).steps
    seg = plan_segments(training_view(plan_70b), "megatron")
    (tmp_path / "a").mkdir()
    rc, err, calls = _requeue_run(tmp_path / "a", s, saved="1000")
    assert rc == 0 and "scontrol requeue 7" in calls, err  # progress: next segment
    assert f"--exit-duration-in-mins {seg.limit_s // 60 - 2 * seg.lead_s // 60}" in calls  # from the limit
    (tmp_path / "b").mkdir()
    rc, err, calls = _requeue_run(tmp_path / "b", s, saved=None)
    assert rc != 0 and "scontrol requeue" not in calls and "no checkpoint newer" in err  # never forever
    (tmp_path / "c").mkdir()
    rc, err, calls = _requeue_run(tmp_path / "c", s, saved=str(steps))
    assert rc == 0 and "scontrol requeue" not in calls and "done" in err
    (tmp_path / "d").mkdir()
    rc, err, calls = _requeue_run(tmp_path / "d", s, saved="1000", restarts=seg.max_restarts)
    assert rc != 0 and "scontrol requeue" not in calls and "restarts reached" in err


def test_cancel_or_preemption_is_not_undone(plan_70b: dict, tmp_path: Path) -> None:
    """SIGTERM to the batch shell (scancel, preemption): the tasks save, and the script does
    not requeue a job the user cancelled (Slurm requeues preempted jobs itself)."""
    s = render_files(plan_70b, "slurm", "megatron")["train.sbatch"]
    rc, err, calls = _requeue_run(tmp_path, s, saved="1000", term=True)
    assert "scontrol requeue" not in calls and "cancelled or preempted at step 1000" in err, (err, calls)


def test_time_warning_reaches_the_training_tasks(plan_70b: dict, tmp_path: Path) -> None:
    s = render_files(plan_70b, "slurm", "megatron")["train.sbatch"]
    rc, err, calls = _requeue_run(tmp_path, s, saved="1000", usr1=True)
    # the batch shell's USR1 becomes SIGTERM for the step's tasks (Megatron's --exit-signal-handler)
    assert "scancel --signal=TERM 7" in calls, (err, calls)
    assert rc == 0 and "scontrol requeue 7" in calls


def test_short_lora_job_finishes_before_any_warning(tmp_path: Path) -> None:
    """The LoRA example (13 min): one segment whose warning comes after the planned run and
    its margin, and the run's one checkpoint (its last step) ends it without a requeue."""
    out = tmp_path / "plan.json"
    assert (
        main(["plan", str(ROOT / "examples/llama3-8b-lora-weekly.yaml"), "--format", "json", "-o", str(out)])
        == 0
    )
    plan = json.loads(out.read_text())
    v = training_view(plan)
    seg = plan_segments(v, "nemo")
    assert seg.segments == 1
    assert seg.limit_s - seg.lead_s >= v.run_s * (1 + v.safety_margin)  # the run ends before the warning
    s = render_files(plan, "slurm", "nemo")["train.sbatch"]
    assert _sbatch(s, "time") == time_limit(seg.limit_s) and _sbatch(s, "signal") == f"B:USR1@{seg.lead_s}"
    assert f"TRAIN_STEPS={v.steps}" in s and "--exit-duration" not in s


def test_host_memory_beyond_the_node_is_refused(plan_70b: dict) -> None:
    """--mem=0 takes the whole node; a plan whose host needs exceed it is refused, not exported."""
    import copy

    from rightsize.errors import BadInput

    bad = copy.deepcopy(plan_70b)
    bad["sizing"]["nodes"]["host_memory_need_bytes_per_gpu"] = 300 * 2**30  # 8 x 300 GiB > 2 TiB
    with pytest.raises(BadInput, match="exceed a hgx-b200"):
        render_files(bad, "slurm", "megatron")
    bad = copy.deepcopy(plan_70b)
    bad["sizing"]["nodes"]["cpu_cores_need_per_gpu"] = 15.0  # 8 x 15 > 112 cores
    with pytest.raises(BadInput, match="CPU cores"):
        render_files(bad, "slurm", "megatron")


_TRAINER = """#!/bin/bash
# Stub trainer: every rank starts and waits; on SIGTERM rank 0 saves step 100 (NeMo-style
# name) and all exit. A restarted job (SLURM_RESTART_COUNT >= 1) saves the last step.
mkdir -p "$CKPT_DIR"
if [ "${SLURM_RESTART_COUNT:-0}" -ge 1 ]; then
    [ "$RANK" = 0 ] && mkdir -p "$CKPT_DIR/ckpt-step=$STUB_STEPS"
    exit 0
fi
trap '[ "$RANK" = 0 ] && mkdir -p "$CKPT_DIR/ckpt-step=100"; exit 0' TERM
touch "$CKPT_DIR/started.$RANK.$SLURM_LOCALID.$WORLD_SIZE"
for _ in $(seq 600); do sleep 0.2; done  # a foreground sleep: the trap runs when it returns
exit 3
"""


@pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))
def test_time_warning_checkpoints_and_requeues_under_slurm(tmp_path: Path) -> None:
    """The exported job on a real Slurm: the time warning (USR1 to the batch shell, as
    `--signal=B:USR1@lead` sends it) reaches every training task as SIGTERM, the checkpoint
    they save makes the job requeue itself, and the restarted job finishes and stops."""
    out = tmp_path / "plan.json"
    assert (
        main(["plan", str(ROOT / "examples/llama3-8b-lora-weekly.yaml"), "--format", "json", "-o", str(out)])
        == 0
    )
    plan = json.loads(out.read_text())
    view = training_view(plan)
    steps, ranks = view.steps, view.gpus  # the plan's GPUs: 1 L40S since shapes are billed (issue 28)
    root = Path(tempfile.mkdtemp(prefix="rightsize-slurm-requeue-", dir="/tmp"))
    root.chmod(0o755)
    try:
        job_dir, stub = root / "job", root / "bin"
        stub.mkdir()
        (stub / "python").write_text(_TRAINER)
        (stub / "python").chmod(0o755)
        assert (
            main(["export", str(out), "--target", "slurm", "--framework", "nemo", "--out", str(job_dir)]) == 0
        )
        with slurm_cluster(root / "cluster", cpus=16, gpus=8) as env:
            env = {
                **env,
                "PATH": f"{stub}{os.pathsep}{env['PATH']}",
                "STUB_STEPS": str(steps),
                "DATA_PATH": "d",
                "TOKENIZER_MODEL": "t",
            }
            sub = subprocess.run(["sbatch", "--parsable", "train.sbatch"], cwd=job_dir, env=env,
                                 capture_output=True, text=True, check=True, timeout=30)  # fmt: skip
            job = sub.stdout.strip().split(";")[0]
            ckpt = job_dir / "checkpoints" / "llama3-8b-lora-weekly"
            deadline = time.monotonic() + 90
            while len(list(ckpt.glob("started.*"))) < ranks and time.monotonic() < deadline:
                time.sleep(0.5)
            started = sorted(p.name for p in ckpt.glob("started.*"))
            assert started == [f"started.{r}.{r}.{ranks}" for r in range(ranks)], (
                started
            )  # ranks from Slurm's variables
            subprocess.run(["scancel", "--signal=USR1", "--batch", job], env=env, check=True, timeout=30)
            state = _wait_requeued_job(job, env, 240)
            log = next(job_dir.glob(f"*-{job}.out"), None)
            text = log.read_text() if log else ""
            assert state == "COMPLETED", f"job {state}:\n{text[-3000:]}"
        assert "SIGTERM to the training tasks" in text and "requeueing job" in text, text[-2000:]
        assert f"step {steps} of {steps} saved: done" in text, text[-2000:]
        assert (ckpt / "ckpt-step=100").is_dir() and (ckpt / f"ckpt-step={steps}").is_dir()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _wait_requeued_job(job: str, env: dict[str, str], timeout_s: float) -> str:
    """The job's final state; a requeued job waits for its begin time, which is moved to now."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        show = subprocess.run(
            ["scontrol", "show", "job", job], env=env, capture_output=True, text=True
        ).stdout
        if "Reason=BeginTime" in show:
            subprocess.run(
                ["scontrol", "update", f"JobId={job}", "StartTime=now"], env=env, capture_output=True
            )
        state = wait_job(job, env, 2)
        if not state.startswith("still"):
            return state
    return wait_job(job, env, 1)


@pytest.mark.parametrize(
    ("vendor", "nic", "hca"),
    [
        ("nvidia", None, True),
        ("amd", None, False),
        ("amd", "connectx-7", True),
        ("amd", "pollara-400", False),
    ],
)
def test_ib_hca_only_for_connectx(vendor: str, nic: str | None, hca: bool) -> None:
    from rightsize.export.slurm import nccl_env

    names = {k for k, _, _ in nccl_env("roce", 8, vendor, nic)}
    assert ("NCCL_IB_HCA" in names) == hca
    assert ("CUDA_DEVICE_MAX_CONNECTIONS" in names) == (vendor == "nvidia")
