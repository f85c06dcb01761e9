"""Issue 13: `profile serve --input-len` counts tokens (the model's tokenizer when `transformers` is
there), and says which count it used otherwise."""

from __future__ import annotations

import random
import sys
import types
from typing import Any

import pytest

from rightsize.profile import prompts
from rightsize.profile.prompts import prompt_source


def test_without_a_tokenizer_the_count_is_one_token_words_and_says_so() -> None:
    src = prompt_source(None)
    text = src.make(random.Random(0), 100)
    assert len(text.split()) == 100  # 100 words, not 100 characters
    assert "estimate of tokens" in src.unit


class _FakeTokenizer:
    """Splits on spaces; one id per word (enough to check the prompt is cut to n tokens)."""

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [len(w) for w in text.split()]

    def decode(self, ids: list[int]) -> str:
        return " ".join("x" * i for i in ids)


def test_with_transformers_the_prompt_is_exactly_n_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("transformers")
    loaded: list[str] = []

    class AutoTokenizer:
        @staticmethod
        def from_pretrained(name: str) -> Any:
            loaded.append(name)
            return _FakeTokenizer()

    fake.AutoTokenizer = AutoTokenizer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(prompts, "_has_transformers", lambda: True)
    src = prompt_source("meta-llama/Meta-Llama-3-8B")
    assert loaded == ["meta-llama/Meta-Llama-3-8B"]
    assert src.unit == "tokens of the meta-llama/Meta-Llama-3-8B tokenizer"
    text = src.make(random.Random(1), 37)
    assert len(_FakeTokenizer().encode(text)) == 37


def test_a_tokenizer_that_does_not_load_falls_back_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("transformers")

    class AutoTokenizer:
        @staticmethod
        def from_pretrained(name: str) -> Any:
            raise OSError("no such model")

    fake.AutoTokenizer = AutoTokenizer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(prompts, "_has_transformers", lambda: True)
    src = prompt_source("nope")
    assert "did not load" in src.unit and "no such model" in src.unit
    assert len(src.make(random.Random(0), 12).split()) == 12
