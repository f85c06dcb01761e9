"""Dump sglang-router's real parser (`RouterArgs.add_cli_args`, what
`python -m sglang_router.launch_router` parses) as a table. The router's argument module runs as
shipped (its Rust extension loads on x86-64 Linux). Run:
PYTHONPATH=<unpacked sglang_router wheel> python derive_sglang_router.py OUT.json
"""

import argparse
import json
import pathlib
import sys

from sglang_router.router_args import RouterArgs

p = argparse.ArgumentParser()
RouterArgs.add_cli_args(p, use_router_prefix=False)
rows = []
for a in p._actions:
    if not a.option_strings:
        continue
    t = getattr(a.type, "__name__", None) if a.type else None
    rows.append(
        {
            "flags": a.option_strings,
            "dest": a.dest,
            "action": type(a).__name__,
            "type": t if t in ("int", "float", "str") else None,
            "nargs": a.nargs if isinstance(a.nargs, int | str) else None,
            "choices": sorted(str(c) for c in a.choices) if a.choices else None,
        }
    )
pathlib.Path(sys.argv[1]).write_text(json.dumps(rows))
