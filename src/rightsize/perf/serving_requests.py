"""The request set of a serving simulation made ready to run (`perf.serving_sim`): checked
(lengths, finiteness, every request fits the replica's KV cache alone) and planned (KV
tokens reserved, prompt tokens cached, decode steps per request)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rightsize.errors import BadInput

if TYPE_CHECKING:  # pragma: no cover
    from rightsize.perf.serving_sim import EngineModel


def check_requests(
    arrivals_s: np.ndarray,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    model: EngineModel,
    cached_prompt_fraction: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated float64 arrivals and int64 lengths; every request must fit alone in KV."""
    arrivals = np.asarray(arrivals_s, dtype=np.float64).ravel()
    prompt = np.asarray(prompt_tokens).astype(np.int64).ravel()
    output = np.asarray(output_tokens).astype(np.int64).ravel()
    if not (len(arrivals) == len(prompt) == len(output)) or len(arrivals) == 0:
        raise BadInput(
            f"{len(arrivals)} arrivals, {len(prompt)} prompt lengths, {len(output)} output lengths.",
            "Each request needs one of each, and there must be at least one request.",
            "Pass arrays of the same non-zero length.",
        )
    if not np.all(np.isfinite(arrivals)):
        raise BadInput("Arrival times contain NaN or infinity.", "Times must be finite.", "Clean the trace.")
    if prompt.min() < 1 or output.min() < 1:
        raise BadInput(
            "A request has fewer than one prompt or output token.",
            "Every request reads at least one token and produces at least one.",
            "Clip lengths to >= 1 (sample_lengths does).",
        )
    if not 0.0 <= cached_prompt_fraction <= 1.0:
        raise BadInput(
            f"cached_prompt_fraction = {cached_prompt_fraction}.",
            "It is a fraction.",
            "Pass a value in [0, 1].",
        )
    biggest = int(
        ((prompt + output + model.block_tokens - 1) // model.block_tokens).max() * model.block_tokens
    )
    if biggest > model.kv_capacity_tokens:
        raise BadInput(
            f"A request needs {biggest} KV tokens but the replica holds {model.kv_capacity_tokens}.",
            "A request that cannot fit alone would block the FCFS queue forever.",
            "Cap prompt + output lengths (max_ in sample_lengths) or give the replica more KV memory.",
        )
    return arrivals, prompt, output


def plan_requests(
    pr: np.ndarray, out: np.ndarray, model: EngineModel, cached_prompt_fraction: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request (arrival order): KV tokens reserved, prompt tokens cached, decode steps."""
    kv_need = -(-(pr + out) // model.block_tokens) * model.block_tokens
    cached = np.minimum(np.floor(cached_prompt_fraction * pr).astype(np.int64), pr - 1)
    steps = np.maximum(np.ceil((out - 1) / model.spec_tokens_per_step - 1e-9), 0).astype(np.int64)
    return kv_need, cached, steps
