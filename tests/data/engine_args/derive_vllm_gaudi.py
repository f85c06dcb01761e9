"""Dump the `vllm serve` parser of Intel's vLLM fork for Gaudi (HabanaAI/vllm-fork, tag
v0.9.0.1+Gaudi-1.22.0) as a table: the fork's own `make_arg_parser` (the OpenAI server's flags
and `AsyncEngineArgs.add_cli_args`, vllm/entrypoints/openai/cli_args.py), built on vLLM's CPU
platform (the flags do not depend on it).

vLLM's own modules run as shipped (torch CPU installed); a third-party package that is not
installed (transformers, regex, ...) is a permissive placeholder: they carry runtime helpers,
not flags. Run on the tag's tree (commit 2e9b2b3d4ddeab7dc42a0dcc1237fc4b109b8001):
  git -C vllm-fork archive 'v0.9.0.1+Gaudi-1.22.0' vllm | tar -x -C TREE
  PYTHONPATH=TREE python derive_vllm_gaudi.py OUT.json
(with torch CPU installed); vllm_fork_gaudi_v0.9.0.1_engine_args.json is OUT under "arguments".
"""

import importlib.abc
import importlib.machinery
import json
import pathlib
import sys
import types


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


class Anything(metaclass=_Meta):
    def __init_subclass__(cls, **k):
        pass

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


STUB = {
    "regex",
    "requests",
    "aiohttp",
    "openai_harmony",
    "openai",
    "fastapi",
    "pybase64",
    "PIL",
    "blake3",
    "huggingface_hub",
    "msgspec",
    "transformers",
    "zmq",
    "setproctitle",
    "cbor2",
    "cachetools",
    "safetensors",
    "cpuinfo",
}


# vLLM modules imported only for the choices of parsers we do not use (their OpenAI protocol
# models need the openai package): placeholders too.
STUB_MODULES = {
    "vllm.reasoning",
    "vllm.entrypoints.openai.tool_parsers",
    "vllm.entrypoints.openai.serving_models",
    "vllm.entrypoints.chat_utils",
}


class Missing(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: only modules no other finder has."""

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] not in STUB and name not in STUB_MODULES:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        m = types.ModuleType(spec.name)
        m.__path__ = []
        m.__getattr__ = lambda n: (_ for _ in ()).throw(AttributeError(n)) if n.startswith("__") else Anything
        m.__version__ = "4.55.0"
        return m

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, Missing())
import vllm.platforms  # noqa: E402

# No accelerator here: resolve vLLM's platform to its CPU platform (the flags do not depend on it).
vllm.platforms.builtin_platform_plugins["cpu"] = lambda: "vllm.platforms.cpu.CpuPlatform"
vllm.platforms._current_platform = None  # resolved once already while `vllm` imported: resolve again
from vllm.entrypoints.openai.cli_args import make_arg_parser  # noqa: E402
from vllm.utils import FlexibleArgumentParser  # noqa: E402

p = make_arg_parser(FlexibleArgumentParser())
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
            "nargs": a.nargs if isinstance(a.nargs, (int, str)) else None,
            "choices": sorted(str(c) for c in a.choices) if a.choices else None,
            "origin": "make_arg_parser",
        }
    )
pathlib.Path(sys.argv[1]).write_text(json.dumps(rows))
