"""Token-length distributions of requests (`LengthDist`): fixed, normal, lognormal or empirical.

A plain number in a spec (`prompt_tokens: 512`) means a fixed length. For normal and lognormal,
`mean` and `std` are those of the lengths themselves, not of their logarithm. An empirical
distribution reads one length per line from a text or CSV file (relative to the spec file) when the
spec loads, so later stages see only `values`. Each problem names the field, or the file and line.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from rightsize.errors import BadInput
from rightsize.safe_read import read_text_capped
from rightsize.spec.shared import POSITIVE, resolve_path, spec_base_dir
from rightsize.spec.units import Count, TokenLength

_DISTRIBUTIONS = ("normal", "lognormal")
MAX_LENGTHS_FILE_BYTES = 16 * 2**20
MAX_LENGTHS = 1_000_000


def _read_lengths(text: str, base_dir: Path) -> list[int]:
    """Token lengths from a text/CSV file: the first column of each line; '#' comments, blank lines and
    a header on the first line are skipped. Every problem names the file and the line."""
    path = resolve_path(text, base_dir)
    shown = f"'{text}'" + (f" ({path})" if str(path) != text else "")
    try:
        lines = read_text_capped(
            path,
            "the lengths file",
            MAX_LENGTHS_FILE_BYTES,
            "Give a regular text file with one length per line; paths are relative to the spec file's folder.",
        ).splitlines()
    except BadInput as err:
        raise ValueError(" ".join(part for part in (err.what, err.why, err.fix) if part)) from None
    if len(lines) > MAX_LENGTHS:
        raise ValueError(f"file {shown} has {len(lines):,} lines; at most {MAX_LENGTHS:,} lengths are read")
    values: list[int] = []
    seen_data = False
    for number, line in enumerate(lines, start=1):
        content = line.split("#", 1)[0].strip()
        if not content:
            continue
        first = re.split(r"[,;\t ]", content, maxsplit=1)[0].strip().strip("\"'")
        try:
            length = float(first)
        except ValueError:
            if not seen_data and first[:1].isalpha():
                seen_data = True  # a header row such as "prompt_tokens,output_tokens"
                continue
            raise ValueError(
                f"file {shown}, line {number}: the first column is not a whole number of tokens; "
                "write one length per line (the first column of a CSV)"
            ) from None
        seen_data = True
        if not math.isfinite(length) or not length.is_integer() or not 1 <= length <= 2**31:
            raise ValueError(
                f"file {shown}, line {number}: the first column is not a whole number of tokens from 1 to 2^31"
            )
        values.append(int(length))
    if not values:
        raise ValueError(f"file {shown} holds no lengths; write one whole number of tokens per line")
    return values


class LengthDist(BaseModel):
    """A distribution of token lengths (prompt or output). A plain number such as `512` means fixed.

    For normal and lognormal, `mean` and `std` are those of the lengths themselves (not of their
    logarithm); samples are clipped to [min, max].
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096, frozen=True)

    kind: Literal["fixed", "normal", "lognormal", "empirical"] = Field(
        default="fixed",
        description=(
            "Shape of the distribution: 'fixed' (every request has `mean` tokens), 'normal', 'lognormal' "
            "(long-tailed, typical of chat), or 'empirical' (lengths read from `file`)."
        ),
    )
    mean: TokenLength | None = Field(
        default=None,
        validate_default=True,
        description="Tokens: the length for 'fixed', the mean length for 'normal' and 'lognormal'.",
    )
    std: Annotated[Count, POSITIVE] | None = Field(
        default=None,
        validate_default=True,
        description="Standard deviation of the length in tokens, for 'normal' and 'lognormal' only.",
    )
    min: TokenLength = Field(
        default=1, description="Shortest length in tokens; samples below it are clipped up to it."
    )
    max: TokenLength | None = Field(
        default=None,
        validate_default=True,
        description="Longest length in tokens; samples above it are clipped down to it. Null: no limit.",
    )
    values: list[Annotated[int, Field(ge=1, le=2**31)]] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_LENGTHS,
        validate_default=True,
        description=(
            "For 'empirical': the lengths, one per request sampled uniformly. Filled from `file` when the "
            "spec loads; may be given inline instead of a file."
        ),
    )
    file: str | None = Field(
        default=None,
        min_length=1,
        validate_default=True,
        description=(
            "For 'empirical': a text or CSV file (relative to the spec file) with one length per line, "
            "taken from the first column; '#' comments, blank lines and a header row are skipped."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand_and_file(cls, data: Any, info: ValidationInfo) -> Any:
        """`512` means {kind: fixed, mean: 512}; a file (or inline values) implies 'empirical' and is read."""
        if not isinstance(data, dict):
            return data if isinstance(data, BaseModel) else {"kind": "fixed", "mean": data}
        data = dict(data)
        if "kind" not in data and ("file" in data or "values" in data):
            data["kind"] = "empirical"
        file = data.get("file")
        if data.get("kind") == "empirical" and isinstance(file, str) and file.strip():
            if data.get("values") is not None:
                raise ValueError("give the lengths either in file or inline in values, not both")
            data["values"] = _read_lengths(file, spec_base_dir(info))
        return data

    @field_validator("mean")
    @classmethod
    def _mean_needed(cls, value: int | None, info: ValidationInfo) -> int | None:
        kind = info.data.get("kind")
        if value is None and kind in ("fixed", *_DISTRIBUTIONS):
            raise ValueError(
                f"required for kind '{kind}': the {'length' if kind == 'fixed' else 'mean'} in tokens"
            )
        if value is not None and kind == "empirical":
            raise ValueError("does not apply to kind 'empirical' (the file gives the lengths); remove it")
        return value

    @field_validator("std")
    @classmethod
    def _std_needed(cls, value: float | None, info: ValidationInfo) -> float | None:
        kind = info.data.get("kind")
        if value is None and kind in _DISTRIBUTIONS:
            raise ValueError(f"required for kind '{kind}': the standard deviation of the length in tokens")
        if value is not None and kind not in _DISTRIBUTIONS:
            raise ValueError(
                f"applies only to kinds 'normal' and 'lognormal', not '{kind}'; set kind or remove std"
            )
        return value

    @field_validator("max")
    @classmethod
    def _max_at_least_min(cls, value: int | None, info: ValidationInfo) -> int | None:
        low, mean = info.data.get("min"), info.data.get("mean")
        if value is not None and low is not None and value < low:
            raise ValueError(f"must be at least min ({low})")
        if mean is not None and low is not None and not low <= mean <= (value or mean):
            raise ValueError(f"mean ({mean}) must lie within min ({low}) and max ({value or 'none'})")
        return value

    @field_validator("values")
    @classmethod
    def _values_only_empirical(cls, value: list[int] | None, info: ValidationInfo) -> list[int] | None:
        kind = info.data.get("kind")
        if value is not None and kind != "empirical":
            raise ValueError(f"applies only to kind 'empirical', not '{kind}'; set kind: empirical")
        return value

    @field_validator("file")
    @classmethod
    def _file_only_empirical(cls, value: str | None, info: ValidationInfo) -> str | None:
        kind = info.data.get("kind")
        if value is not None and kind != "empirical":
            raise ValueError(f"applies only to kind 'empirical', not '{kind}'; set kind: empirical")
        if value is not None and not value.strip():
            raise ValueError("must name a file with one token length per line")
        if kind == "empirical" and "values" in info.data and info.data["values"] is None:
            raise ValueError(
                "required for kind 'empirical': a file with one token length per line "
                "(or give the lengths inline as values: [...])"
            )
        return value

    @property
    def mean_tokens(self) -> float:
        """The nominal mean length in tokens (before clipping to [min, max]; the sample mean if empirical)."""
        if self.values is not None:
            return sum(self.values) / len(self.values)
        assert self.mean is not None  # guaranteed by _mean_needed
        return float(self.mean)


def length_json_schema(schema: dict[str, Any]) -> None:
    """A length field accepts a plain token count (fixed) as well as a LengthDist object."""
    ref = schema.pop("$ref", None)
    schema["anyOf"] = [
        {"type": "integer", "exclusiveMinimum": 0, "description": "A fixed length in tokens."},
        {"type": "string", "description": "A fixed length with a count suffix, e.g. '2k'."},
        {"$ref": ref} if ref else {"type": "object"},
    ]
