"""KV-cache tokens a decode step's attention reads when the engine's kernel loads whole blocks.

A paged or ragged attention kernel that loads only the pages a sequence holds reads its
context. Some engines read more, in whole blocks regardless of the sequence's length
(`decode_kv_read_block_tokens` in `catalog/data/engines.yaml`, each figure sourced):

- JetStream's experimental JAX engine (and the Pallas TPU `paged_attention` kernel it
  copies) DMAs `pages_per_compute_block` pages per block, 8 pages of 128 tokens, whether the
  sequence fills them or not (pages past its length point at a dummy page that is still
  copied): a 365-token sequence costs 1,024 tokens of K and V reads.
- JetStream + MaxText (use_ragged_attention false, the default) attends by a dense einsum
  over the whole prefill cache and the whole autoregressive cache of each slot: every step
  reads max_target_length tokens per sequence.

The attention FLOPs follow the same rounding (the kernel computes over the block and masks).

How fast the cache streams is the accelerator's `decode_kv_bw_ratio` (a paged kernel's page
gathers) unless the engine names its own (`decode_kv_bw_ratio` in engines.yaml): MaxText's
dense einsum over a contiguous static cache has no page gathers.
"""

from __future__ import annotations

import numpy as np

from rightsize.catalog.engines import EngineDefaults

READ_BLOCK_FIELD = "decode_kv_read_block_tokens"
BW_RATIO_FIELD = "decode_kv_bw_ratio"


def decode_kv_bw_ratio(engine: EngineDefaults | None, accelerator_ratio: float) -> float:
    """The decode attention's KV streaming rate over the weight stream's: the engine's own
    figure where it names one, else the accelerator's (0 there means 1: no measured loss)."""
    own = engine.value(BW_RATIO_FIELD) if engine is not None else None
    return float(own) if own else (accelerator_ratio or 1.0)


def decode_read_context(
    engine: EngineDefaults | None, batch: np.ndarray | float, context_tokens: np.ndarray | float
) -> np.ndarray:
    """Total context tokens the decode attention reads for `batch` sequences holding
    `context_tokens` in all: each sequence's context rounded up to the engine's read block
    (unchanged when the engine names none)."""
    ctx = np.asarray(context_tokens, dtype=np.float64)
    block = engine.value(READ_BLOCK_FIELD) if engine is not None else None
    if not block:
        return ctx
    b = np.maximum(np.asarray(batch, dtype=np.float64), 1.0)
    per_seq = np.maximum(ctx / b, 1.0)
    return np.asarray(np.ceil(per_seq / block) * block * b, dtype=np.float64)
