"""Progress of a long fleet plan on stderr: only when stderr is a terminal, or when asked
(`RIGHTSIZE_PROGRESS=1`, what a `--progress` flag sets). Never on stdout, which carries the plan."""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

ENV = "RIGHTSIZE_PROGRESS"
EVERY_S = 0.5  # at most two lines a second


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            wanted = os.environ.get(ENV, "").strip().lower()
            enabled = wanted in ("1", "true", "yes") or (
                wanted not in ("0", "false", "no") and _is_tty(self.stream)
            )
        self.enabled = enabled
        self._last = 0.0
        self._t0 = time.perf_counter()

    def step(self, what: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self._last < EVERY_S:
            return
        self._last = now
        self.stream.write(f"rightsize fleet: {what} {done}/{total} ({now - self._t0:,.1f} s)\n")
        self.stream.flush()

    def note(self, what: str) -> None:
        if self.enabled:
            self.stream.write(f"rightsize fleet: {what} ({time.perf_counter() - self._t0:,.1f} s)\n")
            self.stream.flush()


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
