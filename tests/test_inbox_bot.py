"""The bot receiving through the durable inbox (issue 15, item 3), in process.

The crash windows are made by hand in the database: an update left unmarked by a process
that is gone, after its run was recorded (must not start again) or before anything was
(must be handled), as `bot.inbox` promises.
"""

from __future__ import annotations

from pathlib import Path

from standin import StandIn
from tests.harness import DEMO, query, start_bot, until

# A claim of a process on another machine, long expired: any live process may take it.
GONE = "elsewhere:1:dead00"


def _answers(standin: StandIn, needle: str) -> int:
    """Messages shown to the customer that name `needle` (plan, step, answer)."""
    return sum(needle in (m.text or "") for m in standin.bot_messages(DEMO))


async def test_an_update_left_unmarked_after_its_run_started_is_not_run_again(
    standin: StandIn, tmp_path: Path
) -> None:
    bot = await start_bot(standin, tmp_path / "bot.db")
    try:
        standin.inject_message(DEMO, DEMO, "where is order A1001")
        await until(lambda: _answers(standin, "A1001"), what="answered")
        update_id = standin.state.next_update_id - 1
        processed = "SELECT processed_at IS NOT NULL FROM inbox WHERE update_id = ?"
        await until(lambda: bot.query(processed, update_id) == [(1,)], what="marked")
        shown = _answers(standin, "A1001")
        # The crash: the run and its answer are done, the mark never written.
        bot.query_write(
            "UPDATE inbox SET processed_at = NULL, owner = ?, lease_until = 0 WHERE update_id = ?",
            GONE,
            update_id,
        )
        await until(lambda: bot.query(processed, update_id) == [(1,)], what="taken and marked")
        assert bot.query("SELECT count(*) FROM runs") == [(1,)]
        assert _answers(standin, "A1001") == shown
    finally:
        await bot.stop()


async def test_an_update_stored_but_never_handled_is_handled_once(
    standin: StandIn, tmp_path: Path
) -> None:
    db = tmp_path / "bot.db"
    bot = await start_bot(standin, db)
    try:
        standin.inject_message(DEMO, DEMO, "where is order A1001")
        await until(lambda: _answers(standin, "A1001"), what="answered")
        body = bot.query("SELECT body FROM inbox")[0][0]
        # Stored (and so acknowledged) by a process that died before handling it.
        orphan = body.replace('"update_id": 1', '"update_id": 9001', 1).replace("A1001", "A1002")
        assert orphan != body
        bot.query_write(
            "INSERT INTO inbox (update_id, body, received_at, owner, lease_until)"
            " VALUES (9001, ?, 0, ?, 0)",
            orphan,
            GONE,
        )
        await until(lambda: _answers(standin, "A1002"), what="the orphan handled")
        await until(
            lambda: query(db, "SELECT count(*) FROM inbox WHERE processed_at IS NULL") == [(0,)],
            what="every update marked",
        )
        assert query(db, "SELECT count(*) FROM runs WHERE request_text LIKE '%A1002%'") == [(1,)]
        assert _answers(standin, "A1002") == _answers(standin, "A1001")  # shown once, alike
    finally:
        await bot.stop()
