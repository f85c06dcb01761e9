"""The meta-device memory count against the analytic memory model (issue #5)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

if importlib.util.find_spec("torch") is None:  # pragma: no cover
    if os.environ.get("RIGHTSIZE_REQUIRE_TORCH"):
        raise RuntimeError("RIGHTSIZE_REQUIRE_TORCH is set but torch is not installed")
    pytest.skip("torch is not installed (the profile extra)", allow_module_level=True)

import torch  # noqa: E402

from rightsize.perf.params import count_params  # noqa: E402
from rightsize.profile.memory import compare_with_analytic, count_training_memory  # noqa: E402
from rightsize.profile.torch_model import build_decoder, lm_loss, param_count  # noqa: E402
from rightsize.spec.model import ModelArch  # noqa: E402
from rightsize.spec.presets import presets  # noqa: E402

PRESETS = presets()


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_module_parameters_match_count_params_exactly(name: str) -> None:
    arch = PRESETS[name]
    model = build_decoder(arch, device="meta", dtype=torch.bfloat16)
    # count_params leaves out the final norm's h scales; everything else is exact.
    assert param_count(model) == count_params(arch).total + arch.hidden


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_analytic_memory_within_5_percent_of_meta_count(name: str) -> None:
    arch = PRESETS[name]
    count = count_training_memory(arch, seq_len=2048)
    cmp = compare_with_analytic(count, arch)
    for part in ("weights", "gradients", "optimizer"):
        # within 1e-4: the final norm (h scales) that count_params omits, and the router that
        # stage_params also charges to the dense layers of an MoE model (deepseek-v3: 8e-6)
        assert abs(cmp[part]["relative_error"]) < 1e-4, part
    assert abs(cmp["total"]["relative_error"]) < 0.05
    if not arch.is_moe:  # dense layers: the activation model is exact to within rounding
        assert abs(cmp["activations"]["relative_error"]) < 0.01


def test_unfused_attention_keeps_the_scores() -> None:
    arch = ModelArch(name="t", layers=1, hidden=64, heads=4, ffn_hidden=128, vocab=100, mlp="gelu")
    flash = count_training_memory(arch, seq_len=256)
    plain = count_training_memory(arch, seq_len=256, flash_attention=False)
    # softmax output, 2 bytes per score per head (no dropout), minus flash's 4-byte LSE rows
    extra = plain.activations_bytes - flash.activations_bytes
    assert extra >= 2 * 4 * 256 * 256 - 4 * 4 * 256


def test_fused_kernels_compute_the_right_gradients() -> None:
    arch = ModelArch(
        name="t",
        layers=2,
        hidden=32,
        heads=4,
        kv_heads=2,
        ffn_hidden=48,
        vocab=50,
        mlp="swiglu",
        norm="rmsnorm",
    )
    model = build_decoder(arch, dtype=torch.float64)
    tokens = torch.randint(0, 50, (2, 8))
    loss = lm_loss(model(tokens), tokens)
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    from rightsize.profile.torch_model import _FusedLayerNorm, _FusedRMSNorm, _FusedSwiGLU

    x = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    w = torch.randn(8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: _FusedRMSNorm.apply(a, b, 1e-5), (x, w))
    assert torch.autograd.gradcheck(lambda a, b: _FusedLayerNorm.apply(a, b, 1e-5), (x, w))
    assert torch.autograd.gradcheck(lambda a: _FusedSwiGLU.apply(a), (x,))


def test_planning_and_calibration_never_import_torch() -> None:
    code = (
        "import sys, rightsize.api, rightsize.profile, rightsize.profile.calibration_file, "
        "rightsize.profile.calibrate, rightsize.profile.train, rightsize.profile.serve, "
        "rightsize.cli.main; assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
