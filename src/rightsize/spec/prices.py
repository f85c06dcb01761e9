"""The `prices:` section: a team's own negotiated rates, merged over the dated price catalog.

Keys are catalog ids. An accelerator id takes any of the four cloud prices (USD per
GPU-hour); a node id takes its purchase price; `power_usd_per_kwh` is the price of energy:

    prices:
      h100-sxm: {on_demand_usd_per_gpu_hour: 2.2, spot_usd_per_gpu_hour: 1.1}
      hgx-h100: {capex_usd: 250000}
      power_usd_per_kwh: 0.07

`rightsize plan --prices FILE` reads a YAML file of the same shape. This module only checks
the shape and the numbers; the catalog checks that each id exists and merges the figures,
marking their source as "user".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rightsize.errors import BadInput
from rightsize.safe_read import clean_key, load_user_yaml, read_text_capped

_CFG = ConfigDict(extra="forbid", frozen=True)

ACCELERATOR_PRICE_KEYS = (
    "on_demand_usd_per_gpu_hour",
    "reserved_1y_usd_per_gpu_hour",
    "reserved_3y_usd_per_gpu_hour",
    "spot_usd_per_gpu_hour",
)
NODE_PRICE_KEYS = ("capex_usd",)
POWER_KEY = "power_usd_per_kwh"


class AcceleratorPrices(BaseModel):
    """Cloud prices of one accelerator, USD per GPU-hour; an omitted one keeps the catalog's."""

    model_config = _CFG

    on_demand_usd_per_gpu_hour: float | None = Field(
        default=None, gt=0, description="On-demand (no commitment), USD per GPU-hour."
    )
    reserved_1y_usd_per_gpu_hour: float | None = Field(
        default=None, gt=0, description="With a 1-year commitment, USD per GPU-hour."
    )
    reserved_3y_usd_per_gpu_hour: float | None = Field(
        default=None, gt=0, description="With a 3-year commitment, USD per GPU-hour."
    )
    spot_usd_per_gpu_hour: float | None = Field(
        default=None, gt=0, description="Spot (preemptible), USD per GPU-hour."
    )

    def given(self) -> dict[str, float]:
        """The figures the user set, by catalog field name."""
        return {k: v for k in ACCELERATOR_PRICE_KEYS if (v := getattr(self, k)) is not None}


class NodePrices(BaseModel):
    """Purchase price of one node (GPUs included; cluster network and storage excluded)."""

    model_config = _CFG

    capex_usd: float = Field(gt=0, description="Capital cost of one node, USD.")


def _flat_form_schema(schema: dict[str, Any]) -> None:
    """The JSON Schema says what a spec may write: catalog ids as keys (any id, so additionalProperties)."""
    schema["additionalProperties"] = {
        "anyOf": [AcceleratorPrices.model_json_schema(), NodePrices.model_json_schema()],
        "description": "An accelerator id with its cloud prices, or a node id with its capex_usd.",
    }
    schema["examples"] = [{"h100-sxm": {"on_demand_usd_per_gpu_hour": 2.2}, "power_usd_per_kwh": 0.07}]


class UserPrices(BaseModel):
    """Negotiated prices merged over the catalog; keys are accelerator or node ids from `rightsize catalog`."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_flat_form_schema)

    accelerators: dict[str, AcceleratorPrices] = Field(
        default_factory=dict, description="Accelerator id -> cloud prices per GPU-hour."
    )
    nodes: dict[str, NodePrices] = Field(default_factory=dict, description="Node id -> capital cost.")
    power_usd_per_kwh: float | None = Field(
        default=None, gt=0, le=2.0, description="Price of energy for an owned cluster, USD per kWh."
    )

    @model_validator(mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        """Accept the flat form (`{h100-sxm: {...}, hgx-h100: {capex_usd: ...}, power_usd_per_kwh: x}`)."""
        if not isinstance(value, Mapping) or set(value) <= {"accelerators", "nodes", POWER_KEY}:
            return value
        accs: dict[str, Any] = dict(value.get("accelerators") or {})
        nodes: dict[str, Any] = dict(value.get("nodes") or {})
        out: dict[str, Any] = {"accelerators": accs, "nodes": nodes}
        for key, entry in value.items():
            if key in ("accelerators", "nodes"):
                continue
            if key == POWER_KEY:
                out[POWER_KEY] = entry
            elif isinstance(entry, Mapping) and set(entry) & set(NODE_PRICE_KEYS):
                nodes[str(key)] = entry
            elif isinstance(entry, Mapping):
                accs[str(key)] = entry
            else:
                raise ValueError(
                    f"prices.{clean_key(key)} must be a mapping of price keys (e.g. "
                    "{on_demand_usd_per_gpu_hour: 2.2} for an accelerator, {capex_usd: 250000} for a node), "
                    f"got a {type(entry).__name__}; `{POWER_KEY}` is the only plain number allowed"
                )
        return out

    def is_empty(self) -> bool:
        return not self.accelerators and not self.nodes and self.power_usd_per_kwh is None

    def over(self, base: UserPrices | None) -> UserPrices:
        """These prices laid over `base` (per key: a figure here wins)."""
        if base is None:
            return self
        accs = {k: v.given() for k, v in base.accelerators.items()}
        for k, v in self.accelerators.items():
            accs[k] = {**accs.get(k, {}), **v.given()}
        return UserPrices(
            accelerators={k: AcceleratorPrices(**v) for k, v in accs.items()},
            nodes={**base.nodes, **self.nodes},
            power_usd_per_kwh=(
                self.power_usd_per_kwh if self.power_usd_per_kwh is not None else base.power_usd_per_kwh
            ),
        )


MAX_PRICES_BYTES = 8 * 2**20
"""A price file is a few KB (one line per id); the cap is checked before a byte is read."""
_PRICES_FIX = (
    "Check the path given to --prices: a YAML file such as `h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}`."
)
_KEYS_FIX = (
    "Keys per accelerator: " + ", ".join(ACCELERATOR_PRICE_KEYS) + f"; per node: capex_usd; and {POWER_KEY}."
)


def load_user_prices(path: str | Path) -> UserPrices:
    """Read a `--prices FILE`: YAML of the same shape as the spec's `prices:` section, through the
    capped reader (a regular file, size checked before reading, shape checked before parsing)."""
    path = Path(path).expanduser()
    text = read_text_capped(path, "the price file", MAX_PRICES_BYTES, _PRICES_FIX)
    data = load_user_yaml(text, "the price file", path, _PRICES_FIX)
    if isinstance(data, Mapping) and set(data) == {"prices"}:
        data = data["prices"]  # a file may hold the section with its key
    if not isinstance(data, Mapping) or not data:
        raise BadInput(
            f"The price file {path} holds no prices.",
            f"Its top level is {type(data).__name__}, not a mapping of catalog ids to prices.",
            "Write e.g. `h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}` (one id per line).",
        )
    try:
        return UserPrices.model_validate(dict(data))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(clean_key(p) for p in first["loc"]) or "<top>"
        more = f" ({len(err.errors()) - 1:,} more problems after it)" if len(err.errors()) > 1 else ""
        raise BadInput(
            f"The price file {path} is not valid at {where}{more}.",
            str(first["msg"]).removeprefix("Value error, "),
            _KEYS_FIX,
        ) from None
