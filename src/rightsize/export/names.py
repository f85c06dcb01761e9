"""The one place that decides how a user string (a plan, model or workload name) is written
into an exported file, for each target language. Every exporter goes through these; none
pastes a name into a template.

- `one_line`: text for a comment or a one-line directive (no line break, no control
  character, no bidirectional override can end the line or hide code).
- `shell_word`, `shell_args`, `ShellExpr`, `argv`: POSIX shell words (`shlex.quote`) and
  argument vectors.
- `plain_name`: a name safe as a shell word, file name and Slurm job name without quoting.
- `python_literal`: a Python literal (`repr` of a checked value).
- `toml_string`: a TOML basic string.
- `promql_string`: a PromQL string literal (label matcher value).
- `k8s_name`, `label_value`: Kubernetes object names and label values.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rightsize.errors import BadInput

# Unicode categories never written raw into a generated file: control (Cc: NUL, newline,
# carriage return, escape...), format (Cf: bidirectional overrides, zero-width joiners),
# surrogates (Cs), private use (Co), unassigned (Cn: U+FFFE/U+FFFF, which YAML rejects) and
# the line and paragraph separators (Zl U+2028, Zp U+2029, which Python and JavaScript
# treat as line breaks).
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _escape_char(c: str) -> str:
    n = ord(c)
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def one_line(text: str) -> str:
    """`text` on one line with nothing invisible: every character of an unsafe Unicode
    category (`UNSAFE_CATEGORIES`) becomes a visible `\\xHH` / `\\uHHHH` escape. For comment
    lines in shell, Python, TOML and YAML (a line break there would end the comment and start
    a line of code; TOML forbids control characters in comments, YAML anything unprintable)
    and for one-line directives such as `#SBATCH` (read up to the end of the line)."""
    return "".join(_escape_char(c) if unicodedata.category(c) in UNSAFE_CATEGORIES else c for c in text)


HASH_LEN = 8  # hex digits of SHA-256 added to a name that had to change


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LEN]


# --- POSIX shell -------------------------------------------------------------------------


def shell_word(text: str) -> str:
    """One shell word whose value is exactly `text`: `shlex.quote` (single quotes, with `'`
    written as `'"'"'`; POSIX Shell Command Language 2.2.2: nothing is special inside single
    quotes, newlines included). Nothing in `text` is expanded or executed."""
    return shlex.quote(text)


_SHELL_EXPR = re.compile(r"[A-Za-z0-9_$(){}:/.+ =-]*")


@dataclass(frozen=True)
class ShellExpr:
    """A shell fragment the exporter's own code writes (never a plan string) that must expand
    when the script runs, such as `$CKPT_DIR` or `$((8000 + SLURM_ARRAY_TASK_ID))`. Written
    inside double quotes (expands, never splits into several words); it may not hold a double
    quote, backslash or backtick, so it cannot close its quotes."""

    text: str

    def __post_init__(self) -> None:
        if not _SHELL_EXPR.fullmatch(self.text):
            raise ValueError(f"not a code-made shell expression: {self.text!r}")

    def word(self) -> str:
        return f'"{self.text}"'


ArgValue = str | int | float | ShellExpr | None
Arg = tuple[str, ArgValue]
_FLAG = re.compile(r"--?[A-Za-z0-9][A-Za-z0-9._-]*")


def _value_word(value: str | int | float | ShellExpr) -> str:
    if isinstance(value, ShellExpr):
        return value.word()
    return shell_word(str(value))


def shell_args(args: Iterable[Arg]) -> list[str]:
    """Command-line arguments as shell text, one entry per (flag, value): `--flag` alone
    (value None) or `--flag WORD`, WORD the value through `shell_word` (or a `ShellExpr` in
    double quotes). Join the entries with spaces or `" \\\\\\n    "` (continued lines); every
    entry is complete shell text, so no joining can change what a value means."""
    out = []
    for flag, value in args:
        if not _FLAG.fullmatch(flag):
            raise ValueError(f"not a command-line flag: {flag!r}")
        out.append(flag if value is None else f"{flag} {_value_word(value)}")
    return out


def argv(args: Iterable[Arg]) -> list[str]:
    """The same arguments as an argument vector (Kubernetes `args`, `subprocess`): no shell
    reads them, so values stay as they are; a `ShellExpr` cannot appear (nothing expands it)."""
    out: list[str] = []
    for flag, value in args:
        if isinstance(value, ShellExpr):
            raise ValueError(f"{flag}: a shell expression in an argument vector")
        out += [flag] if value is None else [flag, str(value)]
    return out


PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def plain_name(text: str, max_len: int = 64, what: str = "name") -> str:
    """A name of ASCII letters, digits, `.`, `_` and `-` only, starting with a letter or digit:
    a shell word, a file or folder name and a Slurm job name as it is (nothing to quote, no
    `/`, no `..`). Kept when already so (and within `max_len`), else slugged and given `-` +
    8 hex digits of its SHA-256 like `k8s_name` (two names never collide). Refused (BadInput)
    when nothing of it is a letter or digit."""
    if len(text) <= max_len and PLAIN_NAME.fullmatch(text) and ".." not in text:
        return text
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-_")
    if not slug:
        raise BadInput(
            f"The {what} {one_line(text)[:80]!r} has no ASCII letter or digit.",
            "Job, file and folder names are made of letters, digits, '.', '_' and '-'.",
            f"Give the {what} at least one ASCII letter or digit.",
        )
    return f"{slug[: max_len - HASH_LEN - 1].rstrip('-_')}-{_short_hash(text)}"


# --- Python and TOML ---------------------------------------------------------------------


def python_literal(value: str | int | float | bool | None) -> str:
    """A Python literal that evaluates to `value`: `repr` of a str, int, finite float, bool or
    None (Python Language Reference 2.4, literals; `repr` of a str escapes quotes, backslashes
    and every unprintable character, so the literal is one string token whatever it holds)."""
    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return repr(value)
    raise ValueError(f"not a plain literal value: {value!r}")


_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(text: str) -> str:
    """A TOML basic string whose value is `text` (TOML v1.0.0, "String": `"` and `\\` escaped;
    the control characters U+0000-U+001F and U+007F escaped, as `\\uXXXX` where TOML has no
    short form). Lone surrogates are refused: TOML holds Unicode scalar values only."""
    out = []
    for c in text:
        n = ord(c)
        if c in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[c])
        elif n < 0x20 or n == 0x7F:
            out.append(f"\\u{n:04X}")
        elif 0xD800 <= n <= 0xDFFF:
            raise ValueError("a lone surrogate has no TOML form")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


# --- PromQL ------------------------------------------------------------------------------

_PROMQL_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def promql_string(text: str) -> str:
    """A PromQL double-quoted string literal whose value is `text`, for label matchers such as
    `{model_name=...}` (Prometheus docs, "Querying basics: String literals": Go escaping rules;
    a raw newline ends the lexer's string, so `\\`, `"` and line breaks are escaped, every
    other control or invisible character as `\\uXXXX`). The same literal serves promtool's
    `input_series` selectors (same lexer)."""
    out = []
    for c in text:
        if c in _PROMQL_ESCAPES:
            out.append(_PROMQL_ESCAPES[c])
        elif unicodedata.category(c) in UNSAFE_CATEGORIES:
            if 0xD800 <= ord(c) <= 0xDFFF:
                raise ValueError("a lone surrogate has no PromQL form")
            out.append(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


# --- Kubernetes --------------------------------------------------------------------------

DNS_LABEL_MAX = 63
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def k8s_name(text: str, max_len: int = DNS_LABEL_MAX, what: str = "name") -> str:
    """A Kubernetes object name made from `text`, deterministically: an RFC 1035 label
    (Kubernetes docs, "Object Names and IDs": lower-case `a-z`, `0-9` and `-`, starting with a
    letter, ending with a letter or digit, at most 63 characters; valid as a DNS-1123 label
    and subdomain too, so for every kind of object, Services included). A name already valid
    (and within `max_len`) is kept; any other is slugged (runs of other characters become `-`)
    and given `-` + the first 8 hex digits of its SHA-256, so two different names never get
    the same object name. Refused (BadInput) when nothing of it is a letter or digit."""
    if len(text) <= max_len and DNS_1035.fullmatch(text):
        return text
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if not slug:
        raise BadInput(
            f"The {what} {one_line(text)[:80]!r} cannot be made a Kubernetes name.",
            "Kubernetes object names are RFC 1035 labels (a-z, 0-9 and '-', starting with a letter, "
            "at most 63 characters); this one has no ASCII letter or digit to keep.",
            f"Give the {what} at least one ASCII letter or digit.",
        )
    if not slug[0].isalpha():
        slug = "n-" + slug
    keep = max_len - HASH_LEN - 1
    return f"{slug[:keep].rstrip('-')}-{_short_hash(text)}"


def label_value(text: str, what: str = "label value") -> str:
    """A Kubernetes label value from `text` (docs, "Labels and Selectors": at most 63
    characters, empty or starting and ending with an alphanumeric character, with `-`, `_`,
    `.` and alphanumerics between): kept when valid, else `k8s_name(text)`."""
    if len(text) <= DNS_LABEL_MAX and LABEL_VALUE.fullmatch(text):
        return text
    return k8s_name(text, what=what)


_QUALIFIED = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)


def qualified_name(text: str, what: str) -> str:
    """A label key or resource name (`prefix/name`: an optional DNS subdomain prefix of at
    most 253 characters, a name of at most 63 as for label values), checked, never rewritten:
    a key means something to the cluster, so a wrong one is refused (BadInput)."""
    prefix, _, name = text.rpartition("/")
    if _QUALIFIED.fullmatch(text) and len(name) <= DNS_LABEL_MAX and len(prefix) <= 253:
        return text
    raise BadInput(
        f"The {what} {one_line(text)[:80]!r} is not a valid Kubernetes qualified name.",
        "Label keys and resource names are `prefix/name`: an optional DNS subdomain prefix, then at most "
        "63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit.",
        f"Use a valid {what} (for example `nvidia.com/gpu`).",
    )


def node_label(text: str) -> tuple[str, str]:
    """A user's `KEY=VALUE` node label, both parts checked and never rewritten: a label selects
    real nodes, so one that is not valid Kubernetes is refused (BadInput), not repaired."""
    key, sep, value = text.partition("=")
    if not sep:
        raise BadInput(
            f"--node-label {one_line(text)[:80]!r} has no '='.",
            "A node label is KEY=VALUE, as `kubectl get nodes --show-labels` lists them.",
            "Use e.g. --node-label node.kubernetes.io/instance-type=p5.48xlarge.",
        )
    qualified_name(key, "node label key")
    if len(value) > DNS_LABEL_MAX or not LABEL_VALUE.fullmatch(value):
        raise BadInput(
            f"--node-label {one_line(key)[:80]}: the value {one_line(value)[:80]!r} is not a valid label value.",
            "Label values are at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter "
            "or digit (or empty).",
            "Give the value exactly as your nodes carry it.",
        )
    return key, value


def choice(text: str, allowed: Sequence[str], what: str) -> str:
    """`text` when it is one of `allowed` (an enumerated field), else BadInput listing them."""
    if text in allowed:
        return text
    raise BadInput(
        f"The {what} {one_line(str(text))[:80]!r} is not one of {', '.join(allowed)}.",
        f"The {what} is an enumerated field of the target's API.",
        f"Use one of {', '.join(allowed)}.",
    )
