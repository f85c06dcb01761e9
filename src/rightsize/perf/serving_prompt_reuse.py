"""Prompt tokens a benchmark finds in the engine's prefix cache when it sends the same prompts
again: repeated iterations of one fixed batch (vLLM `benchmark_latency`).

vLLM's `benchmarks/benchmark_latency.py` (the v0.8.5 script AMD's ROCm/vllm dev-docker tables
were measured with) draws its random prompt token ids once, then calls `llm.generate` on the
same prompts for `--num-iters-warmup` warm-up iterations and `--num-iters` timed ones. A V1
engine caches prefixes by default (`prefix_caching_default` in `catalog/data/engines.yaml`),
so from the first warm-up on, every timed iteration finds each prompt's full blocks already
in the cache and prefills only the rest: the cache keeps full blocks only and always
recomputes the last prompt token, so a prompt of n tokens finds
floor((n - 1) / block) x block tokens cached. Its KV is still read by every decode step.

The cache must also still hold those blocks when the next iteration starts: freed blocks stay
cached until evicted, and the batch's whole context fits beside them wherever the batch itself
fits (a replica whose KV capacity is below twice the batch's prompt tokens plus its outputs
would evict some; not modelled, as no row is near it).
"""

from __future__ import annotations

from rightsize.catalog.engines import EngineDefaults

# Benchmark harnesses that send the same prompts on every iteration (a validation row's
# `harness` column): vLLM benchmarks/benchmark_latency.py (v0.8.5, also later releases'
# `vllm bench latency`) builds dummy_prompt_token_ids once before its warm-up loop.
REPEATED_PROMPT_HARNESSES = frozenset({"vllm-benchmark-latency"})


def reused_prompt_tokens(engine: EngineDefaults | None, prompt_tokens: int) -> int:
    """Prompt tokens served from the prefix cache when `engine` sees a prompt of
    `prompt_tokens` again with its default settings: whole cache blocks short of the last
    token, or 0 where the engine does not cache prefixes by default."""
    if engine is None or not engine.value("prefix_caching_default"):
        return 0
    block = int(engine.value("block_tokens") or 1)
    return max(0, (prompt_tokens - 1) // block * block)
