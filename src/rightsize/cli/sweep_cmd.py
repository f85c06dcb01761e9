"""`rightsize sweep SWEEP.yaml [--engine local|dask] [--address tcp://host:8786] [--workers N]`:
argument parsing only; the logic is in `rightsize.sweep`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from rightsize.cli.output_args import check_outputs, emit


def cmd_sweep(args: argparse.Namespace) -> int:
    from rightsize.report.render import render
    from rightsize.sweep import run_sweep

    check_outputs(args, [args.sweep])
    if args.address and args.engine != "dask":
        from rightsize.errors import BadInput

        raise BadInput("--address names a Dask scheduler; it needs --engine dask.", fix="Add --engine dask.")

    def progress(done: int, total: int) -> None:
        if args.progress:
            sys.stderr.write(f"rightsize sweep: {done}/{total} scenarios\n")
            sys.stderr.flush()

    result = run_sweep(args.sweep, args.engine, args.address, args.workers, progress)
    emit(render(result, args.format, "Sweep"), args)
    return 0 if any(r["status"] == "ok" for r in result.rows) else 1


def register(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add `sweep` to the `rightsize` parser."""
    from rightsize.report.render import FORMATS

    sp = add(
        "sweep",
        "plan one spec under many variations (grid, scenarios, seeded samples), here or on Dask",
        FORMATS,
    )
    sp.add_argument("sweep", help="sweep spec (YAML, kind: sweep) naming its base spec")
    sp.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: one process; dask: dask.distributed (a local cluster, or --address)",
    )
    sp.add_argument("--address", metavar="URL", help="a Dask scheduler, e.g. tcp://scheduler:8786")
    sp.add_argument(
        "--workers", type=int, metavar="N", help="--engine dask without --address: processes (default 2)"
    )
    sp.add_argument("--progress", action="store_true", help="scenarios done, on stderr")
    sp.set_defaults(func=cmd_sweep)
