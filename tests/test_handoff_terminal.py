"""`stepwise chat` and human handoff (issue 14): the handoff is recorded, and the answer says
a person will reply in Telegram — or, with no staff group configured, that nobody can yet."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pexpect

from agent_core.models import Language
from bot.texts import TEXTS


def spawn_chat(db: Path, **env: str) -> pexpect.spawn:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("STEPWISE_", "TELEGRAM_"))}
    clean.update(STEPWISE_DB=str(db), **env)
    return pexpect.spawn(
        sys.executable, ["-m", "stepwise", "chat"], env=clean, encoding="utf-8", timeout=30
    )


def handoffs(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT customer_user_id, trigger, topic_id, closed_at IS NULL FROM handoffs"
        ).fetchall()


def test_terminal_handoff_is_recorded_for_telegram(tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    chat = spawn_chat(db, STEPWISE_STAFF_CHAT_ID="-1005555555555")
    chat.expect_exact("you> ")
    chat.sendline("I want to talk to a real person")
    chat.expect_exact("bot> " + TEXTS["handoff_cli"][Language.EN])
    chat.expect_exact("you> ")
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()
    # Open, no topic yet: the bot gives it one on its next start.
    assert handoffs(db) == [(10001, "intent", None, 1)]


def test_terminal_handoff_without_a_staff_group_promises_nothing(tmp_path: Path) -> None:
    db = tmp_path / "alone.db"
    chat = spawn_chat(db)
    chat.expect_exact("you> ")
    chat.sendline("转人工")
    chat.expect_exact("bot> " + TEXTS["handoff_unstaffed"][Language.ZH].split("。")[0])
    chat.expect_exact("you> ")
    chat.sendeof()
    chat.expect(pexpect.EOF)
    chat.close()
    assert handoffs(db) == [(10001, "intent", None, 0)]  # recorded, closed at once
