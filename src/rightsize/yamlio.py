"""YAML reading with libyaml's C parser where PyYAML was built with it (`yaml.CSafeLoader`,
an order of magnitude faster on the catalog files), the pure-Python `SafeLoader` otherwise.
Both build the same plain Python objects (safe tags only)."""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader: Any = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


def safe_load(text: str) -> Any:
    """Parse one YAML document into plain Python objects (dict, list, str, int, float, ...)."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader, C or Python
