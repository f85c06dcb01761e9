"""Plans what-ifs for the browser: spec text in, the planned result out, one plan at a time.

The pipeline keeps the prices in effect in process-wide state (`catalog.prices.prices_in_effect`),
so plans run one after another under a lock; the last few results are kept, keyed by the spec's
text, so a download or a re-shown what-if does not plan again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rightsize.ui.spec_text import ReadSpec, read_spec_text

KEEP_PLANS = 16
_T = TypeVar("_T")


@dataclass
class Planned:
    """One planned what-if: the spec as read, the typed result, and its versioned JSON."""

    read: ReadSpec
    result: Any
    plan_json: dict[str, Any]


class Planner:
    """Plans spec texts as `rightsize plan` would plan a file named `source` in `base_dir`."""

    def __init__(self, base_dir: Path, source: str) -> None:
        self.base_dir = base_dir
        self.source = source
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, Planned] = OrderedDict()

    def rendered(self, text: str, render: Callable[[Planned], _T]) -> _T:
        """`render(planned)` for the plan of `text`, under the same lock as planning: renderers read
        the prices in effect, which another plan could be changing at the same moment."""
        planned = self.plan(text)
        with self._lock:
            return render(planned)

    def read(self, text: str) -> ReadSpec:
        """The spec checked as the CLI checks it, without planning (BadInput on a mistake)."""
        return read_spec_text(text, self.source, self.base_dir)

    def plan(self, text: str) -> Planned:
        """The plan of the spec `text` (BadInput or Infeasible as `rightsize plan` raises them)."""
        from rightsize.api import plan
        from rightsize.report.render import result_dict

        with self._lock:
            kept = self._kept.get(text)
            if kept is not None:
                self._kept.move_to_end(text)
                return kept
            read = self.read(text)
            result = plan(read.spec)
            planned = Planned(read, result, result_dict(result))
            self._kept[text] = planned
            while len(self._kept) > KEEP_PLANS:
                self._kept.popitem(last=False)
            return planned
