"""The `prices:` section: a team's own negotiated rates, merged over the dated price catalog.

Keys are catalog ids. An accelerator id takes any of the four cloud prices (USD per
GPU-hour); a node id takes its purchase price; `power_usd_per_kwh` is the price of energy:

    prices:
      h100-sxm: {on_demand_usd_per_gpu_hour: 2.2, spot_usd_per_gpu_hour: 1.1}
      b200: {provider: oracle}             # price B200 at Oracle's instance, whatever is cheaper
      hgx-h100: {capex_usd: 250000}
      power_usd_per_kwh: 0.07
      provider: [aws, azure]               # rent only from these (as targets.providers)

`provider:` on an accelerator says whose instance the figures are for (and pins that
provider for it); at the top level it restricts every accelerator to the providers named.

`rightsize plan --prices FILE` reads a YAML file of the same shape. This module only checks
the shape and the numbers; the catalog checks that each id exists and merges the figures,
marking their source as "user".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from rightsize.errors import BadInput, did_you_mean
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
PROVIDER_KEY = "provider"

# Cloud providers a price record may name (catalog/data/prices.yaml checks its records against
# this list); a spec may also write the aliases.
PROVIDERS = ("aws", "azure", "gcp", "oracle", "lambda", "coreweave")
PROVIDER_ALIASES = {
    "amazon": "aws",
    "ec2": "aws",
    "microsoft": "azure",
    "google": "gcp",
    "google-cloud": "gcp",
    "oci": "oracle",
    "lambda-labs": "lambda",
    "lambdalabs": "lambda",
}
PROVIDERS_DESCRIPTION = (
    "Cloud providers whose list prices may price the plan (" + ", ".join(PROVIDERS) + "); each "
    "accelerator is priced at the cheapest on-demand instance among them, and an accelerator none of "
    "them rents has no cloud price (under objective: cost it is dropped, and the plan says so). "
    "Null or 'all': every provider in the price catalog."
)


def provider_name(name: Any) -> str:
    """A provider name as the catalog spells it; `ValueError` with a did-you-mean otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a provider is a name such as 'aws', got {name!r}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    key = PROVIDER_ALIASES.get(key, key)
    if key not in PROVIDERS:
        hint = did_you_mean(name, [*PROVIDERS, *PROVIDER_ALIASES])
        raise ValueError(
            f"unknown provider {name!r}" + (f"; {hint}" if hint else "") + f"; known: {', '.join(PROVIDERS)}"
        )
    return key


def providers_field() -> Any:
    """The `providers` field of every spec kind's targets (a name, a list, 'all' or null)."""
    return Field(
        default=None,
        description=PROVIDERS_DESCRIPTION,
        json_schema_extra={
            "anyOf": [
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
                {"type": "string"},
                {"type": "null"},
            ],
            "examples": [["aws", "oracle"], "all"],
        },
    )


def provider_list(value: Any) -> list[str] | None:
    """`targets.providers` / `prices: {provider: ...}`: a name or a list of names, 'all' or null
    for every provider; each name checked and spelled as the catalog does, duplicates kept once."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ValueError("give a provider name or a non-empty list of them (e.g. [aws, oracle]), or 'all'")
    if len(items) == 1 and isinstance(items[0], str) and items[0].strip().lower() == "all":
        return None
    return list(dict.fromkeys(provider_name(item) for item in items))


ProviderList = Annotated[list[str] | None, BeforeValidator(lambda v: provider_list(v))]
"""`targets.providers`: provider names checked and spelled as the catalog does (None: all)."""


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
    provider: str | None = Field(
        default=None,
        description="Whose instance these figures are for (e.g. oracle); alone, it prices the accelerator "
        "at that provider's catalog instance. Null: the instance the catalog would choose.",
    )

    @field_validator("provider", mode="before")
    @classmethod
    def _known_provider(cls, value: Any) -> Any:
        return None if value is None else provider_name(value)

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
    provider: list[str] | None = Field(
        default=None, description="Rent only from these providers: " + PROVIDERS_DESCRIPTION
    )

    @field_validator("provider", mode="before")
    @classmethod
    def _known_providers(cls, value: Any) -> Any:
        return provider_list(value)

    @model_validator(mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        """Accept the flat form (`{h100-sxm: {...}, hgx-h100: {capex_usd: ...}, power_usd_per_kwh: x}`)."""
        if not isinstance(value, Mapping) or set(value) <= {"accelerators", "nodes", POWER_KEY, PROVIDER_KEY}:
            return value
        for part in ("accelerators", "nodes"):
            if not isinstance(value.get(part) or {}, Mapping):
                raise ValueError(
                    f"prices.{part} must be a mapping of names to price keys, got a {type(value[part]).__name__}"
                )
        accs: dict[str, Any] = dict(value.get("accelerators") or {})
        nodes: dict[str, Any] = dict(value.get("nodes") or {})
        out: dict[str, Any] = {"accelerators": accs, "nodes": nodes}
        for key, entry in value.items():
            if key in ("accelerators", "nodes"):
                continue
            if key in (POWER_KEY, PROVIDER_KEY):
                out[key] = entry
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
        return (
            not self.accelerators
            and not self.nodes
            and self.power_usd_per_kwh is None
            and self.provider is None
        )

    def over(self, base: UserPrices | None) -> UserPrices:
        """These prices laid over `base` (per key: a figure here wins)."""
        if base is None:
            return self
        accs: dict[str, dict[str, Any]] = {
            k: v.model_dump(exclude_none=True) for k, v in base.accelerators.items()
        }
        for k, v in self.accelerators.items():
            accs[k] = {**accs.get(k, {}), **v.model_dump(exclude_none=True)}
        return UserPrices(
            accelerators={k: AcceleratorPrices(**v) for k, v in accs.items()},
            nodes={**base.nodes, **self.nodes},
            power_usd_per_kwh=(
                self.power_usd_per_kwh if self.power_usd_per_kwh is not None else base.power_usd_per_kwh
            ),
            provider=self.provider if self.provider is not None else base.provider,
        )


MAX_PRICES_BYTES = 8 * 2**20
"""A price file is a few KB (one line per id); the cap is checked before a byte is read."""
_PRICES_FIX = (
    "Check the path given to --prices: a YAML file such as `h100-sxm: {on_demand_usd_per_gpu_hour: 2.2}`."
)
_KEYS_FIX = (
    "Keys per accelerator: " + ", ".join(ACCELERATOR_PRICE_KEYS) + ", provider; per node: capex_usd; "
    f"and {POWER_KEY}, {PROVIDER_KEY} (one of {', '.join(PROVIDERS)}, or a list)."
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
