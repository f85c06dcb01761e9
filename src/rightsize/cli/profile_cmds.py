"""`rightsize profile ...` and `rightsize calibrate`: registered into the main parser by
`register`. Argument parsing only; the work is in `rightsize.profile` (torch is optional)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def register(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add the profiling subcommands to the `rightsize` parser (none yet)."""
