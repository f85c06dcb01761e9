"""Dump the argument parser of Intel's Megatron-LM fork for Gaudi (HabanaAI/Megatron-LM, tag
1.22.0) as a flag table, as megatron_release.py does for NVIDIA's core_v0.13.0: the parser's
own actions, built by the fork's `_add_*_args` functions (the groups `parse_args` adds).

The fork's modules run as shipped (torch CPU installed); packages that are not installed
(Habana's frameworks, Transformer Engine, tokenizer helpers) are permissive placeholders: they
carry runtime code, not flags. Run on the tag's tree:
  git -C Megatron-LM archive refs/tags/1.22.0 megatron | tar -x -C TREE
  PYTHONPATH=TREE python tests/data/derive_megatron_gaudi.py tests/data/megatron_gaudi_1.22.0_arguments.json
"""

import argparse
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
    "tools",
    "regex",
    "six",
    "habana_frameworks",
    "transformer_engine",
    "apex",
    "einops",
    "flash_attn",
    "nvidia_resiliency_ext",
    "tensorstore",
    "zarr",
    "modelopt",
    "intel_transformer_engine",
}


class Missing(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: only modules no other finder has."""

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] not in STUB:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        m = types.ModuleType(spec.name)
        m.__path__ = []
        m.__getattr__ = lambda n: (_ for _ in ()).throw(AttributeError(n)) if n.startswith("__") else Anything
        m.__version__ = "1.22.0"
        return m

    def exec_module(self, module):
        pass


sys.meta_path.append(Missing())
import megatron.training.arguments as A  # noqa: E402

p = argparse.ArgumentParser(allow_abbrev=False)
for name in [
    "_add_network_size_args",
    "_add_regularization_args",
    "_add_training_args",
    "_add_initialization_args",
    "_add_learning_rate_args",
    "_add_checkpointing_args",
    "_add_mixed_precision_args",
    "_add_distributed_args",
    "_add_validation_args",
    "_add_data_args",
    "_add_tokenizer_args",
    "_add_autoresume_args",
    "_add_biencoder_args",
    "_add_vision_args",
    "_add_moe_args",
    "_add_mla_args",
    "_add_logging_args",
    "_add_straggler_detector_args",
    "_add_inference_args",
    "_add_transformer_engine_args",
    "_add_retro_args",
    "_add_experimental_args",
    "_add_one_logger_args",
    "_add_ft_package_args",
    "_add_config_logger_args",
    "_add_pytorch_args",
    "_add_rerun_machine_args",
]:
    p = getattr(A, name)(p)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from megatron_release import flag_table  # noqa: E402

table = {
    "source": "github.com/HabanaAI/Megatron-LM tag 1.22.0 (commit 9430399441cf65e51d4f35de648e492edb493364; Intel's "
    "Megatron-LM for Intel Gaudi software 1.22.0, forked from core_r0.11.0), megatron/training/arguments.py: the "
    "actions of its own parser (the _add_*_args groups parse_args builds), dumped by "
    "tests/data/derive_megatron_gaudi.py; read 2026-11-26",
    "flags": flag_table(p),
}
pathlib.Path(sys.argv[1]).write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
