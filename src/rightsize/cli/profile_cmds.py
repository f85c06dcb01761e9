"""`rightsize profile ...` and `rightsize calibrate`: registered into the main parser by
`register`. Argument parsing only; the work is in `rightsize.profile` (torch is optional)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize import yamlio
from rightsize.cli.output_args import add_output_options, check_outputs, emit
from rightsize.errors import BadInput


def _progress(msg: str) -> None:
    sys.stderr.write(f"  {msg}\n")
    sys.stderr.flush()


def _ints(text: str) -> list[int]:
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not vals or any(v <= 0 for v in vals):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


def _seconds(text: str) -> float:
    """A positive, finite duration ("60s", "2m", "500ms", "30"); nan, inf and 0 are refused."""
    from rightsize.spec.units import parse_duration_s

    try:
        value = float(parse_duration_s(text))
    except BadInput:
        raise argparse.ArgumentTypeError(
            f"expected a positive duration like 60s, 2m or 500ms, got {text[:60]!r}"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration greater than zero, got {text[:60]!r}")
    return value


DEFAULT_OUTPUT_LEN = 32


def _rates(text: str) -> list[float]:
    vals = [_positive_float(x.strip()) for x in text.split(",") if x.strip()]
    if not vals:
        raise argparse.ArgumentTypeError(f"expected comma-separated rates, got {text[:60]!r}")
    return vals


def _positive_float(text: str) -> float:
    """A finite number greater than zero (nan, inf, 0 and negatives are refused)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number greater than zero, got {text[:60]!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number greater than zero, got {text[:60]!r}")
    return value


def _bytes(text: str) -> float:
    from rightsize.spec.units import parse_bytes

    try:
        return float(parse_bytes(text))
    except Exception:
        raise argparse.ArgumentTypeError(f"expected a size like 4GB or 512MiB, got {text!r}") from None


def _arch(name: str) -> Any:
    """A preset name or a YAML/JSON file of ModelArch fields."""
    from rightsize.spec.model import ModelArch
    from rightsize.spec.presets import get_preset

    p = Path(name)
    if p.suffix.lower() in (".yaml", ".yml", ".json") and p.exists():
        try:
            return ModelArch.model_validate(yamlio.safe_load(p.read_text(encoding="utf-8")))
        except Exception as err:
            raise BadInput(f"Cannot read the model file {p}.", str(err), "Give ModelArch fields.") from None
    return get_preset(name)


def _profile_view(result: dict[str, Any]) -> dict[str, Any]:
    """A train profile in the report's profile shape (points and telemetry) for the
    Markdown and HTML documents; other profiles are rendered as they are."""
    points = []
    for r in result.get("results", []):
        if r.get("kind") != "train" or r.get("status") != "ok":
            continue
        step = (r.get("time_s") or {}).get("step") or {}
        mem = r.get("memory") or {}
        points.append(
            {
                "batch": r.get("batch"),
                "seq": r.get("seq_len"),
                "step_s": step.get("median"),
                "peak_memory_bytes": mem.get("peak_bytes") or mem.get("peak_estimate_bytes"),
                "tokens_per_s": r.get("tokens_per_s"),
            }
        )
    windows = ((result.get("telemetry") or {}).get("windows")) or {}
    telemetry = [
        {"t_s": float(i), "cpu_util_fraction": (w.get("cpu_util_pct") or 0.0) / 100.0, "point": key}
        for i, (key, w) in enumerate(windows.items())
    ]
    header = result.get("header") or {}
    return {
        "kind": "profile",
        "name": str((header.get("config") or {}).get("model", "profile")),
        "device": str((header.get("environment") or {}).get("device", "")),
        "points": points,
        "telemetry": telemetry,
        "fit": result.get("fit"),
    }


def _write(args: argparse.Namespace, result: dict[str, Any], table: Callable[[dict[str, Any]], str]) -> int:
    if args.format == "json":
        text = json.dumps(result, indent=2, default=float)
    elif args.format in ("markdown", "html"):
        from rightsize.report.render import render, render_profile

        view = _profile_view(result) if result.get("results") else None
        text = (
            render_profile(view, args.format)
            if view and view["points"]
            else render(json.loads(json.dumps(result, default=float)), args.format, "Profile")
        )
    else:
        text = table(result)
    emit(text, args)
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from rightsize.profile.render import render_train
    from rightsize.profile.train import TrainProfileConfig, run_train_profile

    if bool(args.model) == bool(args.module):
        raise BadInput(
            "Give exactly one of --model and --module.",
            "The profiler runs a preset's decoder or your own module.",
            "Use --model llama3-8b (or a ModelArch YAML), or --module path/to/file.py:build_fn.",
        )
    if args.module and ":" not in args.module:
        raise BadInput(
            f"--module {args.module} names no function.",
            "It must be path/to/file.py:build_fn, a function returning an nn.Module (or (module, loader)).",
            f"Use --module {args.module}:build",
        )
    cfg = TrainProfileConfig(
        batches=args.batch,
        seqs=args.seq,
        arch=_arch(args.model) if args.model else None,
        module=args.module,
        device=args.device,
        dtype=args.dtype,
        steps=args.steps,
        warmup=args.warmup,
        timeout_s=args.timeout,
        memory_limit_bytes=args.memory_limit,
        threads=args.threads,
        micro=not args.no_micro,
    )
    from rightsize.profile.launcher import detect

    launch = detect()  # under torchrun or srun: data-parallel steps across the launched ranks
    if launch is not None:
        from rightsize.profile.dist_train import run_distributed_train
        from rightsize.profile.train import _need_torch, resolve_device

        _need_torch()
        if cfg.arch is None:
            raise BadInput(
                "Under torchrun or srun, `profile train` needs --model.",
                "The distributed profiler builds the same decoder on every rank.",
                "Use --model with a preset or a ModelArch YAML.",
            )
        job = {**cfg.job(resolve_device(args.device)), "batches": cfg.batches, "seqs": cfg.seqs}
        res = run_distributed_train(launch, job, Path(args.out) if args.out else None, _progress)
        return _write(args, res, render_train) if launch.rank == 0 else 0
    res = run_train_profile(cfg, Path(args.out) if args.out else None, args.resume, _progress, args.force)
    return _write(args, res, render_train)


def cmd_memory(args: argparse.Namespace) -> int:
    from rightsize.profile.memory import compare_with_analytic, count_training_memory
    from rightsize.profile.render import render_memory
    from rightsize.profile.train import _need_torch

    _need_torch()
    arch = _arch(args.model)
    count = count_training_memory(
        arch,
        args.seq,
        args.micro_batch,
        args.precision,
        flash_attention=not args.no_flash,
        device=args.device,
    )
    res = {"count": count.as_dict(), "comparison": compare_with_analytic(count, arch)}
    if args.out:
        from rightsize.profile import jsonl

        hdr = jsonl.header("memory", {"model": arch.model_dump(), "seq_len": args.seq})
        writer, _ = jsonl.start_run(Path(args.out), hdr, False, args.force or args.resume)
        with writer as w:
            w.write({"type": "result", "kind": "memory", "key": f"memory:{arch.name}", "status": "ok", **res})
    return _write(args, res, render_memory)


def cmd_comms(args: argparse.Namespace) -> int:
    from rightsize.profile.comms import OPS, default_sizes, run_comms_profile
    from rightsize.profile.launcher import detect
    from rightsize.profile.render import render_comms

    launch = detect()  # under torchrun or srun: this process is one rank of the job
    if launch is not None:
        from rightsize.profile.dist_comms import run_distributed_comms
        from rightsize.profile.train import _need_torch

        _need_torch()
        job = {
            "backend": args.backend,
            "sizes": args.sizes or default_sizes(int(args.max_bytes)),
            "ops": list(args.ops.split(",")) if args.ops else list(OPS),
            "iters": args.iters,
        }
        res = run_distributed_comms(launch, job, Path(args.out) if args.out else None, _progress)
        return _write(args, res, render_comms) if launch.rank == 0 else 0
    res = run_comms_profile(
        backend=args.backend,
        world_size=args.world_size,
        sizes=args.sizes or default_sizes(int(args.max_bytes)),
        ops=tuple(args.ops.split(",")) if args.ops else OPS,
        iters=args.iters,
        timeout_s=args.timeout,
        out=Path(args.out) if args.out else None,
        resume=args.resume,
        progress=_progress,
        force=args.force,
    )
    return _write(args, res, render_comms)


def cmd_kernels(args: argparse.Namespace) -> int:
    from rightsize.profile.kernels import render_kernels, run_kernel_sweep

    cfg = {
        "dtypes": args.dtypes.split(","),
        "gemm_m": args.m,
        "gemm_nk": args.nk,
        "heads": args.heads,
        "kv_heads": args.kv_heads,
        "head_dim": args.head_dim,
        "batch": args.batch,
        "seq": args.seq,
        "iters": args.iters,
    }
    res = run_kernel_sweep(
        args.accelerator,
        cfg,
        out=Path(args.out) if args.out else None,
        device=args.device,
        world_size=args.world_size,
        progress=_progress,
    )
    return _write(args, res, render_kernels)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from rightsize.profile.calibrate import calibrate_profiles, write_calibration
    from rightsize.profile.render import render_calibration

    calibration_out = ("--calibration-out", args.calibration_out, "the calibration file")
    check_outputs(args, args.profile, [calibration_out])
    doc = calibrate_profiles([Path(p) for p in args.profile], set(args.exclude_batch or []))
    write_calibration(doc, Path(args.calibration_out), force=args.force)
    if args.format == "json":
        emit(json.dumps(doc, indent=2, default=float), args)
    else:
        emit(render_calibration(doc, args.calibration_out), args)
    return 0


def _check_profile_outputs(args: argparse.Namespace) -> None:
    """Before anything is measured: refuse a --out the records cannot go to (not a regular
    file, not a profile, a link, read-only without --force) and an -o or --out that is one of
    the command's input files (a model file, a module, a tokenizer) or the other output."""
    from rightsize.profile.jsonl import check_records_out

    inputs = [
        getattr(args, "model", None),
        (getattr(args, "module", None) or "").rpartition(":")[0] or None,
        getattr(args, "tokenizer", None),
        getattr(args, "dataset", None),
    ]
    check_outputs(args, inputs, [("--out", args.out, "the profile records")])
    if args.out:
        check_records_out(Path(args.out))


def _with_metrics(
    func: Callable[[argparse.Namespace], int], command: str
) -> Callable[[argparse.Namespace], int]:
    """Run `func`, its outputs checked first, with the telemetry exporter serving while it
    runs when --metrics-port is given."""

    def run(args: argparse.Namespace) -> int:
        _check_profile_outputs(args)
        if getattr(args, "metrics_port", None) is None:
            return func(args)
        from rightsize.profile.metrics_export import MetricsExporter

        exporter = MetricsExporter(args.metrics_port, command).start()
        _progress(f"telemetry as Prometheus metrics on http://{exporter.addr}:{exporter.port}/metrics")
        try:
            return func(args)
        finally:
            exporter.stop()

    return run


def _profile_options(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options every `profile` command takes: output, the record file, resume, limits."""
    add_output_options(
        sp,
        ("table", "json", "markdown", "html"),
        force_help="append a new run to an --out that already holds records (never truncated); "
        "also replace a read-only -o or --out",
    )
    sp.add_argument("--out", metavar="PROFILE.jsonl", help="record every measurement here as it is made")
    sp.add_argument(
        "--resume",
        action="store_true",
        help="continue the run recorded in --out (same configuration): skip its finished points",
    )
    sp.add_argument("--timeout", type=_seconds, default=300.0, help="limit per measured run (default 300s)")
    sp.add_argument(
        "--metrics-port",
        type=int,
        metavar="N",
        help="serve the run's telemetry as Prometheus metrics (DCGM names) on port N while it runs",
    )
    return sp


def _register_train(padd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """`profile train`: a batch x sequence sweep of real training steps."""
    sp = padd("train", "time real training steps over a batch x sequence sweep (progressive load test)")
    sp.add_argument("--model", help="model preset (see `rightsize models`) or a ModelArch YAML/JSON file")
    sp.add_argument("--module", help="path/to/file.py:build_fn returning an nn.Module, or (module, loader)")
    sp.add_argument("--batch", type=_ints, default=[1, 2, 4, 8], help="batch sizes (default 1,2,4,8)")
    sp.add_argument("--seq", type=_ints, default=[512], help="sequence lengths (default 512)")
    sp.add_argument("--steps", type=int, default=5, help="timed steps per point (default 5)")
    sp.add_argument("--warmup", type=int, default=2, help="untimed warm-up steps per point (default 2)")
    sp.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    sp.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default="fp32")
    sp.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    sp.add_argument("--memory-limit", type=_bytes, help="CPU only: cap the worker's memory (e.g. 8GB)")
    sp.add_argument("--no-micro", action="store_true", help="skip the GEMM / bandwidth microbenchmarks")
    sp.set_defaults(func=cmd_train)


def _register_memory(padd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """`profile memory`: exact training memory on the meta device."""
    sp = padd("memory", "count training memory exactly with the real module on the meta device")
    sp.add_argument("--model", required=True, help="model preset or ModelArch YAML/JSON file")
    sp.add_argument("--seq", type=int, default=2048, help="sequence length (default 2048)")
    sp.add_argument("--micro-batch", type=int, default=1)
    sp.add_argument("--precision", choices=("bf16", "fp16", "fp32"), default="bf16")
    sp.add_argument("--device", choices=("meta", "cpu", "cuda"), default="meta")
    sp.add_argument("--no-flash", action="store_true", help="unfused attention (s x s scores kept)")
    sp.set_defaults(func=cmd_memory)


def _register_comms(padd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """`profile comms`: collectives over real process groups."""
    sp = padd("comms", "collective bandwidth and latency with real torch.distributed process groups")
    sp.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    sp.add_argument("--world-size", type=int, default=2)
    sp.add_argument("--sizes", type=_ints, help="message sizes in bytes (default 1 KiB x4 up to --max-bytes)")
    sp.add_argument("--max-bytes", type=_bytes, default=float(16 * 2**20))
    sp.add_argument(
        "--ops", help="comma-separated subset of all_reduce,all_gather,reduce_scatter,all_to_all,p2p"
    )
    sp.add_argument("--iters", type=int, default=5)
    sp.set_defaults(func=cmd_comms)


def _register_kernels(padd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """`profile kernels`: a measured kernel table."""
    sp = padd(
        "kernels", "measure a kernel table (GEMM, attention, all-reduce) for measured-kernel predictions"
    )
    sp.add_argument(
        "--accelerator", required=True, help="catalog id the table describes (see `rightsize catalog`)"
    )
    sp.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    sp.add_argument("--dtypes", default="bf16", help="GEMM dtypes, comma-separated: bf16,fp16,fp32")
    sp.add_argument("--m", type=_ints, default=[1, 16, 128, 512], help="GEMM rows (tokens)")
    sp.add_argument("--nk", type=_ints, default=[256, 1024], help="GEMM n and k values")
    sp.add_argument("--heads", type=int, default=8, help="query heads per GPU")
    sp.add_argument("--kv-heads", type=int, default=2, help="KV heads per GPU")
    sp.add_argument("--head-dim", type=int, default=64)
    sp.add_argument("--batch", type=_ints, default=[1, 4], help="attention batch sizes")
    sp.add_argument("--seq", type=_ints, default=[64, 256], help="attention sequence / context lengths")
    sp.add_argument(
        "--world-size", type=int, default=1, help="ranks for the all-reduce sweep (>= 2 to run it)"
    )
    sp.add_argument("--iters", type=int, default=3)
    sp.set_defaults(func=cmd_kernels)


def _register_calibrate(add: Callable[..., argparse.ArgumentParser]) -> None:
    """`calibrate`: fit the model's efficiencies to profiles."""
    sp = add("calibrate", "fit the performance model's efficiencies to profiles; write a calibration file")
    sp.add_argument("profile", nargs="+", help="profiles (JSON Lines) from `rightsize profile train|comms`")
    sp.add_argument(
        "--calibration-out",
        default="calibration.json",
        help="calibration file to write (default calibration.json)",
    )
    sp.add_argument(
        "--exclude-batch", type=_ints, help="batch sizes to leave out of the fit (to check prediction)"
    )
    sp.set_defaults(func=cmd_calibrate)


def register(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add `profile train|memory|comms|kernels|serve` and `calibrate` to the `rightsize` parser."""
    prof = sub.add_parser(
        "profile",
        help="measure a real workload (needs the profile extra: pip install 'rightsize[profile]')",
        description="Measure real workloads with PyTorch; results go to --out as JSON Lines as they are measured.",
    )
    psub = prof.add_subparsers(dest="profile_command", required=True, metavar="WHAT")

    def padd(name: str, help_: str) -> argparse.ArgumentParser:
        return _profile_options(psub.add_parser(name, help=help_, description=help_))

    from rightsize.cli.profile_serve_cmd import register_serve  # it reads this module's helpers

    for register_one in (
        _register_train,
        _register_memory,
        _register_comms,
        _register_kernels,
        register_serve,
    ):
        register_one(padd)
    for name, parser in psub.choices.items():
        parser.set_defaults(func=_with_metrics(parser.get_default("func"), f"profile {name}"))

    _register_calibrate(add)
