"""The one bot harness and the one polling helper of the test suite.

- `start_bot`: the production PTB application (`stepwise.serve.bot_application`) in this
  process, long-polling a `StandIn` over real HTTP; only TELEGRAM_API_BASE_URL and the
  per-chat pacing (the stand-in's own `flood.per_chat_interval`) differ from production. `BotHarness` reads what each chat shows and what the database holds; its
  `stop()` checks every request and update so far against the Bot API spec (tests/botapi).
- `until` / `until_sync`: wait for a condition on shared state (the database, the stand-in,
  another process) with a deadline. Polling a condition IS the synchronisation; nothing
  here sleeps "long enough". (`StandIn.wait_for` is the stand-in's own wait: it re-checks on
  every change it sees, so use it for conditions on the stand-in alone.)
- `prompt_for` / `press`: find a run's Confirm prompt and tap one of its buttons.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agent_core.execution.policy import Backoff, FailurePolicy
from agent_core.execution.tools import Tool
from agent_core.models import utcnow
from bot.application import Webhook, start_application, stop_application
from bot.progress import DEFAULT_TYPING, Typing
from standin import DEFAULT_TOKEN, ShownMessage, StandIn
from stepwise.runtime import Runtime, open_runtime
from stepwise.serve import bot_application, open_receiving
from stepwise.settings import Settings
from tests.botapi import assert_conforms

TOKEN = DEFAULT_TOKEN
STAFF = 900
DEMO = 10001
OTHER = 20002
POLL_S = 0.01
# The stand-in Telegram of the suite (the `standin` fixture) lets a bot send to a chat every
# 50 ms after a burst, not every second as Telegram does: a conversation under test is then
# not a second per message. Tests of the pacing itself mark Telegram's limits
# (`@pytest.mark.standin(flood=FloodLimits())`).
TEST_CHAT_INTERVAL_S = 0.05
# Every wait's deadline is multiplied by this (and the stand-in's waits too, `patience`): on
# a busy machine a subprocess may take many times its idle start-up to answer, and a wait
# still ends the moment its condition holds. STEPWISE_TEST_PATIENCE overrides it.
PATIENCE = float(os.environ.get("STEPWISE_TEST_PATIENCE", "3"))


def query(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def _check(condition: Callable[[], Any]) -> Any:
    try:
        return condition()
    except sqlite3.OperationalError:  # another process is still creating the schema
        return None


async def until(
    condition: Callable[[], Any], *, within: float = 20.0, what: str = "condition"
) -> Any:
    """Poll `condition` until it is truthy and return its value; fail after `within` s
    (times `PATIENCE`)."""
    within *= PATIENCE
    deadline = time.monotonic() + within
    while not (value := _check(condition)):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {within}s")
        await asyncio.sleep(POLL_S)
    return value


def until_sync(
    condition: Callable[[], Any], *, within: float = 20.0, what: str = "condition"
) -> Any:
    """`until` for synchronous tests (a CLI in a subprocess)."""
    within *= PATIENCE
    deadline = time.monotonic() + within
    while not (value := _check(condition)):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {within}s")
        time.sleep(POLL_S)
    return value


def bot_texts(standin: StandIn, chat_id: int) -> list[str]:
    """What the bot has shown in a chat, in order (edited messages show their last text)."""
    if chat_id not in standin.state.chats:
        return []
    return [m.text or "" for m in standin.bot_messages(chat_id)]


def prompt_for(standin: StandIn, chat_id: int, run_id: str) -> ShownMessage | None:
    """The newest message showing the Confirm/Cancel buttons of `run_id`, if any."""
    if chat_id not in standin.state.chats:
        return None
    for message in reversed(standin.bot_messages(chat_id)):
        if any(f":{run_id}:" in data for data in message.callback_data):
            return message
    return None


def press(standin: StandIn, chat_id: int, prompt: ShownMessage, approve: bool, user: int) -> str:
    """Tap Confirm (or Cancel) on a prompt, as the given user; returns the query id."""
    data = next(d for d in prompt.callback_data if d.startswith("sw:c:" if approve else "sw:x:"))
    return standin.press_button(chat_id, prompt.message_id, data, user)


@dataclass
class BotHarness:
    standin: StandIn
    runtime: Runtime
    app: Any
    db: Path

    async def stop(self) -> None:
        """Stop the bot, then check its requests and what it was sent against the spec."""
        await stop_application(self.app)
        await self.app.shutdown()
        await self.runtime.close()
        assert_conforms(self.standin)

    def bot_texts(self, chat_id: int) -> list[str]:
        return bot_texts(self.standin, chat_id)

    async def until_text(self, chat_id: int, needle: str, within: float = 10.0) -> ShownMessage:
        """The first bot message in the chat containing `needle`, once there is one."""

        def found() -> ShownMessage | None:
            return next(
                (m for m in self.standin.bot_messages(chat_id) if needle in (m.text or "")), None
            )

        await self.standin.wait_for(lambda: found() is not None, timeout=within)
        message = found()
        assert message is not None
        return message

    async def buttons_message(self, chat_id: int, within: float = 10.0) -> ShownMessage:
        """The first bot message in the chat that shows inline buttons, once there is one."""

        def found() -> ShownMessage | None:
            return next((m for m in self.standin.bot_messages(chat_id) if m.buttons), None)

        await self.standin.wait_for(lambda: found() is not None, timeout=within)
        message = found()
        assert message is not None
        return message

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return query(self.db, sql, *params)

    def query_write(self, sql: str, *params: Any) -> None:
        """One write to the database from outside the bot (a crash made by hand)."""
        conn = sqlite3.connect(self.db, timeout=10)
        try:
            with conn:
                conn.execute(sql, params)
        finally:
            conn.close()


async def start_bot(
    standin: StandIn,
    db: Path,
    *,
    tools: Sequence[Tool] | None = None,
    show_after_s: float = 0.5,
    typing: Typing = DEFAULT_TYPING,
    clock: Callable[[], datetime] = utcnow,
    webhook: Webhook | None = None,
    **env: str,
) -> BotHarness:
    """The production application polling `standin`, with a short retry backoff (and the
    agent's clock, `clock`, for tests where time matters). Its limiter paces each chat as
    the stand-in counts (`standin.flood`): the suite's stand-in allows a message to a chat
    every `TEST_CHAT_INTERVAL_S`, Telegram's own pace is tested where a test says so."""
    settings = Settings.model_validate(
        {
            "TELEGRAM_BOT_TOKEN": TOKEN,
            "TELEGRAM_API_BASE_URL": standin.base_url,
            "STEPWISE_DB": str(db),
            "STEPWISE_STAFF_IDS": str(STAFF),
            **env,
        }
    )
    policy = FailurePolicy(backoff=Backoff(base_s=0.05, cap_s=0.2))
    runtime = await open_runtime(settings, tools=tools, policy=policy, clock=clock)
    app = bot_application(
        runtime,
        show_after_s=show_after_s,
        typing=typing,
        chat_interval_s=standin.flood.per_chat_interval,
    )
    await app.initialize()
    receiving = await open_receiving(runtime)
    # As `stepwise serve` starts it; with `webhook`, Telegram's posts are the test's to make.
    await start_application(app, receiving, webhook=webhook, poll_timeout_s=1)
    return BotHarness(standin, runtime, app, db)
