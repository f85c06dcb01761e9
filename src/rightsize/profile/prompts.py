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


# Prompt sets from a file -------------------------------------------------------------------
#
# Two formats, told apart by the first non-blank character:
# - ShareGPT JSON (`[` first): a list of {"conversations": [{"from": ..., "value": ...}, ...]};
#   as vLLM's benchmark (vllm/benchmarks/datasets.py, ShareGPTDataset, v0.10.1): entries with at
#   least two turns, shuffled with `random.seed(seed)` order, the first turn the prompt and the
#   second the reply whose length is the output length (unless fixed);
# - JSON Lines: one object per line with "prompt" (text) and optionally "output_len" (tokens)
#   or a reply ("completion" / "response") whose length is the output length; a line may also
#   be a ShareGPT entry.
# Pairs are kept as vLLM's `is_valid_sequence` keeps them: prompt and reply at least 4 tokens
# (the reply check skipped with a fixed output length), prompt at most 1024, both at most 2048.

MAX_PROMPT_FILE_BYTES = 2 * 2**30  # ShareGPT_V3_unfiltered_cleaned_split.json is ~670 MB
MIN_LEN, MAX_PROMPT_LEN, MAX_TOTAL_LEN = 4, 1024, 2048  # vLLM's is_valid_sequence defaults
_FIX = "Give --dataset a ShareGPT JSON file (a list of conversations) or JSON Lines with a 'prompt' per line."


@dataclass(frozen=True)
class PromptItem:
    prompt: str
    prompt_units: int  # its length in the counter's unit
    output_len: int  # max_tokens to ask for


@dataclass(frozen=True)
class PromptSet:
    items: list[PromptItem]
    source: str  # what was read and how it was counted, for the profile header


def length_counter(tokenizer: str | None) -> tuple[str, Callable[[str], int]]:
    """(unit, count): the tokenizer's tokens when it loads, else whitespace words (an estimate)."""
    if tokenizer and _has_transformers():
        try:
            from transformers import AutoTokenizer  # type: ignore[import-not-found, unused-ignore]

            tok = AutoTokenizer.from_pretrained(tokenizer)
            return f"tokens of the {tokenizer} tokenizer", lambda text: len(tok(text).input_ids)
        except Exception as err:  # no such model, no network: count words, and say why
            return f"words (tokenizer {tokenizer!r} did not load: {str(err)[:120]})", lambda t: len(t.split())
    why = "no --tokenizer given" if _has_transformers() else "transformers is not installed"
    return f"words ({why}; an estimate of tokens)", lambda text: len(text.split())


def _pairs(text: str, where: str) -> tuple[str, list[tuple[str, str | int | None]]]:
    """(format, [(prompt, reply text or output tokens or None)]) in file order."""
    import json

    from rightsize.errors import BadInput

    def conv(entry: object) -> tuple[str, str] | None:
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list) or len(turns) < 2:
            return None
        first, second = turns[0], turns[1]
        if not (isinstance(first, dict) and isinstance(second, dict)):
            return None
        p, r = first.get("value"), second.get("value")
        return (p, r) if isinstance(p, str) and isinstance(r, str) else None

    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except ValueError as err:
            raise BadInput(f"{where} is not valid JSON.", str(err)[:200], _FIX) from None
        if not isinstance(data, list):
            raise BadInput(f"{where} is not a list of conversations.", "ShareGPT files are JSON lists.", _FIX)
        return "ShareGPT JSON", [c for c in map(conv, data) if c is not None]
    out: list[tuple[str, str | int | None]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as err:
            raise BadInput(f"{where} line {n} is not JSON.", str(err)[:200], _FIX) from None
        c = conv(obj)
        if c is not None:
            out.append(c)
            continue
        prompt = obj.get("prompt") if isinstance(obj, dict) else None
        if not isinstance(prompt, str):
            raise BadInput(
                f"{where} line {n} has no text 'prompt' (nor a ShareGPT 'conversations').", "", _FIX
            )
        n_out = obj.get("output_len")
        reply = obj.get("completion", obj.get("response"))
        if isinstance(n_out, int) and not isinstance(n_out, bool) and n_out > 0:
            out.append((prompt, n_out))
        else:
            out.append((prompt, reply if isinstance(reply, str) else None))
    return "JSON Lines", out


def load_prompt_set(path: str, n: int, seed: int, output_len: int | None, tokenizer: str | None) -> PromptSet:
    """`n` prompts sampled from the file with `seed` (vLLM's order), each with its output
    length: `output_len` when fixed, else the reply's length (a line with neither needs it)."""
    from rightsize.errors import BadInput
    from rightsize.safe_read import read_text_capped

    text = read_text_capped(path, "the prompt set", MAX_PROMPT_FILE_BYTES, _FIX)
    fmt, pairs = _pairs(text, "The prompt set")
    random.Random(seed).shuffle(pairs)  # = random.seed(seed); random.shuffle(data), as vLLM does
    unit, count = length_counter(tokenizer)
    items: list[PromptItem] = []
    for prompt, reply in pairs:
        if len(items) >= n:
            break
        p_len = count(prompt)
        if output_len is not None:
            o_len = output_len
        elif isinstance(reply, int):
            o_len = reply
        elif isinstance(reply, str):
            o_len = count(reply)
        else:
            raise BadInput(
                "A prompt in the prompt set has no reply and no output_len.",
                "Without a fixed --output-len each prompt's output length comes from the file.",
                "Give --output-len, or add 'output_len' (or a 'completion') to every line.",
            )
        too_short = p_len < MIN_LEN or (output_len is None and o_len < MIN_LEN)
        if too_short or p_len > MAX_PROMPT_LEN or p_len + o_len > MAX_TOTAL_LEN:
            continue
        items.append(PromptItem(prompt, p_len, o_len))
    if not items:
        raise BadInput(
            f"No usable prompt in the prompt set ({len(pairs)} read).",
            f"Prompts are kept with {MIN_LEN} to {MAX_PROMPT_LEN} units and at most {MAX_TOTAL_LEN} with the output.",
            _FIX,
        )
    source = (
        f"{fmt} {path}: {len(items)} of {len(pairs)} prompt(s) sampled with seed {seed}; lengths in {unit}; "
        + ("output length fixed" if output_len is not None else "output lengths from the replies")
    )
    return PromptSet(items, source)
