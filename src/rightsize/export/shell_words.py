"""Shell scripts built from words, never from templates with raw values pasted in.

A job script mixes fixed shell text (written here, in the exporters) with plan data (names,
paths, numbers, the frameworks' arguments). Plan data reaches the script only through:

- `word(text)`: one shell word, `shlex.quote`d; references to upper-case environment
  variables (`$CKPT_DIR`, `${DATA_PATH}`) are kept as `"${NAME}"` so the job's own settings
  expand, everything else (including `$(...)`, backticks, `${X:-...}`) is literal.
- `arg_words(entries)`: the frameworks' argument entries, which may be shell fragments
  (`--save "$CKPT_DIR"`, `--served-model-name 'x'`) or single words; each is split with
  `shlex` and every resulting word goes through `word`.
- `safe_token(text)`: a name for `#SBATCH --job-name=` or a path component: only
  `[A-Za-z0-9._-]`, no leading dot or dash, at most `TOKEN_MAX` characters.
- `comment(text)`: text for a `# ...` line with every control character (newline, carriage
  return, Unicode line separators) shown as an escape, so a comment cannot end early.
"""

from __future__ import annotations

import re
import shlex
import unicodedata

from rightsize.errors import BadInput

TOKEN_MAX = 64  # Slurm accepts longer job names, but squeue and file names stay readable
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_VAR = re.compile(r"\$(?:\{([A-Z_][A-Z0-9_]*)\}|([A-Z_][A-Z0-9_]*))")


def safe_token(text: str, fallback: str = "plan") -> str:
    """`text` with every character outside `[A-Za-z0-9._-]` replaced by `_`, no leading
    `.` or `-` (no hidden files, no options, never `..`), capped at `TOKEN_MAX`."""
    token = _UNSAFE.sub("_", text)
    token = re.sub(r"^[.-]+", lambda m: "_" * len(m.group(0)), token)[:TOKEN_MAX]
    return token or fallback


def comment(text: str) -> str:
    """`text` safe on one `#` line: control and format characters (Unicode categories Cc,
    Cf, Zl, Zp) shown as `\\xNN` / `\\uNNNN` escapes."""
    out = []
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ascii(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)


def comment_lines(lines: list[str]) -> list[str]:
    return ["# " + comment(line) if line else "#" for line in lines]


def word(text: str) -> str:
    """One shell word for `text`: quoted, upper-case variable references kept live."""
    if "\0" in text:
        raise BadInput(
            f"A value for the job script contains a NUL character: {comment(text)[:80]!r}.",
            "A shell script cannot carry a NUL byte (bash cuts the word there).",
            "Remove it from the spec's names.",
        )
    parts: list[str] = []
    pos = 0
    for m in _VAR.finditer(text):
        if m.start() > pos:
            parts.append(shlex.quote(text[pos : m.start()]))
        parts.append('"${' + (m.group(1) or m.group(2)) + '}"')
        pos = m.end()
    if pos < len(text) or not parts:
        parts.append(shlex.quote(text[pos:]))
    return "".join(parts)


def variables(text: str) -> set[str]:
    """The environment variables `word(text)` leaves for the shell to expand."""
    return {m.group(1) or m.group(2) for m in _VAR.finditer(text)}


def split_entry(entry: str) -> list[str]:
    """The words of one argument entry: a shell fragment is split as the shell would split
    it (quotes removed); text that is not valid shell (an unmatched quote) is one word."""
    try:
        return shlex.split(entry, comments=False, posix=True)
    except ValueError:
        return [entry]


def arg_words(entries: list[str]) -> list[str]:
    return [word(w) for e in entries for w in split_entry(e)]


def arg_variables(entries: list[str]) -> set[str]:
    return {v for e in entries for w in split_entry(e) for v in variables(w)}


def command(words: list[str], indent: str = "    ", width: int = 100) -> list[str]:
    """Already-quoted `words` as one command over several lines joined with `\\`: an option
    and its value stay on one line."""
    lines: list[str] = []
    cur = ""
    for w in words:
        starts_option = w.startswith("-") and cur != ""
        if cur and (len(cur) + 1 + len(w) > width or starts_option):
            lines.append(cur)
            cur = indent + w
        else:
            cur = f"{cur} {w}" if cur else w
    lines.append(cur)
    return [line + " \\" for line in lines[:-1]] + lines[-1:]
