"""Issue 28 audit: a training and a serving plan on every family, in every output format and
in the Prometheus export, carry no other vendor's fabric, launcher, exporter or terms (the
training check of four parts is `test_platforms.py`; this covers the rest and serving)."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest
from test_platforms import FOREIGN, SPEC, _prose

from rightsize.api import plan
from rightsize.catalog.platforms import platform_for, platforms
from rightsize.errors import BadInput
from rightsize.export import render_files
from rightsize.report.render import render

NVIDIA = {"nvidia-hgx", "nvidia-nvl72"}
# Words of one vendor's stack beyond test_platforms.FOREIGN, and the platforms they belong to.
MORE = {
    "nvidia.com/gpu": NVIDIA,
    "DCGM": NVIDIA,
    "dcgm": NVIDIA,
    "CUDA": NVIDIA,
    "TensorRT": NVIDIA,
    "GPU-hours": NVIDIA | {"amd-instinct"},
    "ICI": {"google-tpu"},
    "Multislice": {"google-tpu"},
    "NeuronLink": {"aws-trainium"},
    "UltraServer": {"aws-trainium"},
    "ROCm": {"amd-instinct"},
    "RCCL": {"amd-instinct"},
    "SynapseAI": {"intel-gaudi"},
    "HCCL": {"intel-gaudi"},
}
WORDS = {**FOREIGN, **MORE}
SERVE: dict[str, Any] = {
    "kind": "inference",
    "name": "serve-check",
    "model": "llama3-70b",
    "serving": {"scenario": "serving", "weight_precision": "bf16", "kv_precision": "bf16"},
    "traffic": {"rate": 20, "prompt_tokens": 1024, "output_tokens": 256},
    "targets": {"objective": "gpus"},  # TPU v7 and Gaudi 3 have no list price: cost would refuse
}
PARTS = ["tpu-v5e", "tpu-v6e", "tpu-v7", "trn2", "gaudi3", "mi300x", "mi355x", "gb200", "gb300"]


def _family(acc: str) -> str:
    return next(k for k, v in platforms().items() if v is platform_for(acc))


# A v5e serving replica stays on one 8-chip host (128 GB of HBM; Google documents v5e inference as
# single-host), which 70B holds in int8, not bf16.
SERVE_PRECISION = {"tpu-v5e": "int8"}


@cache
def _plan(acc: str, kind: str) -> Any:
    base = SPEC if kind == "training" else SERVE
    if kind == "serving" and acc in SERVE_PRECISION:
        prec = SERVE_PRECISION[acc]
        base = {**base, "serving": {**base["serving"], "weight_precision": prec, "kv_precision": prec}}
    return plan({**base, "targets": {**base["targets"], "accelerators": [acc]}})


def _files(acc: str, kind: str) -> dict[str, str]:
    return render_files(json.loads(render(_plan(acc, kind), "json")), "prometheus")


def _leaks(text: str, fam: str) -> list[str]:
    out = []
    for word, owners in WORDS.items():
        if fam in owners:
            continue
        pat = rf"\b{re.escape(word)}s?\b" if word[0].isalpha() and word[-1].isalpha() else re.escape(word)
        m = re.search(pat, text)
        if m:
            out.append(f"{word!r}: {text[max(0, m.start() - 80) : m.end() + 40]!r}")
    return out


@pytest.mark.parametrize("kind", ["training", "serving"])
@pytest.mark.parametrize("acc", PARTS)
def test_every_output_format_speaks_the_familys_own_terms(acc: str, kind: str) -> None:
    p = _plan(acc, kind)
    fam = _family(acc)
    for fmt in ("json", "markdown", "table", "html"):
        leaks = _leaks(_prose(render(p, fmt), fmt), fam)
        assert not leaks, f"{acc} {kind} {fmt}: {leaks}"


@pytest.mark.parametrize("acc", ["tpu-v7", "trn2", "gaudi3", "mi355x"])
def test_prometheus_rules_carry_no_nvidia_exporter_off_nvidia(acc: str) -> None:
    """dcgm-exporter reads NVIDIA GPUs only: a serving plan elsewhere gets the engine's rules
    and no DCGM series; a training plan, which would have nothing else, is refused."""
    text = "".join(_files(acc, "serving").values())
    assert "vllm:" in text and not re.search("dcgm", text, re.I)
    with pytest.raises(BadInput, match="dcgm-exporter only"):
        _files(acc, "training")


def test_prometheus_rules_keep_dcgm_on_nvidia() -> None:
    text = "".join(_files("gb300", "serving").values())
    assert "DCGM_FI_DEV_POWER_USAGE" in text and "vllm:" in text
