"""`make screenshots`: the README's pictures, taken from the running demo.

Starts `stepwise demo` on free ports (its own temporary database), drives the chat page and
the staff console in Debian's Chromium with Playwright, and writes into the folder given
(default docs/screenshots):

* demo-chat-phone.png   the customer's chat on a phone: the plan, a step edited in place,
                        the inline buttons of the step that waits for them;
* demo-staff-phone.png  the "Staff group" tab on a phone: the customer's topic with the
                        team's Approve/Reject for a refund above the demo's limit;
* demo-chat-desktop.png a wide screen: the chat waiting for the team beside the staff group;
* demo-console-run.png  that refund's run page in the staff console, after the Approve.

Every step waits for what the page shows (the last, for the run to finish, reads its status).

    python -m tests.browser.screenshots [folder]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from stepwise.demo import Demo
from stepwise.settings import Settings
from tests.browser.support import CHROMIUM, CHROMIUM_ARGS, missing_browser

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
CONSOLE = {"width": 1280, "height": 860}
CANCEL = "cancel order A1003"
REFUND = "refund 59 for order A1002"  # above the demo's staff-approval limit
STAFF_TOKEN = "screenshots-staff-token-0123456789"


async def settled(page: Any) -> None:
    """No toast, no edit's flash, the bot not typing: a still picture."""
    await page.locator(".toast").first.wait_for(state="detached")
    await page.locator(".msg.flash").first.wait_for(state="detached")
    await page.locator("#typing").wait_for(state="hidden")


async def send(page: Any, text: str) -> None:
    await page.fill("#text", text)
    await page.press("#text", "Enter")


async def take(demo: Demo, browser: Any, folder: Path) -> list[Path]:
    written: list[Path] = []

    async def shot(page: Any, name: str, *, full_page: bool = False) -> None:
        path = folder / name
        await page.screenshot(path=str(path), full_page=full_page)
        written.append(path)

    phone = await (await browser.new_context(viewport=PHONE, device_scale_factor=2)).new_page()
    desktop = await (await browser.new_context(viewport=DESKTOP)).new_page()
    for page in (phone, desktop):
        page.set_default_timeout(30_000)  # a loaded machine; these are bounds, not waits

    # A wide screen: a refund above the limit waits for the team, beside the staff group.
    await desktop.goto(demo.chat_url)
    await send(desktop, REFUND)
    approve = desktop.locator("#staff-messages .keyboard button", has_text="Approve")
    await approve.wait_for()
    await settled(desktop)
    await shot(desktop, "demo-chat-desktop.png")

    # The same on a phone, from the staff's tab, then Approve.
    await phone.goto(demo.chat_url)
    await phone.get_by_role("tab", name="Staff group").click()
    approve = phone.locator("#staff-messages .keyboard button", has_text="Approve")
    await approve.wait_for()
    await shot(phone, "demo-staff-phone.png")
    await approve.click()
    await approve.wait_for(state="detached")

    # The refund's run in the staff console, once it finished.
    assert demo.runtime is not None
    store = demo.runtime.store
    for _ in range(600):  # the run's status, polled (at most a minute)
        runs = (await store.history.list_runs(limit=10)).items
        refund = next((r for r in runs if r.request_text == REFUND), None)
        if refund is not None and refund.status.value == "completed":
            break
        await asyncio.sleep(0.1)
    else:
        raise RuntimeError("the refund run never completed")
    console = await (await browser.new_context(viewport=CONSOLE)).new_page()
    await console.goto(demo.console_url + "login")
    await console.fill("#token", STAFF_TOKEN)
    await console.click("form.login button[type=submit]")
    await console.wait_for_url("**/runs")
    await console.goto(demo.console_url + f"runs/{refund.id}")
    await console.locator(".answer").wait_for()
    await shot(console, "demo-console-run.png", full_page=True)

    # A phone: cancel an order; its step waits for the customer's own buttons.
    await phone.get_by_role("tab", name="Chat").click()
    await send(phone, CANCEL)
    buttons = phone.locator("#messages .keyboard button")
    await buttons.first.wait_for()
    await settled(phone)
    await shot(phone, "demo-chat-phone.png")
    return written


async def main(folder: Path) -> list[Path]:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory(prefix="stepwise-screenshots-") as tmp:
        settings = Settings.model_validate({"STEPWISE_DB": str(Path(tmp) / "demo.db")})
        demo = Demo(settings, chat_port=0, staff_port=0, staff_token=STAFF_TOKEN)
        await demo.start()
        try:
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
                )
                try:
                    return await take(demo, browser, folder)
                finally:
                    await browser.close()
        finally:
            await demo.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="docs/screenshots", type=Path)
    args = parser.parse_args()
    if reason := missing_browser():
        sys.exit(f"screenshots: {reason}")
    args.folder.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(main(args.folder)):
        print(path)
