"""A real headless Chromium through Playwright for the browser tests (the HTML report, the
`rightsize ui` app): Debian's `chromium` where present. Skipped when Chromium or Playwright is
missing, unless RIGHTSIZE_REQUIRE_BROWSER is set (CI sets it), which makes that a failure."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@contextmanager
def browser_session(args: Sequence[str]) -> Iterator[Any]:
    exe = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None  # type: ignore[assignment]
    if exe is None or sync_playwright is None:
        if os.environ.get("RIGHTSIZE_REQUIRE_BROWSER"):
            pytest.fail("RIGHTSIZE_REQUIRE_BROWSER is set but Chromium or Playwright is missing")
        pytest.skip("Chromium or Playwright is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=list(args))
        try:
            yield b
        finally:
            b.close()
