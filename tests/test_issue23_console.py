"""Issue 23 #9: the console's words and the demo chat page's small things."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx

from console.app import counted
from standin import StandIn
from standin.webchat import ASSETS, WebChat
from storage.handoffs import Handoff, Trigger
from storage.store import open_store
from tests.test_console import client_for, sign_in

CUSTOMER = 10001


def test_9_counts_are_singular_for_one() -> None:
    assert [counted(n, "handoff") for n in (0, 1, 2)] == ["0 handoffs", "1 handoff", "2 handoffs"]


async def test_9_overview_says_one_handoff_and_the_error_filter_reads_as_no_filter(
    tmp_path: Path,
) -> None:
    store = await open_store(str(tmp_path / "c.db"))
    try:
        at = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
        handoff = Handoff(
            id="h1",
            customer_chat_id=CUSTOMER,
            customer_user_id=CUSTOMER,
            customer_name="Ada",
            language="en",
            trigger=Trigger.COMMAND,
            run_id=None,
            opened_at=at,
        )
        await store.handoffs.open(handoff)
        async with client_for(store) as staff:
            assert (await sign_in(staff)).status_code == 303
            overview = (await staff.get("/overview?period=all")).text
            runs = (await staff.get("/runs")).text
    finally:
        await store.close()
    assert "1 handoff " in overview and "1 handoffs" not in overview
    assert "0 runs" in overview
    assert "none required" not in runs and '<option value="">any (no filter)</option>' in runs


async def test_9_chat_page_has_a_favicon_and_chips_that_wrap(standin: StandIn) -> None:
    page = WebChat(standin, user_id=CUSTOMER)
    url = await page.start()
    try:
        async with httpx.AsyncClient(base_url=url) as http:
            icon = await http.get("/favicon.ico")
    finally:
        await page.stop()
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg")
    css = (ASSETS / "chat.css").read_text()
    rule = next(line for line in css.splitlines() if line.startswith(".suggestions {"))
    assert "flex-wrap: wrap" in rule and "overflow-x" not in rule
