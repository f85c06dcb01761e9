"""A serving replica that changes one thing about another (multi-LoRA adapters, speculative
decoding): it keeps the target replica's own fields and delegates to it what it does not change."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar

from rightsize.perf.inference import Replica

W = TypeVar("W", bound="WrappedReplica")


@dataclass(frozen=True)
class WrappedReplica(Replica):
    target: Replica | None = None

    @classmethod
    def around(cls: type[W], target: Replica, **own: Any) -> W:
        """This kind of replica over `target`: the target's Replica fields, then its own."""
        base = {f.name: getattr(target, f.name) for f in fields(Replica)}
        return cls(**base, target=target, **own)

    def _target(self) -> Replica:
        assert self.target is not None  # set by around
        return self.target
