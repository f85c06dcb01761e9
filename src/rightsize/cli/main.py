"""`rightsize` command line: parse arguments, call the library, turn user errors into
messages and exit codes (2 bad input, 1 infeasible). Holds no logic of its own."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rightsize._version import __version__
from rightsize.cli.monitor_cmd import register as register_monitor_command
from rightsize.cli.profile_cmds import register as register_profile_commands
from rightsize.errors import BadInput, RightsizeError
from rightsize.report.render import FORMATS


def _emit(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")


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

    run = run_estimate if estimate else run_plan
    with _spinner("planning" if not estimate else "estimating"):
        result = run(args.spec, calibration=args.calibration)
    if args.calibration and hasattr(result, "extra"):
        from rightsize.profile.calibrate import compare_calibrated

        # default against calibrated: the same search without and with the overrides
        with _spinner("planning without the calibration"):
            default = run(args.spec)
        result.extra["calibration"] = compare_calibrated(default, result, args.calibration)
    _emit(render(result, args.format, "Estimate" if estimate else "Plan"), args.output)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from rightsize.report.render import render
    from rightsize.validate.cases import bundled_paths
    from rightsize.validate.run import validate_paths

    paths = [Path(p) for p in args.csv] if args.csv else bundled_paths()
    if args.holdout:
        paths += bundled_paths(holdout=True)
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import Progress

        from rightsize.validate.cases import read_cases

        total = sum(len(read_cases(p)) for p in paths)
        with Progress(console=Console(file=sys.stderr), transient=True) as bar:
            task = bar.add_task("validating", total=total)

            def progress(case_id: str) -> None:
                bar.update(task, advance=1, description=f"validating {case_id[:40]}")

            result = validate_paths(paths, progress)
    else:
        result = validate_paths(paths)
    _emit(render(result, args.format, "Validation"), args.output)
    return 0


def cmd_catalog(args: argparse.Namespace) -> int:
    from rightsize.report.catalog_text import catalog_dict, render_catalog

    _emit(_json(catalog_dict()) if args.format == "json" else render_catalog(), args.output)
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from rightsize.report.catalog_text import models_dict, render_models

    _emit(_json(models_dict()) if args.format == "json" else render_models(), args.output)
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from rightsize.spec import spec_json_schema

    _emit(_json(spec_json_schema()), args.output)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rightsize",
        description="Right-size AI infrastructure: which accelerators, how many, how parallelised.",
    )
    p.add_argument("--version", action="version", version=f"rightsize {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_: str, fmt: tuple[str, ...] = ("table", "json")) -> argparse.ArgumentParser:
        """A subcommand with --format (choices `fmt`, the first is the default) and -o."""
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--format", choices=fmt, default=fmt[0], help="output format (default: %(default)s)")
        sp.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
        return sp

    sp = add("plan", "search accelerators, counts and parallel layouts for a workload spec", FORMATS)
    sp.add_argument("spec", help="workload spec (YAML); see `rightsize schema` and examples/")
    sp.add_argument("--calibration", metavar="FILE", help="calibration file from `rightsize calibrate`")
    sp.set_defaults(func=cmd_plan)
    sp = add("estimate", "evaluate one configuration (fixed accelerator and GPU count)", FORMATS)
    sp.add_argument("spec", help="workload spec (YAML) with targets.gpus and one accelerator")
    sp.add_argument("--calibration", metavar="FILE", help="calibration file from `rightsize calibrate`")
    sp.set_defaults(func=lambda a: cmd_plan(a, estimate=True))
    sp = add("validate", "prediction error against published runs", FORMATS)
    sp.add_argument("csv", nargs="*", help="CSV files of cases (default: the bundled published runs)")
    sp.add_argument("--holdout", action="store_true", help="also check the held-out published runs")
    sp.set_defaults(func=cmd_validate)
    add("catalog", "list accelerators and node types with their sourced figures").set_defaults(
        func=cmd_catalog
    )
    add("models", "list model presets").set_defaults(func=cmd_models)
    add("schema", "print the JSON Schema of the workload spec", fmt=("json",)).set_defaults(func=cmd_schema)
    register_profile_commands(sub, add)
    register_monitor_command(sub, add)
    from rightsize.cli.export_cmd import register as register_export

    register_export(sub, add)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except RightsizeError as exc:
        kind = "infeasible" if exc.exit_code == 1 else "error"
        sys.stderr.write(f"rightsize: {kind}: {exc.message()}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("rightsize: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

__all__ = ["BadInput", "build_parser", "main"]
