"""Speculative decoding on a serving replica: a draft proposes k tokens per sequence, the
target verifies them in one forward pass, and each step yields the accepted drafts plus one.

With each drafted token accepted independently with probability a, a step yields
(1 - a^(k+1)) / (1 - a) tokens on average (Leviathan, Kalman and Matias, ICML 2023, eq. 1;
vLLM's speculative decoding blog, 2024-10-17, reports its acceptance and speed-ups the same
way). The acceptance rate is an input: it depends on the draft, the data and the sampling.

One step costs:
- verification: one target forward over k + 1 tokens per sequence: the weights read once,
  the GEMMs over B (k + 1) rows, the KV cache read once (the k + 1 queries share it), so
  `target.decode_step_s(B (k + 1), C)`; at small batch nearly a plain step, at large batch
  up to k + 1 of them, which is why speculation pays at low load and can lose at high load;
- drafting, by method: a draft model decodes k steps of its own over the batch; EAGLE and
  MTP run a one-layer head (a transformer layer and the target's LM head) k times; n-gram
  prompt lookup runs on the host and costs the GPU nothing.
The draft model's weights and KV cache share the target's GPUs and take from its cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rightsize.perf.inference import Replica
from rightsize.perf.kernels.timing import OpReport
from rightsize.perf.replica_wrap import WrappedReplica


def tokens_per_step(
    draft_tokens: int, acceptance_rate: float, acceptance_length: float | None = None
) -> float:
    """Expected tokens a verification step yields (accepted drafts plus one): the measured
    `acceptance_length` at this k when given (what SGLang and vLLM report), else the
    independent-acceptance formula from the per-token `acceptance_rate`.

    The formula assumes every drafted position is accepted with the same probability. Drafts
    that see less of the target the further they run (EAGLE heads, small draft models) are
    accepted less at later positions: on Red Hat's EAGLE-3 speculator for Llama 4 Maverick
    (validate/data/serving_mechanisms.csv) the formula, given the k = 1 rate, is 1.5-5.3% high
    at k = 2-3 and 16-26% high at k = 7, so a measured acceptance length is the better input at
    large k."""
    k = draft_tokens
    if acceptance_length is not None:
        return min(max(1.0, acceptance_length), k + 1.0)
    a = acceptance_rate
    return (1.0 - a ** (k + 1)) / (1.0 - a) if a < 1.0 else k + 1.0


@dataclass(frozen=True)
class SpeculativeReplica(WrappedReplica):
    """`target` decoding with speculation (see the module docstring); `draft` is the draft
    model's replica (method draft_model) or the one-layer head (eagle, mtp); None: n-gram."""

    draft: Replica | None = None
    draft_tokens: int = 1
    method: str = "draft_model"

    @classmethod
    def wrap(
        cls, target: Replica, draft: Replica | None, draft_tokens: int, method: str
    ) -> SpeculativeReplica:
        return cls.around(target, draft=draft, draft_tokens=draft_tokens, method=method)

    def _draft_model(self) -> Replica | None:
        return self.draft if self.method == "draft_model" else None

    @property
    def weight_bytes_per_gpu(self) -> float:
        d = self._draft_model()
        return self._target().weight_bytes_per_gpu + (d.weight_bytes_per_gpu if d is not None else 0.0)

    @property
    def kv_capacity_tokens(self) -> float:
        """The target's cache, less the draft's weights and its own cache per token."""
        t, d = self._target(), self._draft_model()
        cap = t.kv_capacity_tokens
        if d is None or cap <= 0:
            return cap
        per_token_t = t.kv_bytes_per_token / t.kv_shards
        per_token_d = d.kv_bytes_per_token / d.kv_shards
        free = cap * per_token_t - d.weight_bytes_per_gpu
        return max(0.0, free) / (per_token_t + per_token_d)

    def draft_step_s(self, batch: np.ndarray | float, context_tokens: np.ndarray | float) -> np.ndarray:
        """GPU time to draft k tokens for each of `batch` sequences."""
        b = np.asarray(batch, dtype=np.float64)
        if self.method == "ngram" or self.draft is None:
            return np.zeros_like(b)
        ctx = np.asarray(context_tokens, dtype=np.float64)
        if self.method in ("eagle", "mtp"):  # the head attends over its own one-layer cache
            ctx = ctx / max(self._target().arch.layers, 1)
        return self.draft_tokens * self.draft.decode_step_s(b, ctx)

    def decode_step_detail(
        self, batch: np.ndarray | float, context_tokens: np.ndarray | float
    ) -> tuple[np.ndarray, OpReport]:
        """One speculative step: verification of k + 1 tokens per sequence plus drafting."""
        b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
        verify, report = self._target().decode_step_detail(b * (self.draft_tokens + 1), context_tokens)
        return verify + self.draft_step_s(b, context_tokens), report

    def prefill_detail(
        self,
        tokens: np.ndarray | float,
        past_tokens: np.ndarray | float = 0.0,
        sequences: np.ndarray | float = 1.0,
    ) -> tuple[np.ndarray, OpReport]:
        """The target's prefill, plus the draft model's own over the same prompt."""
        t, report = self._target().prefill_detail(tokens, past_tokens, sequences)
        d = self._draft_model()
        if d is not None:
            t = t + d.prefill_s(tokens, past_tokens, sequences)
        return t, report
