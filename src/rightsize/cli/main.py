"""`rightsize` command line: parse arguments, call the library, turn user errors into
messages and exit codes (0 success, 1 infeasible, 2 bad input, 3 internal error). Holds no
logic of its own."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rightsize._version import __version__
from rightsize.cli.output_args import add_output_options, check_outputs, emit, resolve_format
from rightsize.errors import BUG_REPORT, BadInput, RightsizeError, SpecNote
from rightsize.report.render import FORMATS

EXIT_CODES_HELP = """exit codes:
  0  success
  1  infeasible: the request is valid but no configuration meets it (the message says
     the smallest change that would); `profile serve`: the SLO was not met
  2  bad input: a malformed spec, argument or file (the message names the field)
  3  internal error: a bug in rightsize (one line; --debug shows the traceback)"""


@contextmanager
def _spinner(what: str) -> Iterator[None]:
    """A spinner on stderr while long work runs, only when stderr is a terminal."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(file=sys.stderr).status(f"{what}...", spinner="dots"):
        yield


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, default=float)


def cmd_plan(args: argparse.Namespace, estimate: bool = False) -> int:
    from rightsize.api import estimate as run_estimate
    from rightsize.api import plan as run_plan
    from rightsize.report.render import render

    check_outputs(args, [args.spec, args.calibration, args.prices])
    if getattr(args, "progress", None) is not None:  # what rightsize.fleet.progress reads
        os.environ["RIGHTSIZE_PROGRESS"] = "1" if args.progress else "0"
    run = run_estimate if estimate else run_plan
    with _spinner("planning" if not estimate else "estimating"):
        result = run(args.spec, calibration=args.calibration, prices=args.prices)
    if args.calibration and hasattr(result, "extra"):
        from rightsize.profile.calibrate import compare_calibrated

        # default against calibrated: the same search without and with the overrides
        with _spinner("planning without the calibration"):
            default = run(args.spec)
        result.extra["calibration"] = compare_calibrated(default, result, args.calibration)
    emit(render(result, args.format, "Estimate" if estimate else "Plan"), args)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from rightsize.report.render import render
    from rightsize.validate.cases import bundled_paths
    from rightsize.validate.run import validate_paths

    check_outputs(args, [*(args.csv or []), *(getattr(args, "kernels", None) or [])])
    paths = [Path(p) for p in args.csv] if args.csv else bundled_paths()
    if getattr(args, "all", False):  # every bundled set
        for name in _VALIDATE_SETS:
            setattr(args, name, True)
    if args.holdout:
        paths += bundled_paths(holdout=True)
    if getattr(args, "mechanisms", False):
        from rightsize.validate.mechanism_cases import bundled_path

        paths.append(bundled_path())
    if getattr(args, "more", False):
        from rightsize.validate.cases import more_paths

        paths += more_paths()
    if getattr(args, "stacks", False):
        from rightsize.validate.cases import stacks_paths

        paths += stacks_paths()
    if getattr(args, "families", False):
        from rightsize.validate.families import family_paths

        paths += family_paths()
    if getattr(args, "engines", False):
        from rightsize.validate.cases import serving_public_paths

        paths += serving_public_paths()
    from rightsize.perf.kernels.table import read_table

    tables = [read_table(Path(p)) for p in (getattr(args, "kernels", None) or [])]
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import Progress

        from rightsize.validate.kinds import case_count

        total = sum(case_count(p) for p in paths)
        with Progress(console=Console(file=sys.stderr), transient=True) as bar:
            task = bar.add_task("validating", total=total)

            def progress(case_id: str) -> None:
                bar.update(task, advance=1, description=f"validating {case_id[:40]}")

            result = validate_paths(paths, progress, tables)
    else:
        result = validate_paths(paths, kernel_tables=tables)
    emit(render(result, args.format, "Validation"), args)
    return 0


def cmd_catalog(args: argparse.Namespace) -> int:
    from rightsize.report.catalog_text import catalog_dict, render_catalog

    emit(_json(catalog_dict()) if args.format == "json" else render_catalog(), args)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from rightsize.report.catalog_text import models_dict, render_models

    emit(_json(models_dict()) if args.format == "json" else render_models(), args)
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from rightsize.spec import spec_json_schema

    emit(_json(spec_json_schema()), args)
    return 0


_PRICES_HELP = (
    "your negotiated prices (YAML, the shape of the spec's `prices:`, e.g. "
    "`h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}`), merged over the spec's and the catalog's"
)


# `rightsize validate`: the bundled sets beyond the public rows, each its own flag (--all: every one).
_VALIDATE_SETS = {
    "holdout": "also check the held-out published runs",
    "all": "check every bundled set: public, held-out, families, more, stacks, engines and mechanisms",
    "mechanisms": "also check single serving mechanisms against their published figures (speculative acceptance)",
    "families": "also check the per-family published runs (TPU, Gaudi, Trainium, ROCm, Blackwell)",
    "more": "also check more published training runs (MoE pre-training, torchtitan 2025), reported as their own set",
    "stacks": "also check other stacks' training runs (MaxText TPU v5e/v5p, torchtitan Dec 2024), reported as their own set",
    "engines": "also check the engine-release serving runs (TensorRT-LLM v0.6.1 / v0.8.0 tables: serving_public.csv)",
}


def _validate_options(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("csv", nargs="*", help="CSV files of cases (default: the bundled published runs)")
    for name, help_ in _VALIDATE_SETS.items():
        sp.add_argument(f"--{name}", action="store_true", help=help_)
    sp.add_argument(
        "--kernels",
        metavar="FILE",
        action="append",
        help="measured kernel table (from `rightsize profile kernels`) for serving rows on its accelerator; repeatable",
    )
    sp.set_defaults(func=cmd_validate)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; given the `command` a line names, other commands' modules stay unloaded."""
    p = argparse.ArgumentParser(
        prog="rightsize",
        description="Right-size AI infrastructure: which accelerators, how many, how parallelised.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"rightsize {__version__}")
    p.add_argument(
        "--debug", action="store_true", help="show the traceback of an internal error (anywhere on the line)"
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_: str, fmt: tuple[str, ...] = ("table", "json")) -> argparse.ArgumentParser:
        """A subcommand with --format (choices `fmt`; default: -o's extension, else the first),
        -o and --force."""
        sp = sub.add_parser(
            name,
            help=help_,
            description=help_,
            epilog=EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add_output_options(sp, fmt)
        return sp

    sp = add("plan", "search accelerators, counts and parallel layouts for a workload spec", FORMATS)
    sp.add_argument("spec", help="workload spec (YAML); see `rightsize schema` and examples/")
    sp.add_argument("--calibration", metavar="FILE", help="calibration file from `rightsize calibrate`")
    sp.add_argument("--prices", metavar="FILE", help=_PRICES_HELP)
    sp.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a fleet plan's progress on stderr (default: only when stderr is a terminal); never on stdout",
    )
    sp.set_defaults(func=cmd_plan)
    sp = add("estimate", "evaluate one configuration (fixed accelerator and GPU count)", FORMATS)
    sp.add_argument("spec", help="workload spec (YAML) with targets.gpus and one accelerator")
    sp.add_argument("--calibration", metavar="FILE", help="calibration file from `rightsize calibrate`")
    sp.add_argument("--prices", metavar="FILE", help=_PRICES_HELP)
    sp.set_defaults(func=lambda a: cmd_plan(a, estimate=True))
    _validate_options(add("validate", "prediction error against published runs", FORMATS))
    add("catalog", "list accelerators and node types with their sourced figures").set_defaults(
        func=cmd_catalog
    )
    add("models", "list model presets").set_defaults(func=cmd_models)
    add("schema", "print the JSON Schema of the workload spec", fmt=("json",)).set_defaults(func=cmd_schema)
    _register_extensions(sub, add, command)
    return p


# Commands whose modules (and what they import: torch, the exporters, the monitor) load only
# when the command line names one of them, or asks for the whole help; in file order.
EXTENSIONS = {
    "profile": "rightsize.cli.profile_cmds",
    "calibrate": "rightsize.cli.profile_cmds",
    "monitor": "rightsize.cli.monitor_cmd",
    "export": "rightsize.cli.export_cmd",
    "sweep": "rightsize.cli.sweep_cmd",
    "ui": "rightsize.ui.command",
}


def _register_extensions(sub: Any, add: Any, command: str | None) -> None:
    """Register the extension commands: each module's `register(sub, add)` when `command`
    is one of them or unknown (None), else a bare entry per name, which argparse lists in
    its 'invalid choice' message but never parses in this run."""
    if command is None or command in EXTENSIONS:
        for module in dict.fromkeys(EXTENSIONS.values()):
            importlib.import_module(module).register(sub, add)
        return
    for name in EXTENSIONS:
        sub.add_parser(name)


def _command_of(argv: Sequence[str]) -> str | None:
    """The command the line names (its first word that is not an option), None if none."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (0 ok, 1 infeasible, 2 bad input, 3 internal error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug is accepted anywhere on the line (before or after the command)
    debug = "--debug" in argv or os.environ.get("RIGHTSIZE_DEBUG", "") not in ("", "0")
    argv = [arg for arg in argv if arg != "--debug"]
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    resolve_format(args)
    try:
        code: int = _run_with_notes(args)
    except RightsizeError as exc:
        kind = "infeasible" if exc.exit_code == 1 else "error"
        sys.stderr.write(f"rightsize: {kind}: {exc.message()}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("rightsize: interrupted\n")
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except Exception as exc:  # a bug: one line (and where to report it), the traceback on request
        return _internal_error(exc, debug)
    return code


def _run_with_notes(args: argparse.Namespace) -> int:
    """Run the command; notes the spec loader raised (duplicates removed, ...) go to stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpecNote)
        try:
            return int(args.func(args))
        finally:
            seen: set[str] = set()
            for item in caught:
                text = str(item.message)
                if isinstance(item.message, SpecNote) and text not in seen:
                    seen.add(text)
                    sys.stderr.write(f"rightsize: note: {text}\n")


def _internal_error(exc: BaseException, debug: bool) -> int:
    if debug:
        traceback.print_exc(file=sys.stderr)
    detail = " ".join(str(exc).split())
    detail = detail if len(detail) <= 160 else detail[:157] + "..."
    sys.stderr.write(
        f"rightsize: internal error: {type(exc).__name__}" + (f": {detail}" if detail else "") + "\n"
        f"  This is a bug in rightsize {__version__}, not in your input; {BUG_REPORT}"
        + ("" if debug else " (rerun with --debug for the traceback)")
        + ".\n"
    )
    return 3


def _quiet_stdout() -> None:
    """After a closed pipe (`rightsize ... | head`), send what is left to /dev/null, silently."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

__all__ = ["BadInput", "build_parser", "main"]
