"""The shop's order system out of reach (issue 37, items 5 and 6), over HTTP both ways: the
production bot long-polls the Telegram stand-in, its HTTP tools call a local order API
whose port is closed (connection refused) and opened again.

Staff read ONE alert per episode in the staff group's General topic, and one "answering
again" when the tool works again; a later episode (past the alert window) is told again.
Every failed call is a WARNING naming the tool, the kind and the run, never the customer's
text. The classification of the other transport failures (DNS, TLS, timeouts) is
`agent_core.faults`, checked on the words httpx writes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from agent_core.faults import fault_kind
from agent_core.http.client import transport_message
from agent_core.models import ErrorType
from bot.alerts import ALERT_WINDOW_S, AlertGate
from bot.application import bot_of
from standin import StandIn
from tests.harness import DEMO, OTHER, BotHarness, query, until
from tests.local_http import serve_app
from tests.test_handoff_e2e import FORUM, staff_forum, staffed

THIRD = 30003
ORDER = "A8001"
QUESTION = f"where is my order {ORDER}, my secret word is periwinkle"


@dataclass
class Shop:
    """An order API on a fixed loopback port that can be taken down and brought back."""

    runner: web.AppRunner
    port: int
    site: web.TCPSite | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def up(self) -> None:
        self.site = web.TCPSite(self.runner, "127.0.0.1", self.port)
        await self.site.start()

    async def down(self) -> None:
        """Nothing listens on the port: a connection is refused."""
        if self.site is not None:
            await self.site.stop()
            self.site = None


@pytest.fixture
async def shop() -> AsyncIterator[Shop]:
    async def order(request: web.Request) -> web.Response:
        answer = web.json_response(
            {"order_id": request.match_info["order_id"], "status": "shipping"}
        )
        answer.force_close()  # no kept-alive connection: once down, every call is refused
        return answer

    app = web.Application()
    app.router.add_get("/api/orders/{order_id}", order)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    first = web.TCPSite(runner, "127.0.0.1", 0)
    await first.start()
    served = Shop(runner, runner.addresses[0][1], first)
    yield served
    await runner.cleanup()


def tools_file(tmp_path: Path, base: str) -> Path:
    path = tmp_path / "tools.toml"
    path.write_text(
        f'[tools.get_order_status]\nurl = "{base}/api/orders/{{order_id}}"\nmax_retries = 1\n',
        encoding="utf-8",
    )
    return path


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def general(standin: StandIn, title: str) -> list[str]:
    return [
        m.text or ""
        for m in standin.chat_messages(FORUM)
        if m.message_thread_id is None and title in (m.text or "")
    ]


async def answered(h: BotHarness, chat: int, count: int) -> None:
    """Wait until `chat` has `count` runs whose answer was delivered."""
    sql = (
        "SELECT count(*) FROM runs r WHERE r.chat_id = ? AND EXISTS (SELECT 1 FROM events e"
        " WHERE e.run_id = r.id AND e.kind = 'answer_delivered')"
    )
    await until(lambda: query(h.db, sql, chat) == [(count,)], what=f"{count} answer(s) in {chat}")


@pytest.fixture
async def bot(standin: StandIn, shop: Shop, tmp_path: Path) -> AsyncIterator[BotHarness]:
    staff_forum(standin)
    harness = await staffed(
        standin, tmp_path / "bot.db", STEPWISE_TOOLS=str(tools_file(tmp_path, shop.url))
    )
    try:
        yield harness
    finally:
        await harness.stop()


async def test_a_shop_refusing_connections_is_one_alert_per_episode_with_a_recovery(
    bot: BotHarness, shop: Shop, caplog: pytest.LogCaptureFixture
) -> None:
    h, clock = bot, Clock()
    alerts = bot_of(h.app).state.shop_alerts
    alerts.gate = AlertGate(clock=clock)
    caplog.set_level(logging.WARNING)
    await shop.down()

    # Three customers ask while the shop is down: one alert.
    for chat in (DEMO, OTHER, THIRD):
        h.standin.add_chat(chat, chat, first_name=f"C{chat}")
        h.standin.inject_message(chat, chat, QUESTION, first_name=f"C{chat}")
        await answered(h, chat, 1)
    (alert,) = general(h.standin, "Order system problem")
    assert "Tool: get_order_status · connection refused" in alert
    assert "did not answer" in alert
    assert "periwinkle" not in alert and str(DEMO) not in alert
    stopped = query(h.db, "SELECT stop_reason FROM runs")
    assert stopped == [("unavailable",)] * 3

    # Every failed call was a WARNING: tool, kind, run; never the customer's words.
    warnings = [r.getMessage() for r in caplog.records if r.name == "stepwise.shop"]
    run_ids = [r for (r,) in query(h.db, "SELECT id FROM runs")]
    assert len(warnings) == 6  # two attempts per run (max_retries = 1)
    for run_id in run_ids:
        mine = [w for w in warnings if w.endswith(f"run {run_id}")]
        assert len(mine) == 2 and all("get_order_status, connection refused" in w for w in mine)
        assert "retrying in" in mine[0] and "gave up" in mine[1]
    assert all(r.levelno == logging.WARNING for r in caplog.records if r.name == "stepwise.shop")
    assert "periwinkle" not in caplog.text

    # The shop is back: the next call that works ends the episode, told once.
    await shop.up()
    h.standin.inject_message(DEMO, DEMO, QUESTION, first_name="C")
    await answered(h, DEMO, 2)
    (recovered,) = general(h.standin, "Order system answering again")
    assert "get_order_status answered after 3 run(s) stopped on connection refused" in recovered
    h.standin.inject_message(OTHER, OTHER, QUESTION, first_name="C")
    await answered(h, OTHER, 2)
    assert len(general(h.standin, "Order system answering again")) == 1

    # Down again past the alert window: a new episode, told again.
    clock.now += ALERT_WINDOW_S
    await shop.down()
    h.standin.inject_message(THIRD, THIRD, QUESTION, first_name="C")
    await answered(h, THIRD, 2)
    assert len(general(h.standin, "Order system problem")) == 2


async def test_a_shop_down_again_within_the_window_is_not_told_twice(
    bot: BotHarness, shop: Shop
) -> None:
    h = bot
    await shop.down()
    h.standin.inject_message(DEMO, DEMO, QUESTION, first_name="C")
    await answered(h, DEMO, 1)
    await shop.up()
    h.standin.inject_message(DEMO, DEMO, QUESTION, first_name="C")
    await answered(h, DEMO, 2)
    await shop.down()
    h.standin.inject_message(DEMO, DEMO, QUESTION, first_name="C")
    await answered(h, DEMO, 3)
    assert len(general(h.standin, "Order system problem")) == 1  # the gate's 10 minutes
    assert len(general(h.standin, "Order system answering again")) == 1


# -- the kinds of failure, on what httpx really says --------------------------------------


async def failure_of(url: str, verify: ssl.SSLContext | bool = True) -> str:
    async with httpx.AsyncClient(verify=verify, timeout=30) as client:
        try:
            await client.get(url)
        except httpx.HTTPError as exc:
            return transport_message(exc)
    raise AssertionError(f"{url} answered")


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 that no client trusts."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec"),
            *("-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_refused_and_tls_failures_are_told_apart(
    shop: Shop, certificate: tuple[Path, Path]
) -> None:
    await shop.down()
    refused = await failure_of(shop.url + "/api/orders/A1")
    assert fault_kind(ErrorType.UNAVAILABLE, refused) == "connection refused", refused

    cert, key = certificate
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    shop.site = web.TCPSite(shop.runner, "127.0.0.1", shop.port, ssl_context=context)
    await shop.site.start()
    untrusted = await failure_of(f"https://127.0.0.1:{shop.port}/api/orders/A1")
    assert fault_kind(ErrorType.UNAVAILABLE, untrusted) == "TLS failure", untrusted


def test_the_kinds_of_failure_the_staff_and_logs_read() -> None:
    dns = "no answer from upstream: ConnectError ([Errno -2] Name or service not known)"
    assert fault_kind(ErrorType.UNAVAILABLE, dns) == "DNS failure"
    assert fault_kind(ErrorType.TIMEOUT, "no answer from upstream: ReadTimeout") == "timeout"
    assert fault_kind(ErrorType.TIMEOUT, "get_order_status took longer than 5.0s") == "timeout"
    assert fault_kind(ErrorType.BACKEND, "upstream answered HTTP 503: busy") == "HTTP 503"
    assert fault_kind(ErrorType.UNAVAILABLE, "upstream answered HTTP 429") == "HTTP 429"
    assert fault_kind(ErrorType.BACKEND, "x breaks the contract: status") == "contract"
    broken = "no answer from upstream: RemoteProtocolError (Server disconnected)"
    assert fault_kind(ErrorType.UNAVAILABLE, broken) == "no answer"
    # The customer's own failures are not the shop's: no alert, no warning.
    for mine in (ErrorType.NOT_FOUND, ErrorType.INVALID_ARGUMENTS, ErrorType.PERMISSION_DENIED):
        assert fault_kind(mine, "upstream answered HTTP 404") is None


async def test_stepwise_ask_warns_of_a_failing_shop_at_the_default_log_level(
    tmp_path: Path,
) -> None:
    """A real `stepwise ask` at the default level (WARNING): a shop answering 503 is two
    WARNING lines on stderr (the try and its retry) naming the tool, the kind and the run."""

    async def failing(request: web.Request) -> web.Response:
        return web.json_response({"error": "maintenance"}, status=503)

    app = web.Application()
    app.router.add_get("/api/orders/{order_id}", failing)
    runner, url = await serve_app(app)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
        env |= {
            "STEPWISE_DB": str(tmp_path / "cli.db"),
            "STEPWISE_TOOLS": str(tools_file(tmp_path, url)),
        }
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "stepwise", "ask", QUESTION, "--user", str(DEMO), "--json"),
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        await runner.cleanup()
    run_id = json.loads(out)["run_id"]
    lines = [line for line in err.decode().splitlines() if "shop call failed" in line]
    assert len(lines) == 2, err.decode()
    assert all(" WARNING stepwise.shop: " in line for line in lines)
    assert all(
        "get_order_status, HTTP 503" in line and line.endswith(f"run {run_id}") for line in lines
    )
    assert "gave up" in lines[-1]
    assert "periwinkle" not in err.decode() and "maintenance" not in err.decode()
