"""Errors a person can act on: what was asked, why it cannot be done, how to fix it.

`BadInput` maps to exit code 2 (the request is malformed), `Infeasible` to exit code 1
(the request is well formed but no configuration satisfies it). The CLI turns both into
messages without a traceback; anything else is a bug: exit code 3, a one-line message
with `BUG_REPORT`, and the traceback only with `--debug`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

BUG_REPORT = "please report it on the rightsize issue tracker with the command line and the spec"
"""Where an internal error should be reported (the CLI's exit-code-3 message)."""


class RightsizeError(Exception):
    """Base of user-facing errors. `exit_code` is what the CLI returns."""

    exit_code = 2

    def __init__(self, what: str, why: str = "", fix: str = "") -> None:
        self.what = what
        self.why = why
        self.fix = fix
        super().__init__(self.message())

    def message(self) -> str:
        lines = [self.what]
        if self.why:
            lines.append(f"  Why: {self.why}")
        if self.fix:
            lines.append(f"  To fix: {self.fix}")
        return "\n".join(lines)


class SpecNote(UserWarning):
    """Something the spec loader changed or assumed that the user should hear about (duplicates
    removed, ...); the CLI prints each on stderr as `rightsize: note: ...`."""


class BadInput(RightsizeError):
    """The request is malformed: unknown name, bad unit, inconsistent settings. Exit 2."""

    exit_code = 2


class Infeasible(RightsizeError):
    """The request is valid but cannot be met (memory, deadline, power). Exit 1."""

    exit_code = 1


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """A 'did you mean X?' hint for an unknown name, or '' when nothing is close."""
    close = difflib.get_close_matches(name.lower(), [c.lower() for c in choices], n=1, cutoff=0.5)
    if not close:
        return ""
    lookup = {c.lower(): c for c in choices}
    return f"did you mean {lookup[close[0]]}?"


def unknown_name(kind: str, name: str, choices: Iterable[str], listing_command: str) -> BadInput:
    """The standard error for an unknown catalog id or preset name."""
    choices = sorted(choices)
    hint = did_you_mean(name, choices)
    name = name if len(name) <= 80 else name[:77] + "..."
    fix = (hint[0].upper() + hint[1:] + " " if hint else "") + f"Run `{listing_command}` to list them."
    return BadInput(
        f"Unknown {kind} '{name}'.",
        f"Known {kind}s: {', '.join(choices)}.",
        fix,
    )
