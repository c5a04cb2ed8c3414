"""The staff console in a real browser: sign-in, filters, the run page, escaping."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from console.server import ConsoleServer, serve_console
from tests.browser.seed import HTML_REQUEST, RETRIED_REQUEST, SKIPPED_REQUEST, Seeded, seed
from tests.browser.support import missing_browser, screenshot_path

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser()))

TOKEN = "browser-test-staff-token-0123456789"


@dataclass
class Site:
    server: ConsoleServer
    data: Seeded

    @property
    def url(self) -> str:
        return self.server.url


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    data = await seed(tmp_path / "browser.db")
    server = await serve_console(data.store, TOKEN, port=0)
    yield Site(server, data)
    await server.stop()
    await data.close()


async def sign_in(page: Any, site: Site, token: str = TOKEN) -> None:
    await page.goto(site.url + "/runs")
    await page.fill("#token", token)
    await page.click("form.login button[type=submit]")


async def table_requests(page: Any) -> list[str]:
    texts: list[str] = await page.locator("table.runs td.request").all_inner_texts()
    return texts


async def test_sign_in_is_refused_without_the_token(page: Any, site: Site) -> None:
    await page.goto(site.url + "/runs")
    assert "/login?next=%2Fruns" in page.url
    await page.fill("#token", "a-wrong-staff-token-guess")
    await page.click("form.login button[type=submit]")
    await page.locator(".error").wait_for()
    assert await page.locator(".error").inner_text() == "That is not the staff token."
    assert await page.locator("table.runs").count() == 0
    await page.goto(site.url + f"/runs/{site.data.ids['retried']}")
    assert "/login" in page.url and RETRIED_REQUEST not in await page.content()

    await page.fill("#token", TOKEN)
    await page.click("form.login button[type=submit]")
    await page.wait_for_url(f"**/runs/{site.data.ids['retried']}")  # back where we were going
    await page.click("form.logout button")
    await page.wait_for_url("**/login")
    await page.goto(site.url + "/runs")
    assert "/login" in page.url


async def test_runs_list_filters(page: Any, site: Site) -> None:
    await sign_in(page, site)
    await page.wait_for_url("**/runs")
    assert len(await table_requests(page)) == len(site.data.ids)

    await page.select_option("select[name=status]", "failed")
    await page.click("form.filters button[type=submit]")
    await page.wait_for_url("**/runs?*status=failed*")
    assert sorted(await table_requests(page)) == ["where is order B2001", "where is order Z9999"]
    badges = await page.locator("table.runs .badge").all_inner_texts()
    assert badges == ["failed", "failed"]

    await page.click("text=Clear")
    await page.select_option("select[name=error]", "timeout")
    await page.click("form.filters button[type=submit]")
    await page.wait_for_url("**/runs?*error=timeout*")
    assert await table_requests(page) == [RETRIED_REQUEST]

    await page.click("text=Clear")
    await page.fill("input[name=q]", "A1002")
    await page.press("input[name=q]", "Enter")
    await page.wait_for_url("**/runs?*q=A1002*")
    assert await table_requests(page) == [SKIPPED_REQUEST]


async def test_run_page_shows_the_retried_and_the_skipped_step(page: Any, site: Site) -> None:
    await sign_in(page, site)
    await page.click(f"text={RETRIED_REQUEST}")
    await page.wait_for_url(f"**/runs/{site.data.ids['retried']}")
    rows = page.locator("table.attempts tbody tr")
    assert await rows.count() == 2
    first = await rows.nth(0).inner_text()
    assert "failed, retrying" in first and "timeout" in first and "order service timed out" in first
    assert "backoff" in first
    assert "succeeded" in await rows.nth(1).inner_text()
    assert "done after 1 retry" in await page.locator(".step .progress").inner_text()
    if path := screenshot_path("console-run.png"):
        await page.screenshot(path=path, full_page=True)

    await page.goto(site.url + f"/runs/{site.data.ids['skipped']}")
    skipped = page.locator("li.step--skipped")
    assert await skipped.count() == 1
    text = await skipped.inner_text()
    assert "Skipped because" in text and "订单 A1002 已签收，不需要再查延迟补偿。" in text


async def test_request_text_with_html_is_shown_escaped(page: Any, site: Site) -> None:
    await sign_in(page, site)
    await page.wait_for_url("**/runs")
    assert HTML_REQUEST in await table_requests(page)
    assert await page.locator("table.runs td.request script, table.runs td.request b").count() == 0
    await page.goto(site.url + f"/runs/{site.data.ids['html']}")
    request = page.locator("blockquote.request")
    assert await request.inner_text() == HTML_REQUEST
    assert await request.locator("script, b").count() == 0
    if path := screenshot_path("console-runs.png"):
        await page.goto(site.url + "/runs")
        await page.screenshot(path=path, full_page=True)
        await page.goto(site.url + "/overview?period=24h")
        await page.screenshot(path=screenshot_path("console-overview.png"), full_page=True)
