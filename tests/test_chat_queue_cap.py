"""A burst from one chat, over real HTTP with the Bot API stand-in, on SQLite and on
PostgreSQL: the process holds at most the chat's queue cap of its updates; the rest wait
in the inbox (parked, on disk), the customer is told once to slow down, and every message
is still answered, in the order it was sent."""

from __future__ import annotations

from pathlib import Path

from agent_core.models import Language
from bot.application import receiver_of
from bot.texts import say
from standin import StandIn
from tests.harness import DEMO, OTHER, start_bot, until
from tests.storage_backends import Backend

CAP = 2
BURST = [f"where is order A10{n:02d}" for n in range(1, 9)]


def rows(backend: Backend, sql: str) -> list[tuple[object, ...]]:
    observer = backend.observer()
    try:
        return [tuple(r) for r in observer.execute(sql).fetchall()]
    finally:
        observer.close()


async def test_a_burst_waits_in_the_inbox_is_told_once_and_is_answered_in_order(
    standin: StandIn, tmp_path: Path, store_backend: Backend
) -> None:
    bot = await start_bot(
        standin,
        tmp_path / "unused.db",
        STEPWISE_DB=store_backend.url,
        STEPWISE_CHAT_QUEUE_MAX=str(CAP),
        STEPWISE_SHOP_LATENCY_MS="150",  # each answer takes a while: the burst piles up
    )
    receiver = receiver_of(bot.app)
    assert receiver is not None
    intake = receiver.intake
    peak = [0]

    def watched(condition: bool) -> bool:
        peak[0] = max(peak[0], intake.in_hand(DEMO))
        return condition

    try:
        for text in BURST:
            standin.inject_message(DEMO, DEMO, text)
        parked = f"SELECT count(*) FROM inbox WHERE parked_chat = {DEMO}"
        await until(lambda: watched(rows(store_backend, parked)[0][0] > 0), what="parked")
        standin.inject_message(OTHER, OTHER, "where is order A1001")
        await until(lambda: watched(bool(bot.bot_texts(OTHER))), what="another chat answered")
        done = "SELECT count(*) FROM runs WHERE finished_at IS NOT NULL"
        await until(
            lambda: watched(rows(store_backend, done)[0][0] == len(BURST) + 1),
            what="every message answered",
        )
        pending = "SELECT count(*) FROM inbox WHERE processed_at IS NULL"
        await until(lambda: rows(store_backend, pending) == [(0,)], what="inbox drained")
    finally:
        await bot.stop()
    assert 0 < peak[0] <= CAP
    slow_down = say("slow_down", Language.EN)
    assert bot.bot_texts(DEMO).count(slow_down) == 1
    assert slow_down not in bot.bot_texts(OTHER)
    asked = rows(
        store_backend, f"SELECT request_text FROM runs WHERE chat_id = {DEMO} ORDER BY created_at"
    )
    assert [text for (text,) in asked] == BURST
    assert rows(store_backend, "SELECT count(*) FROM inbox WHERE parked_chat IS NOT NULL") == [(0,)]
