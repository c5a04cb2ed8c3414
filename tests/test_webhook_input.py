"""What the webhook refuses, over real HTTP to the bot's own webhook server: a body that
is not JSON in UTF-8, and an update id the inbox cannot store, are answered 400 and
dropped (never 500, which Telegram retries for a day), and such an update is never
answered, however often it is delivered."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_core.models import Language
from bot.application import Webhook
from bot.texts import say
from standin import StandIn
from tests.harness import DEMO, start_bot
from tests.harness import BotHarness as Bot

SECRET = "s" * 32
SIGNED = {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
async def hooked(standin: StandIn, tmp_path: Path) -> AsyncIterator[tuple[Bot, str]]:
    port = free_port()
    webhook = Webhook(url=f"http://127.0.0.1:{port}", listen="127.0.0.1", port=port, secret=SECRET)
    running = await start_bot(standin, tmp_path / "bot.db", webhook=webhook)
    yield running, f"http://127.0.0.1:{port}/telegram"
    await running.stop()


def update(standin: StandIn, update_id: int, text: str) -> dict[str, Any]:
    message = standin.inject_message(DEMO, DEMO, text)
    standin.state.updates.clear()  # delivered by the test's POST, not by the stand-in
    return {"update_id": update_id, "message": message}


async def answered_help(bot: Bot, client: httpx.AsyncClient, url: str, update_id: int) -> None:
    """A well-formed update is still answered: the point after which nothing else is."""
    help_update = update(bot.standin, update_id, "/help")
    assert (await client.post(url, json=help_update, headers=SIGNED)).status_code == 200
    await bot.until_text(DEMO, say("help", Language.EN))


@pytest.mark.parametrize(
    "body", [b"{not json", b'{"update_id": 1, "message": "\xff\xfe"}', b"\xc3\x28"]
)
async def test_a_body_that_is_not_json_in_utf8_is_a_400_and_dropped(
    hooked: tuple[Bot, str], body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    bot, url = hooked
    async with httpx.AsyncClient() as client:
        refused = await client.post(url, content=body, headers=SIGNED)
        assert refused.status_code == 400
        assert "not JSON in UTF-8: 400, dropped" in caplog.text
        await answered_help(bot, client, url, 5)
    assert bot.bot_texts(DEMO) == [say("help", Language.EN)]
    assert bot.query("SELECT update_id FROM inbox") == [(5,)]


@pytest.mark.parametrize("update_id", [2**63, 2**64 + 7, -1])
async def test_an_update_id_the_inbox_cannot_store_is_refused_and_never_answered(
    hooked: tuple[Bot, str], update_id: int, caplog: pytest.LogCaptureFixture
) -> None:
    bot, url = hooked
    huge = update(bot.standin, update_id, "where is order A1001?")
    async with httpx.AsyncClient() as client:
        for _ in range(2):  # delivered, then redelivered
            assert (await client.post(url, json=huge, headers=SIGNED)).status_code == 400
        assert f"update_id {update_id} is not an integer from 0 to 2^63-1" in caplog.text
        await answered_help(bot, client, url, 6)
    assert bot.bot_texts(DEMO) == [say("help", Language.EN)]
    assert bot.query("SELECT count(*) FROM runs") == [(0,)]


async def test_an_unsigned_post_is_still_forbidden_before_its_body_is_read(
    hooked: tuple[Bot, str],
) -> None:
    _, url = hooked
    async with httpx.AsyncClient() as client:
        refused = await client.post(
            url, content=b"{not json", headers={"Content-Type": "application/json"}
        )
    assert refused.status_code == 403
