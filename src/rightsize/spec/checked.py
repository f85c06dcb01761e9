"""What every spec kind checks of itself, written once: each spec kind derives from `CheckedSpec`.

Before pydantic reads a field, every raw number must be finite and sane (`finite.finite_numbers`);
after, every figure must lie above its floor (`limits.refuse_figures_under_floor`). Vision and
recommendation specs add `populate_by_name` to this configuration for their aliased fields.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, model_validator

from rightsize.spec.finite import finite_numbers
from rightsize.spec.limits import refuse_figures_under_floor


class CheckedSpec(BaseModel):
    """A workload spec: closed to unknown keys, frozen, numbers finite and above their floors."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _numbers_are_finite(cls, data: Any) -> Any:
        return finite_numbers(data)

    @model_validator(mode="after")
    def _figures_above_their_floor(self) -> Self:
        return refuse_figures_under_floor(self)
