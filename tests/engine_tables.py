"""An argparse parser rebuilt from a dumped engine argument table (tests/data/engine_args:
flags, action, type, choices, arity as the engine's own parser declares them)."""

from __future__ import annotations

import argparse
from typing import Any

TYPES = {"int": int, "float": float, "str": str}


def parser_from_rows(rows: list[dict[str, Any]]) -> argparse.ArgumentParser:
    """An argparse parser with the engine's flags, types, choices and arities."""
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for r in rows:
        flags, action = r["flags"], r.get("action", "_StoreAction")
        if action == "_HelpAction":
            continue
        if action in ("_StoreTrueAction", "_StoreFalseAction") or r.get("flag"):
            p.add_argument(*flags, dest=r.get("dest"), action="store_true")
        elif action == "_AppendAction":
            p.add_argument(*flags, dest=r["dest"], action="append", nargs=r["nargs"])
        elif action == "BooleanOptionalAction":
            p.add_argument(flags[0], dest=r["dest"], action=argparse.BooleanOptionalAction)
        else:
            typ = TYPES.get(r.get("type") or "str", str)
            kw: dict[str, Any] = {"type": typ}
            if r.get("choices"):
                kw["choices"] = [typ(c) if c != "None" else c for c in r["choices"]]
            if r.get("nargs") not in (None, 0):
                kw["nargs"] = r["nargs"]
            p.add_argument(*flags, dest=r.get("dest"), **kw)
    return p
