"""Dump SGLang's real `ServerArgs.add_cli_args` parser as a table.

Only sglang/srt/server_args.py and sglang/srt/arg_groups/arg_utils.py + argparse_actions.py run
as shipped; every other import is a permissive placeholder (they carry runtime helpers, not flags).
"""

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import json
import sys
import types

REAL = {"sglang.srt.server_args", "sglang.srt.arg_groups.arg_utils", "sglang.srt.arg_groups.argparse_actions"}
ROOT = sys.argv[1]


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything

    def __iter__(cls):
        return iter(())

    def __getitem__(cls, k):
        return Anything

    def __or__(cls, o):
        return Anything

    __ror__ = __or__

    def __add__(cls, o):
        return o

    __radd__ = __add__


class Anything(metaclass=_Meta):
    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Anything()

    def __call__(self, *a, **k):
        return Anything()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __getitem__(self, k):
        return Anything()


class Stub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name in REAL:
            return importlib.util.spec_from_file_location(name, f"{ROOT}/{name.replace('.', '/')}.py")
        if not name.startswith("sglang") and name.split(".")[0] in sys.stdlib_module_names:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        m = types.ModuleType(spec.name)
        m.__path__ = []
        m.__getattr__ = lambda n: (_ for _ in ()).throw(AttributeError(n)) if n.startswith("__") else Anything
        m.__version__ = "0"
        return m

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, Stub())
from sglang.srt.server_args import ServerArgs  # noqa: E402

p = argparse.ArgumentParser()
ServerArgs.add_cli_args(p)
rows = []
for a in p._actions:
    if not a.option_strings:
        continue
    kind = type(a).__name__
    t = getattr(a.type, "__name__", None) if a.type else None
    rows.append(
        {
            "flags": a.option_strings,
            "dest": a.dest,
            "action": kind,
            "type": t if t in ("int", "float", "str") else None,
            "nargs": a.nargs if isinstance(a.nargs, (int, str)) else None,
            "choices": sorted(str(c) for c in a.choices) if a.choices else None,
        }
    )
json.dump(rows, sys.stdout, indent=None)
