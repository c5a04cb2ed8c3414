"""The production bot with `STEPWISE_DB=postgresql://…`: the runtime picks PostgreSQL from
the URL, and the bot's whole path (journal, claim, shop, prompts, staff commands,
restart) works on it. The SQLite twin of each check is in tests/test_bot_e2e.py."""

from __future__ import annotations

from pathlib import Path

from standin import StandIn
from storage.runs.postgres import PgRunStore
from storage.shop.postgres import PgShop
from tests.harness import DEMO, STAFF, start_bot, until
from tests.storage_backends import Backend


async def test_the_bot_runs_on_postgres_across_a_restart(
    standin: StandIn, tmp_path: Path, postgres_backend: Backend
) -> None:
    db = postgres_backend
    first = await start_bot(standin, tmp_path / "unused.db", STEPWISE_DB=db.url)
    assert isinstance(first.runtime.store, PgRunStore)
    assert isinstance(first.runtime.shop, PgShop)
    first.standin.inject_message(DEMO, DEMO, "cancel order A1003")
    paused = await first.buttons_message(DEMO)
    await first.stop()

    second = await start_bot(standin, tmp_path / "unused.db", STEPWISE_DB=db.url)
    try:
        data = paused.buttons[0][0].callback_data or ""
        presses = [second.standin.press_button(DEMO, paused.message_id, data, DEMO) for _ in "ab"]
        await second.until_text(DEMO, "Order A1003 has been cancelled.")
        await second.standin.wait_for(
            lambda: all(second.standin.callback_answers(q) for q in presses)
        )
        toasts = sorted(second.standin.callback_answers(q)[0].text or "" for q in presses)
        assert toasts == ["Confirmed, working on it.", "This request was already handled."]
        assert db.count_rows("shop_cancellations") == 1

        second.standin.inject_message(DEMO, DEMO, "where is order A1001")
        await second.until_text(DEMO, "expected 2026-12-03")
        await until(
            lambda: db.count_rows("runs") == 2 and _statuses(db) == {"completed"},
            what="both runs finished",
        )
        second.standin.inject_message(STAFF, STAFF, "/runs")
        await second.until_text(STAFF, "Recent runs")
        second.standin.inject_message(STAFF, STAFF, "/stats")
        stats = await second.until_text(STAFF, "last 24 h")
        assert "runs: 2" in (stats.text or "")
    finally:
        await second.stop()


def _statuses(db: Backend) -> set[str]:
    observer = db.observer()
    try:
        return {row[0] for row in observer.execute("SELECT status FROM runs").fetchall()}
    finally:
        observer.close()
