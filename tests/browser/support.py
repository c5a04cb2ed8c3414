"""Where the browser is and how it is launched, shared by the browser tests.

The browser is never downloaded: Playwright launches Debian's /usr/bin/chromium. Without
it, or without the playwright package, the browser tests skip with the reason.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Set STEPWISE_SCREENSHOTS=docs/screenshots to refresh the console tests' screenshots
# (console-*.png); the demo's (demo-*.png) come from `make screenshots`.
SCREENSHOTS = os.environ.get("STEPWISE_SCREENSHOTS")


def missing_browser() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install playwright; no browser download)"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    return None


def screenshot_path(name: str) -> str | None:
    if not SCREENSHOTS:
        return None
    Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
    return str(Path(SCREENSHOTS) / name)
