"""The staff console over HTTP (httpx against the ASGI app, and a real uvicorn once).

Runs are made by the real agent (tests/browser/seed.py); paging and the 100,000-run query
plans use rows written directly, which is what 100,000 runs look like to the queries.
The console over seeded runs and the paging tests run on SQLite and on PostgreSQL
(`store_backend`, tests/storage_backends.py); the query-plan tests are SQLite's.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from agent_core.models import RunStatus
from console.app import create_app
from console.auth import SESSION_COOKIE, Sessions
from console.server import serve_console, serve_staff_console
from stepwise.cli import dispatch
from stepwise.demo import Demo, run_demo
from stepwise.settings import Settings, configured_staff_token
from storage.history import ANY_ERROR, Cursor, RunFilter
from storage.runs.sqlite import SqliteRunStore
from storage.store import RunStore
from tests.browser.seed import HTML_REQUEST, OTHER, Seeded, bulk_runs, seed
from tests.storage_backends import Backend

TOKEN = "staff-token-for-tests-0123456789"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
async def seeded(store_backend: Backend) -> AsyncIterator[Seeded]:
    data = await seed(store_backend.url)
    yield data
    await data.close()


def client_for(store: RunStore) -> httpx.AsyncClient:
    app = create_app(store, staff_token=TOKEN)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console")


async def sign_in(client: httpx.AsyncClient, token: str = TOKEN) -> httpx.Response:
    form = await client.get("/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None
    return await client.post("/login", data={"csrf": csrf[1], "token": token, "next": "/runs"})


@pytest.fixture
async def staff(seeded: Seeded) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(seeded.store) as client:
        response = await sign_in(client)
        assert response.status_code == 303
        yield client


def run_ids(html: str) -> list[str]:
    """Run ids in table order (each row links its id twice: time and request)."""
    return list(dict.fromkeys(re.findall(r'href="/runs/([0-9a-z]+)"', html)))


# -- authentication ----------------------------------------------------------------------


async def test_without_a_session_nothing_answers(seeded: Seeded) -> None:
    async with client_for(seeded.store) as client:
        for page in ("/", "/runs", "/overview", f"/runs/{seeded.ids['retried']}"):
            response = await client.get(page)
            assert response.status_code in (303, 307)
            if page != "/":
                assert response.headers["location"].startswith("/login?next=")
        for api in ("/api/runs", "/export.jsonl", f"/runs/{seeded.ids['retried']}/export.jsonl"):
            response = await client.get(api)
            assert response.status_code == 401
            assert "request_text" not in response.text
        assert (await client.get("/login")).status_code == 200
        assert (await client.get("/static/console.css")).status_code == 200


async def test_wrong_token_is_refused_and_sets_no_session(seeded: Seeded) -> None:
    async with client_for(seeded.store) as client:
        response = await sign_in(client, "not-the-staff-token-at-all")
        assert response.status_code == 401
        assert "That is not the staff token." in response.text
        assert SESSION_COOKIE not in client.cookies
        assert (await client.get("/api/runs")).status_code == 401


async def test_token_is_compared_in_constant_time(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    # console.auth looks compare_digest up on the hmac module at call time.
    monkeypatch.setattr(hmac, "compare_digest", spy)
    async with client_for(seeded.store) as client:
        await sign_in(client, "guess")
    assert (TOKEN.encode(), b"guess") in seen


async def test_session_cookie_is_httponly_strict_and_signed(seeded: Seeded) -> None:
    async with client_for(seeded.store) as client:
        response = await sign_in(client)
        assert response.status_code == 303 and response.headers["location"] == "/runs"
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        value = client.cookies[SESSION_COOKIE]
        assert (await client.get("/runs")).status_code == 200
        payload, _, signature = value.rpartition(".")
        forged = payload.replace("v1.", "v1.9", 1) + "." + signature
        client.cookies.set(SESSION_COOKIE, forged)
        assert (await client.get("/api/runs")).status_code == 401


def test_sessions_expire_and_another_token_does_not_verify() -> None:
    now = [1_000_000.0]
    sessions = Sessions(TOKEN, clock=lambda: now[0])
    cookie = sessions.issue()
    assert sessions.verify(cookie) is not None
    assert Sessions("another-staff-token-0123456789").verify(cookie) is None
    now[0] += sessions.ttl_s + 1
    assert sessions.verify(cookie) is None
    assert sessions.verify("garbage") is None and sessions.verify("") is None


async def test_login_needs_its_csrf_token_and_is_throttled(seeded: Seeded) -> None:
    async with client_for(seeded.store) as client:
        response = await client.post("/login", data={"token": TOKEN, "csrf": "made-up"})
        assert response.status_code == 403 and SESSION_COOKIE not in client.cookies
        for _ in range(10):
            assert (await sign_in(client, "wrong-token")).status_code == 401
        response = await sign_in(client, "wrong-token")
        assert response.status_code == 429 and SESSION_COOKIE not in client.cookies
        assert 1 <= int(response.headers["Retry-After"]) <= 300


async def test_after_ten_wrong_tokens_from_an_address_the_right_one_still_signs_in(
    seeded: Seeded, caplog: pytest.LogCaptureFixture
) -> None:
    """Over real HTTP: behind a proxy every staff member shares one address, so wrong
    tokens are limited there, never the right one."""
    server = await serve_console(seeded.store, TOKEN, port=0)
    try:
        async with httpx.AsyncClient(base_url=server.url) as client:
            statuses = [(await sign_in(client, f"wrong-{n}")).status_code for n in range(12)]
            assert statuses == [401] * 10 + [429] * 2
            assert caplog.text.count("10 wrong staff tokens from 127.0.0.1") == 1
            response = await sign_in(client)
            assert response.status_code == 303 and SESSION_COOKIE in client.cookies
            assert (await client.get("/api/runs")).status_code == 200
    finally:
        await server.stop()


async def test_sign_out_ends_the_session_even_for_a_copied_cookie(
    staff: httpx.AsyncClient,
) -> None:
    copied = staff.cookies[SESSION_COOKIE]
    page = await staff.get("/runs")
    logout_csrf = re.search(
        r'action="/logout"[^>]*>\s*<input type="hidden" name="csrf" value="([^"]+)"', page.text
    )
    assert logout_csrf is not None
    assert (await staff.post("/logout", data={"csrf": "wrong"})).status_code == 403
    response = await staff.post("/logout", data={"csrf": logout_csrf[1]})
    assert response.status_code == 303
    staff.cookies.set(SESSION_COOKIE, copied)
    assert (await staff.get("/api/runs")).status_code == 401


async def test_console_is_read_only_and_login_never_redirects_away(
    staff: httpx.AsyncClient, seeded: Seeded
) -> None:
    for path in ("/runs", f"/runs/{seeded.ids['cancel']}", "/api/runs", "/export.jsonl"):
        assert (await staff.post(path)).status_code == 405
        assert (await staff.delete(path)).status_code == 405
    form = await staff.get("/login?next=https://evil.example/")
    assert 'name="next" value="/runs"' in form.text
    form = await staff.get("/login?next=//evil.example/")
    assert 'name="next" value="/runs"' in form.text


def test_a_weak_staff_token_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 16"):
        create_app(None, staff_token="short")  # type: ignore[arg-type]


async def test_pages_carry_a_strict_content_security_policy(staff: httpx.AsyncClient) -> None:
    response = await staff.get("/runs")
    assert "default-src 'none'" in response.headers["content-security-policy"]
    assert "script-src 'none'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"
    assert "<script" not in response.text


# -- filters, pages, escaping ------------------------------------------------------------


async def test_runs_list_filters(staff: httpx.AsyncClient, seeded: Seeded) -> None:
    ids = seeded.ids
    everything = run_ids((await staff.get("/runs")).text)
    assert everything[0] == ids["cancel"] and len(everything) == len(ids)

    failed = run_ids((await staff.get("/runs?status=failed")).text)
    assert set(failed) == {ids["not_found"], ids["foreign"]}
    assert run_ids((await staff.get(f"/runs?user={OTHER}")).text) == [ids["other_user"]]
    assert run_ids((await staff.get("/runs?error=timeout")).text) == [ids["retried"]]
    assert set(run_ids((await staff.get("/runs?error=any")).text)) == {
        ids["retried"],
        ids["not_found"],
        ids["foreign"],
        ids["fallback"],
    }
    assert run_ids((await staff.get("/runs?error=any&tool=search_policy")).text) == [
        ids["fallback"]
    ]
    assert run_ids((await staff.get("/runs?tool=cancel_order")).text) == [ids["cancel"]]
    assert run_ids((await staff.get("/runs?q=A1002")).text) == [ids["skipped"]]
    assert run_ids((await staff.get("/runs?q=100%25")).text) == []  # % is literal
    future = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    assert run_ids((await staff.get(f"/runs?since={future}")).text) == []
    assert len(run_ids((await staff.get(f"/runs?until={future}")).text)) == len(ids)


async def test_bad_filter_values_are_reported_not_crashed_on(staff: httpx.AsyncClient) -> None:
    response = await staff.get("/runs?status=bogus&user=abc&error=nope&since=yesterday")
    assert response.status_code == 400
    for message in ("Unknown status", "Telegram user id", "Unknown error type", "From"):
        assert message in response.text
    assert (await staff.get("/runs?before=garbage")).status_code == 200
    assert (await staff.get("/api/runs?user=abc")).status_code == 400


BAD_USER_IDS = [str(2**64), "99999999999999999999999", str(2**52), "0", "-5", "1.5", "1e3"]


@pytest.mark.parametrize("user", BAD_USER_IDS)
async def test_a_user_id_no_telegram_account_has_is_a_400_everywhere(
    staff: httpx.AsyncClient, user: str
) -> None:
    """Issue 20 item 7: a user id beyond 64 bits was a 500 on /runs and /api/runs and an
    empty 200 from /export.jsonl; every id is Telegram's (agent_core.ids) or a 400."""
    rule = "a Telegram user id is a whole number from 1 to 4503599627370495"
    page = await staff.get("/runs", params={"user": user})
    assert page.status_code == 400 and rule in page.text
    assert run_ids(page.text) == run_ids((await staff.get("/runs")).text)  # the rest applies
    api = await staff.get("/api/runs", params={"user": user})
    assert api.status_code == 400 and api.json() == {"errors": [f"User: {rule}."]}
    export = await staff.get("/export.jsonl", params={"user": user})
    assert export.status_code == 400 and export.text == f"User: {rule}."
    assert "content-disposition" not in export.headers


async def test_the_largest_telegram_user_id_is_a_filter_like_any_other(
    staff: httpx.AsyncClient, seeded: Seeded
) -> None:
    largest = str(2**52 - 1)
    assert (await staff.get("/api/runs", params={"user": largest})).json()["items"] == []
    assert (await staff.get("/runs", params={"user": largest})).status_code == 200
    export = await staff.get("/export.jsonl", params={"user": largest})
    assert (export.status_code, export.text) == (200, "")
    mine = await staff.get("/export.jsonl", params={"user": "10001"})
    assert mine.status_code == 200 and len(mine.text.splitlines()) >= 1


async def test_request_text_with_html_is_shown_as_text(
    staff: httpx.AsyncClient, seeded: Seeded
) -> None:
    for page in ("/runs", f"/runs/{seeded.ids['html']}", "/runs?q=script"):
        html = (await staff.get(page)).text
        assert "<script>alert" not in html and "<b>where</b>" not in html
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;b&gt;where&lt;/b&gt;" in html


async def test_run_page_shows_retries_skips_and_the_confirmation(
    staff: httpx.AsyncClient, seeded: Seeded
) -> None:
    retried = (await staff.get(f"/runs/{seeded.ids['retried']}")).text
    assert "failed, retrying" in retried and "order service timed out" in retried
    assert re.search(r"retry after \d+ ms backoff", retried)
    assert "done after 1 retry" in retried
    skipped = (await staff.get(f"/runs/{seeded.ids['skipped']}")).text
    assert "Skipped because" in skipped and "订单 A1002 已签收，不需要再查延迟补偿。" in skipped
    cancel = (await staff.get(f"/runs/{seeded.ids['cancel']}")).text
    assert re.search(r"<dt>Confirmed</dt>\s*<dd>by user 10001 at 20\d\d-", cancel)
    assert "Order A1003 has been cancelled." in cancel  # the answer the customer saw
    missing = await staff.get("/runs/nope")
    assert missing.status_code == 404 and "No such run" in missing.text


async def test_overview_charts_are_inline_svg(staff: httpx.AsyncClient) -> None:
    html = (await staff.get("/overview?period=all")).text
    assert html.count("<svg") == 3
    assert "Runs by status" in html and "Failed attempts by error type" in html
    assert re.search(r'href="/runs\?error=timeout"', html)
    assert re.search(r'href="/runs\?error=any&amp;tool=search_policy"', html)
    day = (await staff.get("/overview?period=24h")).text
    assert "8 runs since" in day
    assert (await staff.get("/overview?period=bogus")).status_code == 200


# -- paging ------------------------------------------------------------------------------


@pytest.fixture
async def many(store_backend: Backend) -> AsyncIterator[RunStore]:
    store = await store_backend.open_store()
    store_backend.bulk_runs(60)
    yield store
    await store.close()


async def test_keyset_paging_walks_every_run_once_in_both_directions(
    many: RunStore,
) -> None:
    async with client_for(many) as client:
        await sign_in(client)
        seen: list[str] = []
        pages: list[list[str]] = []
        url = "/runs"
        while url:
            html = (await client.get(url)).text
            pages.append(run_ids(html))
            seen += pages[-1]
            older = re.search(r'href="/runs\?([^"]+)" rel="next"', html)
            url = "/runs?" + older[1].replace("&amp;", "&") if older else ""
        assert [len(p) for p in pages] == [25, 25, 10]
        assert seen == [f"bulk{i:07d}" for i in range(59, -1, -1)]
        newer = re.search(r'href="/runs\?([^"]+)" rel="prev"', html)
        assert newer is not None
        back = (await client.get("/runs?" + newer[1].replace("&amp;", "&"))).text
        assert run_ids(back) == pages[1]


async def test_api_pages_keep_the_filter(many: RunStore) -> None:
    async with client_for(many) as client:
        await sign_in(client)
        first = (await client.get("/api/runs?tool=search_policy&limit=7")).json()
        second = await client.get(f"/api/runs?tool=search_policy&limit=7&before={first['older']}")
        items = first["items"] + second.json()["items"]
        assert len(items) == 14
        assert all(int(item["id"][4:]) % 4 == 0 for item in items)
        assert [i["id"] for i in items] == sorted((i["id"] for i in items), reverse=True)


def _bulk(i: int) -> str:
    return f"bulk{i:07d}"


BULK_START = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (RunFilter(), range(60)),
        (RunFilter(status=RunStatus.COMPLETED, user_id=30007), [7, 57]),
        (RunFilter(status=RunStatus.FAILED), []),
        (RunFilter(error_type="timeout"), range(0, 60, 10)),
        (RunFilter(error_type=ANY_ERROR, tool="get_order_status"), range(0, 60, 10)),
        (RunFilter(error_type=ANY_ERROR, tool="search_policy"), []),
        (RunFilter(tool="search_policy"), range(0, 60, 4)),
        (RunFilter(text="REQUEST 5", since=BULK_START), [5, *range(50, 60)]),
        (RunFilter(text="100%", since=BULK_START), []),
        (
            RunFilter(
                since=BULK_START + timedelta(seconds=300), until=BULK_START + timedelta(minutes=10)
            ),
            range(10, 20),
        ),
        (RunFilter(run_id="bulk0000042"), [42]),
    ],
    ids=lambda v: (
        ",".join(f"{k}" for k, x in vars(v).items() if x is not None) or "all"
        if isinstance(v, RunFilter)
        else ""
    ),
)
async def test_every_filter_finds_the_same_runs_on_both_backends(
    many: RunStore, flt: RunFilter, expected: range | list[int]
) -> None:
    """The console's filters (search_runs, iter_runs, explain) on each backend's dialect."""
    want = [_bulk(i) for i in sorted(expected, reverse=True)]
    assert [s.id async for s in many.history.iter_runs(flt)] == want
    first = await many.history.search_runs(flt, limit=4)
    assert [s.id for s in first.items] == want[:4]
    if first.older is not None:
        second = await many.history.search_runs(flt, before=first.older, limit=4)
        assert [s.id for s in second.items] == want[4:8]
        back = await many.history.search_runs(flt, after=second.newer, limit=4)
        assert [s.id for s in back.items] == want[:4]
    assert await many.history.explain(flt)


async def test_tools_and_counts_on_both_backends(many: RunStore) -> None:
    assert await many.history.recent_tools() == ["get_order_status", "search_policy"]
    assert await many.history.status_counts(BULK_START) == {"completed": 60}
    counts = await many.history.failure_counts(BULK_START)
    assert [(c.error_type, c.tool, c.count) for c in counts] == [("timeout", "get_order_status", 6)]
    page = await many.history.list_runs(user_id=30007, offset=1, limit=5)
    assert [s.id for s in page.items] == [_bulk(7)]
    assert page.items[0].step_count == 1 and page.items[0].retries == 0


@pytest.fixture(scope="module")
def hundred_thousand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """100k runs, written once for the whole session: the first xdist worker to get here
    writes them (~20 s) while the others wait on the lock, then every worker reads the same
    file (the tests only read). The workers' temp directories share one parent, which is
    this session's own (without xdist, the base temp directory is)."""
    import asyncio
    import fcntl
    import os

    shared = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        shared = shared.parent
    db = shared / "hundred_thousand_runs.db"
    with open(shared / "hundred_thousand_runs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "hundred_thousand_runs.done").exists():
            db.unlink(missing_ok=True)
            asyncio.run(_create(db))
            bulk_runs(db, 100_000)
            (shared / "hundred_thousand_runs.done").touch()
        fcntl.flock(lock, fcntl.LOCK_UN)
    yield db


async def _create(db: Path) -> None:
    await (await SqliteRunStore.open(db)).close()


# Two pages of any filter at 100k runs stay below this many thousand SQLite VM steps.
PAGE_WORK_K = 2000


@pytest.mark.parametrize(
    "flt",
    [
        RunFilter(),
        RunFilter(status=RunStatus.COMPLETED),
        RunFilter(user_id=30007),
        RunFilter(user_id=30007, status=RunStatus.COMPLETED),
        RunFilter(error_type="timeout"),
        RunFilter(error_type=ANY_ERROR, tool="get_order_status"),
        RunFilter(tool="search_policy"),
        RunFilter(text="request 99999", since=datetime(2025, 1, 30, tzinfo=UTC)),
        RunFilter(since=datetime(2025, 1, 20, tzinfo=UTC), until=datetime(2025, 1, 21, tzinfo=UTC)),
    ],
    ids=lambda f: ",".join(f"{k}" for k, v in vars(f).items() if v is not None) or "all",
)
async def test_pages_stay_indexed_and_cheap_at_100k_runs(
    hundred_thousand: Path, flt: RunFilter
) -> None:
    store = await SqliteRunStore.open(hundred_thousand)
    try:
        plan = await store.history.explain(flt)
        # Every table is reached through an index; no bare "SCAN runs/steps/events".
        assert not re.search(r"^SCAN [res]$", plan, re.MULTILINE), plan
        assert "USING INDEX runs_by_user" in plan or flt.user_id is None, plan
        assert "USING INDEX events_failures" in plan or flt.error_type is None, plan
        # The work, counted in SQLite VM instructions (thousands), not timed: the same on a
        # busy machine. A page that scanned the 100k runs would take millions.
        steps = [0]

        def count() -> int:
            steps[0] += 1
            return 0

        await store._conn.set_progress_handler(count, 1000)
        page = await store.history.search_runs(flt)
        deep = Cursor("2025-01-25T00:00:00.000000Z", "zzzz")
        await store.history.search_runs(flt, before=deep)
        await store._conn.set_progress_handler(None, 1000)
        assert page.items
        assert steps[0] < PAGE_WORK_K, f"{steps[0]}k VM steps for two pages\n{plan}"
    finally:
        await store.close()


# -- export ------------------------------------------------------------------------------


async def test_export_is_the_stepwise_export_format(
    staff: httpx.AsyncClient,
    seeded: Seeded,
    store_backend: Backend,
    capsys: pytest.CaptureFixture[str],
) -> None:
    response = await staff.get("/export.jsonl?status=failed")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    assert "attachment" in response.headers["content-disposition"]
    console_lines = response.text.splitlines()

    settings = Settings.model_validate({"STEPWISE_DB": store_backend.url})
    args = argparse.Namespace(command="export", status="failed", user=None)
    assert await dispatch(settings, args) == 0
    cli_lines = capsys.readouterr().out.splitlines()
    assert console_lines == cli_lines and len(cli_lines) == 2
    record = json.loads(console_lines[0])
    assert {"run_id", "steps", "timeline", "request_text", "user_id"} <= record.keys()

    one = await staff.get(f"/runs/{seeded.ids['html']}/export.jsonl")
    assert json.loads(one.text)["request_text"] == HTML_REQUEST
    assert (await staff.get("/runs/nope/export.jsonl")).status_code == 404


async def test_export_follows_every_filter(staff: httpx.AsyncClient, seeded: Seeded) -> None:
    lines = (await staff.get("/export.jsonl?error=timeout")).text.splitlines()
    assert [json.loads(line)["run_id"] for line in lines] == [seeded.ids["retried"]]
    assert (await staff.get("/export.jsonl?status=nope")).status_code == 400


# -- a real server -----------------------------------------------------------------------


async def test_serve_console_listens_on_loopback_and_stops(seeded: Seeded) -> None:
    server = await serve_console(seeded.store, TOKEN, port=0)
    try:
        assert server.url.startswith("http://127.0.0.1:")
        async with httpx.AsyncClient(base_url=server.url) as client:
            assert (await client.get("/api/runs")).status_code == 401
            assert (await client.get("/login")).status_code == 200
        with pytest.raises(OSError):
            await serve_console(seeded.store, TOKEN, port=server.port)
    finally:
        await server.stop()
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient(base_url=server.url) as client:
            await client.get("/login")


async def test_stepwise_serve_starts_the_console_only_with_a_token(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await serve_staff_console(seeded.store, None, port=0) is None
    assert await serve_staff_console(seeded.store, TOKEN, port=0) is None  # 0: switched off
    with pytest.raises(ValueError):
        await serve_staff_console(seeded.store, "weak", port=8089)
    monkeypatch.delenv("STEPWISE_STAFF_TOKEN", raising=False)
    assert configured_staff_token(Settings()) is None
    monkeypatch.setenv("STEPWISE_STAFF_TOKEN", TOKEN)
    assert configured_staff_token(Settings()) == TOKEN


# -- the demo ----------------------------------------------------------------------------


async def test_demo_chat_page_accepts_only_same_origin_json(tmp_path: Path) -> None:
    settings = Settings.model_validate(
        {"STEPWISE_DB": str(tmp_path / "demo.db"), "STEPWISE_SHOP_LATENCY_MS": "0"}
    )
    demo = Demo(settings, chat_port=0, staff_port=0, staff_token=TOKEN, poll_timeout_s=1)
    await demo.start()
    try:
        async with httpx.AsyncClient(base_url=demo.chat_url) as chat:
            page = await chat.get("/")
            assert (
                page.status_code == 200
                and "script-src 'self'" in page.headers["content-security-policy"]
            )
            form = await chat.post("/api/send", data={"text": "where is order A1001"})
            assert form.status_code == 415
            foreign = await chat.post(
                "/api/send",
                json={"text": "where is order A1001"},
                headers={"Origin": "http://evil.example"},
            )
            assert foreign.status_code == 403
            assert (await chat.post("/api/send", json={"text": "  "})).status_code == 400
            state = (await chat.get("/api/state")).json()
            assert state["messages"] == []

            sent = await chat.post("/api/send", json={"text": "where is order A1001"})
            assert sent.status_code == 200
            for _ in range(20):  # long-poll until the bot's answer is there
                state = (await chat.get(f"/api/state?since={state['version']}&wait=5")).json()
                if any("expected 2026-12-03" in (m["text"] or "") for m in state["messages"]):
                    break
            texts = [m["text"] for m in state["messages"]]
            assert texts[0] == "where is order A1001" and texts[1].startswith("Here is my plan")
            bad_press = await chat.post("/api/press", json={"message_id": 1, "callback_data": "x"})
            assert bad_press.status_code == 400
    finally:
        await demo.stop()


async def test_demo_refuses_a_busy_port_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.model_validate({"STEPWISE_DB": str(tmp_path / "demo.db")})
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = await run_demo(settings, chat_port=0, staff_port=port, staff_token=TOKEN)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot listen" in err[0] and "--staff-port" in err[0]


def test_demo_prints_its_urls_and_stops_on_sigint(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "STEPWISE_DB": str(tmp_path / "demo.db"),
        "STEPWISE_STAFF_TOKEN": TOKEN,
        "TELEGRAM_BOT_TOKEN": "",
    }
    command = [sys.executable, "-m", "stepwise", "demo", "--chat-port", "0", "--staff-port", "0"]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not lines or not lines[-1].startswith("Press Ctrl-C"):
            line = process.stdout.readline()
            assert line, f"demo exited early: {process.stderr.read() if process.stderr else ''}"
            lines.append(line.strip())
        output = "\n".join(lines)
        chat = re.search(r"Chat with the bot:\s+(\S+)", output)
        staff = re.search(r"Staff console:\s+(\S+)", output)
        assert chat and staff and f"Staff token:        {TOKEN}" in output
        assert httpx.get(chat[1]).status_code == 200
        assert httpx.get(staff[1] + "api/runs").status_code == 401
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=20) == 0
        assert time.monotonic() - started < 10
        assert "Traceback" not in (process.stderr.read() if process.stderr else "")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
