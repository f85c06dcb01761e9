"""`rightsize ui [SPEC] [--port N] [--no-browser]`: argument parsing only (the app loads when run)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def cmd_ui(args: argparse.Namespace) -> int:
    from rightsize.ui.server import serve

    serve(args.spec, args.port, open_browser=not args.no_browser)
    return 0


def register(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    help_ = "a local planner in the browser: edit a spec, re-plan live, compare and share what-ifs"
    sp = sub.add_parser("ui", help=help_, description=help_ + ". It listens on 127.0.0.1 only.")
    sp.add_argument(
        "spec", nargs="?", help="workload or fleet spec (YAML) to start from (default: a small starter)"
    )
    sp.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default: a free one)")
    sp.add_argument(
        "--no-browser", action="store_true", help="print the address instead of opening a browser"
    )
    sp.set_defaults(func=cmd_ui)
