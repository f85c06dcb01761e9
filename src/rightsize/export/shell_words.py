"""Shell scripts built from words, never from templates with raw values pasted in.

A job script mixes fixed shell text (written here, in the exporters) with plan data (names,
paths, numbers, the frameworks' arguments). Plan data reaches the script only through:

- `word(text)`: one shell word, `shlex.quote`d (bash's `$'...'` with escapes when it holds
  a control character, so no script line breaks inside a word): nothing expands or runs.
- `arg_words(entries)`: the frameworks' argument entries, which are shell text
  (`--served-model-name 'x'`, `--save "$CKPT_DIR"`): split as the shell splits them, each
  word re-quoted; a `$NAME` / `${NAME}` in a live position (unquoted or double-quoted) is kept
  as `"${NAME}"` only for the job's own variables (`live_variable`), so `$(...)`, backticks,
  `${X:-...}` and any other `$` are literal text.
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
from rightsize.export.names import UNSAFE_CATEGORIES, one_line

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
    """`text` safe on one `#` line (`names.one_line`: every unsafe character an escape)."""
    return one_line(text)


def comment_lines(lines: list[str]) -> list[str]:
    return ["# " + comment(line) if line else "#" for line in lines]


def word(text: str) -> str:
    """One shell word whose value is exactly `text` (`shlex.quote`): nothing expands."""
    if "\0" in text:
        raise BadInput(
            f"A value for the job script contains a NUL character: {comment(text)[:80]!r}.",
            "A shell script cannot carry a NUL byte (bash cuts the word there).",
            "Remove it from the spec's names.",
        )
    if any(_unsafe(ch) for ch in text):
        return _ansi_c(text)
    return shlex.quote(text)


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in UNSAFE_CATEGORIES


def _ansi_c(text: str) -> str:
    """bash's `$'...'` quoting with every control or format character as an escape, so no
    line of the script holds a line break or an invisible character from plan data."""
    out = []
    for ch in text:
        if ch in "\\'":
            out.append("\\" + ch)
        elif _unsafe(ch):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x80 else f"\\u{ord(ch):04x}" if ord(ch) < 0x10000
                       else f"\\U{ord(ch):08x}")  # fmt: skip
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def live_variable(name: str) -> bool:
    """The environment variables a framework argument may leave for the job to expand: the
    ones the job scripts set or require, and paths the user sets (`*_PATH`, `*_DIR`, ...)."""
    return name in LIVE_VARIABLES or bool(_LIVE_SUFFIX.fullmatch(name))


LIVE_VARIABLES = frozenset({"CKPT_DIR", "DATA_PATH", "MEGATRON_DIR", "PORT", "MODEL", "MASTER_ADDR",
                            "MASTER_PORT", "EXIT_MIN", "HOME", "PWD", "SLURM_JOB_ID", "SLURM_ARRAY_TASK_ID",
                            "SLURM_SUBMIT_DIR"})  # fmt: skip
_LIVE_SUFFIX = re.compile(r"[A-Z][A-Z0-9_]*_(PATH|DIR|FILE|MODEL|PREFIX)")

Chars = list[tuple[str, bool]]  # each character of a word, and whether the shell would expand it


def _split(entry: str) -> list[Chars] | None:
    """The words of a shell fragment as the shell splits them, each character marked live
    (unquoted or in double quotes) or literal (single quotes, backslash); None when the
    quotes do not close."""
    words: list[Chars] = []
    cur: Chars | None = None
    state = ""
    i = 0
    while i < len(entry):
        c = entry[i]
        nxt = entry[i + 1] if i + 1 < len(entry) else ""
        if state == "'":
            state = "" if c == "'" else state
            if c != "'":
                cur = (cur or []) + [(c, False)]
        elif state == '"':
            if c == '"':
                state = ""
            elif c == "\\" and nxt in ("$", "`", '"', "\\"):
                cur, i = (cur or []) + [(nxt, False)], i + 1
            else:
                cur = (cur or []) + [(c, True)]
        elif c in " \t\n":
            if cur is not None:
                words.append(cur)
            cur = None
        elif c in "'\"":
            state, cur = c, cur or []
        elif c == "\\" and nxt:
            cur, i = (cur or []) + [(nxt, False)], i + 1
        else:
            cur = (cur or []) + [(c, True)]
        i += 1
    if state:
        return None
    return words + ([cur] if cur is not None else [])


def _fragment_word(chars: Chars) -> tuple[str, set[str]]:
    """One word for the shell: literal text quoted, live `$NAME`/`${NAME}` of an allowed
    variable kept as `"${NAME}"`; the variables kept."""
    text = "".join(c for c, _ in chars)
    parts: list[str] = []
    kept: set[str] = set()
    pos = 0
    for m in _VAR.finditer(text):
        name = m.group(1) or m.group(2)
        if not chars[m.start()][1] or not live_variable(name):
            continue
        if m.start() > pos:
            parts.append(word(text[pos : m.start()]))
        parts.append('"${' + name + '}"')
        kept.add(name)
        pos = m.end()
    if pos < len(text) or not parts:
        parts.append(word(text[pos:]))
    return "".join(parts), kept


def arg_words(entries: list[str]) -> list[str]:
    """Words for the frameworks' argument entries, which are shell text (`--flag 'value'`,
    `--save "$CKPT_DIR"`): split as the shell splits them, every word re-quoted, only the
    allowed variables in live (unquoted or double-quoted) positions left to expand. An
    entry whose quotes do not close is one literal word."""
    out: list[str] = []
    for e in entries:
        split = _split(e)
        out += [word(e)] if split is None else [_fragment_word(w)[0] for w in split]
    return out


def arg_variables(entries: list[str]) -> set[str]:
    """The variables `arg_words` leaves for the job to expand."""
    kept: set[str] = set()
    for e in entries:
        for w in _split(e) or []:
            kept |= _fragment_word(w)[1]
    return kept


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
