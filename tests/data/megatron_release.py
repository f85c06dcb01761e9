"""Copy Megatron-LM's argument code from a git clone of the pinned tag into tests/data, and
rebuild the flag table from that code's own parser.

Megatron-LM's `megatron/training` is on no package index: the megatron-core wheels and sdists
(0.13.0 to 0.16.1 checked, Nov 2026) carry `megatron/core` only, and there is no
`megatron-lm` package. So the files the tests run are copied from the release tag, byte for
byte (SOURCE.json records the commit and each file's SHA-256; the tests check them):

    git clone https://github.com/NVIDIA/Megatron-LM /tmp/Megatron-LM
    pip install --no-deps megatron-core==0.13.0   # megatron/core of the same tag
    python tests/data/megatron_release.py /tmp/Megatron-LM

The copies end in `.txt` (they are NVIDIA's code, BSD-3-Clause, kept out of this project's
linters); tests/test_megatron_release.py loads them as `megatron.training.*` modules. The flag
table (megatron_core_v0.13.0_arguments.json, for the checks that run without megatron-core)
is written from the real parser's actions, not read from the text.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

TAG = "core_v0.13.0"
COMMIT = "c550cf6c41c31cd3ec72e05c25ea0c979f2b6631"
FILES = (
    "megatron/training/arguments.py",
    "megatron/training/activations.py",
    "megatron/training/utils.py",
    "LICENSE",
)
HERE = Path(__file__).resolve().parent
OUT = HERE / f"megatron_lm_{TAG}"
TABLE = HERE / f"megatron_{TAG}_arguments.json"


def _git(clone: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True).stdout


def copy_release(clone: Path) -> dict[str, object]:
    commit = _git(clone, "rev-parse", f"{TAG}^{{commit}}").decode().strip()
    if commit != COMMIT:
        sys.exit(f"{TAG} is {commit} in {clone}, expected {COMMIT}")
    sums = {}
    for path in FILES:
        data = _git(clone, "show", f"{COMMIT}:{path}")
        dest = OUT / (path + ".txt")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        sums[path] = hashlib.sha256(data).hexdigest()
    source = {
        "repository": "https://github.com/NVIDIA/Megatron-LM",
        "tag": TAG,
        "commit": COMMIT,
        "copied": datetime.now(UTC).strftime("%Y-%m-%d"),
        "license": "BSD-3-Clause (LICENSE, copied with the files)",
        "sha256": sums,
        "megatron_core_wheel": "megatron-core==0.13.0 (PyPI): megatron/core of the same tag "
        "(its 291 .py files identical to the tag's, compared 2026-11-25)",
    }
    (OUT / "SOURCE.json").write_text(json.dumps(source, indent=1, sort_keys=True) + "\n")
    return source


def flag_table(parser: argparse.ArgumentParser) -> dict[str, dict[str, object]]:
    """Each option string: whether it takes a value, how many, its type (int/float) and choices
    (as the text a command line gives them)."""
    flags: dict[str, dict[str, object]] = {}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        for opt in action.option_strings:
            if not opt.startswith("--"):
                continue
            spec: dict[str, object] = {"value": action.nargs != 0}
            if action.type in (int, float):
                spec["type"] = action.type.__name__
            if action.nargs not in (None, 0):
                spec["nargs"] = action.nargs
            if action.choices is not None:
                spec["choices"] = [getattr(c, "name", str(c)) for c in action.choices]  # enums by name
            flags[opt] = spec
    return dict(sorted(flags.items()))


def main() -> None:
    clone = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/Megatron-LM")
    copy_release(clone)
    sys.path.insert(0, str(HERE.parent))
    from test_megatron_release import release  # the loader the tests use

    parser = release().add_megatron_arguments(argparse.ArgumentParser(allow_abbrev=False))
    table = {
        "source": f"github.com/NVIDIA/Megatron-LM tag {TAG} (commit {COMMIT}), megatron/training/arguments.py: "
        "the actions of its own parser (tests/data/megatron_release.py)",
        "flags": flag_table(parser),
    }
    TABLE.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
