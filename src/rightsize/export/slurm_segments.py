"""Time limits, preemption and requeued segments for the Slurm training job.

A planned run longer than a partition allows runs as segments of at most
`SEGMENT_MAX_S` (`--time`); each segment ends with a checkpoint and requeues the job
until the training steps are done. How a segment stops in time:

- Megatron-LM stops itself: `--exit-duration-in-mins` (two leads before the limit; from the
  job's actual limit, read at start) saves a checkpoint and exits (megatron/training/
  training.py, "Exiting based on duration"). No signal is needed, so nothing reaches the
  data-loader workers (Slurm signals every process of a step; a worker killed by a signal
  that its parent did not send makes PyTorch's DataLoader raise in the trainer).
- `#SBATCH --signal=B:USR1@<lead>` warns the batch shell alone; if the step still runs it
  sends SIGTERM to the step's tasks (`scancel --signal=TERM`, steps only), the signal
  Megatron's `--exit-signal-handler` handles (signal.SIGTERM by default: save, then exit).
  The lead holds the plan's checkpoint write, two steps (the one in flight and the save's
  barrier) and a minute.
- torchtitan and NeMo have no signal handler in the exported configuration: they keep
  their periodic checkpoints (every Young/Daly interval), and a segment loses at most one
  interval.

The batch shell requeues only when a checkpoint newer than the segment's start exists
(the framework's own checkpoint index: Megatron's latest_checkpointed_iteration.txt,
torchtitan's step-N folders, NeMo's step=N names) and the restart count is below a cap, so a
job that cannot save never requeues forever; it stops when the last step is saved. A SIGTERM
to the batch shell (scancel, preemption) lets the tasks save and then leaves the job to Slurm
(PreemptMode=REQUEUE requeues it; a cancelled job stays cancelled).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass

from rightsize.errors import BadInput
from rightsize.export.frameworks import Launch, save_interval_steps
from rightsize.export.plan_view import TrainingView
from rightsize.export.shell_words import word

SEGMENT_MAX_S = 48 * 3600  # a common partition MaxTime; `sbatch --time=...` overrides it
MIN_LEAD_S = 120
MARGIN_S = 60  # beyond the checkpoint write and two steps
RESTART_S = 600  # per segment: start-up and checkpoint load (the reliability model's restart)


@dataclass(frozen=True)
class Segments:
    checkpoint_write_s: float
    lead_s: int  # USR1 to the batch shell this long before the limit
    limit_s: int  # --time of one segment
    segments: int  # segments the planned run needs
    exit_min: int  # Megatron's --exit-duration-in-mins for this limit (two leads before it)
    max_restarts: int  # SLURM_RESTART_COUNT cap: segments, failures, preemptions


def checkpoint_write_s(v: TrainingView) -> float:
    """The plan's checkpoint write time. The view's field when it has one; otherwise from
    the Young/Daly interval the plan chose, tau = max(sqrt(2 delta M), delta)
    (perf/reliability.py), so delta = min(tau, tau^2 / 2M)."""
    direct = getattr(v, "checkpoint_write_s", None)
    if direct:
        return float(direct)
    if not v.mtbf_s:
        return 0.0
    tau = v.checkpoint_interval_s
    return min(tau, tau * tau / (2.0 * v.mtbf_s))


def time_limit(seconds: float) -> str:
    """Slurm's D-HH:MM:SS, rounded up to the minute."""
    minutes = max(1, math.ceil(seconds / 60.0))
    d, rem = divmod(minutes, 24 * 60)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00"


def plan_segments(v: TrainingView, framework: str, max_segment_s: int = SEGMENT_MAX_S) -> Segments:
    write = checkpoint_write_s(v)
    lead = 60 * math.ceil(max(MIN_LEAD_S, write + 2 * v.step_time_s + MARGIN_S) / 60)
    work = v.run_s * (1.0 + v.safety_margin)
    if work + 2 * lead <= max_segment_s:
        limit, segments = 60 * math.ceil((work + 2 * lead) / 60), 1
    else:
        limit = max_segment_s
        per = limit - 2 * lead - RESTART_S
        if per < 0.25 * limit:
            raise BadInput(
                f"A {max_segment_s / 3600:g} h segment leaves too little time to train.",
                f"Each segment saves a checkpoint ({write:.0f} s plus two {v.step_time_s:.0f} s steps) "
                f"and restarts ({RESTART_S} s).",
                "Allow longer segments (a partition with a longer MaxTime).",
            )
        segments = math.ceil(work / per)
        interval = save_interval_steps(v) * v.step_time_s
        if framework != "megatron" and interval > per:
            raise BadInput(
                f"The checkpoint interval ({interval / 3600:.1f} h) is longer than a segment's "
                f"training time ({per / 3600:.1f} h).",
                "Without a checkpoint in every segment the requeued job would repeat the same work.",
                "Export with --framework megatron (it saves when the segment ends), or plan a "
                "shorter checkpoint interval.",
            )
    failures = math.ceil(v.run_s / v.mtbf_s) if v.mtbf_s else 0
    return Segments(
        checkpoint_write_s=write,
        lead_s=lead,
        limit_s=limit,
        segments=segments,
        exit_min=max(1, (limit - 2 * lead) // 60),
        max_restarts=2 * segments + 2 * failures + 3,
    )


def header_lines(v: TrainingView, seg: Segments, framework: str) -> list[str]:
    work_h = v.run_s * (1.0 + v.safety_margin) / 3600
    lines = [
        f"time: planned {v.run_s / 3600:.1f} h (failures included) + {v.safety_margin:.0%} safety margin "
        f"= {work_h:.1f} h, as {seg.segments} segment(s) of at most {time_limit(seg.limit_s)} "
        f"(--time; `sbatch --time=...` for a shorter partition MaxTime), each requeued until "
        f"the last of {v.steps} steps is saved",
        f"stopping in time: the plan's checkpoint write is {seg.checkpoint_write_s:.0f} s and a step "
        f"{v.step_time_s:.1f} s; the batch shell is warned {seg.lead_s} s before the limit (USR1) and "
        "sends SIGTERM to the training tasks",
    ]
    if framework == "megatron":
        lines.append(
            "Megatron saves and exits two warnings before the limit (--exit-duration-in-mins) and on "
            "SIGTERM (--exit-signal-handler: preemption, scancel --signal=TERM)"
        )
    elif framework == "nemo":
        lines.append(
            "NeMo saves and stops two warnings before the limit (trainer.max_time from $EXIT_MIN) and on "
            "SIGTERM (PreemptionCallback)"
        )
    else:
        lines.append(
            f"{framework} has no stop signal here: a segment or a preemption loses at most one "
            "checkpoint interval"
        )
    lines.append(
        f"requeue: only after a new checkpoint, at most {seg.max_restarts} restarts "
        "(segments, failures and preemptions); after a SIGTERM to the job (scancel, preemption: GraceTime "
        ">= the warning lets the tasks save) Slurm decides, the script never requeues"
    )
    return lines


def _titan_checkpoint_dir(launch: Launch) -> str:
    try:
        cfg = tomllib.loads(launch.files.get("torchtitan.toml", ""))
    except tomllib.TOMLDecodeError:
        cfg = {}  # torchtitan would refuse the file too; its defaults here
    dump = str(cfg.get("job", {}).get("dump_folder", "./torchtitan/outputs"))
    return dump.rstrip("/") + "/" + str(cfg.get("checkpoint", {}).get("folder", "checkpoint"))


def progress_function(launch: Launch) -> list[str]:
    """`progress`: prints the last saved step (0 when none) from the framework's own index."""
    if launch.framework == "megatron":
        body = [
            '    local f="$CKPT_DIR/latest_checkpointed_iteration.txt" n=""',
            '    [ -r "$f" ] && n=$(tr -cd 0-9 < "$f")',
            '    echo "$((10#${n:-0}))"',
        ]
    elif launch.framework == "torchtitan":
        body = [
            "    local n=0 d s",
            f"    for d in {word(_titan_checkpoint_dir(launch) + '/step-')}*; do",
            "        s=${d##*step-}",
            "        if [[ $s =~ ^[0-9]+$ ]] && (( 10#$s > n )); then n=$((10#$s)); fi",
            "    done",
            '    echo "$n"',
        ]
    else:
        body = [
            "    local n",
            "    n=$(find \"$CKPT_DIR\" -maxdepth 6 -name '*step=*' 2>/dev/null | grep -o 'step=[0-9]*' "
            "| cut -d= -f2 | sort -n | tail -n 1 || true)",
            '    echo "$((10#${n:-0}))"',
        ]
    return ["# The last saved step, from the framework's own checkpoint index (0 when none).", "progress() {",
            *body, "}"]  # fmt: skip


def control_lines(seg: Segments, steps: int, framework: str) -> list[str]:
    """The warning trap and the requeue decision around the training step (fixed text;
    the numbers are the plan's integers)."""
    deadline = [
        "# Megatron stops itself two warnings before the job's actual limit (sbatch --time may",
        "# override the one above), in minutes.",
        "LIMIT_MIN=$(squeue -h -j \"$SLURM_JOB_ID\" -o %l 2>/dev/null | awk -F'[-:]' "
        "'NF==4{print $1*1440+$2*60+$3} NF==3{print $1*60+$2} NF==2{print $1}' || true)",
        f"EXIT_MIN=$(( ${{LIMIT_MIN:-{seg.limit_s // 60}}} - {2 * seg.lead_s // 60} ))",
        "if (( EXIT_MIN < 1 )); then EXIT_MIN=1; fi",
        "export EXIT_MIN",
    ]
    return [
        *(deadline if framework in ("megatron", "nemo") else []),
        f"TRAIN_STEPS={int(steps)}",
        "START_STEP=$(progress)",
        "WARNED=0",
        "warned() {",
        "    WARNED=1",
        f'    echo "rightsize: {seg.lead_s} s to the time limit: SIGTERM to the training tasks" >&2',
        '    if kill -0 "$SRUN_PID" 2>/dev/null; then scancel --signal=TERM "$SLURM_JOB_ID" || true; fi',
        "}",
        "trap warned USR1",
        "# SIGTERM to this shell: scancel or preemption (the tasks have it too). Wait for their save;",
        "# Slurm decides what follows (PreemptMode=REQUEUE requeues), never this script.",
        "STOPPED=0",
        "trap 'STOPPED=1; echo \"rightsize: SIGTERM (scancel or preemption): waiting for the tasks\" >&2' TERM",
    ]


def finish_lines(seg: Segments) -> list[str]:
    return [
        "RC=0",
        "while :; do",
        '    if wait "$SRUN_PID"; then RC=0; else RC=$?; fi',
        '    kill -0 "$SRUN_PID" 2>/dev/null || break',
        "done",
        "DONE_STEP=$(progress)",
        "if (( DONE_STEP >= TRAIN_STEPS )); then",
        '    echo "rightsize: step $DONE_STEP of $TRAIN_STEPS saved: done" >&2',
        "    exit 0",
        "fi",
        "if (( STOPPED )); then",
        '    echo "rightsize: cancelled or preempted at step $DONE_STEP: not requeueing (Slurm decides)" >&2',
        '    exit "$RC"',
        "fi",
        "if (( DONE_STEP <= START_STEP )); then",
        '    echo "rightsize: no checkpoint newer than step $START_STEP in this segment (exit $RC, warned $WARNED):'
        ' not requeueing" >&2',
        "    exit $(( RC == 0 ? 1 : RC ))",
        "fi",
        f"if (( ${{SLURM_RESTART_COUNT:-0}} >= {seg.max_restarts} )); then",
        f'    echo "rightsize: {seg.max_restarts} restarts reached at step $DONE_STEP of $TRAIN_STEPS:'
        ' not requeueing" >&2',
        "    exit 1",
        "fi",
        'echo "rightsize: saved step $DONE_STEP of $TRAIN_STEPS: requeueing job $SLURM_JOB_ID" >&2',
        'scontrol requeue "$SLURM_JOB_ID"',
    ]
