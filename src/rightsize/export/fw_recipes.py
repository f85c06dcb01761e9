"""The published training recipe of a model: learning-rate schedule, optimizer settings and
mixture-of-experts routing, as its authors state them (never a framework's defaults).

- GPT-3 (Brown et al. 2020, arXiv:2005.14165, Table 2.1 and Appendix B): Adam b1 0.9, b2 0.95,
  eps 1e-8, clip 1.0, weight decay 0.1; linear warm-up over the first 375M tokens, cosine decay
  to 10% of the peak over 260B tokens; peak rate by size (0.6e-4 at 175B). Megatron's GPT
  presets (Narayanan et al. 2021) follow it.
- Llama 2 (Touvron et al. 2023, arXiv:2307.09288, section 2.2): AdamW b1 0.9, b2 0.95, eps
  1e-5, clip 1.0, weight decay 0.1; 2,000 warm-up steps, cosine decay to 10% of the peak;
  peak 3e-4 (7B, 13B) or 1.5e-4 (34B, 70B).
- Llama 3 (Llama Team 2024, arXiv:2407.21783, section 3.4.1) gives the 405B recipe: peak 8e-5,
  8,000 warm-up steps, cosine decay to 8e-7; the 8B and 70B recipes are not published, so they
  use Llama 2's for their size (said in the job file).
- Mixtral (Jiang et al. 2024) publishes no schedule (Llama 2's is used, said in the job file);
  its router: softmax top-2 with a load-balancing loss of 0.02 (config.json
  router_aux_loss_coef).
- DeepSeek-V3 (arXiv:2412.19437, sections 2.1.2 and 4.2): AdamW b1 0.9, b2 0.95, weight decay
  0.1, clip 1.0; 2,000 warm-up steps to 2.2e-4, constant, then cosine decay to 2.2e-5 over the
  last 4.3T of 14.8T tokens (Megatron's WSD schedule); sigmoid router scores, top-8 of 8 groups
  limited to 4, scaled by 2.5, auxiliary-loss-free balancing (bias update 0.001) with a
  sequence-wise balance loss of 0.0001.
- Other models: Llama 2's recipe for their size, and for mixture-of-experts layers softmax top-k
  routing with a load-balancing loss of 0.01 (Switch Transformer, Fedus et al. 2022); said in
  the job file.

Runs shorter than the published warm-up (fine-tuning, short tests) warm up over a tenth of
their steps instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rightsize.export.plan_view import TrainingView

# GPT-3 Table 2.1: (parameters, peak learning rate)
_GPT3_LR = ((125e6, 6.0e-4), (350e6, 3.0e-4), (760e6, 2.5e-4), (1.3e9, 2.0e-4), (2.7e9, 1.6e-4),
            (6.7e9, 1.2e-4), (13e9, 1.0e-4), (175e9, 0.6e-4))  # fmt: skip


@dataclass(frozen=True)
class Router:
    score: str  # softmax / sigmoid
    balance: str  # Megatron's --moe-router-load-balancing-type: aux_loss / seq_aux_loss
    aux_loss: float
    groups: int | None = None
    group_topk: int | None = None
    scaling: float | None = None
    expert_bias: bool = False  # auxiliary-loss-free balancing (DeepSeek-V3)


@dataclass(frozen=True)
class Recipe:
    source: str  # where the numbers come from (the job file's header says it)
    lr: float
    min_lr: float
    warmup_steps: int
    decay_steps: int  # steps of the decay (cosine), from the start of the run
    style: str  # cosine / WSD
    wsd_decay_steps: int | None
    adam_eps: float
    router: Router | None


def _family(name: str) -> str:
    n = name.lower().replace("-", "").replace("_", "").replace(".", "")
    for key, family in (("deepseekv3", "deepseek-v3"), ("mixtral", "mixtral"), ("llama31405b", "llama3-405b"),
                        ("llama3405b", "llama3-405b"), ("llama3", "llama3"), ("llama2", "llama2"),
                        ("gpt", "gpt3")):  # fmt: skip
        if n.startswith(key) or n.startswith("meta" + key):
            return family
    return "other"


def _params(v: TrainingView) -> float:
    """Dense parameters, roughly (the size the published peak rates are quoted at)."""
    m = v.model
    mats = 3 if m.mlp == "swiglu" else 2
    return m.layers * (4 * m.hidden * m.hidden + mats * m.hidden * m.ffn_hidden) + m.vocab * m.hidden


def _steps(tokens: float, v: TrainingView) -> int:
    return max(1, math.ceil(tokens / (v.global_batch * v.seq_len)))


def _warmup(published: int, steps: int) -> int:
    return published if published <= steps // 10 else max(1, steps // 10)


def _router(v: TrainingView, family: str) -> Router | None:
    if not v.model.experts:
        return None
    if family == "deepseek-v3":
        return Router("sigmoid", "seq_aux_loss", 1e-4, groups=8, group_topk=4, scaling=2.5, expert_bias=True)
    if family == "mixtral":
        return Router("softmax", "aux_loss", 0.02)
    return Router("softmax", "aux_loss", 0.01)


def recipe_for(v: TrainingView) -> Recipe:
    family, steps = _family(v.model.name), v.steps
    router = _router(v, family)
    if family == "gpt3":
        lr = min(_GPT3_LR, key=lambda row: abs(math.log(row[0] / _params(v))))[1]
        return Recipe("GPT-3 (Brown et al. 2020, Table 2.1, Appendix B)", lr, lr / 10,
                      _warmup(_steps(375e6, v), steps), min(steps, _steps(260e9, v)), "cosine", None,
                      1e-8, router)  # fmt: skip
    if family == "llama3-405b":
        return Recipe("Llama 3 405B (arXiv:2407.21783, section 3.4.1)", 8e-5, 8e-7,
                      _warmup(8000, steps), steps, "cosine", None, 1e-5, router)  # fmt: skip
    if family == "deepseek-v3":
        wsd = max(1, round(steps * 4.3 / 14.8))
        return Recipe("DeepSeek-V3 (arXiv:2412.19437, section 4.2)", 2.2e-4, 2.2e-5,
                      _warmup(2000, steps), steps, "WSD", wsd, 1e-8, router)  # fmt: skip
    lr = 3e-4 if _params(v) < 30e9 else 1.5e-4
    source = {
        "llama2": "Llama 2 (arXiv:2307.09288, section 2.2)",
        "llama3": "Llama 2's recipe for this size (arXiv:2307.09288, section 2.2; Llama 3 publishes only the 405B one)",
        "mixtral": "Llama 2's schedule (arXiv:2307.09288; Mixtral publishes none), Mixtral's router (config.json)",
    }.get(
        family, "no published recipe for this model: Llama 2's for its size (arXiv:2307.09288, section 2.2)"
    )
    return Recipe(source, lr, lr / 10, _warmup(2000, steps), steps, "cosine", None, 1e-5, router)
