"""How a serving engine decodes beyond one token per step and one model per replica: the
speculative-decoding and multi-LoRA sections of an inference spec's `engine` (re-exported by
`spec.inference`). Building them computes nothing; the checks are those that make a section
self-contradictory, each naming the field."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rightsize.errors import BadInput
from rightsize.spec.presets import preset_names, resolve_preset_name

__all__ = ["Lora", "Speculative"]


class Speculative(BaseModel):
    """Speculative decoding: a draft proposes tokens that the model verifies in one step."""

    draft_tokens: int = Field(ge=1, description="Tokens the draft proposes per verification step (k).")
    acceptance_rate: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description=(
            "Probability that each drafted token is accepted (0 < rate <= 1), the same at every position "
            "(Leviathan et al.'s alpha). Give this or acceptance_length."
        ),
    )
    acceptance_length: float | None = Field(
        default=None,
        gt=1,
        description=(
            "Measured mean tokens per verification step at this draft_tokens (SGLang's accept length, vLLM's "
            "mean acceptance length), used as is. Prefer it at large draft_tokens: EAGLE-style drafts are "
            "accepted less at later positions than one per-token rate implies (validate/data/serving_mechanisms.csv)."
        ),
    )
    method: Literal["draft_model", "ngram", "eagle", "mtp"] = Field(
        default="draft_model",
        description=(
            "How drafts are made: 'draft_model' (a small model of the same tokenizer, `draft_model`), 'ngram' "
            "(prompt lookup on the host, no GPU cost), 'eagle' or 'mtp' (a one-layer head on the target's hidden "
            "states, EAGLE or DeepSeek's multi-token prediction)."
        ),
    )
    draft_model: str | None = Field(
        default=None,
        min_length=1,
        examples=["llama3-8b"],
        description=(
            "Preset name of the draft model for method 'draft_model' (`rightsize models`); its weights and KV "
            "cache share the target's GPUs and it decodes draft_tokens steps per verification. Null: a draft "
            "costing 5% of a target step per drafted token (the earlier default)."
        ),
    )

    @model_validator(mode="after")
    def _draft_model_needs_its_method(self) -> Speculative:
        if self.acceptance_rate is None and self.acceptance_length is None:
            raise ValueError(
                "give acceptance_rate (per drafted token) or acceptance_length (measured, per step)"
            )
        if self.acceptance_length is not None and self.acceptance_length > self.draft_tokens + 1:
            raise ValueError(
                f"acceptance_length {self.acceptance_length} exceeds draft_tokens + 1 = {self.draft_tokens + 1} "
                "(a step yields at most every drafted token plus one)"
            )
        if self.draft_model is not None and self.method != "draft_model":
            raise ValueError(
                f"draft_model applies only to method 'draft_model', not {self.method!r}; remove it or set "
                "method: draft_model"
            )
        if self.draft_model is not None:
            try:
                resolve_preset_name(self.draft_model)
            except BadInput:
                raise ValueError(
                    f"draft_model {self.draft_model!r} is not a model preset; pick one of `rightsize models` "
                    f"(e.g. {', '.join(preset_names()[:3])})"
                ) from None
        return self


class Lora(BaseModel):
    """Multi-LoRA serving: many adapters over one base model, batched together."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True)

    adapters: int = Field(
        ge=1, le=100_000, description="LoRA adapters served, requests spread evenly over them."
    )
    rank: int = Field(default=16, ge=1, le=1024, description="Adapter rank r (vLLM --max-lora-rank).")
    max_loras: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description=(
            "Adapters held in GPU slots at once, the most one batch mixes (vLLM --max-loras); null: every "
            "adapter has a slot. Requests waiting for a slot are not simulated: keep it at least the adapters "
            "a busy batch holds."
        ),
    )

    @property
    def slots(self) -> int:
        return self.max_loras or self.adapters

    modules: Literal["attention", "all"] = Field(
        default="attention",
        description="Matrices the adapters target: 'attention' (q, k, v, o) or 'all' (attention and MLP).",
    )

    @model_validator(mode="after")
    def _slots_within_adapters(self) -> Lora:
        if self.max_loras is not None and self.max_loras > self.adapters:
            raise ValueError(
                f"max_loras ({self.max_loras}) exceeds adapters ({self.adapters}): a batch cannot mix more "
                "adapters than exist; lower max_loras"
            )
        return self
