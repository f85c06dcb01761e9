"""Prompts of a given length for `profile serve`, counted in the model's tokens when possible.

With `transformers` installed and a tokenizer named (`--tokenizer`, default the served model),
a prompt of `n` is exactly `n` tokens of that tokenizer. Otherwise it is `n` words, each a
single token in the common BPE vocabularies (GPT-2, Llama 2/3, Mistral: " the", " of", ...),
so `n` is an estimate of the token count; the profile records which count it used, and the
server's own usage report (prompt_tokens) gives the measured figure.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

# Frequent English words that are one token (with their leading space) in GPT-2, Llama and
# Mistral BPE vocabularies; a prompt of n of them is ~n tokens.
_ONE_TOKEN_WORDS = (" the", " of", " and", " to", " in", " is", " for", " on", " that", " with")


@dataclass(frozen=True)
class PromptSource:
    """Makes prompts of `n` units; `unit` says what is counted, for the profile header."""

    unit: str
    make: Callable[[random.Random, int], str]


def _words(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_ONE_TOKEN_WORDS) for _ in range(n)).lstrip()


def prompt_source(tokenizer: str | None) -> PromptSource:
    """Exact token counts with `transformers` and a loadable tokenizer, else one-token words (an estimate)."""
    fallback = PromptSource(
        "words of one token each in common BPE vocabularies (an estimate of tokens"
        + ("; transformers is not installed" if not _has_transformers() else "; no --tokenizer given")
        + ")",
        _words,
    )
    if tokenizer is None or not _has_transformers():
        return fallback
    try:
        from transformers import AutoTokenizer  # type: ignore[import-not-found, unused-ignore]

        tok = AutoTokenizer.from_pretrained(tokenizer)
    except Exception as err:  # no such model, no network, a broken folder: count words, and say why
        return PromptSource(f"{fallback.unit[:-1]}; tokenizer {tokenizer!r} did not load: {err})", _words)

    def make(rng: random.Random, n: int) -> str:
        ids = tok.encode(_words(rng, n + 8), add_special_tokens=False)[:n]
        return str(tok.decode(ids))

    return PromptSource(f"tokens of the {tokenizer} tokenizer", make)


def _has_transformers() -> bool:
    import importlib.util

    return importlib.util.find_spec("transformers") is not None
