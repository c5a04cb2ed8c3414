"""Browser fixtures: real headless Chromium (Debian's `chromium`) driven by Playwright."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.browser.support import CHROMIUM, CHROMIUM_ARGS, missing_browser


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    reason = missing_browser()
    if reason:
        pytest.skip(reason)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            await chromium.close()


@pytest.fixture
async def page(browser: Any) -> AsyncIterator[Any]:
    """A fresh page; any alert/confirm dialog fails the test (no injected script may run)."""
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    tab = await context.new_page()
    dialogs: list[str] = []

    async def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        await dialog.dismiss()

    tab.on("dialog", on_dialog)
    tab.set_default_timeout(10_000)
    yield tab
    await context.close()
    assert dialogs == [], f"a page ran a script it should have shown as text: {dialogs}"
